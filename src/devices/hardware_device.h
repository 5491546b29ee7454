// Hardware devices: what the machine has (the CPU, GPUs, NPUs), discovered once per process in
// a deterministic order. EP factories are offered these to build EP devices; applications list
// them through the C API and `nxrt devices`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nxrt/nxrt_types.h"

namespace nxrt {

struct HardwareDevice {
  NxDeviceType type = NX_DEVICE_OTHER;
  std::string vendor;      // "GenuineIntel", "NVIDIA", ...
  uint32_t vendor_id = 0;  // PCI vendor id (0x8086 Intel, 0x10de NVIDIA, ...)
  uint32_t device_id = 0;  // PCI device id; for CPUs (family << 8) | model
  // Facts as key/value strings in a stable order, e.g. "discovered_by" = "drm,pci",
  // "pci_bus_id" = "0000:01:00.0", "isa" = "avx2,fma,...".
  std::vector<std::pair<std::string, std::string>> metadata;

  // The value of `key`, or "" if absent.
  const std::string& Get(const std::string& key) const;
  // The value of `key`, or nullptr if absent.
  const std::string* Find(const std::string& key) const;
  void Set(const std::string& key, const std::string& value);
};

// Discovers devices under `sysfs_root` (normally "/sys"): the CPU first (from CPUID and the
// CPU topology in sysfs), then GPUs and accelerators ordered by type and PCI bus id.
std::vector<HardwareDevice> DiscoverHardware(const std::string& sysfs_root);

}  // namespace nxrt

// The handle the C API hands out is the device itself.
struct NxHardwareDevice : nxrt::HardwareDevice {};

namespace nxrt {

// The devices of this process, discovered on first use under $NXRT_SYSFS_ROOT (default /sys),
// then the software Vulkan renderers when NXRT_SOFTWARE_GPU=1 asks for them.
const std::vector<NxHardwareDevice>& ProcessHardware();

}  // namespace nxrt
