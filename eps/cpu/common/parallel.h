// Intra-op parallelism for CPU kernels, on the session's thread pool (the host's
// KernelContext_ParallelFor): workers spin briefly between kernels and a kernel never waits for
// a worker that has not started (docs/threading.md). oneDNN, which Debian builds for OpenMP only,
// runs single-threaded inside each chunk.
#pragma once

#include <omp.h>

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>

#include "background_work.h"

namespace nxrt::cpu {

// Multiply-adds below which a kernel runs on one thread: about 20 us of work, the price of
// handing work to a second thread on the machines we measured (docs/threading.md).
constexpr double kMinParallelMacs = 1 << 17;
// The same for work that oneDNN runs on its OpenMP team (convolution primitives), whose
// sleeping workers take about 50 us to wake: about 100 us of work.
constexpr double kMinOmpParallelMacs = 1 << 21;

// One OpenMP thread on this thread while it runs a chunk: a oneDNN call inside (Sgemm) must
// not start an OpenMP team of its own next to the pool's threads.
class SingleOmpThread {
 public:
  SingleOmpThread() : previous_(omp_get_max_threads()) {
    if (previous_ != 1) omp_set_num_threads(1);
  }
  ~SingleOmpThread() {
    if (previous_ != 1) omp_set_num_threads(previous_);
  }
  SingleOmpThread(const SingleOmpThread&) = delete;
  SingleOmpThread& operator=(const SingleOmpThread&) = delete;

 private:
  int previous_;
};

// Runs fn(begin, end) over [0, n) split into contiguous chunks of at least `grain` items, on up
// to `threads` threads (the pool hands about four chunks per thread to whichever thread is
// free). Runs inline when one chunk suffices, outside a Compute, inside a chunk, or while
// background work of the EP would share the cores (common/background_work.h). If fn
// throws, the first exception is rethrown here.
template <class Fn>
void ParallelFor(int threads, int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  NxKernelContext* ctx = ep::CurrentKernelContext();
  if (threads <= 1 || n <= grain || ctx == nullptr || BackgroundWork::Crowds(threads)) {
    fn(int64_t{0}, n);
    return;
  }
  ep::KernelContext(ctx).parallel_for(static_cast<size_t>(n), static_cast<size_t>(grain),
                                      [&](size_t begin, size_t end) {
                                        SingleOmpThread one;
                                        fn(static_cast<int64_t>(begin), static_cast<int64_t>(end));
                                      });
}

}  // namespace nxrt::cpu
