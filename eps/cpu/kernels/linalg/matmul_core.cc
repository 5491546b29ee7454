#include "kernels/linalg/matmul_core.h"

#include "common/broadcast.h"
#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

MatMulDims ComputeMatMulDims(std::span<const int64_t> a, std::span<const int64_t> b,
                             const std::string& op) {
  NXRT_EP_ENFORCE(!a.empty() && !b.empty(), op + ": MatMul operands must have rank >= 1, got " +
                                                ShapeToString(a) + " and " + ShapeToString(b));
  MatMulDims d;
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  d.m = a1 ? 1 : a[a.size() - 2];
  d.k = a.back();
  const int64_t kb = b1 ? b[0] : b[b.size() - 2];
  d.n = b1 ? 1 : b.back();
  NXRT_EP_ENFORCE(d.k == kb, op + ": inner dimensions do not match: " + ShapeToString(a) +
                                 " x " + ShapeToString(b));
  std::span<const int64_t> a_batch = a1 ? a.first(0) : a.first(a.size() - 2);
  std::span<const int64_t> b_batch = b1 ? b.first(0) : b.first(b.size() - 2);
  std::vector<int64_t> batch = BroadcastShapes(a_batch, b_batch);
  d.batch = ShapeSize(batch);
  d.out_dims = batch;
  if (!a1) d.out_dims.push_back(d.m);
  if (!b1) d.out_dims.push_back(d.n);

  const int64_t a_batch_size = ShapeSize(a_batch), b_batch_size = ShapeSize(b_batch);
  d.foldable = b_batch_size == 1 && a_batch_size == d.batch;
  std::vector<int64_t> as = BroadcastStrides(a_batch, batch);
  std::vector<int64_t> bs = BroadcastStrides(b_batch, batch);
  d.a_offsets.resize(d.batch);
  d.b_offsets.resize(d.batch);
  std::vector<int64_t> idx(batch.size(), 0);
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

void BatchedSgemm(const MatMulDims& d, const float* a, const float* b, bool b_transposed,
                  float* c, int threads) {
  const int64_t ldb = b_transposed ? d.k : d.n;
  if (d.foldable) {
    Sgemm(false, b_transposed, d.batch * d.m, d.n, d.k, 1.0f, a, d.k, b, ldb, 0.0f, c, d.n);
    return;
  }
  auto one = [&](int64_t i) {
    Sgemm(false, b_transposed, d.m, d.n, d.k, 1.0f, a + d.a_offsets[i], d.k, b + d.b_offsets[i],
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
