// The single-pass depthwise plane (depthwise_2d.h), written once over a vector traits class
// `V` and instantiated by depthwise_2d_avx2.cc and depthwise_2d_avx512.cc, each compiled for
// its ISA. V provides kLanes, Vec, Mask, Lanes(lo, hi) (a mask of lanes [lo, hi), any
// integers), Load/LoadMasked, StoreFirst, Set1, Fma, Add and Even(a, b) (the even lanes of the
// 2 * kLanes floats a:b): common/simd_avx2.h and common/simd_avx512.h.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/linalg/depthwise_2d.h"

namespace nxrt::cpu::linalg::depthwise_body {

// Rows per tile: eight independent accumulators cover the FMA latency on both ISAs and fit the
// AVX2 register file beside the weight and the loads.
constexpr int kTileRows = 8;

// Where a tile reads: the input plane, and a row of zeros standing in for rows above and below
// it (wide enough for every column a tap reads), so that no load tests its row.
struct Source {
  const float* x;
  const float* zeros;
};

// Lane masks of one column block, per tap column: S masks each (stride 2 reads two vectors).
template <class V>
struct ColumnMasks {
  static constexpr int kMaxTaps = 16;
  typename V::Mask m[2 * kMaxTaps];

  // For the block whose lane 0 reads input column col0 at tap kw = 0: the lanes of each tap
  // that read columns [0, in_w) of the first lanes_out outputs.
  // pairs (stride 2, TileReusingRows): the masks of the vector pair read from raw float 2 kw
  // instead, for taps 2 kw and 2 kw + 1 (whose last lane reads raw float 2 lanes_out - 1 + 2 kw).
  template <int S>
  void Fill(const DepthwisePlane2d& p, int64_t col0, int64_t lanes_out, bool pairs = false) {
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const int64_t col = col0 + (pairs ? 2 * kw : kw * p.dilation_w);
      if constexpr (S == 1) {
        m[kw] = V::Lanes(-col, std::min(lanes_out, p.in_w - col));
      } else {
        const int64_t lo = -col, hi = std::min(2 * lanes_out - (pairs ? 0 : 1), p.in_w - col);
        m[2 * kw] = V::Lanes(lo, hi);
        m[2 * kw + 1] = V::Lanes(lo - V::kLanes, hi - V::kLanes);
      }
    }
  }
};

// Adds the residual (z) and stores R rows of accumulators from (oh0, c0), masked past lanes_out.
// Always inlined: a call would take the accumulators out of registers (measured 1.5x slower).
template <class V, int R>
[[gnu::always_inline]] inline void StoreRows(const DepthwisePlane2d& p, typename V::Vec* acc,
                                             const float* z, float* y, int64_t oh0, int64_t c0,
                                             int64_t lanes_out) {
  const bool whole = lanes_out == V::kLanes;
  const typename V::Mask out_mask = V::Lanes(0, lanes_out);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const int64_t offset = (oh0 + r) * p.out_w + c0;
    if (z != nullptr)
      acc[r] = V::Add(acc[r], whole ? V::Load(z + offset) : V::LoadMasked(z + offset, out_mask));
    V::StoreFirst(y + offset, acc[r], lanes_out, out_mask);
  }
}

// One tile: R output rows x one vector of columns from (oh0, c0). kMasked: some lanes read
// outside the row (their loads are masked per tap column); otherwise loads are plain. Rows
// outside the plane read the zero row.
template <class V, int S, bool kMasked, int R>
void Tile(const DepthwisePlane2d& p, const Source& src, const float* w, float bias, const float* z,
          float* y, int64_t oh0, int64_t c0) {
  using Vec = typename V::Vec;
  Vec acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = V::Set1(bias);
  const int64_t col0 = c0 * S - p.pad_left;  // input column of lane 0 for tap kw = 0
  const int64_t lanes_out = std::min<int64_t>(V::kLanes, p.out_w - c0);
  ColumnMasks<V> masks;
  if constexpr (kMasked) masks.template Fill<S>(p, col0, lanes_out);
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const float* rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const int64_t ih = (oh0 + r) * p.stride_h - p.pad_top + kh * p.dilation_h;
      rows[r] = (ih >= 0 && ih < p.in_h ? src.x + ih * p.in_w : src.zeros) + col0;
    }
    const float* wk = w + kh * p.kernel_w;
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const Vec wv = V::Set1(wk[kw]);
      const int64_t col = kw * p.dilation_w;
      if constexpr (S == 1) {
        if constexpr (kMasked) {
          const typename V::Mask m = masks.m[kw];
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r)  // masked-off lanes are never read
            acc[r] = V::Fma(wv, V::LoadMasked(rows[r] + col, m), acc[r]);
        } else {
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) acc[r] = V::Fma(wv, V::Load(rows[r] + col), acc[r]);
        }
      } else {
        // Raw floats [col, col + 2 * kLanes) of the row; output lane j takes raw lane 2 j.
        if constexpr (kMasked) {
          const typename V::Mask m0 = masks.m[2 * kw], m1 = masks.m[2 * kw + 1];
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const Vec a = V::LoadMasked(rows[r] + col, m0);
            const Vec b = V::LoadMasked(rows[r] + col + V::kLanes, m1);
            acc[r] = V::Fma(wv, V::Even(a, b), acc[r]);
          }
        } else {
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const float* s = rows[r] + col;
            acc[r] = V::Fma(wv, V::Even(V::Load(s), V::Load(s + V::kLanes)), acc[r]);
          }
        }
      }
    }
  }
  StoreRows<V, R>(p, acc, z, y, oh0, c0, lanes_out);
}

