// A constant weight matrix B[N, K], used as the right operand of C = A * B^T, packed once into
// panels of 64 columns of B^T: panel p holds B^T[0..K, 64p..64p+64) row-major ([K][64], zero
// columns past N), 64-byte aligned.
//
// Why: the recurrent operators multiply their state (one row per batch item) by the same R at
// every time step. Read in place, a matrix-vector product streams eight strided rows of R at a
// time, which the prefetchers follow poorly; a panel is one sequential 256-byte-per-k stream
// and its products need no horizontal sums (eight vector accumulators, one broadcast of A per
// k). Larger products (the input projection X * W^T over all time steps) run the 6 x 16
// register-tiled kernel of gemm_nt.h on the same panels, so nothing is transposed per run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "common/parallel.h"
#include "kernels/nn/gemm_nt.h"

namespace nxrt::cpu::nn {

class PanelWeights {
 public:
  static constexpr int64_t kPanel = 64;

  // Packs B[n, k] (leading dimension ldb).
  PanelWeights(const float* b, int64_t n, int64_t k, int64_t ldb)
      : n_(n), k_(k), panels_((n + kPanel - 1) / kPanel) {
    const size_t count = static_cast<size_t>(std::max<int64_t>(panels_ * k * kPanel, 1));
    data_.reset(new (std::align_val_t(64)) float[count]);
    std::memset(data_.get(), 0, count * sizeof(float));
    for (int64_t j = 0; j < n; ++j) {
      float* col = Panel(j / kPanel) + j % kPanel;
      const float* row = b + j * ldb;
      for (int64_t p = 0; p < k; ++p) col[p * kPanel] = row[p];
    }
  }

  int64_t rows() const { return n_; }  // N
  int64_t cols() const { return k_; }  // K

  // C[m, N] = alpha * A[m, K] * B^T (+ C when accumulate). Splits panels over `threads` when
  // the product is large enough to pay for the hand-off.
  void Multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate,
                int threads, float alpha = 1.0f) const {
    if (m <= 0 || n_ <= 0) return;
    auto run = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j0 = p * kPanel, cols = std::min(kPanel, n_ - j0);
        if (m < kTileRows) {
          for (int64_t i = 0; i < m; ++i)
            PanelRow(a + i * lda, Panel(p), c + i * ldc + j0, cols, accumulate, alpha);
        } else {
          GemmPackedRange<float>(m, k_, a, lda, Panel(p), kPanel, c + j0, ldc, 0, cols, accumulate,
                                 alpha);
        }
      }
    };
    const double macs = static_cast<double>(m) * n_ * std::max<int64_t>(k_, 1);
    if (threads <= 1 || panels_ < 2 || macs < kMinSplitMacs) {
      run(0, panels_);
      return;
    }
    ParallelFor(threads, panels_, 1, run);
  }

 private:
  // Rows of A below which each row is a matrix-vector product over the panels.
  static constexpr int64_t kTileRows = 6;
  // A recurrent step of H = 128 (4H x H = 64 K multiply-adds) is about 3 us of work. Split, it
  // gained 10% on Zen 4 (the pool's workers spin between kernels) but lost 20-35% on Zen 1,
  // where the gates one thread computes cross to the other core every step: such steps stay on
  // one thread (docs/performance.md, "Recurrent cells").
  static constexpr double kMinSplitMacs = 1 << 17;

  const float* Panel(int64_t p) const { return data_.get() + p * k_ * kPanel; }
  float* Panel(int64_t p) { return data_.get() + p * k_ * kPanel; }

  // c[0..cols) (+)= alpha * a[0..K) . panel.
  void PanelRow(const float* a, const float* panel, float* c, int64_t cols, bool accumulate,
                float alpha) const {
    alignas(64) float out[kPanel];
#if defined(__AVX2__) && defined(__FMA__)
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
           s3 = _mm256_setzero_ps(), s4 = _mm256_setzero_ps(), s5 = _mm256_setzero_ps(),
           s6 = _mm256_setzero_ps(), s7 = _mm256_setzero_ps();
    const float* w = panel;
    for (int64_t p = 0; p < k_; ++p, w += kPanel) {
      const __m256 av = _mm256_broadcast_ss(a + p);
      s0 = _mm256_fmadd_ps(av, _mm256_load_ps(w), s0);
      s1 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 8), s1);
      s2 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 16), s2);
      s3 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 24), s3);
      s4 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 32), s4);
      s5 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 40), s5);
      s6 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 48), s6);
      s7 = _mm256_fmadd_ps(av, _mm256_load_ps(w + 56), s7);
    }
    _mm256_store_ps(out, s0);
    _mm256_store_ps(out + 8, s1);
    _mm256_store_ps(out + 16, s2);
    _mm256_store_ps(out + 24, s3);
    _mm256_store_ps(out + 32, s4);
    _mm256_store_ps(out + 40, s5);
    _mm256_store_ps(out + 48, s6);
    _mm256_store_ps(out + 56, s7);
