// Loading an EP shared library: dlopen, the two entry points, version checks, and its factories.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/buffer_pool.h"
#include "base/logger.h"
#include "devices/ep_device.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

class EpLibrary;

// One factory of a loaded library, with the facts copied out of it and the memory services it
// provides (created at registration, released before the factory).
struct EpFactory {
  NxEpFactory* raw = nullptr;
  std::string name;
  std::string vendor;
  std::string version;
  uint32_t vendor_id = 0;
  EpLibrary* library = nullptr;

  // The memory its EP kernels work in: null for host memory.
  const NxMemoryInfo* memory = nullptr;
  // For device memory: the factory's allocator and the process-wide arena over it.
  std::shared_ptr<RawAllocator> allocator;
  std::shared_ptr<BufferPool> arena;

  // ABI 12: another memory of the factory (NxEpFactory::GetDeviceMemoryInfo), with its own
  // allocator and arena, and the hardware devices whose kernels work in it.
  struct DeviceMemory {
    const NxMemoryInfo* memory = nullptr;  // interned, device memory, not `memory`
    std::shared_ptr<RawAllocator> allocator;
    std::shared_ptr<BufferPool> arena;
    std::vector<const NxHardwareDevice*> devices;
  };
  std::vector<DeviceMemory> device_memories;
  // The memory the kernels work in on `device` (null = host memory).
  const NxMemoryInfo* MemoryFor(const NxHardwareDevice* device) const;
  // Whether `m` is one of its memories, and that memory's process-wide arena (null if not).
  std::shared_ptr<BufferPool> ArenaOf(const NxMemoryInfo* m) const;
  // Every device memory it has (`memory` first), for per-session allocators.
  std::vector<const NxMemoryInfo*> DeviceMemories() const;
  // The factory's data transfer, or null.
  NxDataTransfer* transfer = nullptr;

  // Its EP devices (owned by the library), in the order the factory added them.
  std::vector<const NxEpDevice*> devices;

  // Blocks of this factory's memory still held outside its arena (live tensors).
  size_t live_device_blocks() const;
};

// An application's request for virtual devices of one type, with target options.
struct VirtualDeviceRequest {
  NxDeviceType type = NX_DEVICE_NPU;
  KeyValues options;
};

class EpLibrary {
 public:
  // Loads `path`, creates its factories, asks them for the virtual devices in `requests` and
  // for the EP devices they support among `hardware` (plus their own virtual devices). Throws
  // NX_NOT_FOUND (missing file), NX_INVALID_PLUGIN (no entry point, newer ABI, broken factory)
  // or the library's own error. `logger` (default: warnings to stderr) gets what the host says
  // about the library later, e.g. an onnxruntime plugin calling what nxrt does not implement.
  static std::unique_ptr<EpLibrary> Load(const std::string& path,
                                         const std::string& registration_name,
                                         const std::vector<const NxHardwareDevice*>& hardware,
                                         const std::vector<VirtualDeviceRequest>& requests = {},
                                         const Logger* logger = nullptr);
  ~EpLibrary();  // releases the factories, then unloads the library, then frees its devices

  EpLibrary(const EpLibrary&) = delete;
  EpLibrary& operator=(const EpLibrary&) = delete;

  const std::string& path() const { return path_; }
  const std::string& registration_name() const { return registration_name_; }
  std::vector<EpFactory>& factories() { return factories_; }
  // Virtual devices the factories created on request (owned here).
  const std::vector<std::unique_ptr<NxHardwareDevice>>& virtual_devices() const {
    return virtual_devices_;
  }
  // How many virtual devices the factories made for each request (same order).
  const std::vector<size_t>& virtual_devices_per_request() const { return per_request_; }

 private:
  EpLibrary() = default;

  std::string path_;
  std::string registration_name_;
  void* handle_ = nullptr;
  NxReleaseEpFactoryFn release_factory_ = nullptr;
  // Declared before the factories so they outlive them (factories may hold device pointers).
  std::vector<std::unique_ptr<NxHardwareDevice>> virtual_devices_;
  std::vector<std::unique_ptr<NxEpDevice>> ep_devices_;
  std::vector<size_t> per_request_;
  std::vector<EpFactory> factories_;
};

}  // namespace nxrt
