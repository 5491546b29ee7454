// MatMulInteger and QLinearMatMul (eps/cpu/kernels/linalg/quantized_matmul.cc) on the blocked
// 8-bit GEMM: exact against a scalar reference for int8 and uint8 operands and outputs, a
// constant B (2-D, or 3-D with one batch entry) packed once and a B given at run time (batched,
// broadcast against A), 1-D A, k and n that fill no block, per-tensor and per-column B scales
// and zero points, 1 and 3 threads. A per-row A zero point takes the portable int32 GEMM, which
// the session counts with its reference primitives; the blocked path counts nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "eps/cpu/kernels/linalg/int8_tensor_util.h"
#include "test_util.h"

namespace {

using nxrt::test::AddTensorInput;
using nxrt::test::Int8Tensor;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;
using nxrt::test::RandomInt8;
using nxrt::test::ToProto;
using nxrt::test::ToValue;

int OnnxType(bool is_signed) { return nxrt::test::OnnxInt8Type(is_signed); }

struct Case {
  std::vector<int64_t> a_dims, b_dims;
  bool a_signed = false, b_signed = true, y_signed = false;
  bool b_constant = true;
  bool per_column = false;    // B's scale and zero point per column
  bool per_row_a_zp = false;  // A's zero point per row (the portable path)
};

struct Operands {
  Int8Tensor a, b, b_zp, a_zp;
  std::vector<float> b_scale;
  float a_scale = 0.02f, y_scale = 0.f;
  int32_t y_zp = 0;
};

Operands MakeOperands(const Case& c, std::mt19937& rng) {
  Operands o;
  o.a = RandomInt8(c.a_dims, c.a_signed, rng);
  o.b = RandomInt8(c.b_dims, c.b_signed, rng);
  const int64_t n = c.b_dims.back(), m = c.a_dims.size() > 1 ? c.a_dims[c.a_dims.size() - 2] : 1;
  o.b_zp =
      RandomInt8(c.per_column ? std::vector<int64_t>{n} : std::vector<int64_t>{}, c.b_signed, rng);
  o.a_zp = RandomInt8(c.per_row_a_zp ? std::vector<int64_t>{m} : std::vector<int64_t>{}, c.a_signed,
                      rng);
  // Zero points near the middle of the range, as quantizers choose them.
  for (Int8Tensor* zp : {&o.a_zp, &o.b_zp}) {
    for (auto& z : zp->values) z = (zp->is_signed ? 0 : 128) + z % 20;
  }
  std::uniform_real_distribution<float> scale(0.005f, 0.02f);
  o.b_scale.resize(c.per_column ? static_cast<size_t>(n) : 1);
  for (auto& s : o.b_scale) s = scale(rng);
  const int64_t k = c.a_dims.back();
  // The sums have a standard deviation of about 74^2 sqrt(k); that becomes about 50.
  o.y_scale = o.a_scale * 0.0125f * 74.f * 74.f * std::sqrt(static_cast<float>(k)) / 50.f;
  o.y_zp = c.y_signed ? 5 : 130;
  return o;
}

// Batch broadcasting of [..., M, K] x [..., K, N] (A 1-D: one row, dropped from the output).
struct Shapes {
  int64_t m = 1, k = 0, n = 0;
  std::vector<int64_t> batch, out_dims;
  std::vector<int64_t> a_batch, b_batch;
};

Shapes Broadcast(const Case& c) {
  Shapes s;
  const bool a_1d = c.a_dims.size() == 1;
  s.k = c.a_dims.back();
  s.m = a_1d ? 1 : c.a_dims[c.a_dims.size() - 2];
  s.n = c.b_dims.back();
  s.a_batch.assign(c.a_dims.begin(), c.a_dims.end() - (a_1d ? 1 : 2));
  s.b_batch.assign(c.b_dims.begin(), c.b_dims.end() - 2);
  const size_t rank = std::max(s.a_batch.size(), s.b_batch.size());
  s.a_batch.insert(s.a_batch.begin(), rank - s.a_batch.size(), 1);
  s.b_batch.insert(s.b_batch.begin(), rank - s.b_batch.size(), 1);
  for (size_t i = 0; i < rank; ++i) s.batch.push_back(std::max(s.a_batch[i], s.b_batch[i]));
  s.out_dims = s.batch;
  if (!a_1d) s.out_dims.push_back(s.m);
  s.out_dims.push_back(s.n);
  return s;
}

// The exact sums (A - a_zp)(B - b_zp) per output element, in output order.
std::vector<int64_t> ReferenceSums(const Case& c, const Operands& o) {
  const Shapes s = Broadcast(c);
  int64_t entries = 1;
  for (int64_t d : s.batch) entries *= d;
  std::vector<int64_t> sums;
  for (int64_t e = 0; e < entries; ++e) {
    int64_t a_entry = 0, b_entry = 0, rest = e;
    int64_t a_stride = 1, b_stride = 1;
    for (size_t i = s.batch.size(); i-- > 0;) {
      const int64_t idx = rest % s.batch[i];
      rest /= s.batch[i];
      a_entry += (s.a_batch[i] == 1 ? 0 : idx) * a_stride;
      b_entry += (s.b_batch[i] == 1 ? 0 : idx) * b_stride;
      a_stride *= s.a_batch[i];
      b_stride *= s.b_batch[i];
    }
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const int32_t az = o.a_zp.values[o.a_zp.values.size() == 1 ? 0 : i];
        const int32_t bz = o.b_zp.values[o.b_zp.values.size() == 1 ? 0 : j];
        int64_t sum = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const int32_t a = o.a.values[(a_entry * s.m + i) * s.k + k];
          const int32_t b = o.b.values[(b_entry * s.k + k) * s.n + j];
          sum += int64_t(a - az) * (b - bz);
        }
        sums.push_back(sum);
      }
  }
  return sums;
}

