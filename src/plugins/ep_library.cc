#include "plugins/ep_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/memory_info.h"
#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_plugin_library.h"
#include "plugins/host_objects.h"

namespace nxrt {
namespace {

constexpr size_t kMaxFactories = 8;

// Copies the facts out of a factory after checking it keeps the ABI contract.
EpFactory Inspect(NxEpFactory* raw, const std::string& path, EpLibrary* library) {
  NXRT_CHECK(raw != nullptr, NX_INVALID_PLUGIN, path + ": returned a null factory");
  if (raw->version > NXRT_EP_API_VERSION) {
    Throw(NX_INVALID_PLUGIN, path + ": built for plugin ABI version " +
                                 std::to_string(raw->version) +
                                 ", newer than this runtime's version " +
                                 std::to_string(NXRT_EP_API_VERSION) + "; upgrade nxrt");
  }
  NXRT_CHECK(raw->version >= 1, NX_INVALID_PLUGIN, path + ": factory has ABI version 0");
  NXRT_CHECK(raw->GetName && raw->GetVendor && raw->GetVersion && raw->GetVendorId &&
                 raw->CreateEp && raw->ReleaseEp,
             NX_INVALID_PLUGIN, path + ": factory leaves a required function empty");
  EpFactory f;
  f.raw = raw;
  const char* name = raw->GetName(raw);
  NXRT_CHECK(name != nullptr && name[0] != '\0', NX_INVALID_PLUGIN, path + ": factory has no name");
  f.name = name;
  const char* vendor = raw->GetVendor(raw);
  f.vendor = vendor ? vendor : "";
  const char* version = raw->GetVersion(raw);
  f.version = version ? version : "";
  f.vendor_id = raw->GetVendorId(raw);
  f.library = library;
  return f;
}

// Creates the factory's allocator, arena and data transfer (ABI version 2 factories).
void SetUpMemory(EpFactory& f, const std::string& path) {
  NxEpFactory* raw = f.raw;
  if (raw->version < 2) return;
  if (raw->CreateDataTransfer != nullptr) {
    NxDataTransfer* t = nullptr;
    ThrowIfStatus(raw->CreateDataTransfer(raw, &t),
                  path + ": EP '" + f.name + "' CreateDataTransfer failed");
    if (t != nullptr) {
      if (t->version < 1 || t->CanCopy == nullptr || t->CopyTensors == nullptr ||
          t->Release == nullptr) {
        if (t->Release) t->Release(t);
        Throw(NX_INVALID_PLUGIN,
              path + ": EP '" + f.name + "' returned an incomplete data transfer");
      }
      f.transfer = t;
    }
  }
  const NxMemoryInfo* m = raw->GetMemoryInfo ? raw->GetMemoryInfo(raw) : nullptr;
  if (m == nullptr) return;
  const NxMemoryInfo* interned = InternMemoryInfo(*m);
  if (SameMemory(interned, HostMemory())) return;  // plain host memory: the host's allocator
  f.memory = interned;
  NXRT_CHECK(raw->CreateAllocator != nullptr, NX_INVALID_PLUGIN,
             path + ": EP '" + f.name + "' names its own memory " + DescribeMemory(interned) +
                 " but has no CreateAllocator");
  NXRT_CHECK(f.transfer != nullptr, NX_INVALID_PLUGIN,
             path + ": EP '" + f.name + "' names its own memory " + DescribeMemory(interned) +
                 " but has no data transfer to move values in and out of it");
  NxAllocator* a = nullptr;
  ThrowIfStatus(raw->CreateAllocator(raw, m, &a),
                path + ": EP '" + f.name + "' CreateAllocator failed");
  NXRT_CHECK(a != nullptr, NX_INVALID_PLUGIN,
             path + ": EP '" + f.name + "' CreateAllocator returned no allocator");
  f.allocator = std::make_shared<PluginAllocator>(a, interned, "EP '" + f.name + "' allocator");
  // Up to 256 MiB of freed device blocks are kept for reuse.
  f.arena = std::make_shared<BufferPool>(size_t{256} << 20, f.allocator);
}

// onnxruntime's convention: an onnxruntime plugin registered under a name ending in ".virtual"
// may create virtual devices of any type (there it sets the env's "allow_virtual_devices").
bool AsksForAnyVirtualDevice(const std::string& registration_name) {
  const std::string suffix = ".virtual";
  return registration_name.size() > suffix.size() &&
         registration_name.compare(registration_name.size() - suffix.size(), suffix.size(),
                                   suffix) == 0;
}
const std::vector<VirtualDeviceRequest>& AnyVirtualDevice() {
  static const std::vector<VirtualDeviceRequest> any = {{NX_DEVICE_GPU, {}}, {NX_DEVICE_NPU, {}}};
  return any;
}

// Asks a version-3 factory for the virtual devices of every request; the runtime marks and owns
// them.
// Adds the count made for each request to `per_request`.
std::vector<std::unique_ptr<NxHardwareDevice>> CreateVirtualDevices(
    EpFactory& f, const std::vector<VirtualDeviceRequest>& requests, const std::string& path,
    std::vector<size_t>& per_request) {
  std::vector<std::unique_ptr<NxHardwareDevice>> out;
  NxEpFactory* raw = f.raw;
  // Version 14 factories may take the options in the versioned form instead.
  const bool versioned = raw->version >= 14 && raw->CreateVirtualDevices2 != nullptr;
  if (requests.empty() || raw->version < 3 ||
      (raw->CreateVirtualDevices == nullptr && !versioned)) {
    return out;
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const VirtualDeviceRequest& req = requests[r];
    std::vector<NxKeyValue> options;
    std::vector<NxKeyValue2> options2;
    std::vector<const NxKeyValue2*> options2_ptrs;
    for (const auto& [k, v] : req.options) {
      options.push_back({k.c_str(), v.c_str()});
      options2.push_back({NXRT_EP_API_VERSION, k.c_str(), v.c_str()});
    }
    for (const NxKeyValue2& kv : options2) options2_ptrs.push_back(&kv);
    NxVirtualDeviceList list;
    NxStatus* status =
        versioned ? raw->CreateVirtualDevices2(raw, req.type, options2_ptrs.data(),
                                               options2_ptrs.size(), &list)
                  : raw->CreateVirtualDevices(raw, req.type, options.data(), options.size(), &list);
    ThrowIfStatus(status, path + ": EP '" + f.name + "' refused the request for a virtual " +
                              DeviceTypeName(req.type) + " device");
    per_request[r] += list.added.size();
    for (HardwareDevice& d : list.added) {
      auto owned = std::make_unique<NxHardwareDevice>(NxHardwareDevice{std::move(d)});
      owned->Set("is_virtual", "1");
      owned->Set("discovered_by", f.name);
      out.push_back(std::move(owned));
    }
  }
  return out;
}

// The EP devices of one factory: what GetSupportedDevices adds (version 3), else one on the CPU
// for a host-memory factory and none for a factory with its own device memory.
std::vector<std::unique_ptr<NxEpDevice>> CreateEpDevices(
    EpFactory& f, const std::vector<const NxHardwareDevice*>& offered, const std::string& path,
    const std::string& registration_name) {
  NxEpDeviceList list;
  list.offered = &offered;
  NxEpFactory* raw = f.raw;
  if (raw->version >= 3 && raw->GetSupportedDevices != nullptr) {
    ThrowIfStatus(raw->GetSupportedDevices(raw, offered.data(), offered.size(), &list),
                  path + ": EP '" + f.name + "' GetSupportedDevices failed");
  } else if (f.memory == nullptr) {
    for (const NxHardwareDevice* d : offered) {
      if (d->type == NX_DEVICE_CPU && !IsVirtual(*d)) {
        list.added.push_back({d, {}, {}});
        break;
      }
    }
  }
  std::vector<std::unique_ptr<NxEpDevice>> out;
  for (NxEpDeviceList::Entry& e : list.added) {
    auto d = std::make_unique<NxEpDevice>();
    d->factory = &f;
    d->device = e.device;
    d->ep_name = f.name;
    d->ep_vendor = f.vendor;
    d->library_name = registration_name;
    d->metadata = std::move(e.metadata);
    d->metadata.emplace_back("version", f.version);
    d->metadata.emplace_back("library_path", path);
    d->options = std::move(e.options);
    out.push_back(std::move(d));
  }
  return out;
}

// ABI 12: the memory of each EP device's hardware device (NxEpFactory::GetDeviceMemoryInfo), an
// allocator and arena for each that is not the factory's own memory.
void SetUpDeviceMemories(EpFactory& f, const std::string& path) {
  NxEpFactory* raw = f.raw;
  if (raw->version < 12 || raw->GetDeviceMemoryInfo == nullptr) return;
  for (const NxEpDevice* d : f.devices) {
    const NxMemoryInfo* m = raw->GetDeviceMemoryInfo(raw, d->device);
    if (m == nullptr) continue;
    const NxMemoryInfo* interned = InternMemoryInfo(*m);
    if (f.memory != nullptr && SameMemory(interned, f.memory)) continue;
    NXRT_CHECK(!HostAccessible(interned), NX_INVALID_PLUGIN,
               path + ": EP '" + f.name + "' names host-accessible memory " +
                   DescribeMemory(interned) +
                   " for one of its devices; a device memory must be device memory");
    auto same =
        std::find_if(f.device_memories.begin(), f.device_memories.end(),
                     [&](const EpFactory::DeviceMemory& x) { return x.memory == interned; });
    if (same != f.device_memories.end()) {
      same->devices.push_back(d->device);
      continue;
    }
    NXRT_CHECK(raw->CreateAllocator != nullptr && f.transfer != nullptr, NX_INVALID_PLUGIN,
               path + ": EP '" + f.name + "' names device memory " + DescribeMemory(interned) +
                   " but has no CreateAllocator or no data transfer");
    NxAllocator* a = nullptr;
    ThrowIfStatus(
        raw->CreateAllocator(raw, m, &a),
        path + ": EP '" + f.name + "' CreateAllocator failed for " + DescribeMemory(interned));
    NXRT_CHECK(a != nullptr, NX_INVALID_PLUGIN,
               path + ": EP '" + f.name + "' CreateAllocator returned no allocator for " +
                   DescribeMemory(interned));
    EpFactory::DeviceMemory dm;
    dm.memory = interned;
    dm.allocator = std::make_shared<PluginAllocator>(
        a, interned, "EP '" + f.name + "' allocator for " + DescribeMemory(interned));
    dm.arena = std::make_shared<BufferPool>(size_t{256} << 20, dm.allocator);
    dm.devices.push_back(d->device);
    f.device_memories.push_back(std::move(dm));
  }
}

void TearDownMemory(EpFactory& f) {
  for (auto& dm : f.device_memories) {  // arenas first: they hand blocks back to the allocators
    dm.arena.reset();
    dm.allocator.reset();
  }
  f.device_memories.clear();
  f.arena.reset();
  f.allocator.reset();
  if (f.transfer != nullptr) f.transfer->Release(f.transfer);
  f.transfer = nullptr;
}

}  // namespace

std::unique_ptr<EpLibrary> EpLibrary::Load(const std::string& path,
                                           const std::string& registration_name,
                                           const std::vector<const NxHardwareDevice*>& hardware,
                                           const std::vector<VirtualDeviceRequest>& requests,
                                           const Logger* logger) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) Throw(NX_NOT_FOUND, path + ": no such EP library");
  std::unique_ptr<EpLibrary> lib(new EpLibrary());
  lib->path_ = path;
  lib->registration_name_ = registration_name;
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* err = dlerror();
    Throw(NX_INVALID_PLUGIN, path + ": cannot load EP library: " + (err ? err : "unknown error"));
  }
  auto create =
      reinterpret_cast<NxCreateEpFactoriesFn>(dlsym(lib->handle_, NXRT_EP_CREATE_FACTORIES_SYMBOL));
  lib->release_factory_ =
      reinterpret_cast<NxReleaseEpFactoryFn>(dlsym(lib->handle_, NXRT_EP_RELEASE_FACTORY_SYMBOL));
  NxEpFactory* raw[kMaxFactories] = {};
  size_t count = 0;
  if (create != nullptr && lib->release_factory_ != nullptr) {
    NxStatus* status = create(GetHostApi(), registration_name.c_str(), raw, kMaxFactories, &count);
    ThrowIfStatus(status, path + ": the EP library refused to register");
  } else if (ort::IsOrtPluginLibrary(lib->handle_)) {
    // A library built for onnxruntime: its factories come wrapped as nxrt factories.
    lib->release_factory_ = &ort::ReleaseWrappedFactory;
    ort::CreateWrappedFactories(lib->handle_, path, registration_name,
                                logger ? *logger : Logger(NX_LOG_WARNING, Logger::StderrSink()),
                                !requests.empty() || AsksForAnyVirtualDevice(registration_name),
                                raw, kMaxFactories, &count);
  } else {
    Throw(NX_INVALID_PLUGIN, path + ": not an EP library (it exports neither nxrt's " +
                                 NXRT_EP_CREATE_FACTORIES_SYMBOL + " and " +
                                 NXRT_EP_RELEASE_FACTORY_SYMBOL + " nor onnxruntime's " +
                                 NXRT_ORT_CREATE_FACTORIES_SYMBOL + " and " +
                                 NXRT_ORT_RELEASE_FACTORY_SYMBOL + ")");
  }
  if (count > kMaxFactories) {
    Throw(NX_INVALID_PLUGIN, path + ": reported " + std::to_string(count) + " factories, at most " +
                                 std::to_string(kMaxFactories) + " fit");
  }
  NXRT_CHECK(count > 0, NX_INVALID_PLUGIN, path + ": the EP library created no factory");
  // From here on the library owns `count` factories: keep every one so the destructor releases
  // them even if a later one is rejected.
  std::vector<NxEpFactory*> owned(raw, raw + count);
  try {
    for (NxEpFactory* f : owned) lib->factories_.push_back(Inspect(f, path, lib.get()));
    for (EpFactory& f : lib->factories_) SetUpMemory(f, path);
    for (EpFactory& f : lib->factories_) {
      lib->per_request_.resize(requests.size(), 0);
      ort::SetOfferedHardware(f.raw, hardware);
      std::vector<std::unique_ptr<NxHardwareDevice>> created;
      if (requests.empty() && ort::IsWrappedFactory(f.raw) &&
          AsksForAnyVirtualDevice(registration_name)) {
        std::vector<size_t> unreported(AnyVirtualDevice().size(), 0);
        created = CreateVirtualDevices(f, AnyVirtualDevice(), path, unreported);
      } else {
        created = CreateVirtualDevices(f, requests, path, lib->per_request_);
      }
      std::vector<const NxHardwareDevice*> offered = hardware;
      for (auto& v : created) offered.push_back(v.get());
      for (auto& v : created) lib->virtual_devices_.push_back(std::move(v));
      for (auto& d : CreateEpDevices(f, offered, path, registration_name)) {
        f.devices.push_back(d.get());
        lib->ep_devices_.push_back(std::move(d));
      }
      SetUpDeviceMemories(f, path);
    }
  } catch (...) {
    for (EpFactory& f : lib->factories_) TearDownMemory(f);
    for (NxEpFactory* f : owned)
      if (f) lib->release_factory_(f);
    lib->factories_.clear();
    lib->ep_devices_.clear();
    throw;
  }
  return lib;
}

