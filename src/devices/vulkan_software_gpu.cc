#include "devices/vulkan_software_gpu.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "devices/sysfs_scan.h"

namespace nxrt {
namespace {

// The few Vulkan 1.0 declarations the scan needs, written from the specification so that nxrt
// builds without Vulkan headers. Layouts are fixed by the Vulkan ABI.
using VkInstance = struct VkInstanceOpaque*;
using VkPhysicalDevice = struct VkPhysicalDeviceOpaque*;
using VkResult = int32_t;
constexpr VkResult kVkSuccess = 0;
constexpr VkResult kVkIncomplete = 5;
constexpr int32_t kVkStructureTypeApplicationInfo = 0;
constexpr int32_t kVkStructureTypeInstanceCreateInfo = 1;
constexpr int32_t kVkPhysicalDeviceTypeCpu = 4;
constexpr uint32_t kVkApiVersion11 = (1u << 22) | (1u << 12);
constexpr uint32_t kVkVendorIdMesa = 0x10005;

struct VkApplicationInfo {
  int32_t sType;
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};

struct VkInstanceCreateInfo {
  int32_t sType;
  const void* pNext;
  uint32_t flags;
  const VkApplicationInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};

// VkPhysicalDeviceProperties: the leading fields the scan reads, then room for the limits and
// sparse properties that follow (824 bytes in all; the padding leaves ample slack).
struct VkPhysicalDeviceProperties {
  uint32_t apiVersion;
  uint32_t driverVersion;
  uint32_t vendorID;
  uint32_t deviceID;
  int32_t deviceType;
  char deviceName[256];
  uint8_t pipelineCacheUUID[16];
  alignas(8) unsigned char limits_and_sparse[2048];
};

using CreateInstanceFn = VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*);
using DestroyInstanceFn = void (*)(VkInstance, const void*);
using EnumeratePhysicalDevicesFn = VkResult (*)(VkInstance, uint32_t*, VkPhysicalDevice*);
using GetPropertiesFn = void (*)(VkPhysicalDevice, VkPhysicalDeviceProperties*);

std::string VersionString(uint32_t v) {
  return std::to_string(v >> 22 & 0x7f) + "." + std::to_string(v >> 12 & 0x3ff) + "." +
         std::to_string(v & 0xfff);
}

HardwareDevice ToHardwareDevice(const VkPhysicalDeviceProperties& p) {
  HardwareDevice d;
  d.type = NX_DEVICE_GPU;
  d.vendor_id = p.vendorID;
  d.device_id = p.deviceID;
  d.vendor = p.vendorID == kVkVendorIdMesa ? "Mesa" : PciVendorName(p.vendorID);
  if (d.vendor.empty()) d.vendor = "software";
  d.Set("discovered_by", "vulkan");
  d.Set("software", "1");
  d.Set("vulkan_device_name", std::string(p.deviceName, strnlen(p.deviceName, 256)));
  d.Set("vulkan_api_version", VersionString(p.apiVersion));
  return d;
}

}  // namespace

bool SoftwareGpusRequested() {
  const char* v = std::getenv("NXRT_SOFTWARE_GPU");
  if (v == nullptr) return false;
  const std::string s = v;
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

bool IsSoftwareGpu(const HardwareDevice& d) { return d.Get("software") == "1"; }

std::vector<HardwareDevice> ScanSoftwareVulkanGpus() {
  std::vector<HardwareDevice> out;
  // Kept loaded on purpose: the renderer it brings in (LLVM for lavapipe) does not unload
  // cleanly, and a GPU plugin that uses the device loads the same loader again anyway.
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "nxrt: NXRT_SOFTWARE_GPU is set but the Vulkan loader is missing: %s\n",
                 dlerror());
    return out;
  }
  auto create = reinterpret_cast<CreateInstanceFn>(dlsym(lib, "vkCreateInstance"));
  auto destroy = reinterpret_cast<DestroyInstanceFn>(dlsym(lib, "vkDestroyInstance"));
  auto enumerate =
      reinterpret_cast<EnumeratePhysicalDevicesFn>(dlsym(lib, "vkEnumeratePhysicalDevices"));
  auto properties = reinterpret_cast<GetPropertiesFn>(dlsym(lib, "vkGetPhysicalDeviceProperties"));
  if (create == nullptr || destroy == nullptr || enumerate == nullptr || properties == nullptr) {
    return out;
  }
  VkApplicationInfo app{
      kVkStructureTypeApplicationInfo, nullptr, "nxrt", 1, "nxrt", 1, kVkApiVersion11};
  VkInstanceCreateInfo info{
      kVkStructureTypeInstanceCreateInfo, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  VkInstance instance = nullptr;
  if (create(&info, nullptr, &instance) != kVkSuccess || instance == nullptr) {
    std::fprintf(stderr, "nxrt: NXRT_SOFTWARE_GPU is set but no Vulkan instance could be made\n");
    return out;
  }
  uint32_t count = 0;
  std::vector<VkPhysicalDevice> devices;
  if (enumerate(instance, &count, nullptr) == kVkSuccess && count > 0) {
    devices.resize(count);
    const VkResult r = enumerate(instance, &count, devices.data());
    devices.resize(r == kVkSuccess || r == kVkIncomplete ? count : 0);
  }
  for (VkPhysicalDevice pd : devices) {
    VkPhysicalDeviceProperties p{};
    properties(pd, &p);
    if (p.deviceType == kVkPhysicalDeviceTypeCpu) out.push_back(ToHardwareDevice(p));
  }
  destroy(instance, nullptr);
  if (out.empty()) {
    std::fprintf(stderr,
                 "nxrt: NXRT_SOFTWARE_GPU is set but Vulkan reports no software renderer\n");
  }
  return out;
}

}  // namespace nxrt
