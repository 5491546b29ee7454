// Softmax / LogSoftmax / Hardmax loops over a tensor viewed as [outer, n, inner] (n elements
// normalised together, `inner` apart). Shared by softmax.cc and the loss kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/parallel.h"
#include "kernels/reduction/reduce_ops.h"
#include "kernels/reduction/vec_math.h"

namespace nxrt::cpu::reduction {

enum class Mode { kSoftmax, kLogSoftmax, kHardmax };

// Columns handled together when the axis is not the last one.
inline constexpr int64_t kColBlock = 256;

template <class C>
inline C MaxNan(C m, C v) {
  return (v > m || std::isnan(v)) ? v : m;
}

// Softmax / LogSoftmax of one contiguous row x[0, n) into y (may not alias x), scalar code with
// exact reference semantics for NaN and infinities (NaN or +inf anywhere poisons the row).
template <Mode M, class C>
inline void RowScalar(const C* x, C* y, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) m = MaxNan(m, x[i]);
  C sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  if constexpr (M == Mode::kSoftmax) {
    const C inv = C(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m) * inv;
  } else {
    // (x - m) - log(sum), not x - (m + log(sum)): the latter rounds at the scale of m and loses
    // the small log-probabilities of the largest entries.
    const C log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
  }
}

template <Mode M, class C>
inline void Row(const C* x, C* y, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    const float m = MaxOf(x, n);
    if (std::isfinite(m)) {  // every x - m is in [-inf, 0]: the vector exp applies
      if constexpr (M == Mode::kSoftmax) {
        const float inv = 1.0f / ExpShiftSum(x, m, y, n);
        for (int64_t i = 0; i < n; ++i) y[i] *= inv;
      } else {
        const float log_sum = std::log(ExpShiftSumOnly(x, m, n));
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
      }
      return;
    }
  }
  RowScalar<M>(x, y, n);
}

// Softmax / LogSoftmax down the columns [0, len) of n rows that are `stride` apart. `mx` and
// `sum` are scratch of len elements. Works row by row so every load is contiguous.
template <Mode M, class C>
inline void Columns(const C* x, C* y, int64_t n, int64_t stride, int64_t len, C* mx, C* sum) {
  std::copy(x, x + len, mx);
  for (int64_t i = 1; i < n; ++i) {
    const C* xr = x + i * stride;
    for (int64_t j = 0; j < len; ++j) mx[j] = MaxNan(mx[j], xr[j]);
  }
  bool finite = true;
  for (int64_t j = 0; j < len; ++j) finite = finite && std::isfinite(mx[j]);
  std::fill(sum, sum + len, C(0));
  for (int64_t i = 0; i < n; ++i) {
    const C* xr = x + i * stride;
    C* yr = y + i * stride;
    if constexpr (std::is_same_v<C, float>) {
      if (finite) {
        ExpShiftAccumulate(xr, mx, yr, sum, len);
        continue;
      }
    }
    for (int64_t j = 0; j < len; ++j) sum[j] += (yr[j] = std::exp(xr[j] - mx[j]));
  }
  if constexpr (M == Mode::kSoftmax) {
    for (int64_t j = 0; j < len; ++j) sum[j] = C(1) / sum[j];
    for (int64_t i = 0; i < n; ++i) {
      C* yr = y + i * stride;
      for (int64_t j = 0; j < len; ++j) yr[j] *= sum[j];
    }
  } else {
    for (int64_t j = 0; j < len; ++j) sum[j] = std::log(sum[j]);
    for (int64_t i = 0; i < n; ++i) {
      const C* xr = x + i * stride;
      C* yr = y + i * stride;
      for (int64_t j = 0; j < len; ++j) yr[j] = (xr[j] - mx[j]) - sum[j];
    }
  }
}

