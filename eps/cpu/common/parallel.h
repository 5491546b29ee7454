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

// Multiply-adds of a convolution from which oneDNN's own threading (an OpenMP team, woken in
// about 50 us) can beat our slices of output channels: about 0.7 ms of work at one thread on
// Zen 4, 2 ms on Zen 1.
constexpr double kMinOmpTeamMacs = 1 << 25;

// Whether a large convolution should run as one primitive that oneDNN threads itself rather than
// as one single-threaded slice of output-channel blocks per thread. oneDNN splits output rows
// too, so each thread reads only its rows of the input, where each of our slices reads all of
// it; and our slices can only split whole channel blocks (8 or 16 channels). That costs most when
// each slice is a single block of a spatial kernel (every input row it loads serves one block) or
// when the blocks split very unevenly (3 blocks: 2 / 1). Elsewhere the slices win: an OpenMP
// team's workers sleep between regions, and the pool's worker, idle during the region, parks
// and is late for the next step. Measured at 2 threads on Zen 4 (docs/threading.md), PaddleOCR
// det: its 96 -> 24 3x3 over 160 x 160 8.73 -> 6.82 ms in the group and 10.07 -> 9.04 ms as a
// node, the 48 -> 48 1x1 (3 blocks) 0.88 -> 0.72 ms; 12 even blocks and 15 blocks (8 / 7) as
// fast either way; depthwise convolutions faster as slices.
inline bool PreferOmpTeam(double macs, int64_t out_channel_blocks, int64_t kernel_size,
                          bool depthwise, int threads) {
  if (threads <= 1 || depthwise || macs < kMinOmpTeamMacs) return false;
  const int64_t busiest = (out_channel_blocks + threads - 1) / threads;  // blocks
  const bool uneven = busiest * threads * 4 >= out_channel_blocks * 5;   // >= 1.25x its share
  return uneven || (kernel_size > 1 && busiest == 1);
}

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
