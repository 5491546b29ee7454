// The environment: the logger and the registered EP libraries, shared by all sessions of an
// application. The default CPU EP library is found next to libnxrt and registered on first use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "base/logger.h"
#include "base/value.h"
#include "plugins/ep_library.h"
#include "plugins/prepack_store.h"

namespace nxrt {

class Env {
 public:
  // An env over the process's discovered hardware (ProcessHardware()).
  explicit Env(Logger logger);
  // An env that sees `hardware` instead (tests: fixture machines in one process).
  Env(Logger logger, std::vector<NxHardwareDevice> hardware);
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env();

  const Logger& logger() const { return logger_; }

  // Registers an EP library under `name`, asking its factories for the virtual devices in
  // `requests`. Throws if the name is taken or loading fails; the env stays usable either way.
  void RegisterLibrary(const std::string& name, const std::string& path,
                       const std::vector<VirtualDeviceRequest>& requests = {});
  // Unregisters; throws NX_INVALID_ARGUMENT if a live session still uses the library.
  void UnregisterLibrary(const std::string& name);

  // The factory whose EP is named `ep_name` (case-insensitive), or nullptr.
  EpFactory* FindFactory(const std::string& ep_name);
  // The default CPU EP's factory, loading its library on first call.
  // Loads the default CPU EP now if it is not loaded yet, reporting no error (the session that
  // needs it reports it): session creation calls this before it reads the model, so that the
  // CPU EP's start-up work (oneDNN generating its GEMM kernels) overlaps the model load.
  void PreloadDefaultCpu() noexcept;
  EpFactory* DefaultCpuFactory();

  // The hardware devices this env offers to factories (discovered, not virtual).
  const std::vector<const NxHardwareDevice*>& hardware() const { return hardware_; }
  // Every EP device: registered libraries in registration order, then the default CPU EP's
  // (loading it). Valid until the owning library is unregistered.
  std::vector<const NxEpDevice*> EpDevices();

  // Sessions hold a use count on the libraries whose EPs they created.
  void AddUse(EpLibrary* library);
  void ReleaseUse(EpLibrary* library);

  // Where the default CPU EP library is looked for (NXRT_CPU_EP_LIBRARY overrides).
  static std::string DefaultCpuLibraryPath();

  // ---- Memory ----
  // The factory (of any registered library) whose EPs work in `memory`, or nullptr.
  EpFactory* FactoryForMemory(const NxMemoryInfo* memory);
  // A tensor in `memory` (host memory: zero-filled; device memory: uninitialised).
  ValuePtr AllocateTensor(NxElementType type, std::span<const int64_t> dims,
                          const NxMemoryInfo* memory);
  // Copies `src` into `dst` (same element type and shape, any memories): a memcpy between
  // host-accessible memories, otherwise a registered data transfer that accepts the pair, or
  // two transfers through host memory.
  void CopyTensor(const Value& src, Value& dst);
  // `src` in `memory`: src's data copied there (a fresh tensor).
  ValuePtr CopyToMemory(const Value& src, const NxMemoryInfo* memory);

  // ---- Pre-packed weights ----
  PrePackStore& prepack_store() { return prepack_store_; }
  // The allocator host-memory kernels pack weights with (lives as long as the env).
  const std::shared_ptr<HostSideAllocator>& prepack_allocator() { return prepack_allocator_; }

 private:
  void CopyWithTransfer(const Value& src, Value& dst);

  Logger logger_;
  PrePackStore prepack_store_;
  std::shared_ptr<HostSideAllocator> prepack_allocator_ =
      std::make_shared<HostSideAllocator>(HostRawAllocator());
  std::mutex mutex_;
  std::vector<NxHardwareDevice> own_hardware_;  // when given at construction
  std::vector<const NxHardwareDevice*> hardware_;
  std::map<std::string, std::unique_ptr<EpLibrary>> libraries_;  // by registration name
  std::vector<std::string> registration_order_;
  std::map<EpLibrary*, int> uses_;
  std::unique_ptr<EpLibrary> cpu_library_;
};

}  // namespace nxrt
