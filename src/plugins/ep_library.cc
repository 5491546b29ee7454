#include "plugins/ep_library.h"

#include <dlfcn.h>

#include <filesystem>

#include "base/error.h"
#include "base/memory_info.h"
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

void TearDownMemory(EpFactory& f) {
  f.arena.reset();
  f.allocator.reset();
  if (f.transfer != nullptr) f.transfer->Release(f.transfer);
  f.transfer = nullptr;
}

}  // namespace

std::unique_ptr<EpLibrary> EpLibrary::Load(const std::string& path,
                                           const std::string& registration_name) {
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
  if (create == nullptr || lib->release_factory_ == nullptr) {
    Throw(NX_INVALID_PLUGIN, path + ": not an nxrt EP library (it does not export " +
                                 NXRT_EP_CREATE_FACTORIES_SYMBOL + " and " +
                                 NXRT_EP_RELEASE_FACTORY_SYMBOL + ")");
  }
  NxEpFactory* raw[kMaxFactories] = {};
  size_t count = 0;
  NxStatus* status = create(GetHostApi(), registration_name.c_str(), raw, kMaxFactories, &count);
  ThrowIfStatus(status, path + ": the EP library refused to register");
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
  } catch (...) {
    for (EpFactory& f : lib->factories_) TearDownMemory(f);
    for (NxEpFactory* f : owned)
      if (f) lib->release_factory_(f);
    lib->factories_.clear();
    throw;
  }
  return lib;
}

size_t EpFactory::live_device_blocks() const {
  if (!allocator) return 0;
  return allocator->live_blocks() - (arena ? arena->cached_blocks() : 0);
}

EpLibrary::~EpLibrary() {
  for (EpFactory& f : factories_) TearDownMemory(f);
  for (EpFactory& f : factories_) release_factory_(f.raw);
  factories_.clear();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace nxrt
