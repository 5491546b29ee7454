#include "kernels/linalg/dnnl_util.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

#include "common/parallel.h"
#include "kernels/linalg/gemv.h"

namespace nxrt::cpu::linalg {

dnnl::engine& DnnlEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& DnnlStream() {
  thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

namespace {

struct AlignedBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  ~AlignedBuffer() { std::free(data); }
};

}  // namespace

void* ThreadScratch(ScratchSlot slot, size_t bytes) {
  thread_local AlignedBuffer buffers[kScratchCount];
  AlignedBuffer& buf = buffers[slot];
  if (bytes > buf.bytes || buf.data == nullptr) {
    // Grow by at least 1.5x so a slowly increasing series of requests does not reallocate
    // every time; round to the alignment as aligned_alloc requires.
    size_t want = bytes < buf.bytes + buf.bytes / 2 ? buf.bytes + buf.bytes / 2 : bytes;
    want = (want + 63) / 64 * 64;
    if (want == 0) want = 64;
    void* p = std::aligned_alloc(64, want);
    if (p == nullptr) throw std::bad_alloc();
    std::free(buf.data);
    buf.data = p;
    buf.bytes = want;
  }
  return buf.data;
}

OmpThreadScope::OmpThreadScope(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(threads < 1 ? 1 : threads);
}

OmpThreadScope::~OmpThreadScope() { omp_set_num_threads(previous_); }

void CheckDnnl(dnnl_status_t status, const char* what) {
  if (status != dnnl_success) {
    throw std::runtime_error(std::string(what) + " failed (oneDNN status " +
                             std::to_string(static_cast<int>(status)) + ")");
  }
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // oneDNN handles K == 0, but spell out the semantics: C = beta * C.
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  // Split on the session's pool (common/parallel.h): the larger of M and N into one part per
  // thread, each part one single-threaded oneDNN call. Small products stay on one thread,
  // where the fork-join would cost more than it saves.
  const int threads = omp_get_max_threads();
  // A matrix-vector product is memory-bound: our own body, without oneDNN's JIT (gemv.h).
  if (SgemmAsGemv(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)) return;
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  if (threads <= 1 || static_cast<double>(m) * n * k < kMinParallelMacs) {
    SingleOmpThread one;
    CheckDnnl(dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), "dnnl_sgemm");
    return;
  }
  const bool split_n = n >= m;
  const int64_t extent = split_n ? n : m;
  const int64_t align = split_n ? 16 : 8;  // whole vector columns / register-block rows
  const int64_t blocks = (extent + align - 1) / align;
  const int64_t per_thread = (blocks + threads - 1) / threads;
  ParallelFor(threads, blocks, per_thread, [&](int64_t begin, int64_t end) {
    const int64_t lo = begin * align, hi = std::min(extent, end * align);
    dnnl_status_t st;
    if (split_n) {  // columns [lo, hi) of op(B) and C
      const float* bp = trans_b ? b + lo * ldb : b + lo;
      st = dnnl_sgemm(ta, tb, m, hi - lo, k, alpha, a, lda, bp, ldb, beta, c + lo, ldc);
    } else {  // rows [lo, hi) of op(A) and C
      const float* ap = trans_a ? a + lo : a + lo * lda;
      st = dnnl_sgemm(ta, tb, hi - lo, n, k, alpha, ap, lda, b, ldb, beta, c + lo * ldc, ldc);
    }
    CheckDnnl(st, "dnnl_sgemm");
  });
}

}  // namespace nxrt::cpu::linalg
