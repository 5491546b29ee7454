// Matrix-vector products (one row or one column of output) without oneDNN: y = alpha * x M +
// beta * y. A product with M = 1 or N = 1 reads every matrix element once, so it runs at the
// memory's speed whatever the kernel; oneDNN's sgemm would first generate its JIT kernels
// (about 30 ms per process on Zen 1), which batch-1 classifiers (the Gemm after the pooling of
// MobileNet and EfficientNet) then need for nothing else. Sgemm (dnnl_util.cc) routes such
// products here.
#pragma once

#include <cstdint>

namespace nxrt::cpu::linalg {

// The matrix as the vector x meets it: element (k, j) at data[k * k_stride + j * j_stride],
// one of the two strides 1 (kDotRows: contiguous along k, each output a dot product of x with
// a row; kAxpyRows: contiguous along j, each x[k] scales a row into the outputs).
struct GemvProblem {
  int64_t k = 0, n = 0;      // x has k elements, y has n
  const float* x = nullptr;  // contiguous
  const float* m = nullptr;
  int64_t ld = 0;             // the stride that is not 1
  bool contiguous_k = false;  // true: (k, j) at m[j * ld + k]; false: at m[k * ld + j]
  // When > 0 (contiguous_k false), the matrix is in column panels of `panel` floats, as
  // oneDNN's blocked matmul weights (BA16a64b and the like) keep it: panel q holds columns
  // [q * panel, (q + 1) * panel) as rows of `panel` floats, (k, j) at
  // m[q * ld + k * panel + j % panel], the columns past n zero.
  int64_t panel = 0;
  float alpha = 1.0f, beta = 0.0f;
  float* y = nullptr;  // contiguous; read only when beta != 0
};

// Outputs [j_begin, j_end) of the product, one body per ISA (common/cpu_features.h).
void GemvRangeAvx2(const GemvProblem& p, int64_t j_begin, int64_t j_end);
void GemvRangeAvx512(const GemvProblem& p, int64_t j_begin, int64_t j_end);

// The whole product on up to `threads` threads of the running kernel's pool (common/parallel.h),
// on the detected ISA.
void Gemv(const GemvProblem& p, int threads);

// C = alpha op(A) op(B) + beta C (row-major, BLAS argument order) as a matrix-vector product
// when M or N is 1 (and, for N = 1, C is one contiguous column); false, touching nothing,
// otherwise.
bool SgemmAsGemv(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, int threads);

}  // namespace nxrt::cpu::linalg
