// The matrix-vector body of gemv.h, written once against the ISA traits (common/simd_avx2.h,
// common/simd_avx512.h) and instantiated per ISA.
//
// Rows contiguous along k: four dot products at a time, each with its own accumulator, so four
// streams of the matrix are in flight and the FMA latency is hidden; the horizontal sums happen
// once per output. Rows contiguous along j: four vectors of outputs at a time, each x[k]
// broadcast once and multiplied into four vectors of row k. The tails use masked loads.
#pragma once

#include <cstdint>

#include "kernels/linalg/gemv.h"

namespace nxrt::cpu::linalg::gemv_body {

template <class S>
float HorizontalSum(typename S::Vec v) {
  alignas(64) float lanes[S::kLanes];
  S::Store(lanes, v);
  float sum = 0.0f;
  for (int i = 0; i < S::kLanes; ++i) sum += lanes[i];
  return sum;
}

template <class S>
float Finish(const GemvProblem& p, float dot, int64_t j) {
  return p.beta == 0.0f ? p.alpha * dot : p.alpha * dot + p.beta * p.y[j];
}

template <class S, int kRows>
void DotRows(const GemvProblem& p, int64_t j) {
  constexpr int64_t L = S::kLanes;
  typename S::Vec acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = S::Set1(0.0f);
  const float* rows[kRows];
  for (int r = 0; r < kRows; ++r) rows[r] = p.m + (j + r) * p.ld;
  int64_t k = 0;
  for (; k + L <= p.k; k += L) {
    const typename S::Vec xv = S::Load(p.x + k);
    for (int r = 0; r < kRows; ++r) acc[r] = S::Fma(S::Load(rows[r] + k), xv, acc[r]);
  }
  if (k < p.k) {
    const typename S::Mask mask = S::Lanes(0, p.k - k);
    const typename S::Vec xv = S::LoadMasked(p.x + k, mask);
    for (int r = 0; r < kRows; ++r) acc[r] = S::Fma(S::LoadMasked(rows[r] + k, mask), xv, acc[r]);
  }
  for (int r = 0; r < kRows; ++r) {
    const float dot = HorizontalSum<S>(acc[r]);
    p.y[j + r] = Finish<S>(p, dot, j + r);
  }
}

template <class S>
void AxpyColumns(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  constexpr int64_t L = S::kLanes;
  constexpr int kVectors = 4;
  int64_t j = j_begin;
  for (; j + kVectors * L <= j_end; j += kVectors * L) {
    typename S::Vec acc[kVectors];
    for (int v = 0; v < kVectors; ++v) acc[v] = S::Set1(0.0f);
    for (int64_t k = 0; k < p.k; ++k) {
      const typename S::Vec xk = S::Set1(p.x[k]);
      const float* row = p.m + k * p.ld + j;
      for (int v = 0; v < kVectors; ++v) acc[v] = S::Fma(S::Load(row + v * L), xk, acc[v]);
    }
    const typename S::Vec alpha = S::Set1(p.alpha), beta = S::Set1(p.beta);
    for (int v = 0; v < kVectors; ++v) {
      typename S::Vec out = S::Mul(acc[v], alpha);
      if (p.beta != 0.0f) out = S::Fma(S::Load(p.y + j + v * L), beta, out);
      S::Store(p.y + j + v * L, out);
    }
  }
  for (; j < j_end; j += L) {  // one (possibly partial) vector at a time
    const int64_t width = j_end - j < L ? j_end - j : L;
    const typename S::Mask mask = S::Lanes(0, width);
    typename S::Vec acc = S::Set1(0.0f);
    for (int64_t k = 0; k < p.k; ++k) {
      acc = S::Fma(S::LoadMasked(p.m + k * p.ld + j, mask), S::Set1(p.x[k]), acc);
    }
    typename S::Vec out = S::Mul(acc, S::Set1(p.alpha));
    if (p.beta != 0.0f) out = S::Fma(S::LoadMasked(p.y + j, mask), S::Set1(p.beta), out);
    S::StoreFirst(p.y + j, out, width, mask);
  }
}

template <class S>
void Range(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  if (!p.contiguous_k) return AxpyColumns<S>(p, j_begin, j_end);
  int64_t j = j_begin;
  for (; j + 4 <= j_end; j += 4) DotRows<S, 4>(p, j);
  for (; j < j_end; ++j) DotRows<S, 1>(p, j);
}

}  // namespace nxrt::cpu::linalg::gemv_body
