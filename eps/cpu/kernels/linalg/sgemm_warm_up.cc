#include "kernels/linalg/sgemm_warm_up.h"

#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "common/background_work.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {
namespace {

void GenerateSgemmKernels() {
  // Large enough to take the blocked (JIT) path of every ISA oneDNN dispatches to, and not a
  // matrix-vector product (those do not reach oneDNN, gemv.h).
  constexpr int64_t kN = 64;
  std::vector<float> a(kN * kN, 0.0f), b(kN * kN, 0.0f), c(kN * kN);
  OmpThreadScope scope(1);
  Sgemm(false, false, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
  Sgemm(false, true, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
}

// The thread must be finished before the process tears oneDNN down: oneDNN registers the
// destructors of the kernels it generates (atexit order: last registered, first run), so a
// process that exits right after creating a session without releasing its env (a fuzzer, an
// interpreter at exit) destroyed kernels under the running generator (3 crashes in 50 such
// exits). exit() runs the exiting thread's thread_local destructors before any atexit handler,
// so a thread_local guard in the thread that started the generation joins first; releasing
// the factory joins too. What remains: a process ended within those 30 ms by another thread,
// with the env still alive (an atexit handler of ours would run after oneDNN's, too late).
std::mutex mutex;
// Never deleted: a std::thread destroyed while joinable would terminate the process, and joined
// it is only a handle.
std::thread* generator = nullptr;

struct JoinAtThreadExit {
  ~JoinAtThreadExit() { JoinSgemmWarmUp(); }
};

}  // namespace

void StartSgemmWarmUp() {
  std::lock_guard lock(mutex);
  if (generator != nullptr) return;
  // Counted from here, not from inside the thread, so that the runs right after see it.
  BackgroundWork::Begin();
  try {
    generator = new std::thread([] {
      try {
        GenerateSgemmKernels();
      } catch (...) {  // the first kernel that calls sgemm reports the error
      }
      BackgroundWork::End();
    });
  } catch (const std::system_error&) {  // no thread to spare: the first sgemm call does it
    BackgroundWork::End();
    return;
  }
  thread_local JoinAtThreadExit guard;
}

void JoinSgemmWarmUp() noexcept {
  std::lock_guard lock(mutex);
  if (generator != nullptr && generator->joinable()) generator->join();
}

}  // namespace nxrt::cpu::linalg