// QLinearMatMul's outputs from the sums: the combined scale in float, applied in double.
std::vector<int32_t> ReferenceRequantized(const Case& c, const Operands& o) {
  const std::vector<int64_t> sums = ReferenceSums(c, o);
  const int64_t n = c.b_dims.back();
  const double lo = c.y_signed ? -128 : 0, hi = c.y_signed ? 127 : 255;
  std::vector<int32_t> y;
  for (size_t i = 0; i < sums.size(); ++i) {
    const float bs = o.b_scale[o.b_scale.size() == 1 ? 0 : static_cast<int64_t>(i) % n];
    const double scale = (o.a_scale * bs) / o.y_scale;
    const double r = std::nearbyint(static_cast<double>(sums[i]) * scale) + o.y_zp;
    y.push_back(static_cast<int32_t>(std::clamp(r, lo, hi)));
  }
  return y;
}

struct Result {
  std::vector<int32_t> y;
  std::vector<int64_t> dims;
  int64_t reference_primitives = -1;
};

// Runs the one-node model; `qlinear` picks QLinearMatMul, else MatMulInteger.
Result RunModel(const Case& c, const Operands& o, bool qlinear, int threads) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("quantized_matmul");
  AddTensorInput(g, "a", OnnxType(c.a_signed), c.a_dims);
  if (c.b_constant) {
    *g->add_initializer() = ToProto("b", o.b);
  } else {
    AddTensorInput(g, "b", OnnxType(c.b_signed), c.b_dims);
  }
  *g->add_initializer() = ToProto("a_zp", o.a_zp);
  *g->add_initializer() = ToProto("b_zp", o.b_zp);
  if (qlinear) {
    *g->add_initializer() = MakeFloatTensor("a_scale", {}, {o.a_scale});
    const std::vector<int64_t> bs_dims =
        o.b_scale.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{c.b_dims.back()};
    *g->add_initializer() = MakeFloatTensor("b_scale", bs_dims, o.b_scale);
    *g->add_initializer() = MakeFloatTensor("y_scale", {}, {o.y_scale});
    *g->add_initializer() = ToProto("y_zp", Int8Tensor{{}, {o.y_zp}, c.y_signed});
    *g->add_node() = MakeNode("QLinearMatMul",
                              {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"},
                              {"y"}, "qlmm");
  } else {
    *g->add_node() = MakeNode("MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"}, "mmi");
  }
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(qlinear ? OnnxType(c.y_signed)
                                                                  : onnx::TensorProto::INT32);
  const std::string bytes = m.SerializeAsString();

  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetIntraOpThreads(threads);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  nxrt::Value a = ToValue(o.a), b = ToValue(o.b);
  std::vector<nxrt::Value> out =
      c.b_constant ? session.Run({"a"}, {&a}) : session.Run({"a", "b"}, {&a, &b});
  Result r;
  r.dims = out[0].shape();
  const void* raw = out[0].data<uint8_t>();
  for (size_t i = 0; i < out[0].size(); ++i) {
    if (!qlinear) {
      r.y.push_back(static_cast<const int32_t*>(raw)[i]);
    } else if (c.y_signed) {
      r.y.push_back(static_cast<const int8_t*>(raw)[i]);
    } else {
      r.y.push_back(static_cast<const uint8_t*>(raw)[i]);
    }
  }
  r.reference_primitives = session.statistic("ep.CPU.reference_primitives");
  return r;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // 2-D constant B, k and n that fill no block.
  cases.push_back({{13, 37}, {37, 21}});
  // Batched A folded into rows, per-column B, int8 everything.
  cases.push_back({{2, 3, 40}, {40, 33}, true, true, true, true, true});
  // 1-D A.
  cases.push_back({{29}, {29, 17}, false, false, false});
  // A B given at run time, batched and broadcast against A.
  cases.push_back({{3, 1, 5, 24}, {2, 24, 18}, false, true, true, false, true});
  // A constant 3-D B with one batch entry; k past one K block of the VNNI and AMX paths.
  cases.push_back({{2, 9, 1100}, {1, 1100, 20}, false, true, false, true, false});
  return cases;
}

