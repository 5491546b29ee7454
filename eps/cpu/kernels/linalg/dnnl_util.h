// Shared plumbing for the oneDNN-backed linear-algebra kernels: one process-wide CPU engine, one
// stream per calling thread, per-thread scratch buffers, and the OpenMP thread-count scope.
//
#pragma once

#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

namespace nxrt::cpu::linalg {

// The process-wide CPU engine (created on first use; thread-safe static init).
dnnl::engine& DnnlEngine();

// A stream for the calling thread. oneDNN CPU streams are cheap but not meant to be shared
// between threads that execute concurrently, so each host thread gets its own.
dnnl::stream& DnnlStream();

// Per-thread growable scratch memory, 64-byte aligned. `slot` picks one of a few independent
// buffers so one kernel can hold several at once (e.g. blocked src, blocked dst, oneDNN
// scratchpad). Contents are undefined on return. Kernels run one at a time per host thread, so
// a buffer is never shared by two running kernels; reusing it across runs avoids page-faulting
// fresh megabytes on every call.
enum ScratchSlot : int {
  kScratchSrc = 0,
  kScratchDst = 1,
  kScratchPad = 2,
  kScratchWeights = 3,
  kScratchA = 4,
  kScratchB = 5,
  kScratchC = 6,
  kScratchPlane = 7,  // per-plane buffers of the direct depthwise convolution (worker threads)
  kScratchPlaneOut = 8,
  kScratchRecurrent = 9,  // working buffers of RNN/GRU/LSTM (rnn_common.h RnnWorkspace)
  kScratchCount = 10,
};
void* ThreadScratch(ScratchSlot slot, size_t bytes);

// OpenMP's thread count is a per-thread setting read by oneDNN when it opens a parallel region;
// this sets it for the calling thread for the lifetime of the object and restores it afterwards.
class OmpThreadScope {
 public:
  explicit OmpThreadScope(int threads);
  ~OmpThreadScope();
  OmpThreadScope(const OmpThreadScope&) = delete;
  OmpThreadScope& operator=(const OmpThreadScope&) = delete;

 private:
  int previous_;
};

// Throws a readable error for a failed oneDNN call outside the C++ API (dnnl_sgemm).
void CheckDnnl(dnnl_status_t status, const char* what);

// Row-major single-precision GEMM through oneDNN: C = alpha * op(A) * op(B) + beta * C.
// Runs on omp_get_max_threads() threads (set by OmpThreadScope) of the session's pool, each
// part a single-threaded oneDNN call; on one thread inside a ParallelFor chunk or outside a
// Compute.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace nxrt::cpu::linalg
