#include "kernels/linalg/matmul_core.h"

#include "common/broadcast.h"
#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

MatMulDims ComputeMatMulDims(std::span<const int64_t> a_in, std::span<const int64_t> b_in,
                             const std::string& op, bool trans_a, bool trans_b) {
  NXRT_EP_ENFORCE(!a_in.empty() && !b_in.empty(),
                  op + ": MatMul operands must have rank >= 1, got " + ShapeToString(a_in) +
                      " and " + ShapeToString(b_in));
  // Work on the logical (untransposed) shapes; storage order only matters to the GEMM calls.
  Dims a(a_in), b(b_in);
  trans_a = trans_a && a.size() >= 2;
  trans_b = trans_b && b.size() >= 2;
  if (trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  MatMulDims d;
  d.trans_a = trans_a;
  d.trans_b = trans_b;
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  d.m = a1 ? 1 : a[a.size() - 2];
  d.k = a.back();
  const int64_t kb = b1 ? b[0] : b[b.size() - 2];
  d.n = b1 ? 1 : b.back();
  NXRT_EP_ENFORCE(d.k == kb, op + ": inner dimensions do not match: " + ShapeToString(a) + " x " +
                                 ShapeToString(b));
  std::span<const int64_t> a_batch(a.data(), a1 ? 0 : a.size() - 2);
  std::span<const int64_t> b_batch(b.data(), b1 ? 0 : b.size() - 2);
  const Dims batch = BroadcastShapes(a_batch, b_batch);
  d.batch = ShapeSize(batch);
  d.out_dims = batch;
  if (!a1) d.out_dims.push_back(d.m);
  if (!b1) d.out_dims.push_back(d.n);

  const int64_t a_batch_size = ShapeSize(a_batch), b_batch_size = ShapeSize(b_batch);
  d.foldable = b_batch_size == 1 && a_batch_size == d.batch && !trans_a;
  const Dims as = BroadcastStrides(a_batch, batch);
  const Dims bs = BroadcastStrides(b_batch, batch);
  d.a_offsets.resize(d.batch);
  d.b_offsets.resize(d.batch);
  Dims idx(batch.size(), 0);
  int64_t ao = 0, bo = 0;
  for (int64_t i = 0; i < d.batch; ++i) {
    d.a_offsets[i] = ao * d.m * d.k;
    d.b_offsets[i] = bo * d.k * d.n;
    for (size_t j = batch.size(); j-- > 0;) {
      ao += as[j];
      bo += bs[j];
      if (++idx[j] < batch[j]) break;
      ao -= as[j] * batch[j];
      bo -= bs[j] * batch[j];
      idx[j] = 0;
    }
  }
  return d;
}

void BatchedSgemm(const MatMulDims& d, const float* a, const float* b, bool trans_b, float alpha,
                  float* c, int threads) {
  const int64_t lda = d.trans_a ? d.m : d.k;
  const int64_t ldb = trans_b ? d.k : d.n;
  if (d.foldable) {
    Sgemm(false, trans_b, d.batch * d.m, d.n, d.k, alpha, a, lda, b, ldb, 0.0f, c, d.n);
    return;
  }
  auto one = [&](int64_t i) {
    Sgemm(d.trans_a, trans_b, d.m, d.n, d.k, alpha, a + d.a_offsets[i], lda, b + d.b_offsets[i],
          ldb, 0.0f, c + i * d.m * d.n, d.n);
  };
  // Many small products (attention heads): one product per thread avoids a fork/join per GEMM.
  // oneDNN's sgemm runs single-threaded inside the parallel region.
  const double flops = 2.0 * d.m * d.n * d.k;
  if (threads > 1 && d.batch >= threads && flops < 64.0e6) {
    ParallelFor(threads, d.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
    return;
  }
  for (int64_t i = 0; i < d.batch; ++i) one(i);
}

}  // namespace nxrt::cpu::linalg
