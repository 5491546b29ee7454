// The environment: the logger and the registered EP libraries, shared by all sessions of an
// application. The default CPU EP library is found next to libnxrt and registered on first use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/logger.h"
#include "plugins/ep_library.h"

namespace nxrt {

class Env {
 public:
  explicit Env(Logger logger) : logger_(std::move(logger)) {}
  ~Env();

  const Logger& logger() const { return logger_; }

  // Registers an EP library under `name`. Throws if the name is taken or loading fails; the env
  // stays usable either way.
  void RegisterLibrary(const std::string& name, const std::string& path);
  // Unregisters; throws NX_INVALID_ARGUMENT if a live session still uses the library.
  void UnregisterLibrary(const std::string& name);

  // The factory whose EP is named `ep_name` (case-insensitive), or nullptr.
  EpFactory* FindFactory(const std::string& ep_name);
  // The default CPU EP's factory, loading its library on first call.
  EpFactory* DefaultCpuFactory();

  // Sessions hold a use count on the libraries whose EPs they created.
  void AddUse(EpLibrary* library);
  void ReleaseUse(EpLibrary* library);

  // Where the default CPU EP library is looked for (NXRT_CPU_EP_LIBRARY overrides).
  static std::string DefaultCpuLibraryPath();

 private:
  Logger logger_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<EpLibrary>> libraries_;  // by registration name
  std::map<EpLibrary*, int> uses_;
  std::unique_ptr<EpLibrary> cpu_library_;
};

}  // namespace nxrt
