// numpy-style matrix multiplication shared by MatMul, MatMulInteger, QLinearMatMul and Einsum:
// shape inference with 1-D operands and batch broadcasting, and batched GEMM drivers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/small_vector.h"
#include "kernels/linalg/gemm_ref.h"

namespace nxrt::cpu::linalg {

struct MatMulDims {
  int64_t m = 0, n = 0, k = 0;
  // Operands stored transposed in their last two dims (com.microsoft FusedMatMul): A as
  // [..., K, M], B as [..., N, K].
  bool trans_a = false, trans_b = false;
  Dims out_dims;      // the ONNX output shape (1-D operands' dims removed)
  int64_t batch = 1;  // number of broadcast batch entries
  // Element offsets of each batch entry's A and B matrices (size `batch`).
  SmallVector<int64_t, 64> a_offsets, b_offsets;
  // B is shared by every batch entry and A's batches are contiguous row blocks: the whole
  // product is one GEMM with batch * m rows.
  bool foldable = false;
};

// Shapes of A [..., M, K] and B [..., K, N] (either may be 1-D; trans_a/trans_b swap the last
// two dims of a rank >= 2 operand). `op` names the node in errors.
MatMulDims ComputeMatMulDims(std::span<const int64_t> a, std::span<const int64_t> b,
                             const std::string& op, bool trans_a = false, bool trans_b = false);

// C = alpha * op(A) * op(B) for every batch entry, float32 through oneDNN's sgemm. `trans_b`
// overrides d.trans_b (a pre-transposed constant B). Uses `threads`: many small products are
// spread one per thread, large ones use all threads each.
void BatchedSgemm(const MatMulDims& d, const float* a, const float* b, bool trans_b, float alpha,
                  float* c, int threads);

// C = op(A) * op(B) for any type with the portable GEMM (double, integers).
template <class T>
void BatchedGemmRef(const MatMulDims& d, const T* a, const T* b, T* c, int threads) {
  auto av = [&](const T* p) { return d.trans_a ? MatView<T>{p, 1, d.m} : MatView<T>{p, d.k, 1}; };
  auto bv = [&](const T* p) { return d.trans_b ? MatView<T>{p, 1, d.k} : MatView<T>{p, d.n, 1}; };
  if (d.foldable) {
    GemmRef<T>(d.batch * d.m, d.n, d.k, av(a), bv(b), c, d.n, false, threads);
    return;
  }
  for (int64_t i = 0; i < d.batch; ++i) {
    GemmRef<T>(d.m, d.n, d.k, av(a + d.a_offsets[i]), bv(b + d.b_offsets[i]), c + i * d.m * d.n,
               d.n, false, threads);
  }
}

}  // namespace nxrt::cpu::linalg
