// Software Vulkan renderers as GPUs (NXRT_SOFTWARE_GPU): the switch, and the scan on this machine.
// tools/install_deps.sh installs Mesa's lavapipe, so CI always finds one.
#include "devices/vulkan_software_gpu.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(SoftwareGpu, OnlyAnExplicitYesAsksForIt) {
  for (const char* yes : {"1", "true", "yes", "on"}) {
    ScopedEnv env("NXRT_SOFTWARE_GPU", yes);
    EXPECT_TRUE(nxrt::SoftwareGpusRequested()) << yes;
  }
  for (const char* no : {"0", "", "false", "lavapipe"}) {
    ScopedEnv env("NXRT_SOFTWARE_GPU", no);
    EXPECT_FALSE(nxrt::SoftwareGpusRequested()) << no;
  }
  ScopedEnv env("NXRT_SOFTWARE_GPU", nullptr);
  EXPECT_FALSE(nxrt::SoftwareGpusRequested());
}

TEST(SoftwareGpu, LavapipeIsListedAsASoftwareGpu) {
  if (!std::filesystem::exists("/usr/share/vulkan/icd.d/lvp_icd.json"))
    GTEST_SKIP() << "Mesa's lavapipe is not installed (tools/install_deps.sh installs it)";
  const auto devices = nxrt::ScanSoftwareVulkanGpus();
  ASSERT_FALSE(devices.empty());
  for (const nxrt::HardwareDevice& d : devices) {
    EXPECT_EQ(d.type, NX_DEVICE_GPU);
    EXPECT_TRUE(nxrt::IsSoftwareGpu(d));
    EXPECT_EQ(d.Get("discovered_by"), "vulkan");
    EXPECT_FALSE(d.Get("vulkan_device_name").empty());
    EXPECT_FALSE(d.vendor.empty());
  }
  // Mesa's renderers carry Vulkan's Mesa vendor id.
  EXPECT_EQ(devices[0].vendor_id, 0x10005u);
  EXPECT_EQ(devices[0].vendor, "Mesa");
}

}  // namespace
