// The body of panel_rows.h, written once against the ISA traits (common/simd_avx2.h,
// common/simd_avx512.h) and instantiated per ISA.
//
// A tile is R rows of C by CV vectors of one panel's columns: per step along k, CV vectors of
// the panel's row are loaded and each of the R elements of A is broadcast into them, R x CV
// FMAs into accumulators that stay in registers (R x CV <= 24 of AVX-512's 32 registers, <= 12
// of AVX2's 16). A tile that spans its panel's whole row reads the panel as one sequential
// stream. Rows beyond one tile run as further tiles over the same panel, which is then in L2.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/linalg/panel_rows.h"

namespace nxrt::cpu::linalg::panel_rows_body {

template <class S, int R, int CV>
void Tile(const PanelRowsProblem& p, int64_t r0, int64_t j) {
  constexpr int64_t L = S::kLanes;
  const float* w = p.w + (j / p.panel) * p.panel_stride + j % p.panel;
  const float* a = p.a + r0 * p.lda;
  typename S::Vec acc[R][CV];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) acc[r][v] = S::Set1(0.0f);
  for (int64_t k = 0; k < p.k; ++k, w += p.panel) {
    typename S::Vec b[CV];
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) b[v] = S::Load(w + v * L);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const typename S::Vec x = S::Set1(a[r * p.lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < CV; ++v) acc[r][v] = S::Fma(b[v], x, acc[r][v]);
    }
  }
  const typename S::Vec alpha = S::Set1(p.alpha);
  const int64_t count = std::min<int64_t>(CV * L, p.n - j);
#pragma GCC unroll 4
  for (int v = 0; v < CV; ++v) {
    const int64_t lanes = count - v * L;
    if (lanes <= 0) break;
    const typename S::Mask mask = S::Lanes(0, lanes);
    const typename S::Vec bias =
        p.bias == nullptr ? S::Set1(0.0f) : S::LoadMasked(p.bias + j + v * L, mask);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* c = p.c + (r0 + r) * p.ldc + j + v * L;
      const typename S::Vec out = S::Fma(acc[r][v], alpha, bias);
      if (lanes >= L)
        S::Store(c, out);
      else
        S::StoreFirst(c, out, lanes, mask);
    }
  }
}

// Rows [r0, r0 + rows) of one chunk of columns, rows <= RMax, as one tile.
template <class S, int CV, int R, int RMax>
void TileOf(const PanelRowsProblem& p, int64_t r0, int64_t rows, int64_t j) {
  if constexpr (R > RMax) {
    throw std::logic_error("PanelRows: a tile of more rows than registers hold");
  } else {
    if (rows == R) return Tile<S, R, CV>(p, r0, j);
    return TileOf<S, CV, R + 1, RMax>(p, r0, rows, j);
  }
}

// Panels [q_begin, q_end), CV vectors of columns at a time; the rows in tiles of RMax or fewer,
// as even as can be (22 rows: 11 + 11, not 12 + 10).
template <class S, int CV, int RMax>
void Chunks(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end) {
  constexpr int64_t width = CV * S::kLanes;
  const int64_t tiles = (p.m + RMax - 1) / RMax;
  const int64_t j_end = std::min(p.n, q_end * p.panel);
  for (int64_t j = q_begin * p.panel; j < j_end; j += width) {
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t r0 = p.m * t / tiles, r1 = p.m * (t + 1) / tiles;
      TileOf<S, CV, 1, RMax>(p, r0, r1 - r0, j);
    }
  }
}

template <class S>
void Range(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end) {
  if (p.panel <= 0 || p.panel % S::kLanes != 0)
    throw std::runtime_error("PanelRows: unsupported panel width " + std::to_string(p.panel));
  if constexpr (S::kLanes == 16) {  // 32 registers
    switch (p.panel / S::kLanes) {
      case 1:
        return Chunks<S, 1, 12>(p, q_begin, q_end);
      case 2:
        return Chunks<S, 2, 12>(p, q_begin, q_end);
      case 3:
        return Chunks<S, 3, 8>(p, q_begin, q_end);
      default:  // 64 columns or more: 64 at a time
        return Chunks<S, 4, 6>(p, q_begin, q_end);
    }
  } else {  // 16 registers: two vectors at a time, every panel width a multiple of them
    if (p.panel % (2 * S::kLanes) != 0) return Chunks<S, 1, 12>(p, q_begin, q_end);
    return Chunks<S, 2, 6>(p, q_begin, q_end);
  }
}

}  // namespace nxrt::cpu::linalg::panel_rows_body
