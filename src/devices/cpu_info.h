// The host CPU as a hardware device: vendor and model from CPUID, ISA features, and core and
// thread counts from the CPU topology in sysfs.
#pragma once

#include <string>

#include "devices/hardware_device.h"

namespace nxrt {

HardwareDevice DiscoverCpu(const std::string& sysfs_root);

}  // namespace nxrt
