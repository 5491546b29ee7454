// Software Vulkan renderers (Mesa's lavapipe, SwiftShader) as GPU hardware devices, on request.
//
// A machine without a GPU can still test a GPU plugin EP (e.g. onnxruntime-ep-webgpu) on a
// Vulkan implementation that runs on the CPU. nxrt lists such renderers only when the process
// sets NXRT_SOFTWARE_GPU=1: they are slower than nxrt's CPU EP, so they never appear by surprise.
// Each is a GPU with metadata "software" = "1"; selection policies skip it (it is not a real
// GPU), so only an explicit choice of EP or device runs on it.
#pragma once

#include <vector>

#include "devices/hardware_device.h"

namespace nxrt {

// True when NXRT_SOFTWARE_GPU asks for software renderers ("1", "true", "yes" or "on").
bool SoftwareGpusRequested();

// The CPU-type physical devices the Vulkan loader (libvulkan.so.1, loaded at run time) reports,
// as GPU hardware devices. Empty when there is no loader, no instance, or no such device.
std::vector<HardwareDevice> ScanSoftwareVulkanGpus();

// True for a device ScanSoftwareVulkanGpus made.
bool IsSoftwareGpu(const HardwareDevice& d);

}  // namespace nxrt
