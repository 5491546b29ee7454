// EP devices: one EP factory paired with one hardware device it supports, with the EP's metadata
// about that pairing and its default options. Created at library registration (from the
// factory's GetSupportedDevices), owned by the library, listed to applications and chosen from
// by explicit selection or a policy.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/key_values.h"  // KeyValues, FindKey (used here and by the profiler)
#include "devices/hardware_device.h"

namespace nxrt {

struct EpFactory;

}  // namespace nxrt

struct NxEpDevice {
  nxrt::EpFactory* factory = nullptr;        // the EP's factory (owned by the library)
  const NxHardwareDevice* device = nullptr;  // discovered (process-wide) or virtual (library's)
  std::string ep_name;
  std::string ep_vendor;
  std::string library_name;  // registration name of the library
  nxrt::KeyValues metadata;  // EP metadata (+ "version", "library_path")
  nxrt::KeyValues options;   // default EP options
};

namespace nxrt {

// One line for messages: "ExampleGpu on gpu NVIDIA 0x10de:0x2684 (0000:01:00.0)".
std::string DescribeEpDevice(const NxEpDevice& d);
bool IsVirtual(const NxHardwareDevice& d);

}  // namespace nxrt
