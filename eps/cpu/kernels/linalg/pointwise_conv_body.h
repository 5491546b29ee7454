// The tile loops of pointwise_conv.h, written once against a vector-traits class
// (common/simd_avx2.h, simd_avx512.h) and instantiated in pointwise_conv_avx2.cc and
// pointwise_conv_avx512.cc.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/linalg/fused_activation_body.h"
#include "kernels/linalg/pointwise_conv.h"

namespace nxrt::cpu::linalg::pointwise_body {

// One tile: kRows channels from `row0` (`rows` of them real) x NV vectors of pixels from `p0`;
// with kPartial the last vector covers only `last_lanes` pixels. (One K loop for both cases,
// the mask a template choice: with a run-time branch between two loops GCC kept the partial
// loop's accumulators on the stack, a store of every one per k.) kX: 0 reads input k of the
// 1x1 convolution at x + k * pixels; 1 and 2 read a direct convolution's row at
// x + x_offsets[k] with pixels 1 or 2 floats apart (the even lanes of two loads).
template <class V, int kRows, int NV, bool kPartial, int kX>
inline void Tile(const PointwiseJob& job, const float* wblock, int64_t row0, int rows, int64_t p0,
                 int64_t last_lanes) {
  using Vec = typename V::Vec;
  const int64_t P = job.pixels, K = job.in_channels;
  const int64_t YS = kX == 0 || job.y_stride == 0 ? P : job.y_stride;
  const typename V::Mask mask = V::Lanes(0, kPartial ? last_lanes : V::kLanes);
  Vec acc[kRows][NV];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    const Vec b = V::Set1(job.bias != nullptr && r < rows ? job.bias[row0 + r] : 0.0f);
    for (int v = 0; v < NV; ++v) acc[r][v] = b;
  }
  const float* xp = job.x + (kX == 0 ? p0 : kX * p0);
  const float* w = wblock;
  for (int64_t k = 0; k < K; ++k, w += kRows) {
    Vec xv[NV];
    if constexpr (kX == 0) {
      for (int v = 0; v < NV; ++v) {
        xv[v] = kPartial && v == NV - 1 ? V::LoadMasked(xp + v * V::kLanes, mask)
                                        : V::Load(xp + v * V::kLanes);
      }
      xp += P;
    } else {
      // The caller's buffer holds every float these read: no masks.
      const float* s = xp + job.x_offsets[k];
      for (int v = 0; v < NV; ++v) {
        if constexpr (kX == 1) {
          xv[v] = V::Load(s + v * V::kLanes);
        } else {
          // Even lanes within 128-bit lanes: the accumulators hold the pixels in that order
          // until the permute after the loop (once per tile, not per k: the cross-lane
          // permute per k cost more than the FMAs it fed on Zen 1).
          xv[v] =
              V::EvenInLanes(V::Load(s + 2 * v * V::kLanes), V::Load(s + (2 * v + 1) * V::kLanes));
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const Vec wv = V::Set1(w[r]);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::Fma(wv, xv[v], acc[r][v]);
    }
  }
  // The accumulators leave registers once, here: read in the epilogue loop below (bounded by
  // `rows`), GCC kept the array on the stack and stored all of it on every k.
  alignas(64) float sums[kRows][NV * V::kLanes];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      V::Store(&sums[r][v * V::kLanes], kX == 2 ? V::InLaneOrder(acc[r][v]) : acc[r][v]);
    }
  for (int r = 0; r < rows; ++r) {
    float* yr = job.y + (row0 + r) * YS + p0;
    const float* zr = job.z != nullptr ? job.z + (row0 + r) * YS + p0 : nullptr;
    for (int v = 0; v < NV; ++v) {
      const bool last = kPartial && v == NV - 1;
      Vec t = V::Load(&sums[r][v * V::kLanes]);
      if (zr != nullptr) {
        t = V::Add(t, last ? V::LoadMasked(zr + v * V::kLanes, mask) : V::Load(zr + v * V::kLanes));
      }
      t = Activate<V>(job.acts, job.act_count, t);
      if (last) {
        V::StoreFirst(yr + v * V::kLanes, t, last_lanes, mask);
      } else {
        V::Store(yr + v * V::kLanes, t);
      }
    }
  }
  // After every row is stored: no accumulator may live across this call (it would make GCC
  // keep them all in memory, stored on every k).
  if (job.rest) {
    for (int r = 0; r < rows; ++r) {
      job.rest(job.y + (row0 + r) * YS + p0,
               (NV - 1) * V::kLanes + (kPartial ? last_lanes : V::kLanes));
    }
  }
}

// A tile narrower than NV vectors: `vectors` of them (1..NV), the last covering `last_lanes`.
template <class V, int kRows, int NV, int kX>
inline void EdgeTile(const PointwiseJob& job, const float* wblock, int64_t row0, int rows,
                     int64_t p0, int vectors, int64_t last_lanes) {
  if constexpr (NV > 1) {
    if (vectors < NV) {
      EdgeTile<V, kRows, NV - 1, kX>(job, wblock, row0, rows, p0, vectors, last_lanes);
      return;
    }
  }
  if (last_lanes == V::kLanes) {
    Tile<V, kRows, NV, false, kX>(job, wblock, row0, rows, p0, last_lanes);
  } else {
    Tile<V, kRows, NV, true, kX>(job, wblock, row0, rows, p0, last_lanes);
  }
}

// kRows floats (one packed weight group, or kRows output channels of one pixel): __m256 for the
// AVX-512 tiles' 8 rows, __m128 for the AVX2 tiles' 4. V only makes each instantiation local to
// its file (V's traits live in an unnamed namespace).
template <class V, int kRows>
struct RowLanes;
template <class V>
struct RowLanes<V, 8> {
  using T = __m256;
  static T Zero() { return _mm256_setzero_ps(); }
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  static T Fma(T a, float b, T c) { return _mm256_fmadd_ps(a, _mm256_set1_ps(b), c); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
};
template <class V>
struct RowLanes<V, 4> {
  using T = __m128;
  static T Zero() { return _mm_setzero_ps(); }
  static T Load(const float* p) { return _mm_loadu_ps(p); }
  static T Fma(T a, float b, T c) { return _mm_fmadd_ps(a, _mm_set1_ps(b), c); }
  static T Add(T a, T b) { return _mm_add_ps(a, b); }
  static void Store(float* p, T v) { _mm_storeu_ps(p, v); }
};

// sums[j] = the kRows output channels of packed weight group `w` at pixel j < N (input k of
// pixel j at x[k * P + j]). One pixel splits K over four accumulators (the FMA latency); more
// share each weight load between their accumulators.
template <class V, int kRows, int N>
[[gnu::always_inline]] inline void FewPixelSums(const float* w, const float* x, int64_t P,
                                                int64_t K, float (*sums)[kRows]) {
  using R = RowLanes<V, kRows>;
  if constexpr (N == 1) {
    typename R::T a0 = R::Zero(), a1 = R::Zero(), a2 = R::Zero(), a3 = R::Zero();
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
      a0 = R::Fma(R::Load(w + (k + 0) * kRows), x[(k + 0) * P], a0);
      a1 = R::Fma(R::Load(w + (k + 1) * kRows), x[(k + 1) * P], a1);
      a2 = R::Fma(R::Load(w + (k + 2) * kRows), x[(k + 2) * P], a2);
      a3 = R::Fma(R::Load(w + (k + 3) * kRows), x[(k + 3) * P], a3);
    }
    for (; k < K; ++k) a0 = R::Fma(R::Load(w + k * kRows), x[k * P], a0);
    R::Store(sums[0], R::Add(R::Add(a0, a1), R::Add(a2, a3)));
  } else {
    typename R::T a[N];
    for (int j = 0; j < N; ++j) a[j] = R::Zero();
    for (int64_t k = 0; k < K; ++k) {
      const typename R::T wv = R::Load(w + k * kRows);
      for (int j = 0; j < N; ++j) a[j] = R::Fma(wv, x[k * P + j], a[j]);
    }
    for (int j = 0; j < N; ++j) R::Store(sums[j], a[j]);
  }
}

// Pixels [p_begin, p_end) of a job with at most kFewPixels of them (the 1x1 convolutions of
// squeeze-and-excitation blocks run on one pixel): a tile's three vectors of pixels would be
// almost all masked lanes, one FMA per output channel and input channel. Here the lanes hold
// the kRows output channels of a packed weight group instead: per input channel one load of the
// group's kRows weights and one FMA per pixel with the broadcast input (FewPixelSums).
template <class V, int kRows>
void FewPixels(const PointwiseJob& job, int64_t block_begin, int64_t block_end, int64_t p_begin,
               int64_t p_end) {
  const int64_t P = job.pixels, K = job.in_channels;
  alignas(32) float sums[kFewPixels][kRows];
  for (int64_t blk = block_begin; blk < block_end; ++blk) {
    const int64_t row0 = blk * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, job.out_channels - row0));
    const float* w = job.packed_w + blk * K * kRows;
    switch (p_end - p_begin) {
      case 1:
        FewPixelSums<V, kRows, 1>(w, job.x + p_begin, P, K, sums);
        break;
      case 2:
        FewPixelSums<V, kRows, 2>(w, job.x + p_begin, P, K, sums);
        break;
      case 3:
        FewPixelSums<V, kRows, 3>(w, job.x + p_begin, P, K, sums);
        break;
      default:
        FewPixelSums<V, kRows, 4>(w, job.x + p_begin, P, K, sums);
        break;
    }
    for (int r = 0; r < rows; ++r) {
      const int64_t o = row0 + r;
      float* yr = job.y + o * P;
      const float b = job.bias != nullptr ? job.bias[o] : 0.0f;
      for (int64_t p = p_begin; p < p_end; ++p) {
        float v = sums[p - p_begin][r] + b;
        if (job.z != nullptr) v += job.z[o * P + p];
        yr[p] = ActivateScalar(job.acts, job.act_count, v);
      }
      if (job.rest) job.rest(yr + p_begin, p_end - p_begin);
    }
  }
}

