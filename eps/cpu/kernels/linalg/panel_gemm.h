// Products with a constant weight on AVX2 machines, by nxrt's own kernel: C = post(alpha * A * B
// + bias). The weight is packed once, at session creation, into panels of 16 columns ([N / 16
// panels][K][16], the last panel zero-padded), the order in which a 6 x 16 register tile of C
// reads it: each step over K loads two vectors of B and broadcasts one element from each of six
// rows of A into twelve accumulators. A is read where it lies (no per-call packing), K runs in
// blocks that keep a panel's block in L1 while every row tile of A passes over it.
//
// Measured on the Zen 1 VM against oneDNN's matmul primitive on the [N, K] weight (what nxrt
// used on AVX2 before), one thread, ViT-B/16 and BERT shapes: 40-46 against 38-43 GFLOP/s.
// Where oneDNN offers a blocked weight layout of its own (its AVX-512 brgemm kernels), that is
// used instead (matmul_weights.h); this kernel needs only AVX2 + FMA, the library's baseline.
//
// Threads split the panels (each reads only its part of the weight) or, when there are too few
// panels, the rows. Bias and activations are applied to each finished tile while it is in cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/linalg/dnnl_eltwise.h"

namespace nxrt::cpu::linalg {

constexpr int64_t kPanelWidth = 16;

inline int64_t PanelCount(int64_t n) { return (n + kPanelWidth - 1) / kPanelWidth; }
inline size_t PanelBytes(int64_t k, int64_t n) {
  return static_cast<size_t>(PanelCount(n) * kPanelWidth * k) * sizeof(float);
}

// Packs B into panels at `out` (PanelBytes(k, n) bytes). `b` is [K, N] row-major, or [N, K] when
// `b_is_nk`.
void PackPanels(const float* b, bool b_is_nk, int64_t k, int64_t n, float* out);

// c[rows][16 * panel_count] = a[rows][depth] (rows lda apart) x `panels` ([panel_count][depth]
// [16]), c's rows ldc apart; overwrites c. On this thread (Winograd's products, winograd_conv.h).
void MultiplyPanels(const float* a, int64_t lda, int64_t rows, const float* panels, int64_t depth,
                    int64_t panel_count, float* c, int64_t ldc);

class PanelMatMul {
 public:
  // `panels` (PackPanels of a [K, N] weight) is borrowed and must outlive this object.
  PanelMatMul(const float* panels, int64_t k, int64_t n, float alpha,
              std::vector<DnnlEltwise> post = {});

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // c[m, n] = post(alpha * a[m, k] * W + bias) on up to `threads` threads of the running
  // kernel's pool; `bias` is N floats, or null for none. Thread-safe.
  void Run(const float* a, int64_t m, float* c, int threads, const float* bias = nullptr) const;

  // Rows [r0, r1) and panels [p0, p1) of the product on this thread (Run splits into these).
  void RunBlock(const float* a, int64_t r0, int64_t r1, int64_t p0, int64_t p1, float* c,
                const float* bias) const;

 private:
  // A (rows x K) larger than B: blocks of rows outermost, and threads split rows.
  bool RowsOuter(int64_t rows) const { return rows > n_; }
  // Panels [p0, p1) for rows [r0, r1), one K block at a time (RunBlock cuts the rows);
  // `fetch_next`: bring each next panel's block into L2 while the current one runs.
  void RunPanelRows(const float* a, int64_t r0, int64_t r1, int64_t p0, int64_t p1, float* c,
                    const float* bias, bool fetch_next) const;

  const float* panels_;
  int64_t k_, n_;
  float alpha_;
  std::vector<DnnlEltwise> post_;
};

}  // namespace nxrt::cpu::linalg
