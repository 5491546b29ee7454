#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace nxrt {
namespace {

thread_local bool t_inside_chunk = false;  // nested ParallelFor runs inline

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ThreadPool::ThreadPool(int threads, int spin_microseconds)
    : threads_(threads < 1 ? 1 : threads),
      spin_ns_(std::max(0, spin_microseconds) * int64_t{1000}) {}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Start() {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void ThreadPool::RunChunks() {
  for (;;) {
    size_t begin, end;
    const std::function<void(size_t, size_t)>* job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= total_) return;
      begin = next_;
      end = std::min(total_, next_ + chunk_);
      next_ = end;
      job = job_;
    }
    try {
      (*job)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_ = total_;  // nobody starts another chunk of a failed job
    }
  }
}

bool ThreadPool::WaitForJob(uint64_t& seen) {
  const int64_t spin_until = NowNs() + spin_ns_;
  for (uint32_t polls = 1;; ++polls) {
    if (stop_.load(std::memory_order_acquire)) return false;
    const uint64_t g = generation_.load(std::memory_order_acquire);
    if (g != seen) {
      seen = g;
      return true;
    }
    CpuRelax();
    if (polls % 64 != 0) continue;
    // Every 64 polls: give the core away if another thread (another process on a busy
    // machine) wants it, then check the spin time.
    std::this_thread::yield();
    if (NowNs() > spin_until) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      --sleepers_;
    }
  }
}

void ThreadPool::WorkerLoop() {
  t_inside_chunk = true;
  uint64_t seen = generation_.load();
  while (WaitForJob(seen)) {
    {
      // Counted before claiming (under the claim lock): the caller waits for busy workers
      // only, and a worker that finds every chunk taken leaves at once.
      std::lock_guard<std::mutex> lock(mu_);
      busy_.fetch_add(1, std::memory_order_relaxed);
    }
    RunChunks();
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::ParallelFor(size_t total, size_t grain,
                             const std::function<void(size_t, size_t)>& fn) {
  if (total == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t chunks = (total + grain - 1) / grain;
  if (threads_ <= 1 || chunks <= 1 || t_inside_chunk) {
    fn(0, total);
    return;
  }
  std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
  if (!run_lock.owns_lock()) {  // another thread's job is running: do not wait for it
    fn(0, total);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (workers_.empty()) Start();
    job_ = &fn;
    total_ = total;
    // About four chunks per thread balance uneven work without much locking.
    const size_t parts = static_cast<size_t>(threads_) * 4;
    chunk_ = std::max(grain, (total + parts - 1) / parts);
    next_ = 0;
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
    if (sleepers_ > 0) wake_.notify_all();
  }
  t_inside_chunk = true;
  RunChunks();
  t_inside_chunk = false;
  // Every chunk is claimed; wait for those still running on workers (bounded by one chunk).
  for (uint32_t polls = 1; busy_.load(std::memory_order_acquire) != 0; ++polls) {
    if (polls < 4096)
      CpuRelax();
    else
      std::this_thread::yield();
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = nullptr;
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace nxrt
