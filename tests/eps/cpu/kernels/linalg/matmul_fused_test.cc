// com.nxrt FusedMatMul (eps/cpu/kernels/linalg/matmul.cc), as a node written by hand: with a
// constant weight and bias the primitive applies bias and activation (row or column slices at 2
// and 3 threads; Gelu and Sigmoid after it, on each slice, and after nxrt's few-rows kernel); with
// B and the bias as graph inputs the kernel adds them after the product.
// Compared with a double-precision reference on sizes that are no multiple of a vector.
#include <gtest/gtest.h>

#include <cmath>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

// y = activation(a * w + bias); w [K, N] and bias [N] initializers when `constant`, else inputs.
std::string FusedMatMulModel(const std::string& activation, bool constant, int64_t kK, int64_t kN,
                             const std::vector<float>& w, const std::vector<float>& bias) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* nx = m.add_opset_import();
  nx->set_domain("com.nxrt");
  nx->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("fused_matmul");
  auto node = nxrt::test::MakeNode("FusedMatMul", {"a", "w", "bias"}, {"y"}, "fmm");
  node.set_domain("com.nxrt");
  if (!activation.empty()) {
    auto* act = node.add_attribute();
    act->set_name("activation");
    act->set_type(onnx::AttributeProto::STRING);
    act->set_s(activation);
  }
  *g->add_node() = node;
  auto add = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      if (d < 0)
        t->mutable_shape()->add_dim()->set_dim_param(d == -1 ? "rows" : "columns");
      else
        t->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
  add(g->add_input(), "a", {-1, kK});
  if (constant) {
    *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {kK, kN}, w);
    *g->add_initializer() = nxrt::test::MakeFloatTensor("bias", {kN}, bias);
  } else {
    add(g->add_input(), "w", {kK, kN});
    add(g->add_input(), "bias", {-2});  // symbolic: the kernel checks it
  }
  add(g->add_output(), "y", {-1, kN});
  return nxrt::test::Serialize(m);
}

double Activate(const std::string& activation, double v) {
  if (activation == "Relu") return v > 0 ? v : 0;
  if (activation == "Gelu") return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  if (activation == "Tanh") return std::tanh(v);
  if (activation == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
  return v;
}

// K and N: neither a multiple of a vector; the second runs over several K blocks of the AVX2
// panel kernel (panel_gemm.h) with a part-filled last panel.
void ExpectFusedMatMul(int64_t kK, int64_t kN) {
  nxrt::Env env(NX_LOG_ERROR);
  std::mt19937 rng(21);
  std::normal_distribution<float> normal;
  std::vector<float> w(static_cast<size_t>(kK * kN)), bias(static_cast<size_t>(kN));
  for (float& v : w) v = normal(rng) * 0.3f;
  for (float& v : bias) v = normal(rng);
  for (const std::string activation : {"", "Relu", "Gelu", "Tanh", "Sigmoid"}) {
    for (bool constant : {true, false}) {
      const std::string model = FusedMatMulModel(activation, constant, kK, kN, w, bias);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("activation '" + activation + "', " + (constant ? "constant" : "input") +
                     " weights, " + std::to_string(threads) + " threads");
        nxrt::SessionOptions options;
        options.SetIntraOpThreads(threads);
        nxrt::Session session(env, model.data(), model.size(), &options);
        for (int64_t rows : {1, 5, 16, 33, 200}) {
          const std::vector<int64_t> a_dims = {rows, kK};
          nxrt::Value a = nxrt::Value::Tensor(NX_TYPE_FLOAT, a_dims);
          for (size_t i = 0; i < a.size(); ++i) a.data<float>()[i] = normal(rng);
          std::vector<nxrt::Value> y;
          if (constant) {
            y = session.Run({"a"}, {&a});
          } else {
            const std::vector<int64_t> w_dims = {kK, kN}, b_dims = {kN};
            nxrt::Value wv = nxrt::Value::Tensor(NX_TYPE_FLOAT, w_dims);
            nxrt::Value bv = nxrt::Value::Tensor(NX_TYPE_FLOAT, b_dims);
            std::copy(w.begin(), w.end(), wv.data<float>());
            std::copy(bias.begin(), bias.end(), bv.data<float>());
            y = session.Run({"a", "w", "bias"}, {&a, &wv, &bv});
          }
          ASSERT_EQ(y[0].size(), static_cast<size_t>(rows * kN));
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < kN; ++j) {
              double acc = bias[static_cast<size_t>(j)], magnitude = std::fabs(acc);
              for (int64_t k = 0; k < kK; ++k) {
                const double term =
                    static_cast<double>(a.data<float>()[r * kK + k]) * w[k * kN + j];
                acc += term;
                magnitude += std::fabs(term);
              }
              const double want = Activate(activation, acc);
              // float32 sums of kK terms: the error grows with their magnitudes
              ASSERT_NEAR(y[0].data<float>()[r * kN + j], want, 1e-6 * magnitude + 1e-4)
                  << rows << " rows, element " << r << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(FusedMatMul, BiasAndActivationMatchTheReference) { ExpectFusedMatMul(29, 141); }

TEST(FusedMatMul, SeveralDepthBlocksMatchTheReference) { ExpectFusedMatMul(300, 37); }

TEST(FusedMatMul, BiasOfTheWrongSizeIsAnError) {
  nxrt::Env env(NX_LOG_ERROR);
  const int64_t kK = 29, kN = 141;
  std::vector<float> w(static_cast<size_t>(kK * kN), 0.5f), bias(static_cast<size_t>(kN), 1.0f);
  const std::string model = FusedMatMulModel("Relu", false, kK, kN, w, bias);
  nxrt::Session session(env, model.data(), model.size());
  const std::vector<int64_t> a_dims = {3, kK}, w_dims = {kK, kN}, b_dims = {kN - 1};
  nxrt::Value a = nxrt::Value::Tensor(NX_TYPE_FLOAT, a_dims);
  nxrt::Value wv = nxrt::Value::Tensor(NX_TYPE_FLOAT, w_dims);
  nxrt::Value bv = nxrt::Value::Tensor(NX_TYPE_FLOAT, b_dims);
  try {
    session.Run({"a", "w", "bias"}, {&a, &wv, &bv});
    FAIL() << "a bias of " << kN - 1 << " values for " << kN << " columns ran";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("bias must be 141 floats"), std::string::npos) << e.what();
  }
}

}  // namespace