// Tasks [b, e) of Normalize: task t is column block t % col_blocks of outer slice t / col_blocks.
// 16-bit floats are widened into float scratch (wx, wy: n x kColBlock each) and narrowed back.
template <Mode M, class T>
inline void NormalizeTasks(const T* x, T* y, int64_t n, int64_t inner, int64_t b, int64_t e) {
  using C = ComputeT<T>;
  constexpr bool kWiden = !std::is_same_v<C, T>;
  const int64_t col_blocks = (inner + kColBlock - 1) / kColBlock;
  const int64_t width = std::min(inner, kColBlock);
  std::vector<C> scratch(2 * width + (kWiden ? 2 * n * width : 0));
  C* mx = scratch.data();
  C* sum = mx + width;
  C* wx = sum + width;
  C* wy = wx + n * width;
  for (int64_t t = b; t < e; ++t) {
    const int64_t o = t / col_blocks;
    const int64_t j0 = (t % col_blocks) * kColBlock;
    const int64_t len = std::min(kColBlock, inner - j0);
    const T* xb = x + o * n * inner + j0;
    T* yb = y + o * n * inner + j0;
    if constexpr (kWiden) {
      for (int64_t i = 0; i < n; ++i) WidenToFloat(xb + i * inner, wx + i * len, len);
      if (inner == 1) {
        Row<M>(wx, wy, n);
      } else {
        Columns<M>(wx, wy, n, len, len, mx, sum);
      }
      for (int64_t i = 0; i < n; ++i) NarrowFromFloat(wy + i * len, yb + i * inner, len);
    } else {
      Columns<M>(xb, yb, n, inner, len, mx, sum);
    }
  }
}

// Runs Softmax / LogSoftmax over [outer, n, inner].
template <Mode M, class T>
inline void Normalize(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int threads) {
  // An empty tensor has nothing to normalise; the column loops below assume n >= 1 (they seed
  // the maxima from row 0), which a zero-length axis would read past.
  if (outer == 0 || n == 0 || inner == 0) return;
  if constexpr (std::is_same_v<ComputeT<T>, T>) {
    if (inner == 1) {  // contiguous rows (the last-axis case): no scratch, no index math
      ParallelFor(threads, outer, std::max<int64_t>(1, 8192 / n), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) Row<M>(x + t * n, y + t * n, n);
      });
      return;
    }
  }
  const int64_t tasks = outer * ((inner + kColBlock - 1) / kColBlock);
  const int64_t work = std::max<int64_t>(1, n * std::min(inner, kColBlock));
  ParallelFor(threads, tasks, std::max<int64_t>(1, 8192 / work),
              [&](int64_t b, int64_t e) { NormalizeTasks<M>(x, y, n, inner, b, e); });
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere.
template <class T>
inline void Hardmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int threads) {
  if (outer == 0 || n == 0 || inner == 0) return;  // empty: no row 0 to seed the maxima from
  using C = ComputeT<T>;
  ParallelFor(threads, outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * inner, 1)),
              [&](int64_t b, int64_t e) {
                std::vector<C> best(inner);
                std::vector<int64_t> at(inner);
                for (int64_t o = b; o < e; ++o) {
                  const T* xb = x + o * n * inner;
                  T* yb = y + o * n * inner;
                  for (int64_t j = 0; j < inner; ++j) {
                    best[j] = static_cast<C>(xb[j]);
                    at[j] = 0;
                  }
                  for (int64_t i = 1; i < n; ++i) {
                    for (int64_t j = 0; j < inner; ++j) {
                      C v = static_cast<C>(xb[i * inner + j]);
                      if (!std::isnan(best[j]) && (v > best[j] || std::isnan(v))) {
                        best[j] = v;
                        at[j] = i;
                      }
                    }
                  }
                  std::fill(yb, yb + n * inner, T(0.0f));
                  for (int64_t j = 0; j < inner; ++j) yb[at[j] * inner + j] = T(1.0f);
                }
              });
}

}  // namespace nxrt::cpu::reduction
