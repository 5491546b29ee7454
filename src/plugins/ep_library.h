// Loading an EP shared library: dlopen, the two entry points, version checks, and its factories.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/buffer_pool.h"
#include "base/logger.h"
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
  // The factory's data transfer, or null.
  NxDataTransfer* transfer = nullptr;

  // Blocks of this factory's memory still held outside its arena (live tensors).
  size_t live_device_blocks() const;
};

class EpLibrary {
 public:
  // Loads `path` and creates its factories. Throws NX_NOT_FOUND (missing file),
  // NX_INVALID_PLUGIN (no entry point, newer ABI, broken factory) or the library's own error.
  static std::unique_ptr<EpLibrary> Load(const std::string& path, const std::string& registration_name);
  ~EpLibrary();  // releases the factories, then unloads the library

  EpLibrary(const EpLibrary&) = delete;
  EpLibrary& operator=(const EpLibrary&) = delete;

  const std::string& path() const { return path_; }
  const std::string& registration_name() const { return registration_name_; }
  std::vector<EpFactory>& factories() { return factories_; }

 private:
  EpLibrary() = default;

  std::string path_;
  std::string registration_name_;
  void* handle_ = nullptr;
  NxReleaseEpFactoryFn release_factory_ = nullptr;
  std::vector<EpFactory> factories_;
};

}  // namespace nxrt
