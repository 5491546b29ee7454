// What one fork-join costs: the price every parallel kernel pays before it does any work, which
// decides whether small kernels may split at all and which thread runtime the CPU EP uses.
//
//   nxrt_bench_parallel_overhead [--threads T] [--regions N]
//
// Times N back-to-back parallel regions of T threads, each doing `work` ns of arithmetic per
// thread, with `gap` ns of single-threaded work between regions (the executor's dispatch of the
// next node), for
//   omp:     `#pragma omp parallel` under the process's libgomp settings (OMP_WAIT_POLICY,
//            GOMP_SPINCOUNT are read when libgomp loads: run once per setting, see
//            bench/parallel_overhead.sh);
//   condvar: a pool whose workers sleep on a condition variable between regions (what
//            nxrt::ThreadPool did);
//   spin:    a pool whose workers spin on an atomic for a while before sleeping.
// Prints one line per (runtime, gap, work): the mean overhead per region in microseconds,
// i.e. wall time per region minus the single-thread time of its share of work.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Busy arithmetic the compiler cannot drop; ~1 ns per iteration on current cores.
double Work(int64_t iterations, double seed) {
  double x = seed;
  for (int64_t i = 0; i < iterations; ++i) x = x * 0.999999 + 1e-9;
  return x;
}

// Iterations of Work that take about one nanosecond each, measured.
double IterationsPerNs() {
  const int64_t n = 20'000'000;
  auto t0 = Clock::now();
  volatile double sink = Work(n, 1.0);
  (void)sink;
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  return static_cast<double>(n) / ns;
}

// Workers sleep on a condition variable between regions.
class CondvarPool {
 public:
  explicit CondvarPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Loop(i); });
  }
  ~CondvarPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  void Run(const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &fn;
      pending_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    cv_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> l(mu_);
    done_.wait(l, [&] { return pending_ == 0; });
  }

 private:
  void Loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(id);
      std::lock_guard<std::mutex> l(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Workers spin on the generation counter for `spin_ns` before sleeping.
class SpinPool {
 public:
  SpinPool(int threads, int64_t spin_ns) : spin_ns_(spin_ns) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Loop(i); });
  }
  ~SpinPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_.store(true);
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  void Run(const std::function<void(int)>& fn) {
    job_ = &fn;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> l(mu_);  // pairs with a sleeper's check
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    fn(0);
    while (pending_.load(std::memory_order_acquire) != 0) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }

 private:
  void Loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      auto until = Clock::now() + std::chrono::nanoseconds(spin_ns_);
      uint64_t g;
      int polls = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
        if (++polls % 64 == 0 && Clock::now() > until) {
          std::unique_lock<std::mutex> l(mu_);
          sleepers_.fetch_add(1);
          cv_.wait(l, [&] { return generation_.load() != seen; });
          sleepers_.fetch_sub(1);
        }
      }
      seen = g;
      if (stop_.load()) return;
      (*job_)(id);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }
  const int64_t spin_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

struct Case {
  int64_t gap_ns, work_ns;
};

template <class RunRegion>
double OverheadUs(RunRegion&& region, int regions, const Case& c, double per_ns) {
  const int64_t gap_it = static_cast<int64_t>(c.gap_ns * per_ns);
  double sink = 0;
  for (int i = 0; i < regions / 10; ++i) region();  // warm up
  auto t0 = Clock::now();
  for (int i = 0; i < regions; ++i) {
    sink += Work(gap_it, i);
    region();
  }
  const double total_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  if (sink == 42.0) std::puts("");  // keep the gap's work
  // Ideal: the gap plus one thread's share of work, back to back.
  const double ideal_us = regions * (c.gap_ns + c.work_ns) / 1000.0;
  return (total_us - ideal_us) / regions;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, regions = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--regions")) regions = std::atoi(argv[i + 1]);
  }
  const double per_ns = IterationsPerNs();
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  std::printf("threads=%d regions=%d OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n", threads, regions,
              policy ? policy : "(unset)", spin ? spin : "(unset)");
  std::printf("%-12s %8s %8s %14s\n", "runtime", "gap_us", "work_us", "overhead_us");
  const Case cases[] = {{0, 2000}, {5000, 2000}, {50000, 2000}, {500000, 2000}};
  std::atomic<double> sink{0};
  for (const Case& c : cases) {
    const int64_t work_it = static_cast<int64_t>(c.work_ns * per_ns);
    const int n = c.gap_ns >= 500000 ? regions / 50 : c.gap_ns >= 50000 ? regions / 5 : regions;
    auto omp_region = [&] {
#pragma omp parallel num_threads(threads)
      {
        double v = Work(work_it, omp_get_thread_num());
        if (v == 42.0) sink.store(v);
      }
    };
    std::printf("%-12s %8.1f %8.1f %14.2f\n", "omp", c.gap_ns / 1e3, c.work_ns / 1e3,
                OverheadUs(omp_region, n, c, per_ns));
    std::function<void(int)> job = [&](int id) {
      double v = Work(work_it, id);
      if (v == 42.0) sink.store(v);
    };
    {
      CondvarPool pool(threads);
      std::printf("%-12s %8.1f %8.1f %14.2f\n", "condvar", c.gap_ns / 1e3, c.work_ns / 1e3,
                  OverheadUs([&] { pool.Run(job); }, n, c, per_ns));
    }
    for (int64_t spin_us : {20, 200}) {
      SpinPool pool(threads, spin_us * 1000);
      const std::string name = "spin" + std::to_string(spin_us) + "us";
      std::printf("%-12s %8.1f %8.1f %14.2f\n", name.c_str(), c.gap_ns / 1e3, c.work_ns / 1e3,
                  OverheadUs([&] { pool.Run(job); }, n, c, per_ns));
    }
  }
  return 0;
}