#else
    std::fill(out, out + kPanel, 0.0f);
    const float* w = panel;
    for (int64_t p = 0; p < k_; ++p, w += kPanel)
      for (int64_t q = 0; q < kPanel; ++q) out[q] += a[p] * w[q];
#endif
    for (int64_t q = 0; q < cols; ++q) c[q] = accumulate ? c[q] + alpha * out[q] : alpha * out[q];
  }

  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };

  int64_t n_, k_, panels_;
  std::unique_ptr<float[], AlignedDelete> data_;
};

// C[m, n] = A[m, k] * B[n, k]^T (all dense): through `packed` (the constant B) when given and A
// is float, otherwise GemmNT.
template <class A>
inline void MultiplyByTransposed(const PanelWeights* packed, int64_t m, int64_t n, int64_t k,
                                 const A* a, const A* b, A* c, int threads) {
  if constexpr (std::is_same_v<A, float>) {
    if (packed != nullptr) {
      packed->Multiply(m, a, k, c, n, false, threads);
      return;
    }
  }
  GemmNT<A>(m, n, k, a, k, b, k, c, n, false, threads);
}

// A weight matrix B[N, K] used repeatedly as the right operand of A * B^T (recurrent weights):
// the kernel's constant packing when it has one, otherwise packed on first use when the
// products have enough rows to benefit.
template <class A>
class ReusedWeights {
 public:
  ReusedWeights(const A* b, int64_t n, int64_t k, const PanelWeights* packed = nullptr)
      : b_(b), n_(n), k_(k), constant_(packed) {}
  // C[M, N] = A[M, K] * B^T; `rows` of A, leading dimension lda; C leading dimension ldc.
  void Multiply(int64_t m, const A* a, int64_t lda, A* c, int64_t ldc, int threads) {
    if constexpr (std::is_same_v<A, float>) {
      if (constant_ != nullptr) {
        constant_->Multiply(m, a, lda, c, ldc, false, threads);
        return;
      }
    }
    if (m < 6) {
      GemmNT<A>(m, n_, k_, a, lda, b_, k_, c, ldc, false, threads);
      return;
    }
    if (packed_.empty()) packed_ = PackTransposed(b_, n_, k_, k_);
    GemmPacked<A>(m, n_, k_, a, lda, packed_.data(), c, ldc, false, threads);
  }

 private:
  const A* b_;
  int64_t n_, k_;
  const PanelWeights* constant_;
  std::vector<A> packed_;
};

// The constant float weight `input` of a recurrent node (W or R: [dirs, gates * H, cols]) packed
// at kernel creation, per direction, as row slices [begin * H, end * H) given in units of H:
// result[d][slice]. Empty when the input is not a constant float32 tensor of that form (the
// kernel then reads it per run, as for any input).
inline std::vector<std::vector<PanelWeights>> PackConstantRnnWeight(
    const ep::KernelInfo& info, size_t input, int64_t dirs, int64_t gates, int64_t hidden_attr,
    std::initializer_list<std::pair<int64_t, int64_t>> slices) {
  std::vector<std::vector<PanelWeights>> packed;
  std::optional<ep::ConstTensor> t =
      input < info.input_count() ? info.constant_input(input) : std::nullopt;
  if (!t || t->type() != NX_TYPE_FLOAT) return packed;
  const auto s = t->shape();
  if (s.size() != 3 || s[0] != dirs || s[1] <= 0 || s[1] % gates != 0 || s[2] <= 0) return packed;
  const int64_t hidden = s[1] / gates, cols = s[2];
  if (hidden_attr != 0 && hidden_attr != hidden) return packed;  // Compute reports it
  const float* w = t->data<float>();
  for (int64_t d = 0; d < dirs; ++d) {
    std::vector<PanelWeights> per_slice;
    for (const auto& [begin, end] : slices) {
      per_slice.emplace_back(w + (d * s[1] + begin * hidden) * cols, (end - begin) * hidden, cols,
                             cols);
    }
    packed.push_back(std::move(per_slice));
  }
  return packed;
}

}  // namespace nxrt::cpu::nn
