// The matrix-vector body of gemv.h, written once against the ISA traits (common/simd_avx2.h,
// common/simd_avx512.h) and instantiated per ISA.
//
// Rows contiguous along k: short rows one dot product at a time, row after row (one sequential
// stream of the matrix), four accumulators along k for the FMA latency; long rows four at a
// time (four streams). One horizontal sum per output. Rows contiguous along j: four vectors of
// outputs at a time, each x[k] broadcast once and multiplied into four vectors of row k. The tails
// use masked loads.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/linalg/gemv.h"

namespace nxrt::cpu::linalg::gemv_body {

// Rows longer than this (floats) are read four at a time (DotRows4), shorter ones one by one.
constexpr int64_t kLongRow = 2048;

template <class S>
float Finish(const GemvProblem& p, float dot, int64_t j) {
  return p.beta == 0.0f ? p.alpha * dot : p.alpha * dot + p.beta * p.y[j];
}

// One output: the dot product of x with row j, four accumulators along k (the FMA latency),
// one horizontal sum. The rows are read one after the other, so the matrix is one sequential
// stream: four rows at a time (the earlier kernel) made four short streams that the hardware
// prefetcher caught too late when rows are short (K = 256: 7 GB/s, 16 GB/s as one stream; a
// decoder's [512 x 32000] head 1.6x onnxruntime's time).
template <class S>
void DotRow(const GemvProblem& p, int64_t j) {
  constexpr int64_t L = S::kLanes;
  const float* row = p.m + j * p.ld;
  typename S::Vec a0 = S::Set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 4 * L <= p.k; k += 4 * L) {
    a0 = S::Fma(S::Load(row + k), S::Load(p.x + k), a0);
    a1 = S::Fma(S::Load(row + k + L), S::Load(p.x + k + L), a1);
    a2 = S::Fma(S::Load(row + k + 2 * L), S::Load(p.x + k + 2 * L), a2);
    a3 = S::Fma(S::Load(row + k + 3 * L), S::Load(p.x + k + 3 * L), a3);
  }
  for (; k + L <= p.k; k += L) a0 = S::Fma(S::Load(row + k), S::Load(p.x + k), a0);
  if (k < p.k) {
    const typename S::Mask mask = S::Lanes(0, p.k - k);
    a1 = S::Fma(S::LoadMasked(row + k, mask), S::LoadMasked(p.x + k, mask), a1);
  }
  const float dot = S::ReduceAdd(S::Add(S::Add(a0, a1), S::Add(a2, a3)));
  p.y[j] = Finish<S>(p, dot, j);
}

// Four outputs at a time, one accumulator each: four streams of the matrix in flight. Long rows
// (K > 2048) read faster so than as one stream (K = 8192: 5.4 against 8.4 ms for 100 MiB).
template <class S>
void DotRows4(const GemvProblem& p, int64_t j) {
  constexpr int64_t L = S::kLanes;
  typename S::Vec acc[4];
  const float* rows[4];
  for (int r = 0; r < 4; ++r) {
    acc[r] = S::Set1(0.0f);
    rows[r] = p.m + (j + r) * p.ld;
  }
  int64_t k = 0;
  for (; k + L <= p.k; k += L) {
    const typename S::Vec xv = S::Load(p.x + k);
    for (int r = 0; r < 4; ++r) acc[r] = S::Fma(S::Load(rows[r] + k), xv, acc[r]);
  }
  if (k < p.k) {
    const typename S::Mask mask = S::Lanes(0, p.k - k);
    const typename S::Vec xv = S::LoadMasked(p.x + k, mask);
    for (int r = 0; r < 4; ++r) acc[r] = S::Fma(S::LoadMasked(rows[r] + k, mask), xv, acc[r]);
  }
  for (int r = 0; r < 4; ++r) p.y[j + r] = Finish<S>(p, S::ReduceAdd(acc[r]), j + r);
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

// Column panels (GemvProblem::panel): panel q's rows, one after the other (the whole matrix is
// one sequential stream), each x[k] broadcast into NV vectors of the panel's outputs. The last
// panel's columns past n are computed into a scratch row and dropped.
template <class S, int NV>
void PanelColumns(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  constexpr int64_t L = S::kLanes;
  const int64_t width = NV * L;
  for (int64_t j = j_begin; j < j_end; j += width) {
    const float* w = p.m + (j / width) * p.ld;
    typename S::Vec acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = S::Set1(0.0f);
    for (int64_t k = 0; k < p.k; ++k, w += width) {
      const typename S::Vec xk = S::Set1(p.x[k]);
      for (int v = 0; v < NV; ++v) acc[v] = S::Fma(S::Load(w + v * L), xk, acc[v]);
    }
    alignas(64) float out[NV * L];
    const int64_t count = j_end - j < width ? j_end - j : width;
    for (int v = 0; v < NV; ++v) S::Store(out + v * L, S::Mul(acc[v], S::Set1(p.alpha)));
    for (int64_t i = 0; i < count; ++i)
      p.y[j + i] = p.beta == 0.0f ? out[i] : out[i] + p.beta * p.y[j + i];
  }
}

template <class S>
void Panels(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  switch (p.panel / S::kLanes) {
    case 1:
      return PanelColumns<S, 1>(p, j_begin, j_end);
    case 2:
      return PanelColumns<S, 2>(p, j_begin, j_end);
    case 3:
      return PanelColumns<S, 3>(p, j_begin, j_end);
    case 4:
      return PanelColumns<S, 4>(p, j_begin, j_end);
    case 6:
      return PanelColumns<S, 6>(p, j_begin, j_end);
    case 8:
      return PanelColumns<S, 8>(p, j_begin, j_end);
    default:
      throw std::runtime_error("Gemv: unsupported panel width " + std::to_string(p.panel));
  }
}

template <class S>
void Range(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  if (p.panel > 0) return Panels<S>(p, j_begin, j_end);
  if (!p.contiguous_k) return AxpyColumns<S>(p, j_begin, j_end);
  int64_t j = j_begin;
  if (p.k > kLongRow)
    for (; j + 4 <= j_end; j += 4) DotRows4<S>(p, j);
  for (; j < j_end; ++j) DotRow<S>(p, j);
}

}  // namespace nxrt::cpu::linalg::gemv_body
