// RunIsolatedProbe reports a probe that passes, fails or dies, and this process survives.
#include "common/isolated_probe.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

namespace nxrt::cpu {
namespace {

TEST(IsolatedProbe, PassingProbeReportsNothing) {
  EXPECT_EQ(RunIsolatedProbe([] { return true; }), "");
}

TEST(IsolatedProbe, FailingProbeSaysSo) {
  EXPECT_EQ(RunIsolatedProbe([] { return false; }), "failed");
}

TEST(IsolatedProbe, ProbeKilledByAFaultNamesTheSignalAndThisProcessGoesOn) {
  // As a faulting instruction would: the child dies of SIGSEGV (raised, so that sanitizers
  // do not turn it into a report of their own).
  const std::string got = RunIsolatedProbe([] {
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
    return true;
  });
  EXPECT_EQ(got, "died with signal " + std::to_string(SIGSEGV));
}

TEST(IsolatedProbe, ProbeSeesMemoryPreparedBeforeTheCall) {
  std::vector<int> prepared(1000, 7);
  EXPECT_EQ(RunIsolatedProbe([&] { return prepared[999] == 7; }), "");
}

}  // namespace
}  // namespace nxrt::cpu
