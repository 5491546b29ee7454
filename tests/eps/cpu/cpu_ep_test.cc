// The CPU EP library as a process sees it: a session with a MatMul starts a thread that generates
// oneDNN's sgemm kernels (eps/cpu/kernels/linalg/sgemm_warm_up.h), and a process that exits at
// once, without releasing its env, must still exit cleanly instead of tearing oneDNN down under
// that thread.
#include <gtest/gtest.h>
#include <nxrt/nxrt_c_api.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "test_util.h"

namespace {

// Reachable from globals, so LeakSanitizer does not count what the child never releases.
NxEnv* g_child_env = nullptr;
NxSession* g_child_session = nullptr;

// An 8 x 8 by 8 x 8 MatMul: a product for oneDNN's sgemm, so creating it starts the generator.
std::string MatMulModel() {
  return nxrt::test::Serialize(nxrt::test::MakeModel(
      {nxrt::test::MakeNode("MatMul", {"x", "x"}, {"y"})}, {"x"}, {"y"}, {8, 8}));
}

// Creates a session of `model` on the CPU EP and leaves it and the env alive.
void CreateSessionAndKeepIt(const std::string& model) {
  if (NxStatus* st = NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &g_child_env)) {
    NxStatus_Release(st);
    std::_Exit(2);
  }
  if (NxStatus* st = NxSession_CreateFromBuffer(g_child_env, model.data(), model.size(), nullptr,
                                                &g_child_session)) {
    NxStatus_Release(st);
    std::_Exit(3);
  }
}

// Releases the session and the env and ends the process from a thread that did not create them.
void* ReleaseAndExit(void*) {
  NxSession_Release(g_child_session);
  NxEnv_Release(g_child_env);
  std::exit(0);
}

enum class Exiter { kCreatingThreadKeepingTheEnv, kOtherThreadAfterRelease };

// Forks children that create a MatMul session and call exit(0) right away; returns how many did
// not end with status 0 (a crash in exit shows up as a signal).
int FailedExits(Exiter exiter, int children) {
  const std::string model = MatMulModel();
  int failed = 0;
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      CreateSessionAndKeepIt(model);
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
  EXPECT_EQ(FailedExits(Exiter::kCreatingThreadKeepingTheEnv, 40), 0);
}

TEST(CpuEpLibrary, AnotherThreadReleasesTheEnvAndEndsTheProcess) {
  EXPECT_EQ(FailedExits(Exiter::kOtherThreadAfterRelease, 40), 0);
}

}  // namespace
