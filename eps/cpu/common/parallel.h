// Intra-op parallelism for CPU kernels. The CPU EP uses OpenMP, like the oneDNN build it links,
// so only one pool of worker threads exists; the session's thread count is honoured per call.
#pragma once

#include <cstdint>

#include <omp.h>

namespace nxrt::cpu {

// Runs fn(begin, end) over [0, n) split into contiguous chunks of at least `grain` items, on up
// to `threads` threads. Runs inline when one chunk suffices.
template <class Fn>
void ParallelFor(int threads, int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int t = threads < 1 ? 1 : threads;
  if (t > chunks) t = static_cast<int>(chunks);
  if (t <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    int id = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t begin = n * id / nt;
    int64_t end = n * (id + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace nxrt::cpu
