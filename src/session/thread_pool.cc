#include "session/thread_pool.h"

#include <algorithm>

namespace nxrt {

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Start() {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void ThreadPool::RunChunks() {
  for (;;) {
    size_t begin;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= total_) return;
      begin = next_;
      next_ = std::min(total_, next_ + chunk_);
    }
    (*job_)(begin, std::min(total_, begin + chunk_));
  }
}

void ThreadPool::WorkerLoop() {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++busy_;
    }
    RunChunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    done_.notify_all();
  }
}

void ThreadPool::ParallelFor(size_t total, size_t grain,
                             const std::function<void(size_t, size_t)>& fn) {
  if (total == 0) return;
  grain = std::max<size_t>(grain, 1);
  size_t chunks = (total + grain - 1) / grain;
  if (threads_ <= 1 || chunks <= 1) {
    fn(0, total);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (workers_.empty()) Start();
    job_ = &fn;
    total_ = total;
    // About four chunks per thread balance uneven work without much locking.
    chunk_ = std::max(grain, (total + static_cast<size_t>(threads_) * 4 - 1) /
                                 (static_cast<size_t>(threads_) * 4));
    next_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  RunChunks();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return next_ >= total_ && busy_ == 0; });
  job_ = nullptr;
}

}  // namespace nxrt
