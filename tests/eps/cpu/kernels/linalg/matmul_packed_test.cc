// MatMul and FusedMatMul with a constant B (eps/cpu/kernels/linalg/matmul.cc): B is pre-packed in
// oneDNN's preferred layout (blocked with AVX-512; plain [N, K] where oneDNN has no layout of its
// own, and always with transA). Every row count must read the same packing right: 1 row, rows
// around oneDNN's blocks, batched A folded into rows, K and N that are not multiples of any
// block (700 rows: the AVX2 panels run row blocks that fit L2); transB, alpha; a second session
// that adopts the first one's packing; 1 to 3 threads (rows split into slices on the pool, unevenly
// at 3; fewer than 32 rows run nxrt's own kernel over oneDNN's panels, panel_rows.h); A with one
// static row, which keeps the plain layout. Gemm with a constant B and every
// broadcast form of C. ctest also runs this file with oneDNN limited to AVX2
// (tests/CMakeLists.txt), where the plain layout is taken.
#include <gtest/gtest.h>

#include <cmath>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

struct MatMulCase {
  int64_t k, n;
  bool trans_a = false, trans_b = false;  // FusedMatMul when either is set or alpha != 1
  float alpha = 1.0f;
};

// A [batch..., rows, K] (rows symbolic) x constant B.
std::string MatMulModel(const MatMulCase& c, const std::vector<float>& b, size_t a_rank,
                        int64_t static_rows = 0) {
  const bool fused = c.trans_a || c.trans_b || c.alpha != 1.0f;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  if (fused) {
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
  }
  auto* g = m.mutable_graph();
  g->set_name("matmul");
  auto node = MakeNode(fused ? "FusedMatMul" : "MatMul", {"a", "b"}, {"y"}, "mm");
  if (fused) {
    node.set_domain("com.microsoft");
    nxrt::test::AddIntAttribute(&node, "transA", c.trans_a);
    nxrt::test::AddIntAttribute(&node, "transB", c.trans_b);
    auto* alpha = node.add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(c.alpha);
  }
  *g->add_node() = node;
  auto add_value = [](onnx::ValueInfoProto* v, const char* name, size_t rank) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < rank; ++i)
      t->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(i));
  };
  add_value(g->add_input(), "a", a_rank);
  if (static_rows > 0) {  // A [static_rows, K]: few rows keep the plain layout
    auto* shape = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(0)->set_dim_value(static_rows);
    shape->mutable_dim(1)->set_dim_value(c.k);
  }
  add_value(g->add_output(), "y", a_rank);
  const std::vector<int64_t> b_dims =
      c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n};
  *g->add_initializer() = nxrt::test::MakeFloatTensor("b", b_dims, b);
  return nxrt::test::Serialize(m);
}

// y[i, j] = alpha * sum_k a[i, k] b[k, j] per batch entry, in double, with the stored layouts.
std::vector<float> Reference(const MatMulCase& c, const std::vector<float>& a, int64_t batch,
                             int64_t rows, const std::vector<float>& b) {
  std::vector<float> y(static_cast<size_t>(batch * rows * c.n));
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < c.k; ++k) {
          const float av = c.trans_a ? a[(e * c.k + k) * rows + i] : a[(e * rows + i) * c.k + k];
          const float bv = c.trans_b ? b[j * c.k + k] : b[k * c.n + j];
          acc += static_cast<double>(av) * bv;
        }
        y[(e * rows + i) * c.n + j] = static_cast<float>(c.alpha * acc);
      }
  return y;
}

