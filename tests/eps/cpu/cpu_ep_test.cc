// The CPU EP library as a process sees it: the library starts a thread that generates oneDNN's
// sgemm kernels when it is loaded (eps/cpu/cpu_ep.cc), and a process that exits at once, without
// releasing its env, must still exit cleanly instead of tearing oneDNN down under that thread.
#include <gtest/gtest.h>
#include <nxrt/nxrt_c_api.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace {

// Reachable from a global, so LeakSanitizer does not count the env the child never releases.
NxEnv* g_child_env = nullptr;

// Loads the CPU EP library (listing the devices does) and leaves the env alive.
void LoadCpuEpAndKeepEnv() {
  if (NxStatus* st = NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &g_child_env)) {
    NxStatus_Release(st);
    std::_Exit(2);
  }
  size_t devices = 0;
  if (NxStatus* st = NxEnv_GetEpDeviceCount(g_child_env, &devices)) {
    NxStatus_Release(st);
    std::_Exit(3);
  }
}

// Releases the env and ends the process from a thread that did not load the library.
void* ReleaseAndExit(void*) {
  NxEnv_Release(g_child_env);
  std::exit(0);
}

enum class Exiter { kLoadingThreadKeepingTheEnv, kOtherThreadAfterRelease };

// Forks children that load the library and call exit(0) right away; returns how many did not
// end with status 0 (a crash in exit shows up as a signal).
int FailedExits(Exiter exiter, int children) {
  int failed = 0;
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      LoadCpuEpAndKeepEnv();
      if (exiter == Exiter::kOtherThreadAfterRelease) {
        pthread_t thread;
        if (pthread_create(&thread, nullptr, &ReleaseAndExit, nullptr) != 0) std::_Exit(4);
        pthread_join(thread, nullptr);
      }
      std::exit(0);
    }
    if (pid < 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed;
}

// Before the fix, 3 of 50 such exits crashed inside oneDNN's kernel generator.
TEST(CpuEpLibrary, ProcessExitsCleanlyWhileKernelsAreStillBeingGenerated) {
  EXPECT_EQ(FailedExits(Exiter::kLoadingThreadKeepingTheEnv, 40), 0);
}

TEST(CpuEpLibrary, AnotherThreadReleasesTheEnvAndEndsTheProcess) {
  EXPECT_EQ(FailedExits(Exiter::kOtherThreadAfterRelease, 40), 0);
}

}  // namespace