TEST(QuantizedMatMul, QLinearMatMulMatchesTheReferenceOnTheBlockedGemm) {
  std::mt19937 rng(11);
  for (const Case& c : Cases()) {
    const Operands o = MakeOperands(c, rng);
    const std::vector<int32_t> want = ReferenceRequantized(c, o);
    // Most outputs inside the 8-bit range (the scales are chosen so), a few saturated.
    const int32_t lo = c.y_signed ? -128 : 0, hi = c.y_signed ? 127 : 255;
    const auto inside =
        std::count_if(want.begin(), want.end(), [&](int32_t v) { return v > lo && v < hi; });
    EXPECT_GT(inside, static_cast<std::ptrdiff_t>(want.size() / 2));
    for (int threads : {1, 3}) {
      SCOPED_TRACE("a " + std::to_string(c.a_dims.back()) + " x b n=" +
                   std::to_string(c.b_dims.back()) + " rank " + std::to_string(c.a_dims.size()) +
                   "/" + std::to_string(c.b_dims.size()) + ", threads " + std::to_string(threads));
      const Result got = RunModel(c, o, true, threads);
      EXPECT_EQ(got.dims, Broadcast(c).out_dims);
      ASSERT_EQ(got.y, want);
      EXPECT_EQ(got.reference_primitives, 0);
    }
  }
}

TEST(QuantizedMatMul, MatMulIntegerMatchesTheReferenceOnTheBlockedGemm) {
  std::mt19937 rng(12);
  for (const Case& c : Cases()) {
    const Operands o = MakeOperands(c, rng);
    const std::vector<int64_t> sums = ReferenceSums(c, o);
    const std::vector<int32_t> want(sums.begin(), sums.end());
    for (int threads : {1, 3}) {
      const Result got = RunModel(c, o, false, threads);
      EXPECT_EQ(got.dims, Broadcast(c).out_dims);
      ASSERT_EQ(got.y, want) << "threads " << threads;
      EXPECT_EQ(got.reference_primitives, 0);
    }
  }
}

TEST(QuantizedMatMul, APerRowZeroPointRunsThePortableGemmAndIsCounted) {
  std::mt19937 rng(13);
  Case c{{6, 20}, {20, 9}};
  c.per_row_a_zp = true;
  const Operands o = MakeOperands(c, rng);
  const Result q = RunModel(c, o, true, 1);
  EXPECT_EQ(q.y, ReferenceRequantized(c, o));
  EXPECT_EQ(q.reference_primitives, 1);
  const Result i = RunModel(c, o, false, 1);
  const std::vector<int64_t> sums = ReferenceSums(c, o);
  EXPECT_EQ(i.y, std::vector<int32_t>(sums.begin(), sums.end()));
  EXPECT_EQ(i.reference_primitives, 1);
}

}  // namespace