void ExpectCase(nxrt::Env& env, const MatMulCase& c, int threads) {
  SCOPED_TRACE("K " + std::to_string(c.k) + " N " + std::to_string(c.n) +
               (c.trans_a ? " transA" : "") + (c.trans_b ? " transB" : "") + " alpha " +
               std::to_string(c.alpha) + ", " + std::to_string(threads) + " threads");
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> b(static_cast<size_t>(c.k * c.n));
  for (float& v : b) v = normal(rng);
  for (size_t a_rank : {size_t{2}, size_t{3}}) {
    const std::string model = MatMulModel(c, b, a_rank);
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    // Two sessions of one env: the second adopts the first one's packing.
    nxrt::Session first(env, model.data(), model.size(), &options);
    nxrt::Session second(env, model.data(), model.size(), &options);
    EXPECT_EQ(second.statistic("prepack.shared_hits"), 1);
    for (int64_t rows : {1, 2, 5, 16, 31, 32, 64, 129, 300, 700}) {
      const int64_t batch = a_rank == 3 ? 2 : 1;
      std::vector<int64_t> a_dims = {rows, c.k};
      if (c.trans_a) a_dims = {c.k, rows};
      if (a_rank == 3) a_dims.insert(a_dims.begin(), batch);
      nxrt::Value a = nxrt::Value::Tensor(NX_TYPE_FLOAT, a_dims);
      for (size_t i = 0; i < a.size(); ++i) a.data<float>()[i] = normal(rng);
      const std::vector<float> as(a.data<float>(), a.data<float>() + a.size());
      const std::vector<float> expected = Reference(c, as, batch, rows, b);
      for (nxrt::Session* s : {&first, &second}) {
        auto y = s->Run({"a"}, {&a});
        ASSERT_EQ(y[0].size(), expected.size()) << rows << " rows";
        for (size_t i = 0; i < expected.size(); ++i) {
          ASSERT_NEAR(y[0].data<float>()[i], expected[i],
                      1e-4f * std::max(1.0f, std::fabs(expected[i])))
              << rows << " rows, rank " << a_rank << ", element " << i;
        }
      }
    }
  }
}

TEST(MatMulPacked, FewStaticRowsReadTheirLayoutRight) {
  nxrt::Env env(NX_LOG_ERROR);
  const MatMulCase c{50, 70};
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> b(static_cast<size_t>(c.k * c.n));
  for (float& v : b) v = normal(rng);
  for (int64_t rows : {1, 3, 8, 20}) {  // 1: the plain layout; more: blocked or panels
    const std::string model = MatMulModel(c, b, 2, rows);
    nxrt::Session session(env, model.data(), model.size());
    const int64_t dims[] = {rows, c.k};
    nxrt::Value a = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    for (size_t i = 0; i < a.size(); ++i) a.data<float>()[i] = normal(rng);
    const std::vector<float> as(a.data<float>(), a.data<float>() + a.size());
    const std::vector<float> expected = Reference(c, as, 1, rows, b);
    auto y = session.Run({"a"}, {&a});
    ASSERT_EQ(y[0].size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(y[0].data<float>()[i], expected[i],
                  1e-4f * std::max(1.0f, std::fabs(expected[i])));
  }
}

TEST(MatMulPacked, EveryRowCountReadsThePackingRight) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::vector<MatMulCase> cases = {
      {67, 130},              // neither a multiple of any block
      {256, 768},             // a transformer's projection
      {600, 70},              // several depth blocks of the AVX2 panels, a part-filled panel
      {33, 17, false, true},  // transB: stored [N, K]
      {40, 24, false, false, 0.5f},
      {21, 35, true, false},  // transA: the plain layout
  };
  for (const MatMulCase& c : cases)
    for (int threads : {1, 2, 3}) ExpectCase(env, c, threads);
}

// Gemm with a constant B takes the same packing (not with transA): alpha, beta and every
// broadcast form of C, a dynamic row count.
struct GemmCase {
  int64_t k, n;
  bool trans_a, trans_b;
  float alpha, beta;
  bool has_c;
  std::vector<int64_t> c_dims;  // empty with has_c: a scalar C
};

