// The few-rows product over column panels (eps/cpu/kernels/linalg/panel_rows.h) against a
// double-precision reference: every panel width oneDNN uses, row counts across the register
// tiles (1 row up to several tiles, uneven), K and N that are not multiples of a vector, a
// partial last panel, lda and ldc wider than the rows, alpha and a bias; sub-ranges of the
// panels leave the other columns untouched, and nothing past the last column is written. Each
// ISA's body (the threaded entry point runs in tests/.../matmul_packed_test.cc).
#include "kernels/linalg/panel_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace nxrt::cpu::linalg {
namespace {

using RangeFn = void (*)(const PanelRowsProblem&, int64_t, int64_t);

bool HasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

struct Weights {
  std::vector<float> dense;   // [k, n]
  std::vector<float> panels;  // panel q: padded k rows of `width` floats, zero past n
};

Weights MakeWeights(int64_t k, int64_t n, int64_t width, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t padded_k = (k + 15) / 16 * 16, panels = (n + width - 1) / width;
  Weights w;
  w.dense.resize(static_cast<size_t>(k * n));
  w.panels.assign(static_cast<size_t>(panels * padded_k * width), 0.0f);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = dist(rng);
      w.dense[i * n + j] = v;
      w.panels[(j / width) * padded_k * width + i * width + j % width] = v;
    }
  return w;
}

// Runs panels [q_begin, panels) through `run` and checks every column of C.
template <class Run>
void ExpectMatchesReference(Run run, int64_t m, int64_t k, int64_t n, int64_t width, bool bias,
                            bool from_second_panel, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const Weights w = MakeWeights(k, n, width, rng);
  const int64_t lda = k + 3, ldc = n + 5;  // wider than the rows: the bodies must honour them
  std::vector<float> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(n));
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  std::vector<float> c0(static_cast<size_t>(m * ldc + 1));
  for (float& v : c0) v = dist(rng);
  std::vector<float> c = c0;
  PanelRowsProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.a = a.data();
  p.lda = lda;
  p.w = w.panels.data();
  p.panel = width;
  p.panel_stride = (k + 15) / 16 * 16 * width;
  p.alpha = 1.5f;
  p.bias = bias ? b.data() : nullptr;
  p.c = c.data();
  p.ldc = ldc;
  const int64_t panels = (n + width - 1) / width;
  const int64_t q_begin = from_second_panel && panels > 1 ? 1 : 0;
  run(p, q_begin, panels);
  const std::string where = "m=" + std::to_string(m) + " k=" + std::to_string(k) +
                            " n=" + std::to_string(n) + " panel " + std::to_string(width) +
                            (bias ? " bias" : "") + (q_begin > 0 ? " from panel 1" : "");
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(r * ldc + j);
      if (j >= n || j < q_begin * width) {
        ASSERT_EQ(c[at], c0[at]) << where << ": row " << r << " column " << j << " is outside";
        continue;
      }
      double dot = 0.0;
      for (int64_t i = 0; i < k; ++i)
        dot += static_cast<double>(a[r * lda + i]) * w.dense[i * n + j];
      const double want = 1.5 * dot + (bias ? b[j] : 0.0);
      ASSERT_NEAR(c[at], want, 1e-5 * (1.0 + std::sqrt(static_cast<double>(k))))
          << where << " row " << r << " column " << j;
    }
  }
  ASSERT_EQ(c.back(), c0.back()) << where << ": wrote past C";
}

void ExpectBodyMatchesReference(RangeFn range) {
  std::mt19937 rng(5);
  for (int64_t width : {16, 32, 48, 64}) {
    for (int64_t m : {1, 2, 5, 6, 7, 8, 9, 12, 13, 17, 25, 31, 40}) {
      for (int64_t k : {1, 5, 16, 17, 100}) {
        for (int64_t n : {1, 15, 16, 33, 64, 130}) {
          for (bool bias : {false, true}) {
            ExpectMatchesReference(range, m, k, n, width, bias, /*from_second_panel=*/n > 64, rng);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
}

TEST(PanelRows, Avx2MatchesTheReference) { ExpectBodyMatchesReference(&PanelRowsRangeAvx2); }

TEST(PanelRows, Avx512MatchesTheReference) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  ExpectBodyMatchesReference(&PanelRowsRangeAvx512);
}

TEST(PanelRows, RejectsAPanelWidthItDoesNotKnow) {
  std::vector<float> a(8, 1.0f), w(64, 1.0f), c(8);
  PanelRowsProblem p;
  p.m = 1;
  p.k = 1;
  p.n = 4;
  p.a = a.data();
  p.lda = 1;
  p.w = w.data();
  p.panel = 12;
  p.panel_stride = 16 * 12;
  p.c = c.data();
  p.ldc = 4;
  EXPECT_THROW(PanelRowsRangeAvx2(p, 0, 1), std::runtime_error);
}

}  // namespace
}  // namespace nxrt::cpu::linalg
