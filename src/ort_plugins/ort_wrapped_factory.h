// The wrapper that makes an onnxruntime plugin's OrtEpFactory an NxEpFactory (shared by the
// library loader and the EP adapter).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nxrt/nxrt_ep_api.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {

// One onnxruntime factory seen as an NxEpFactory. Every call nxrt makes into the plugin (here and
// in ort_ep_adapter.cc) runs inside a LibraryScope, so stub calls are counted against this
// library, and no exception crosses into plugin code or out to the host's C callers.
struct WrappedFactory : NxEpFactory {
  OrtEpFactory* ort = nullptr;
  OrtReleaseEpFactoryFn release = nullptr;
  std::string path;
  std::string name;
  std::string vendor;
  std::string version;
  uint32_t vendor_id = 0;
  std::shared_ptr<PluginLibraryState> calls;
  std::shared_ptr<OrtLogger> logger;  // the default logger CreateEpFactories received
  // EP devices the factory returned; the host owns them until the factory is released.
  std::vector<std::unique_ptr<OrtEpDevice>> ep_devices;
  // The device memory of each EP device that has one (EpDevice_AddAllocatorInfo with a memory
  // the host cannot read), as nxrt describes it (ort_device_memory.cc).
  struct DeviceMemory {
    const OrtEpDevice* device = nullptr;
    const OrtMemoryInfo* ort = nullptr;  // the EP device's
    NxMemoryInfo nx{};
  };
  std::vector<std::unique_ptr<DeviceMemory>> device_memories;
  // The discovered hardware the host offers (SetOfferedHardware), and the plugin's answer to
  // GetSupportedDevices for it when CreateVirtualDevices asked first: GetSupportedDevices then
  // takes that answer instead of asking again (ort_virtual_devices.cc).
  std::vector<const NxHardwareDevice*> offered_hardware;
  std::optional<std::vector<std::unique_ptr<OrtEpDevice>>> answer;
  // EP devices of `answer` on the plugin's own virtual devices that requests kept, in the order
  // their host copies were added.
  std::vector<const OrtEpDevice*> kept_virtual;

  std::string Context(const char* what) const { return path + ": EP '" + name + "' " + what; }
};

// Device memory of onnxruntime plugins: after GetSupportedDevices, notes which EP devices compute
// in memory of their own; then the factory's GetDeviceMemoryInfo names it, CreateAllocator hands
// out the plugin's OrtEpFactory::CreateAllocator and CreateDataTransfer its OrtDataTransferImpl.
void CollectDeviceMemories(WrappedFactory& factory);

// The plugin's GetSupportedDevices for `hardware` (discovered devices): EP devices the host now
// owns, each on one of `hardware` or on a device the plugin made (CreateHardwareDevice).
std::vector<std::unique_ptr<OrtEpDevice>> QuerySupportedDevices(
    WrappedFactory& factory, const std::vector<const NxHardwareDevice*>& hardware);
void InstallDeviceMemoryApi(NxEpFactory& factory);

}  // namespace nxrt::ort
