// Products of a few rows (a short sequence: a transformer's 8 or 16 tokens) with a constant
// weight kept in oneDNN's column panels (BA16a16b ... BA16a64b, see matmul_dnnl.h): C = post(alpha
// * A * W + bias), without oneDNN.
//
// With so few rows the product is bound by reading the weight, and oneDNN's brgemm does badly
// there: on Zen 4, [8 x 384] x [384 x 1536] took 1.5-2x onnxruntime's time at one thread, and
// under 32 rows its matmul could be split neither by rows (too few) nor by columns (its panels
// are not a layout a column slice of the primitive accepts), so a second thread added nothing
// (16 rows: 2.2x onnxruntime at two threads). Here each register tile holds up to twelve rows by
// a whole panel row (or a part of it), every weight element is read once per tile, and threads
// split the panels, each reading only its part of the weight.
#pragma once

#include <cstdint>
#include <functional>

namespace nxrt::cpu::linalg {

struct PanelRowsProblem {
  int64_t m = 0, k = 0, n = 0;
  const float* a = nullptr;  // [m, k], rows lda apart
  int64_t lda = 0;
  // The weight: panel q holds columns [q * panel, (q + 1) * panel) as k rows of `panel` floats
  // ((k, j) at w[q * panel_stride + k * panel + j % panel]); columns past n are never stored.
  const float* w = nullptr;
  int64_t panel = 0;  // 16, 32, 48 or 64
  int64_t panel_stride = 0;
  float alpha = 1.0f;
  const float* bias = nullptr;  // n floats, or null
  float* c = nullptr;           // [m, n], rows ldc apart
  int64_t ldc = 0;
};

// Whole panels [q_begin, q_end) of the product, one body per ISA (common/cpu_features.h).
void PanelRowsRangeAvx2(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end);
void PanelRowsRangeAvx512(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end);

// Called with columns [j0, j1) of C once all their rows are done, on the thread that did them
// (the caller's activations, while those columns are in cache).
using PanelRowsFinish = std::function<void(int64_t j0, int64_t j1)>;

// The whole product on up to `threads` threads of the running kernel's pool (common/parallel.h),
// on the detected ISA; `finish`, when set, after each run of panels.
void PanelRows(const PanelRowsProblem& p, int threads, const PanelRowsFinish& finish = {});

}  // namespace nxrt::cpu::linalg
