// Work the CPU EP does on a thread of its own beside the session's runs: today oneDNN generating
// its sgemm kernels after the library loads (about 30 ms on Zen 1, see cpu_ep.cc).
//
// While that thread runs and a session's threads already take every core the process may use, a
// kernel that splits its work shares a core with it: the worker holding a chunk gets half a core
// and the whole kernel waits for it. Measured on 2 cores at 2 threads (PaddleOCR cls): the runs
// inside the first 35 ms took 2.0 ms, the later ones 1.2 ms, so a 20-run benchmark reported
// the slow figure. Kernels therefore keep to the calling thread until the background work ends
// (common/parallel.h); with a core to spare nothing changes.
#pragma once

#include <sched.h>

#include <atomic>
#include <thread>

namespace nxrt::cpu {

class BackgroundWork {
 public:
  // Brackets one piece of background work (may nest or overlap from several threads).
  static void Begin() { running_.fetch_add(1, std::memory_order_relaxed); }
  static void End() { running_.fetch_sub(1, std::memory_order_release); }

  // Whether a kernel given `threads` threads should run on the calling thread alone now.
  static bool Crowds(int threads) {
    return running_.load(std::memory_order_acquire) > 0 && threads >= UsableCores();
  }

  // Cores this process may run on (its affinity mask), counted once.
  static int UsableCores() {
    static const int cores = [] {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
        return CPU_COUNT(&set);
      }
      const unsigned n = std::thread::hardware_concurrency();
      return n > 0 ? static_cast<int>(n) : 1;
    }();
    return cores;
  }

 private:
  static inline std::atomic<int> running_{0};
};

// Scoped Begin/End.
class BackgroundWorkScope {
 public:
  BackgroundWorkScope() { BackgroundWork::Begin(); }
  ~BackgroundWorkScope() { BackgroundWork::End(); }
  BackgroundWorkScope(const BackgroundWorkScope&) = delete;
  BackgroundWorkScope& operator=(const BackgroundWorkScope&) = delete;
};

}  // namespace nxrt::cpu
