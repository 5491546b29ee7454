// X[M, K] * W[K, N] with a constant weight, through oneDNN's matmul primitive.
//
// On AVX2, products that fold into one GEMM use nxrt's panel kernel instead (panel_gemm.h,
// matmul_weights.h); this class still serves the plain [N, K] copy where the kernels keep one
// (one static row of A, transposed A).
//
// Where oneDNN has no layout of its own for the weight (AVX2), it is kept transposed ([N, K],
// oneDNN tag "ba"): with the ONNX [K, N] layout oneDNN's
// matmul falls off a performance cliff for wide N on AVX2 (FFN1 of BERT at half speed, see
// reference/cpu-kernels-measured.md), and "any" does not repack on AVX2. Measured against
// dnnl_sgemm on the BERT shapes the primitive ties on one thread and is ~10% faster on two, and
// it takes bias and activations as post-ops when a fused op needs them.
//
// Where oneDNN prefers a blocked weight layout of its own (its AVX-512 brgemm kernels), the
// kernel pre-packs the weight straight into it (PreferredMatMulWeights, PackMatMulWeights):
// from the plain layout the primitive re-packed B inside every call: TransformerEncoder (64
// rows) 4.05 -> 3.39 ms at one thread and 2.40 -> 2.05 at two, BERT-4 76 -> 71 / 40 -> 37.5,
// ViT-B/16 349 -> 336 / 184 -> 175.
//
// A fused bias (one per column) and activations (com.nxrt FusedMatMul, from MatMul -> Add ->
// activation) are applied by the primitive on each slice of rows as it stores them: as separate
// nodes they read the product back, at two threads mostly from the other core's cache.
//
// Fewer than 32 rows against the blocked panels run on nxrt's own kernel (panel_rows.h): oneDNN's
// brgemm was slow there and could not be split between threads.
//
// The weight is borrowed (the kernel's pre-packed copy, possibly shared between sessions) and
// must outlive this object. Primitives are cached per row count and thread count (the 64 most
// recently used); Run may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "common/plan_cache.h"
#include "kernels/linalg/dnnl_eltwise.h"
#include "kernels/linalg/primitive_audit.h"

namespace nxrt::cpu::linalg {

// The layout oneDNN's matmul wants a constant [K, N] float weight in: a blocked one, or, when it
// has none to offer (AVX2), plain [N, K] ("ba", see above). Chosen for a fixed row count, so
// every session of the process picks the same one for a shared packing.
dnnl::memory::desc PreferredMatMulWeights(int64_t k, int64_t n);
bool IsPlainMatMulWeights(const dnnl::memory::desc& md);

// Reorders a float weight into `md` (bytes: md.get_size()). `w` is [K, N] row-major, or [N, K]
// when `w_is_nk`.
void PackMatMulWeights(const float* w, bool w_is_nk, int64_t k, int64_t n,
                       const dnnl::memory::desc& md, void* dst);

class DnnlPackedMatMul {
 public:
  // `w` is the weight in layout `w_md` (a [K, N] desc: plain "ba", i.e. [N, K] row-major, or
  // PreferredMatMulWeights), borrowed. C = post(alpha * X * W + bias), where bias (N floats,
  // given to each Run) is added when `has_bias` and `post` are the activations after it.
  DnnlPackedMatMul(const float* w, const dnnl::memory::desc& w_md, int64_t k, int64_t n,
                   float alpha, bool has_bias = false, std::vector<DnnlEltwise> post = {});
  ~DnnlPackedMatMul();

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // Where the primitives are recorded (the session's audit).
  void SetAudit(AuditTarget audit) { audit_ = std::move(audit); }

  // Builds the primitive for `m` rows ahead of the first run (optional).
  void Prepare(int64_t m, int threads);

  // c[m, n] = alpha * a[m, k] * W. The caller sets OpenMP's thread count to `threads`. With
  // more than one thread and enough work, the product is split into slices run on the session's
  // pool, one single-threaded primitive each: oneDNN's own OpenMP team woke its sleeping worker
  // for every product (TransformerEncoder at 2 threads: 2.2-2.5 ms, 2.0 with OpenMP spinning).
  // With the plain [N, K] weight (AVX2) the slices are runs of columns: each thread reads only
  // its part of the weight, the whole of A is small (TransformerEncoder at 2 threads 6.33 ->
  // 5.78 ms, BERT-4 -3.6%, Zen 1); oneDNN's blocked weights are cut into runs of rows.
  // `bias`: N floats when the object was made with has_bias, else ignored.
  void Run(const float* a, int64_t m, float* c, int threads, const float* bias = nullptr);

 private:
  struct Plan;
  // Rows per slice at least: brgemm's row block, below which the slices lose more than the
  // second thread brings.
  static constexpr int64_t kMinSliceRows = 16;
  // Columns per slice at least, and slice edges on multiples of kColumnAlign.
  static constexpr int64_t kMinSliceColumns = 64;
  static constexpr int64_t kColumnAlign = 16;
  // Fewer rows than this, against oneDNN's column panels: nxrt's own kernel (panel_rows.h).
  static constexpr int64_t kPanelRowsBelow = 32;
  bool FewRowsOverPanels(int64_t m) const;
  int RowSlices(int64_t m, int threads) const;
  int ColumnSlices(int64_t m, int threads) const;
  std::pair<int64_t, int64_t> Columns(int slice, int slices) const;
  // The primitive for `m` rows and `cols` columns (all N when negative).
  std::shared_ptr<Plan> GetPlan(int64_t m, int threads, int64_t cols = -1);
  void RunPlan(const Plan& plan, const float* a, const float* w, float* c, const float* bias);

  const float* w_;
  dnnl::memory::desc w_md_;
  int64_t k_, n_;
  float alpha_;
  bool has_bias_;
  std::vector<DnnlEltwise> post_;
  // post_ split: the steps oneDNN applies as it stores (up to the first that nxrt's loops do
  // faster, dnnl_eltwise.h), and the rest, applied by nxrt to each slice right after it.
  std::vector<DnnlEltwise> post_in_primitive_, post_after_;
  bool column_sliceable_;  // the plain [N, K] layout: a slice of columns is a run of its rows
  // oneDNN's BA16a{16,32,48,64}b blocked layouts are column panels of that many floats (rows of
  // K padded to 16): one row of A runs as a matrix-vector product over them (gemv.h), 0 for
  // other layouts.
  int64_t panel_width_ = 0;
  int64_t panel_floats_ = 0;  // one panel: padded K x panel_width_
  AuditTarget audit_;
  std::mutex mu_;
  // Per row count, thread count and columns; the 64 most recently used are kept.
  PlanCache<std::tuple<int64_t, int, int64_t>, Plan> plans_{64};
};

}  // namespace nxrt::cpu::linalg
