// The session's intra-op thread pool behind KernelContext_ParallelFor: `threads - 1` workers
// (started on first use) plus the calling thread split [0, total) into chunks.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nxrt {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {}
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(begin, end) over [0, total) in chunks of at least `grain`; returns when all are
  // done. Calls from several threads at once are serialised.
  void ParallelFor(size_t total, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void Start();  // under mu_
  void WorkerLoop();
  void RunChunks();

  const int threads_;
  std::mutex run_mu_;  // one ParallelFor at a time
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  // The job being run.
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t total_ = 0, chunk_ = 0, next_ = 0;
  size_t generation_ = 0;
  int busy_ = 0;
};

}  // namespace nxrt