// TileReusingRows: the FMAs of tap column kw of input row i (of the tile's input rows) into
// every output row that reads it (row r reads input row r * S + kh); i and kw are compile-time
// constants once the loops are unrolled, so the tests fold away.
template <class V, int S, int K, int R>
[[gnu::always_inline]] inline void AccumulateTap(int i, int kw, typename V::Vec v,
                                                 const typename V::Vec* wv, typename V::Vec* acc) {
  // Loaded once into a register: left to itself GCC folded the load into every FMA.
  asm("" : "+v"(v));
#pragma GCC unroll 7
  for (int kh = 0; kh < K; ++kh) {
    const int rs = i - kh;
    if (rs < 0 || rs % S != 0 || rs / S >= R) continue;
    acc[rs / S] = V::Fma(wv[kh * K + kw], v, acc[rs / S]);
  }
}

// As Tile, for K x K kernels with a row stride equal to the column stride S and no dilation
// (the 3x3 and 5x5 depthwise layers of MobileNets and EfficientNets, the 7x7 ones of ConvNeXt,
// FastViT and RepViT: 1.5x onnxruntime's time through Tile): the loop runs over the
// input rows the tile reads, and each loaded vector feeds every output row that uses it (up to
// K of them). That loads each input vector once instead of K times: the loads (most of them
// split across cache lines) were the bottleneck, not the FMAs.
template <class V, int S, int K, bool kMasked, int R>
void TileReusingRows(const DepthwisePlane2d& p, const Source& src, const float* w, float bias,
                     const float* z, float* y, int64_t oh0, int64_t c0) {
  using Vec = typename V::Vec;
  Vec acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = V::Set1(bias);
  const int64_t col0 = c0 * S - p.pad_left;
  const int64_t lanes_out = std::min<int64_t>(V::kLanes, p.out_w - c0);
  ColumnMasks<V> masks;
  if constexpr (kMasked) masks.template Fill<S>(p, col0, lanes_out, /*pairs=*/S == 2);
  // The weights, broadcast once per tile (AVX-512 keeps all of a 3x3 kernel in registers).
  Vec wv[K * K];
#pragma GCC unroll 49
  for (int k = 0; k < K * K; ++k) wv[k] = V::Set1(w[k]);
  const int64_t ih0 = oh0 * S - p.pad_top;
  constexpr int kInputRows = (R - 1) * S + K;
  // The floats one row's loads span (dilation 1 here).
  constexpr int kSpan = K - 1 + S * V::kLanes;
  [[maybe_unused]] alignas(64) float span_copy[kSpan];
#pragma GCC unroll 32
  for (int i = 0; i < kInputRows; ++i) {
    const int64_t ih = ih0 + i;
    const float* row_start = ih >= 0 && ih < p.in_h ? src.x + ih * p.in_w : src.zeros;
    const float* row = row_start + col0;
    if constexpr (kMasked && V::kSlowMaskedLoads) {
      // Whole loads + and (LoadAnd) when the span lies in one page; a span across a page edge
      // (rare) is copied with zeros outside the row, so the loads stay inside span_copy.
      if (!V::InOnePage(row, row + kSpan - 1)) [[unlikely]] {
        for (int j = 0; j < kSpan; ++j) {
          const int64_t col = col0 + j;
          span_copy[j] = col >= 0 && col < p.in_w ? row_start[col] : 0.0f;
        }
        row = span_copy;
      }
    }
    if constexpr (S == 1) {
#pragma GCC unroll 7
      for (int kw = 0; kw < K; ++kw) {
        Vec v = kMasked ? V::LoadAnd(row + kw, masks.m[kw]) : V::Load(row + kw);
        AccumulateTap<V, S, K, R>(i, kw, v, wv, acc);
      }
    } else {
      // Stride 2: output lane j of tap kw reads raw float 2 j + kw. One pair of vectors from
      // raw float 2 m serves taps 2 m (its even lanes) and 2 m + 1 (its odd lanes), taken
      // within 128-bit lanes; that lane order is undone once per output vector below, not per
      // tap (the cross-lane permute per tap bound the AVX2 loop on Zen 1).
#pragma GCC unroll 4
      for (int m = 0; m < (K + 1) / 2; ++m) {
        const float* at = row + 2 * m;
        const Vec a = kMasked ? V::LoadAnd(at, masks.m[2 * m]) : V::Load(at);
        const Vec b =
            kMasked ? V::LoadAnd(at + V::kLanes, masks.m[2 * m + 1]) : V::Load(at + V::kLanes);
        AccumulateTap<V, S, K, R>(i, 2 * m, V::EvenInLanes(a, b), wv, acc);
        if (2 * m + 1 < K) AccumulateTap<V, S, K, R>(i, 2 * m + 1, V::OddInLanes(a, b), wv, acc);
      }
    }
  }
  if constexpr (S == 2) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = V::InLaneOrder(acc[r]);
  }
  StoreRows<V, R>(p, acc, z, y, oh0, c0, lanes_out);
}

