// The blocked 8-bit product (eps/cpu/kernels/quantized/int8_gemm_core.h) on every path this CPU
// runs, against a naive int32 reference: results must be identical, not merely close.
#include "kernels/quantized/int8_gemm_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace nxrt::cpu::quantized {
namespace {

struct Case {
  int64_t m, k, n;
  NxElementType a_type, b_type;
  bool per_column_zp;
  bool transposed = false;
};

std::string Describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) + " n=" + std::to_string(c.n) +
         " a=" + (c.a_type == NX_TYPE_INT8 ? "s8" : "u8") +
         " b=" + (c.b_type == NX_TYPE_INT8 ? "s8" : "u8") +
         (c.per_column_zp ? " per-column zp" : "") + (c.transposed ? " transposed" : "");
}

int32_t Value(const std::vector<uint8_t>& raw, NxElementType t, size_t i) {
  return t == NX_TYPE_INT8 ? int32_t(static_cast<int8_t>(raw[i])) : int32_t(raw[i]);
}

// Extreme values included: the products of +-255 pairs are the ones that could overflow int16.
std::vector<uint8_t> Random(size_t count, std::mt19937& rng) {
  std::vector<uint8_t> v(count);
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  for (size_t i = 0; i < count; i += 7) v[i] = (i / 7) % 2 ? 0 : 255;
  return v;
}

int32_t ZeroOf(NxElementType t, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, 255);
  return t == NX_TYPE_INT8 ? d(rng) - 128 : d(rng);
}

void CheckPath(Int8GemmPath path, const Case& c, uint32_t seed) {
  SCOPED_TRACE(Describe(c));
  std::mt19937 rng(seed);
  std::vector<uint8_t> a = Random(static_cast<size_t>(c.m * c.k), rng);
  std::vector<uint8_t> b = Random(static_cast<size_t>(c.k * c.n), rng);
  const int32_t a_zp = ZeroOf(c.a_type, rng);
  std::vector<int32_t> b_zp(c.per_column_zp ? c.n : 1);
  for (auto& z : b_zp) z = ZeroOf(c.b_type, rng);
  std::vector<float> b_scale(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) b_scale[j] = 0.01f * static_cast<float>(j % 5 + 1);
  std::vector<float> bias(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) bias[j] = 0.5f * static_cast<float>(j % 3);

  // Reference: B element (i, j) at b[i * n + j], or b[j * k + i] when transposed.
  std::vector<int32_t> ref(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      int32_t sum = 0;
      const int32_t bz = b_zp.size() == 1 ? b_zp[0] : b_zp[j];
      for (int64_t l = 0; l < c.k; ++l) {
        const size_t bi = static_cast<size_t>(c.transposed ? j * c.k + l : l * c.n + j);
        sum += (Value(a, c.a_type, i * c.k + l) - a_zp) * (Value(b, c.b_type, bi) - bz);
      }
      ref[i * c.n + j] = sum;
    }

  const PackedInt8B w = PackInt8B(path, b.data(), c.b_type, c.k, c.n, b_zp, b_scale, c.transposed);
  PreparedInt8A pa;
  PrepareInt8A(a.data(), c.a_type, c.m, c.k, a_zp, w, pa);

  std::vector<int32_t> y32(static_cast<size_t>(c.m * c.n), -7);
  Int8GemmOutput out;
  out.y32 = y32.data();
  out.ldy = c.n;
  Int8Gemm(pa, w, out, 1);
  ASSERT_EQ(y32, ref);
  // Two threads: row chunks and panels split differently (each thread configures AMX itself).
  std::fill(y32.begin(), y32.end(), -7);
  Int8Gemm(pa, w, out, 2);
  ASSERT_EQ(y32, ref);

  // The float epilogue: a_scale * b_scale[j] * sum + bias[j], then accumulated onto itself
  // (the int32 sums were checked exactly above).
  pa.scale = 0.25f;
  std::vector<float> y(static_cast<size_t>(c.m * c.n), 0.f);
  Int8GemmOutput fo;
  fo.y = y.data();
  fo.ldy = c.n;
  fo.bias = bias.data();
  Int8Gemm(pa, w, fo, 1);
  fo.accumulate = true;
  Int8Gemm(pa, w, fo, 1);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const float v = static_cast<float>(ref[i * c.n + j]) * (0.25f * b_scale[j]);
      const float once = v + bias[j];
      // The compiler may fuse the multiply and add (FMA): equal up to the last bits.
      const float want = (once + v) + bias[j];
      ASSERT_NEAR(y[i * c.n + j], want, 1e-6f * std::max(1.f, std::fabs(want)))
          << "at " << i << ", " << j;
    }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const NxElementType types[] = {NX_TYPE_UINT8, NX_TYPE_INT8};
  // Odd sizes: M not a multiple of the tile rows, N not of 16, K not of 2 or 4; K = 1100 spans
  // more than one K block (256 groups: 512 k for AVX2, 1024 for VNNI), K = 0 gives zeros.
  // AMX: 13 and 9 rows pad a tile, 25 spans two, 70 three 32-row blocks; 7 takes VNNI.
  const int64_t shapes[][3] = {{1, 1, 1},    {7, 3, 5},      {13, 17, 33}, {6, 64, 16},
                               {9, 130, 47}, {25, 1100, 19}, {4, 0, 3},    {70, 96, 40}};
  for (const auto& s : shapes)
    for (NxElementType at : types)
      for (NxElementType bt : types)
        for (bool per_col : {false, true}) cases.push_back({s[0], s[1], s[2], at, bt, per_col});
  cases.push_back({5, 37, 21, NX_TYPE_UINT8, NX_TYPE_INT8, true, true});
  return cases;
}

