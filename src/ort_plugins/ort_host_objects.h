// What stands behind the opaque handles an onnxruntime plugin EP receives from nxrt's ORT host:
// statuses, key/value pairs, memory descriptions, EP devices and loggers. Hardware devices are
// nxrt's own (an OrtHardwareDevice* is an NxHardwareDevice*).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/logger.h"
#include "devices/ep_device.h"
#include "devices/hardware_device.h"
#include "ort_plugins/ort_abi.h"

struct OrtStatus {
  OrtErrorCode code;
  std::string message;
};

// Keys and values in insertion order; the pointer arrays GetKeyValuePairs returns stay valid
// until the next change.
struct OrtKeyValuePairs {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::vector<const char*> key_ptrs;
  std::vector<const char*> value_ptrs;

  void Set(const std::string& key, const std::string& value);
  void Remove(const std::string& key);
  const char* Get(const std::string& key) const;  // null when absent
  void Refresh();                                 // rebuilds the pointer arrays
  nxrt::KeyValues ToKeyValues() const;
};

// The memory a device owns, as onnxruntime describes it (OrtMemoryDevice is the device part).
struct OrtMemoryDevice {
  OrtMemoryInfoDeviceType device_type = OrtMemoryInfoDeviceType_CPU;
  OrtDeviceMemoryType memory_type = OrtDeviceMemoryType_DEFAULT;
  uint32_t vendor_id = 0;
  int32_t device_id = 0;
  size_t alignment = 0;
};

struct OrtMemoryInfo {
  std::string name;
  int id = 0;
  OrtAllocatorType allocator_type = OrtDeviceAllocator;
  OrtMemType mem_type = OrtMemTypeDefault;
  OrtMemoryDevice device;
};

// One EP device a plugin factory created (OrtEpApi::CreateEpDevice). Owned by the host from the
// moment the factory returns it from GetSupportedDevices.
struct OrtEpDevice {
  OrtEpFactory* factory = nullptr;
  // The hardware device as nxrt knows it: a discovered one, or the host's copy of a virtual one.
  const NxHardwareDevice* device = nullptr;
  // The one the plugin named in CreateEpDevice and is given back (EpDevice_Device, CreateEp):
  // `device`, except on a virtual device the plugin made itself (OrtEpApi::CreateHardwareDevice).
  const NxHardwareDevice* plugin_device = nullptr;
  std::string ep_name;
  std::string ep_vendor;
  OrtKeyValuePairs metadata;
  OrtKeyValuePairs options;
  std::unique_ptr<OrtMemoryInfo> device_memory;  // EpDevice_AddAllocatorInfo, DEFAULT
  std::unique_ptr<OrtMemoryInfo> host_memory;    // ... HOST_ACCESSIBLE
  // ... DEFAULT memory of OrtReadOnlyAllocator type (for initializers). Kept apart so that it
  // does not replace the device allocator's info; nxrt allocates initializers like any tensor.
  std::unique_ptr<OrtMemoryInfo> read_only_memory;
};

struct OrtLogger {
  nxrt::Logger logger;
};

namespace nxrt::ort {

inline const NxHardwareDevice* AsNx(const OrtHardwareDevice* d) {
  return reinterpret_cast<const NxHardwareDevice*>(d);
}
inline const OrtHardwareDevice* AsOrt(const NxHardwareDevice* d) {
  return reinterpret_cast<const OrtHardwareDevice*>(d);
}

// A new recorded status (null when out of memory); see base/status_registry.h for the idea:
// a status pointer a plugin returns is read only when the host made it.
OrtStatus* NewOrtStatus(OrtErrorCode code, std::string message) noexcept;
void FreeOrtStatus(OrtStatus* status) noexcept;
bool IsHostOrtStatus(const OrtStatus* status) noexcept;
// Takes a status a plugin returned (null: success, returns true with code ORT_OK). False when
// the pointer is not one the host made (garbage, or released already): it is left alone.
bool TakeOrtStatus(OrtStatus* status, OrtErrorCode& code, std::string& message);

// EP devices made by CreateEpDevice and not yet released or taken by the host: a pointer a
// plugin returns is read only when it is one of them.
void RememberEpDevice(const OrtEpDevice* device);
bool IsHostEpDevice(const OrtEpDevice* device);
// The host took `device` (or it was released): no longer a plugin's to release.
void ForgetEpDevice(const OrtEpDevice* device);

// Throws the error a plugin's status carries (taking it), as an nxrt::Error naming `context`.
void ThrowIfOrtStatus(OrtStatus* status, const std::string& context);

// A value the plugin owns from now on (ReleaseValue frees it) (ort_value_api.cc).
OrtValue* AdoptPluginValue(NxValue* value);

// An nxrt memory as onnxruntime describes it (host memory: CpuMemoryInfo()); process lifetime.
const OrtMemoryInfo* OrtMemoryInfoFor(const NxMemoryInfo* memory);

// Host memory as onnxruntime describes it, and the host's allocator of it (ort_value_api.cc).
const OrtMemoryInfo* CpuMemoryInfo();
OrtAllocator* CpuAllocator();

// The nxrt status code closest to an onnxruntime one.
NxStatusCode ToNxCode(OrtErrorCode code);

// The memory description nxrt uses for an onnxruntime one.
NxMemoryInfo ToNxMemoryInfo(const OrtMemoryInfo& info);

// Process-wide key/value views of a hardware device's metadata (HardwareDevice_Metadata): nxrt's
// keys plus the names onnxruntime's discovery uses where they mean the same thing.
const OrtKeyValuePairs* HardwareMetadata(const NxHardwareDevice* device);
// Drops the view of a device that is about to be freed (a plugin's virtual device).
void ForgetHardwareMetadata(const NxHardwareDevice* device);

}  // namespace nxrt::ort