// One band of R output rows from oh0, column block by column block (row-major, so the input is
// read front to back, which the hardware prefetchers follow).
template <class V, int S, int R>
void Band(const DepthwisePlane2d& p, const Source& x, const float* w, float bias, const float* z,
          float* y, int64_t oh0) {
  const int64_t blocks = (p.out_w + V::kLanes - 1) / V::kLanes;
  // Widest raw read of a block: plain loads need every tap's vector(s) inside the row.
  const int64_t reach = (p.kernel_w - 1) * p.dilation_w + S * V::kLanes - 1;
  const int rows_kernel = p.stride_h == S && p.dilation_h == 1 && p.dilation_w == 1 &&
                                  p.kernel_w == p.kernel_h &&
                                  (p.kernel_h == 3 || p.kernel_h == 5 || p.kernel_h == 7)
                              ? static_cast<int>(p.kernel_h)
                              : 0;
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int64_t c0 = cb * V::kLanes;
    const int64_t col0 = c0 * S - p.pad_left;
    const bool inside = c0 + V::kLanes <= p.out_w && col0 >= 0 && col0 + reach < p.in_w;
    if (rows_kernel == 3) {
      if (inside)
        TileReusingRows<V, S, 3, false, R>(p, x, w, bias, z, y, oh0, c0);
      else
        TileReusingRows<V, S, 3, true, R>(p, x, w, bias, z, y, oh0, c0);
    } else if (rows_kernel == 5) {
      if (inside)
        TileReusingRows<V, S, 5, false, R>(p, x, w, bias, z, y, oh0, c0);
      else
        TileReusingRows<V, S, 5, true, R>(p, x, w, bias, z, y, oh0, c0);
    } else if (rows_kernel == 7) {
      if (inside)
        TileReusingRows<V, S, 7, false, R>(p, x, w, bias, z, y, oh0, c0);
      else
        TileReusingRows<V, S, 7, true, R>(p, x, w, bias, z, y, oh0, c0);
    } else if (inside) {
      Tile<V, S, false, R>(p, x, w, bias, z, y, oh0, c0);
    } else {
      Tile<V, S, true, R>(p, x, w, bias, z, y, oh0, c0);
    }
  }
}

// Needs p.kernel_w <= ColumnMasks<V>::kMaxTaps and a zero row of ZeroRowFloats(p) floats.
template <class V, int S>
void Plane(const DepthwisePlane2d& p, const Source& x, const float* w, float bias, const float* z,
           float* y) {
  static_assert(kTileRows == 8);
  int64_t oh = 0;
  for (; oh + kTileRows <= p.out_h; oh += kTileRows) Band<V, S, kTileRows>(p, x, w, bias, z, y, oh);
  switch (p.out_h - oh) {  // the last rows, fewer than a tile
    case 1:
      return Band<V, S, 1>(p, x, w, bias, z, y, oh);
    case 2:
      return Band<V, S, 2>(p, x, w, bias, z, y, oh);
    case 3:
      return Band<V, S, 3>(p, x, w, bias, z, y, oh);
    case 4:
      return Band<V, S, 4>(p, x, w, bias, z, y, oh);
    case 5:
      return Band<V, S, 5>(p, x, w, bias, z, y, oh);
    case 6:
      return Band<V, S, 6>(p, x, w, bias, z, y, oh);
    case 7:
      return Band<V, S, 7>(p, x, w, bias, z, y, oh);
    default:
      return;
  }
}

template <class V>
void Run(const DepthwisePlane2d& p, const float* x, const float* zeros, const float* w, float bias,
         const float* z, float* y) {
  const Source src{x, zeros + ZeroRowLead(p)};
  if (p.stride_w == 2)
    Plane<V, 2>(p, src, w, bias, z, y);
  else
    Plane<V, 1>(p, src, w, bias, z, y);
}

}  // namespace nxrt::cpu::linalg::depthwise_body