// kX as for Tile.
template <class V, int kRows, int NV, int kX = 0>
void Run(const PointwiseJob& job, int64_t block_begin, int64_t block_end, int64_t p_begin,
         int64_t p_end) {
  if (kX == 0 && job.pixels <= kFewPixels) {
    FewPixels<V, kRows>(job, block_begin, block_end, p_begin, p_end);
    return;
  }
  constexpr int64_t kCols = NV * V::kLanes;
  const int64_t K = job.in_channels;
  for (int64_t blk = block_begin; blk < block_end; ++blk) {
    const int64_t row0 = blk * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, job.out_channels - row0));
    const float* wblock = job.packed_w + blk * K * kRows;
    int64_t p = p_begin;
    for (; p + kCols <= p_end; p += kCols) {
      Tile<V, kRows, NV, false, kX>(job, wblock, row0, rows, p, V::kLanes);
    }
    if (kX == 0 && p < p_end && p_end - p <= kFewPixels) {
      // A few pixels past the last full tile (7x7 = 48 + 1, 14x14 = 4 x 48 + 4): a masked
      // tile would pay its whole K loop for them, the lanes-as-channels loop a fraction of it.
      FewPixels<V, kRows>(job, blk, blk + 1, p, p_end);
    } else if (p < p_end) {
      const int64_t left = p_end - p;
      const int vectors = static_cast<int>((left + V::kLanes - 1) / V::kLanes);
      EdgeTile<V, kRows, NV, kX>(job, wblock, row0, rows, p, vectors,
                                 left - (vectors - 1) * V::kLanes);
    }
  }
}

}  // namespace nxrt::cpu::linalg::pointwise_body