void CheckAllCases(Int8GemmPath path) {
  uint32_t seed = 1;
  for (const Case& c : Cases()) CheckPath(path, c, seed++);
}

TEST(Int8GemmCore, PortableMatchesTheReference) { CheckAllCases(Int8GemmPath::kPortable); }

// The VNNI layout, shifts and corrections, with a plain C++ micro-kernel: runs everywhere.
TEST(Int8GemmCore, PortableQuadsMatchesTheReference) {
  CheckAllCases(Int8GemmPath::kPortableQuads);
}

TEST(Int8GemmCore, Avx2MatchesTheReference) { CheckAllCases(Int8GemmPath::kAvx2); }

TEST(Int8GemmCore, Avx512VnniMatchesTheReference) {
  if (!CpuHasAvx512Vnni()) GTEST_SKIP() << "this CPU has no AVX512-VNNI";
  CheckAllCases(Int8GemmPath::kAvx512Vnni);
}

// The AMX padding (k to 64, A's rows to 16) and 32-row blocking, with a plain C++ stand-in for
// the tile instruction: runs everywhere.
TEST(Int8GemmCore, PortableAmxMatchesTheReference) { CheckAllCases(Int8GemmPath::kPortableAmx); }

TEST(Int8GemmCore, AmxMatchesTheReference) {
  if (!AmxInt8Usable()) GTEST_SKIP() << "this CPU (or OS) has no usable AMX-INT8";
  CheckAllCases(Int8GemmPath::kAmx);
}

TEST(Int8GemmCore, AvxVnniMatchesTheReference) {
  if (!CpuHasAvxVnni()) GTEST_SKIP() << "this CPU has no AVX-VNNI";
  CheckAllCases(Int8GemmPath::kAvxVnni);
}

TEST(Int8GemmCore, BestPathFollowsTheIsaCap) {
  const Int8GemmPath avx2_best = CpuHasAvxVnni() ? Int8GemmPath::kAvxVnni : Int8GemmPath::kAvx2;
  EXPECT_EQ(BestInt8GemmPath(Isa::kAvx2), avx2_best);
  const Int8GemmPath avx512_best = CpuHasAvx512Vnni() ? Int8GemmPath::kAvx512Vnni : avx2_best;
  EXPECT_EQ(BestInt8GemmPath(Isa::kAvx512), AmxInt8Usable() ? Int8GemmPath::kAmx : avx512_best);
  EXPECT_EQ(BestInt8GemmPath(Isa::kAvx512, /*allow_amx=*/false), avx512_best);
  EXPECT_EQ(BestInt8GemmPath(Isa::kAvx2), avx2_best);
}

// Float activations: quantized as onnxruntime's DynamicQuantizeLinear, then multiplied exactly.
TEST(Int8GemmCore, QuantizeFloatAMatchesTheScalarDefinition) {
  const int64_t m = 11, k = 21, n = 18;  // 11 rows: AMX tiles, padded
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-3.f, 5.f);
  std::vector<float> a(static_cast<size_t>(m * k));
  for (auto& x : a) x = d(rng);
  std::vector<uint8_t> b = Random(static_cast<size_t>(k * n), rng);
  // The definition: range widened to 0, scale, zero point, q = clamp(rint(x / s) + zp).
  float mn = 0.f, mx = 0.f;
  for (float x : a) mn = std::min(mn, x), mx = std::max(mx, x);
  const float scale = (mx - mn) / 255.f;
  const int32_t zp = static_cast<int32_t>(std::nearbyint(std::clamp(-mn / scale, 0.f, 255.f)));
  std::vector<uint8_t> q(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    q[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(a[i] / scale) + zp, 0.f, 255.f));
  }
  for (Int8GemmPath path : {Int8GemmPath::kPortable, Int8GemmPath::kAvx2, Int8GemmPath::kAvx512Vnni,
                            Int8GemmPath::kPortableQuads, Int8GemmPath::kAvxVnni,
                            Int8GemmPath::kAmx, Int8GemmPath::kPortableAmx}) {
    if (path == Int8GemmPath::kAvx512Vnni && !CpuHasAvx512Vnni()) continue;
    if (path == Int8GemmPath::kAvxVnni && !CpuHasAvxVnni()) continue;
    if (path == Int8GemmPath::kAmx && !AmxInt8Usable()) continue;
    const PackedInt8B w = PackInt8B(path, b.data(), NX_TYPE_INT8, k, n, {3}, {1.f});
    PreparedInt8A from_float, from_q;
    QuantizeFloatA(a.data(), m, k, w, from_float);
    EXPECT_EQ(from_float.scale, scale);
    EXPECT_EQ(from_float.zero_point, zp);
    PrepareInt8A(q.data(), NX_TYPE_UINT8, m, k, zp, w, from_q);
    std::vector<int32_t> y1(static_cast<size_t>(m * n)), y2(y1.size());
    Int8GemmOutput o1, o2;
    o1.y32 = y1.data();
    o2.y32 = y2.data();
    o1.ldy = o2.ldy = n;
    Int8Gemm(from_float, w, o1, 1);
    Int8Gemm(from_q, w, o2, 1);
    EXPECT_EQ(y1, y2);
  }
}

}  // namespace
}  // namespace nxrt::cpu::quantized
