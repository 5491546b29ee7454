// X[M, K] * W[K, N] with a constant weight, through oneDNN's matmul primitive.
//
// The weight is kept transposed ([N, K], oneDNN tag "ba"): with the ONNX [K, N] layout oneDNN's
// matmul falls off a performance cliff for wide N on AVX2 (FFN1 of BERT at half speed, see
// reference/cpu-kernels-measured.md), and "any" does not repack on AVX2. Measured against
// dnnl_sgemm on the BERT shapes the primitive ties on one thread and is ~10% faster on two, and
// it takes bias and activations as post-ops when a fused op needs them.
//
// The weight is borrowed (the kernel's pre-packed copy, possibly shared between sessions) and
// must outlive this object. Primitives are cached per row count and thread count; Run may be
// called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace nxrt::cpu::linalg {

class DnnlPackedMatMul {
 public:
  // `w_nk` is the weight transposed, [N, K] row-major (borrowed). C = alpha * X * W.
  DnnlPackedMatMul(const float* w_nk, int64_t k, int64_t n, float alpha);
  ~DnnlPackedMatMul();

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  const float* w_nk() const { return w_; }

  // Builds the primitive for `m` rows ahead of the first run (optional).
  void Prepare(int64_t m, int threads);

  // c[m, n] = alpha * a[m, k] * W. The caller sets OpenMP's thread count to `threads`.
  void Run(const float* a, int64_t m, float* c, int threads);

 private:
  struct Plan;
  std::shared_ptr<Plan> GetPlan(int64_t m, int threads);

  const float* w_;
  int64_t k_, n_;
  float alpha_;
  std::mutex mu_;
  std::map<std::pair<int64_t, int>, std::shared_ptr<Plan>> plans_;
};

}  // namespace nxrt::cpu::linalg
