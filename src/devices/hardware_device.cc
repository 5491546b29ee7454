#include "devices/hardware_device.h"

#include <cstdlib>

#include "devices/cpu_info.h"
#include "devices/sysfs_scan.h"
#include "devices/vulkan_software_gpu.h"

namespace nxrt {

const std::string& HardwareDevice::Get(const std::string& key) const {
  static const std::string empty;
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return empty;
}

const std::string* HardwareDevice::Find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

void HardwareDevice::Set(const std::string& key, const std::string& value) {
  for (auto& [k, v] : metadata) {
    if (k == key) {
      v = value;
      return;
    }
  }
  metadata.emplace_back(key, value);
}

std::vector<HardwareDevice> DiscoverHardware(const std::string& sysfs_root) {
  std::vector<HardwareDevice> devices;
  devices.push_back(DiscoverCpu(sysfs_root));
  for (HardwareDevice& d : ScanSysfsDevices(sysfs_root)) devices.push_back(std::move(d));
  return devices;
}

const std::vector<NxHardwareDevice>& ProcessHardware() {
  static const std::vector<NxHardwareDevice> devices = [] {
    const char* root = std::getenv("NXRT_SYSFS_ROOT");
    std::vector<NxHardwareDevice> out;
    for (HardwareDevice& d : DiscoverHardware(root != nullptr && root[0] != '\0' ? root : "/sys")) {
      out.push_back(NxHardwareDevice{std::move(d)});
    }
    if (SoftwareGpusRequested()) {
      for (HardwareDevice& d : ScanSoftwareVulkanGpus())
        out.push_back(NxHardwareDevice{std::move(d)});
    }
    return out;
  }();
  return devices;
}

}  // namespace nxrt
