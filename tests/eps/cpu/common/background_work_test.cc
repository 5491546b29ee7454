// BackgroundWork (eps/cpu/common/background_work.h): kernels keep to one thread only while the
// EP's own background work runs and the session's threads already take every usable core.
#include "common/background_work.h"

#include <gtest/gtest.h>

#include <thread>

namespace nxrt::cpu {
namespace {

TEST(BackgroundWork, CrowdsOnlyWhileWorkRunsAndTheThreadsTakeEveryCore) {
  const int cores = BackgroundWork::UsableCores();
  ASSERT_GE(cores, 1);
  EXPECT_FALSE(BackgroundWork::Crowds(cores));
  EXPECT_FALSE(BackgroundWork::Crowds(cores + 8));
  {
    BackgroundWorkScope work;
    EXPECT_TRUE(BackgroundWork::Crowds(cores));
    EXPECT_TRUE(BackgroundWork::Crowds(cores + 8));
    if (cores > 1) {
      EXPECT_FALSE(BackgroundWork::Crowds(cores - 1)) << "a core is left for it";
    }
    {
      BackgroundWorkScope nested;  // two pieces of work; the first to end leaves the other
      EXPECT_TRUE(BackgroundWork::Crowds(cores));
    }
    EXPECT_TRUE(BackgroundWork::Crowds(cores));
  }
  EXPECT_FALSE(BackgroundWork::Crowds(cores));
}

TEST(BackgroundWork, WorkEndedOnAnotherThreadIsSeenHere) {
  const int cores = BackgroundWork::UsableCores();
  BackgroundWork::Begin();  // counted before the thread starts, as cpu_ep.cc does
  EXPECT_TRUE(BackgroundWork::Crowds(cores));
  std::thread worker([] { BackgroundWork::End(); });
  worker.join();
  EXPECT_FALSE(BackgroundWork::Crowds(cores));
}

}  // namespace
}  // namespace nxrt::cpu
