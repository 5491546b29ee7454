// Small dense products for the recurrent, attention and deformable-convolution kernels.
//
//   GemmNT: C (+)= alpha * A[M, K] * B[N, K]^T (both row-major).
//
// Few rows (a matrix-vector product, e.g. one recurrent step of batch 1) use dot products over
// contiguous rows of B, eight at a time with AVX2 (one horizontal-add tree per eight), four at a
// time otherwise. Larger products pack B transposed ([K, N]) and run a
// register-tiled 6 x 16 outer-product kernel (AVX2/FMA intrinsics for float when the build
// enables them, portable loops otherwise). Large products are
// split over threads by output columns.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "common/parallel.h"

namespace nxrt::cpu::nn {

#if defined(__AVX2__) && defined(__FMA__)
// Eight dot products ar . b[q * ldb], q < 8, over k floats: one AVX accumulator per row of B, so
// each load of B feeds one FMA, and one horizontal-add tree for all eight at the end (instead
// of a reduction per column). Returns the sums in one register, row q in lane q.
inline __m256 Dot8Rows(int64_t k, const float* ar, const float* b, int64_t ldb) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
         s3 = _mm256_setzero_ps(), s4 = _mm256_setzero_ps(), s5 = _mm256_setzero_ps(),
         s6 = _mm256_setzero_ps(), s7 = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    const __m256 av = _mm256_loadu_ps(ar + p);
    s0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + p), s0);
    s1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + ldb + p), s1);
    s2 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 2 * ldb + p), s2);
    s3 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 3 * ldb + p), s3);
    s4 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 4 * ldb + p), s4);
    s5 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 5 * ldb + p), s5);
    s6 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 6 * ldb + p), s6);
    s7 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + 7 * ldb + p), s7);
  }
  // Per 128-bit lane hadd(x, y) = [x0+x1, x2+x3, y0+y1, y2+y3]: two levels leave row q's low and
  // high half-sums in lane q of each 128-bit half, the permutes line the halves up.
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(s4, s5), _mm256_hadd_ps(s6, s7));
  __m256 sum =
      _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  if (p < k) {  // the last k % 8 products
    alignas(32) float tail[8];
    for (int q = 0; q < 8; ++q) {
      float t = 0.0f;
      for (int64_t r = p; r < k; ++r) t += ar[r] * b[q * ldb + r];
      tail[q] = t;
    }
    sum = _mm256_add_ps(sum, _mm256_load_ps(tail));
  }
  return sum;
}
#endif

// Dot-product form for columns [n_begin, n_end).
template <class A>
inline void GemmNTDots(int64_t m, int64_t k, const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
                       int64_t ldc, int64_t n_begin, int64_t n_end, bool accumulate, A alpha) {
  for (int64_t i = 0; i < m; ++i) {
    const A* ar = a + i * lda;
    A* cr = c + i * ldc;
    int64_t j = n_begin;
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (std::is_same_v<A, float>) {
      const __m256 va = _mm256_set1_ps(alpha);
      for (; j + 8 <= n_end; j += 8) {
        __m256 r = _mm256_mul_ps(va, Dot8Rows(k, ar, b + j * ldb, ldb));
        if (accumulate) r = _mm256_add_ps(_mm256_loadu_ps(cr + j), r);
        _mm256_storeu_ps(cr + j, r);
      }
    }
#endif
    for (; j + 4 <= n_end; j += 4) {
      const A* b0 = b + j * ldb;
      const A* b1 = b0 + ldb;
      const A* b2 = b1 + ldb;
      const A* b3 = b2 + ldb;
      A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int64_t p = 0; p < k; ++p) {
        A av = ar[p];
        s0 += av * b0[p];
        s1 += av * b1[p];
        s2 += av * b2[p];
        s3 += av * b3[p];
      }
      A s[4] = {s0, s1, s2, s3};
      for (int q = 0; q < 4; ++q) cr[j + q] = accumulate ? cr[j + q] + alpha * s[q] : alpha * s[q];
    }
    for (; j < n_end; ++j) {
      const A* br = b + j * ldb;
      A s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t p = 0; p < k; ++p) s += ar[p] * br[p];
      cr[j] = accumulate ? cr[j] + alpha * s : alpha * s;
    }
  }
}

// Stores a tile of accumulated results.
template <class A>
inline void StoreTile(A* c, int64_t ldc, const A* acc, int rows, int cols, int acc_cols,
                      bool accumulate, A alpha) {
  for (int r = 0; r < rows; ++r) {
    A* cr = c + r * ldc;
    const A* ar = acc + r * acc_cols;
    for (int q = 0; q < cols; ++q) cr[q] = accumulate ? cr[q] + alpha * ar[q] : alpha * ar[q];
  }
}