size_t EpFactory::live_device_blocks() const {
  size_t live = 0;
  if (allocator) live += allocator->live_blocks() - (arena ? arena->cached_blocks() : 0);
  for (const DeviceMemory& dm : device_memories)
    live += dm.allocator->live_blocks() - dm.arena->cached_blocks();
  return live;
}

const NxMemoryInfo* EpFactory::MemoryFor(const NxHardwareDevice* device) const {
  if (device != nullptr) {
    for (const DeviceMemory& dm : device_memories)
      if (std::find(dm.devices.begin(), dm.devices.end(), device) != dm.devices.end())
        return dm.memory;
  }
  return memory;
}

std::shared_ptr<BufferPool> EpFactory::ArenaOf(const NxMemoryInfo* m) const {
  if (m == nullptr) return nullptr;
  if (memory != nullptr && SameMemory(memory, m)) return arena;
  for (const DeviceMemory& dm : device_memories)
    if (SameMemory(dm.memory, m)) return dm.arena;
  return nullptr;
}

std::vector<const NxMemoryInfo*> EpFactory::DeviceMemories() const {
  std::vector<const NxMemoryInfo*> out;
  if (memory != nullptr) out.push_back(memory);
  for (const DeviceMemory& dm : device_memories) out.push_back(dm.memory);
  return out;
}

EpLibrary::~EpLibrary() {
  for (EpFactory& f : factories_) TearDownMemory(f);
  for (EpFactory& f : factories_) release_factory_(f.raw);
  factories_.clear();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace nxrt
