// The matrix-vector bodies (eps/cpu/kernels/linalg/gemv.h) against a double-precision
// reference: the three matrix layouts (rows along k, rows along j, column panels), lengths that
// are not multiples of the vector width, alpha and beta, sub-ranges of the outputs (the rest
// must stay untouched), each ISA.
#include "kernels/linalg/gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace nxrt::cpu::linalg {
namespace {

using RangeFn = void (*)(const GemvProblem&, int64_t, int64_t);

bool HasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

void ExpectBodyMatchesReference(RangeFn range) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // Up to 2048 the rows are read one by one, above it four at a time (gemv_body.h).
  const int64_t ks[] = {1, 3, 7, 8, 9, 16, 17, 33, 64, 100, 1280, 2048, 2049, 4100};
  const int64_t ns[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, 130};
  for (bool contiguous_k : {true, false}) {
    for (int64_t k : ks) {
      for (int64_t n : ns) {
        for (float beta : {0.0f, 0.5f}) {
          const int64_t pad = 3;  // ld larger than the row: the bodies must honour ld
          const int64_t ld = (contiguous_k ? k : n) + pad;
          std::vector<float> x(k), m((contiguous_k ? n : k) * ld), y0(n + 2);
          for (float& v : x) v = dist(rng);
          for (float& v : m) v = dist(rng);
          for (float& v : y0) v = dist(rng);
          // Outputs [1, n + 1) of a buffer with a guard on each side; the range skips the first
          // output when there are several, which must then keep its old value.
          const int64_t begin = n > 1 ? 1 : 0;
          std::vector<float> y = y0;
          GemvProblem p;
          p.k = k;
          p.n = n;
          p.x = x.data();
          p.m = m.data();
          p.ld = ld;
          p.contiguous_k = contiguous_k;
          p.alpha = 1.5f;
          p.beta = beta;
          p.y = y.data() + 1;
          range(p, begin, n);
          const std::string where = "k=" + std::to_string(k) + " n=" + std::to_string(n) +
                                    (contiguous_k ? " dot" : " axpy") +
                                    " beta=" + std::to_string(beta);
          ASSERT_EQ(y[0], y0[0]) << where << ": wrote before the outputs";
          ASSERT_EQ(y[n + 1], y0[n + 1]) << where << ": wrote past the outputs";
          for (int64_t j = 0; j < n; ++j) {
            if (j < begin) {
              ASSERT_EQ(y[j + 1], y0[j + 1])
                  << where << ": output " << j << " is outside the range";
              continue;
            }
            double dot = 0.0;
            for (int64_t i = 0; i < k; ++i) {
              dot += static_cast<double>(x[i]) * (contiguous_k ? m[j * ld + i] : m[i * ld + j]);
            }
            const double want = 1.5 * dot + beta * static_cast<double>(y0[j + 1]);
            ASSERT_NEAR(y[j + 1], want, 1e-5 * (1.0 + std::sqrt(static_cast<double>(k))))
                << where << " output " << j;
          }
        }
      }
    }
  }
}

// Column panels (oneDNN's BA16a{w}b weights): panel q holds columns [q w, (q + 1) w) as rows of
// w floats, K padded to 16 with zero rows, the columns past n zero. Ranges start on a panel (as
// Gemv hands them out); the last panel is partial when w does not divide n.
void ExpectPanelsMatchReference(RangeFn range, int lanes) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t width : {16, 32, 48, 64}) {
    if (width % lanes != 0) continue;
    for (int64_t k : {1, 5, 16, 17, 100, 513}) {
      for (int64_t n : {1, 15, 16, 33, 64, 130, 200}) {
        for (float beta : {0.0f, 0.5f}) {
          const int64_t padded_k = (k + 15) / 16 * 16, panels = (n + width - 1) / width;
          std::vector<float> x(k), w(static_cast<size_t>(panels * padded_k * width), 0.0f);
          std::vector<float> dense(static_cast<size_t>(k * n));  // [k, n]
          for (float& v : x) v = dist(rng);
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const float v = dist(rng);
              dense[i * n + j] = v;
              w[(j / width) * padded_k * width + i * width + j % width] = v;
            }
          std::vector<float> y0(n + 2);
          for (float& v : y0) v = dist(rng);
          std::vector<float> y = y0;
          const int64_t begin = n > width ? width : 0;
          GemvProblem p;
          p.k = k;
          p.n = n;
          p.x = x.data();
          p.m = w.data();
          p.panel = width;
          p.ld = padded_k * width;
          p.alpha = 1.5f;
          p.beta = beta;
          p.y = y.data() + 1;
          range(p, begin, n);
          const std::string where = "panel " + std::to_string(width) + " k=" + std::to_string(k) +
                                    " n=" + std::to_string(n) + " beta=" + std::to_string(beta);
          ASSERT_EQ(y[0], y0[0]) << where << ": wrote before the outputs";
          ASSERT_EQ(y[n + 1], y0[n + 1]) << where << ": wrote past the outputs";
          for (int64_t j = 0; j < n; ++j) {
            if (j < begin) {
              ASSERT_EQ(y[j + 1], y0[j + 1]) << where << ": output " << j << " is outside";
              continue;
            }
            double dot = 0.0;
            for (int64_t i = 0; i < k; ++i) dot += static_cast<double>(x[i]) * dense[i * n + j];
            const double want = 1.5 * dot + beta * static_cast<double>(y0[j + 1]);
            ASSERT_NEAR(y[j + 1], want, 1e-5 * (1.0 + std::sqrt(static_cast<double>(k))))
                << where << " output " << j;
          }
        }
      }
    }
  }
}

TEST(Gemv, Avx2MatchesTheReference) {
  ExpectBodyMatchesReference(&GemvRangeAvx2);
  ExpectPanelsMatchReference(&GemvRangeAvx2, 8);
}

TEST(Gemv, Avx512MatchesTheReference) {
  if (!HasAvx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  ExpectBodyMatchesReference(&GemvRangeAvx512);
  ExpectPanelsMatchReference(&GemvRangeAvx512, 16);
}

}  // namespace
}  // namespace nxrt::cpu::linalg
