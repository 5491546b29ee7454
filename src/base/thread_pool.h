// The session's intra-op thread pool behind KernelContext_ParallelFor: `threads - 1` workers
// (started on first use) plus the calling thread split [0, total) into chunks.
//
// Why it looks like this (measured, docs/threading.md): waking a sleeping thread costs about
// 50 us on the VMs we run on, more than many kernels take, so a worker spins for a while after
// each job before it parks; and a job never waits for a worker that has not started it yet: the
// caller claims chunks too and waits only for chunks already claimed, so a worker that is late
// or descheduled (a busy machine) costs nothing but its share of the speed-up.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nxrt {

class ThreadPool {
 public:
  // How long an idle worker spins before it parks, by default: long enough to bridge the gap
  // between two parallel kernels of one run, short enough not to hold a core between runs.
  static constexpr int kDefaultSpinMicroseconds = 200;

  explicit ThreadPool(int threads, int spin_microseconds = kDefaultSpinMicroseconds);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(begin, end) over [0, total) in chunks of at least `grain`; returns when all are
  // done, rethrowing the first exception a chunk threw. Runs inline (on the calling thread)
  // when one chunk suffices, when called from inside a chunk, or when another thread is using
  // the pool.
  void ParallelFor(size_t total, size_t grain, const std::function<void(size_t, size_t)>& fn);

  int threads() const { return threads_; }

 private:
  void Start();  // under mu_
  void WorkerLoop();
  bool WaitForJob(uint64_t& seen);  // false: stop
  void RunChunks();

  const int threads_;
  const int64_t spin_ns_;
  std::mutex run_mu_;  // one ParallelFor at a time
  std::mutex mu_;      // guards the job fields and claims
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0};  // bumped for every job
  std::atomic<int> busy_{0};             // workers inside RunChunks
  int sleepers_ = 0;                     // workers parked on wake_ (under mu_)
  // The job being run (under mu_).
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t total_ = 0, chunk_ = 0, next_ = 0;
  std::exception_ptr error_;
};

}  // namespace nxrt
