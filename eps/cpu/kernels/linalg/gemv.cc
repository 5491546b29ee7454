#include "kernels/linalg/gemv.h"

#include <vector>

#include "common/cpu_features.h"
#include "common/parallel.h"

namespace nxrt::cpu::linalg {

void Gemv(const GemvProblem& p, int threads) {
  if (p.n <= 0) return;
  const bool avx512 = DetectedIsa() == Isa::kAvx512;
  auto range = avx512 ? &GemvRangeAvx512 : &GemvRangeAvx2;
  // Units the bodies handle whole: 4 rows (dot products), a panel, or 4 vectors of outputs
  // (axpy).
  const int64_t unit = p.contiguous_k ? 4 : p.panel > 0 ? p.panel : 4 * (avx512 ? 16 : 8);
  const int64_t units = (p.n + unit - 1) / unit;
  const int64_t macs_per_unit = unit * (p.k > 0 ? p.k : 1);
  const int64_t grain =
      (static_cast<int64_t>(kMinParallelMacs) + macs_per_unit - 1) / macs_per_unit;
  ParallelFor(threads, units, grain, [&](int64_t begin, int64_t end) {
    range(p, begin * unit, end * unit < p.n ? end * unit : p.n);
  });
}

bool SgemmAsGemv(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, int threads) {
  if (k <= 0 || (m != 1 && n != 1)) return false;
  GemvProblem p;
  p.k = k;
  p.alpha = alpha;
  p.beta = beta;
  p.y = c;
  const float* x = nullptr;
  int64_t x_stride = 1;
  if (m == 1) {  // y[j] = sum_k op(A)[0, k] op(B)[k, j]
    p.n = n;
    x = a;
    x_stride = trans_a ? lda : 1;
    p.m = b;
    p.ld = ldb;
    p.contiguous_k = trans_b;
  } else {  // n == 1: y[i] = sum_k op(B)[k, 0] op(A)[i, k], y strided by ldc
    if (ldc != 1) return false;
    p.n = m;
    x = b;
    x_stride = trans_b ? 1 : ldb;
    p.m = a;
    p.ld = lda;
    p.contiguous_k = !trans_a;
  }
  if (x_stride != 1) {  // gathered once: the bodies read x once per group of outputs
    thread_local std::vector<float> gathered;
    gathered.resize(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) gathered[static_cast<size_t>(i)] = x[i * x_stride];
    x = gathered.data();
  }
  p.x = x;
  Gemv(p, threads);
  return true;
}

}  // namespace nxrt::cpu::linalg
