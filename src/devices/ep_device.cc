#include "devices/ep_device.h"

#include <cstdio>

#include "base/memory_info.h"
#include "devices/vulkan_software_gpu.h"

namespace nxrt {

bool IsVirtual(const NxHardwareDevice& d) { return d.Get("is_virtual") == "1"; }

std::string DescribeEpDevice(const NxEpDevice& d) {
  char ids[32];
  std::snprintf(ids, sizeof(ids), "0x%04x:0x%04x", d.device->vendor_id, d.device->device_id);
  std::string out = d.ep_name + " on " +
                    (IsVirtual(*d.device)       ? "virtual "
                     : IsSoftwareGpu(*d.device) ? "software "
                                                : "") +
                    DeviceTypeName(d.device->type) + " " + d.device->vendor + " " + ids;
  if (const std::string* bus = d.device->Find("pci_bus_id")) out += " (" + *bus + ")";
  return out;
}

}  // namespace nxrt
