// GPUs and accelerators from Linux sysfs: DRM cards (class/drm/cardN), compute accelerators
// (class/accel/accelN) and a PCI scan (display controllers, class 0x03, which includes
// compute-only "3D controllers" 0x0302; processing accelerators, class 0x12). A device seen
// through several of these is listed once, with every source in "discovered_by".
#pragma once

#include <string>
#include <vector>

#include "devices/hardware_device.h"

namespace nxrt {

// Devices under `sysfs_root`, ordered GPUs first, then NPUs, each by PCI bus id (or sysfs path
// for devices not on PCI). A missing or unreadable tree yields no devices.
std::vector<HardwareDevice> ScanSysfsDevices(const std::string& sysfs_root);

// "NVIDIA", "Intel", "AMD", ... for a PCI vendor id; "" when unknown.
std::string PciVendorName(uint32_t vendor_id);

}  // namespace nxrt