// Outer-product form: bt is B transposed, [K, ldbt] row-major; columns [n_begin, n_end).
template <class A>
inline void GemmPackedRange(int64_t m, int64_t k, const A* a, int64_t lda, const A* bt,
                            int64_t ldbt, A* c, int64_t ldc, int64_t n_begin, int64_t n_end,
                            bool accumulate, A alpha) {
  constexpr int kRows = 6, kCols = 16;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, m - i0));
    for (int64_t j0 = n_begin; j0 < n_end; j0 += kCols) {
      const int cols = static_cast<int>(std::min<int64_t>(kCols, n_end - j0));
      alignas(32) A acc[kRows * kCols] = {};
#if defined(__AVX2__) && defined(__FMA__)
      if constexpr (std::is_same_v<A, float>) {
        if (rows == kRows && cols == kCols) {
          // Full 6 x 16 tile in twelve AVX registers.
          __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
          __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
          __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
          __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
          __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
          __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
          const float* a0 = a + i0 * lda;
          for (int64_t p = 0; p < k; ++p) {
            const float* br = bt + p * ldbt + j0;
            __m256 b0 = _mm256_loadu_ps(br), b1 = _mm256_loadu_ps(br + 8);
            __m256 av = _mm256_broadcast_ss(a0 + p);
            c00 = _mm256_fmadd_ps(av, b0, c00);
            c01 = _mm256_fmadd_ps(av, b1, c01);
            av = _mm256_broadcast_ss(a0 + lda + p);
            c10 = _mm256_fmadd_ps(av, b0, c10);
            c11 = _mm256_fmadd_ps(av, b1, c11);
            av = _mm256_broadcast_ss(a0 + 2 * lda + p);
            c20 = _mm256_fmadd_ps(av, b0, c20);
            c21 = _mm256_fmadd_ps(av, b1, c21);
            av = _mm256_broadcast_ss(a0 + 3 * lda + p);
            c30 = _mm256_fmadd_ps(av, b0, c30);
            c31 = _mm256_fmadd_ps(av, b1, c31);
            av = _mm256_broadcast_ss(a0 + 4 * lda + p);
            c40 = _mm256_fmadd_ps(av, b0, c40);
            c41 = _mm256_fmadd_ps(av, b1, c41);
            av = _mm256_broadcast_ss(a0 + 5 * lda + p);
            c50 = _mm256_fmadd_ps(av, b0, c50);
            c51 = _mm256_fmadd_ps(av, b1, c51);
          }
          _mm256_store_ps(acc + 0, c00);
          _mm256_store_ps(acc + 8, c01);
          _mm256_store_ps(acc + 16, c10);
          _mm256_store_ps(acc + 24, c11);
          _mm256_store_ps(acc + 32, c20);
          _mm256_store_ps(acc + 40, c21);
          _mm256_store_ps(acc + 48, c30);
          _mm256_store_ps(acc + 56, c31);
          _mm256_store_ps(acc + 64, c40);
          _mm256_store_ps(acc + 72, c41);
          _mm256_store_ps(acc + 80, c50);
          _mm256_store_ps(acc + 88, c51);
          StoreTile(c + i0 * ldc + j0, ldc, acc, rows, cols, kCols, accumulate, alpha);
          continue;
        }
      }
#endif
      // Portable path (and partial tiles).
      for (int64_t p = 0; p < k; ++p) {
        const A* br = bt + p * ldbt + j0;
        for (int r = 0; r < rows; ++r) {
          const A av = a[(i0 + r) * lda + p];
          A* ar = acc + r * kCols;
          for (int q = 0; q < cols; ++q) ar[q] += av * br[q];
        }
      }
      StoreTile(c + i0 * ldc + j0, ldc, acc, rows, cols, kCols, accumulate, alpha);
    }
  }
}

// B[N, K] transposed into [K, N].
template <class A>
inline std::vector<A> PackTransposed(const A* b, int64_t n, int64_t k, int64_t ldb) {
  std::vector<A> bt(k * n);
  for (int64_t j = 0; j < n; ++j) {
    const A* br = b + j * ldb;
    for (int64_t p = 0; p < k; ++p) bt[p * n + j] = br[p];
  }
  return bt;
}

// C[M, N] (+)= alpha * A[M, K] * Bt[K, N] with Bt already packed by PackTransposed.
template <class A>
inline void GemmPacked(int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const A* bt, A* c,
                       int64_t ldc, bool accumulate, int threads, A alpha = A(1)) {
  if (m <= 0 || n <= 0) return;
  const int64_t work = m * n * std::max<int64_t>(k, 1);
  if (threads <= 1 || work < (int64_t{1} << 17)) {
    GemmPackedRange(m, k, a, lda, bt, n, c, ldc, 0, n, accumulate, alpha);
    return;
  }
  int64_t blocks = (n + 15) / 16;
  ParallelFor(threads, blocks, 1, [&](int64_t begin, int64_t end) {
    GemmPackedRange(m, k, a, lda, bt, n, c, ldc, begin * 16, std::min(n, end * 16), accumulate,
                    alpha);
  });
}

// C[M, N] = alpha * A[M, K] * B[N, K]^T (+ C when accumulate).
template <class A>
inline void GemmNT(int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const A* b,
                   int64_t ldb, A* c, int64_t ldc, bool accumulate, int threads, A alpha = A(1)) {
  if (m <= 0 || n <= 0) return;
  if (m >= 6) {
    // Pack B transposed once; every row tile of A then streams through it.
    std::vector<A> bt = PackTransposed(b, n, k, ldb);
    GemmPacked(m, n, k, a, lda, bt.data(), c, ldc, accumulate, threads, alpha);
    return;
  }
  const int64_t work = m * n * std::max<int64_t>(k, 1);
  if (threads <= 1 || work < (int64_t{1} << 17)) {
    GemmNTDots(m, k, a, lda, b, ldb, c, ldc, 0, n, accumulate, alpha);
    return;
  }
  int64_t blocks = (n + 3) / 4;
  ParallelFor(threads, blocks, 1, [&](int64_t begin, int64_t end) {
    GemmNTDots(m, k, a, lda, b, ldb, c, ldc, begin * 4, std::min(n, end * 4), accumulate, alpha);
  });
}

// For callers that run their own threads: C (+)= alpha * A B^T on the calling thread only.
template <class A>
inline void GemmNTRange(int64_t m, int64_t k, const A* a, int64_t lda, const A* b, int64_t ldb,
                        A* c, int64_t ldc, int64_t n_begin, int64_t n_end, bool accumulate,
                        A alpha) {
  GemmNTDots(m, k, a, lda, b, ldb, c, ldc, n_begin, n_end, accumulate, alpha);
}

}  // namespace nxrt::cpu::nn