std::string GemmModel(const GemmCase& c, const std::vector<float>& b,
                      const std::vector<float>& cv) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("gemm");
  std::vector<std::string> inputs = {"a", "b"};
  if (c.has_c) inputs.push_back("c");
  auto node = MakeNode("Gemm", inputs, {"y"}, "gemm");
  nxrt::test::AddIntAttribute(&node, "transA", c.trans_a);
  nxrt::test::AddIntAttribute(&node, "transB", c.trans_b);
  for (auto [name, value] : {std::pair{"alpha", c.alpha}, std::pair{"beta", c.beta}}) {
    auto* at = node.add_attribute();
    at->set_name(name);
    at->set_type(onnx::AttributeProto::FLOAT);
    at->set_f(value);
  }
  *g->add_node() = node;
  for (const char* name : {"a", "y"}) {
    auto* v = std::string(name) == "a" ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("d0");
    t->mutable_shape()->add_dim()->set_dim_param("d1");
  }
  *g->add_initializer() = nxrt::test::MakeFloatTensor(
      "b", c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n}, b);
  if (c.has_c) *g->add_initializer() = nxrt::test::MakeFloatTensor("c", c.c_dims, cv);
  return nxrt::test::Serialize(m);
}

TEST(MatMulPacked, GemmWithEveryFormOfC) {
  nxrt::Env env(NX_LOG_ERROR);
  const int64_t rows = 37;
  const std::vector<GemmCase> cases = {
      {256, 256, false, true, 1.0f, 1.0f, true, {256}},  // a Linear layer: transB, bias
      {300, 45, false, false, 0.5f, 1.0f, true, {45}},   // alpha, then the bias
      {67, 130, false, false, 0.5f, 2.0f, true, {1, 130}},
      {40, 24, false, true, 1.0f, -1.0f, true, {rows, 24}},
      {33, 17, false, false, 2.0f, 0.5f, true, {rows, 1}},
      {20, 50, false, false, 1.0f, 3.0f, true, {}},   // a scalar C
      {19, 21, false, true, 1.0f, 1.0f, false, {}},   // no C
      {21, 35, true, false, 1.0f, 1.0f, true, {35}},  // transA: the plain copy and sgemm
  };
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  for (const GemmCase& c : cases) {
    SCOPED_TRACE("K " + std::to_string(c.k) + " N " + std::to_string(c.n) +
                 (c.trans_a ? " transA" : "") + (c.trans_b ? " transB" : ""));
    std::vector<float> b(static_cast<size_t>(c.k * c.n));
    for (float& v : b) v = normal(rng);
    int64_t c_count = 1;
    for (int64_t d : c.c_dims) c_count *= d;
    std::vector<float> cv(c.has_c ? static_cast<size_t>(c_count) : 0);
    for (float& v : cv) v = normal(rng);
    const std::string model = GemmModel(c, b, cv);
    for (int threads : {1, 2}) {
      nxrt::SessionOptions options;
      options.SetIntraOpThreads(threads);
      nxrt::Session first(env, model.data(), model.size(), &options);
      nxrt::Session second(env, model.data(), model.size(), &options);  // adopts the packing
      const std::vector<int64_t> a_dims =
          c.trans_a ? std::vector<int64_t>{c.k, rows} : std::vector<int64_t>{rows, c.k};
      nxrt::Value a = nxrt::Value::Tensor(NX_TYPE_FLOAT, a_dims);
      for (size_t i = 0; i < a.size(); ++i) a.data<float>()[i] = normal(rng);
      for (nxrt::Session* s : {&first, &second}) {
        auto y = s->Run({"a"}, {&a});
        ASSERT_EQ(y[0].size(), static_cast<size_t>(rows * c.n));
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < c.k; ++k) {
              const float av =
                  c.trans_a ? a.data<float>()[k * rows + i] : a.data<float>()[i * c.k + k];
              const float bv = c.trans_b ? b[j * c.k + k] : b[k * c.n + j];
              acc += static_cast<double>(av) * bv;
            }
            double expected = c.alpha * acc;
            if (c.has_c) {  // C broadcast from its trailing dims
              const auto& cd = c.c_dims;
              int64_t ci = 0;
              if (cd.size() == 1) ci = cd[0] == 1 ? 0 : j;
              if (cd.size() == 2) ci = (cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j);
              expected += c.beta * cv[static_cast<size_t>(ci)];
            }
            ASSERT_NEAR(y[0].data<float>()[i * c.n + j], expected,
                        1e-4 * std::max(1.0, std::fabs(expected)))
                << threads << " threads, row " << i << ", column " << j;
          }
      }
    }
  }
}

}  // namespace
