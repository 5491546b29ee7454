// The tables nxrt hands to onnxruntime plugin EP libraries: OrtApiBase, OrtApi, OrtEpApi and
// OrtModelEditorApi at NXRT_ORT_API_LEVEL. Every slot holds a function: the implemented ones, or
// a stub that returns an ORT_NOT_IMPLEMENTED status naming the slot (a value-returning slot
// returns 0 or NULL, a void one does nothing). Stub calls are counted per library and warned about
// once per slot.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "base/logger.h"
#include "ort_plugins/ort_abi.h"

namespace nxrt::ort {

const OrtApiBase* HostApiBase();
const OrtApi* HostApi();
const OrtEpApi* HostEpApi();
const OrtModelEditorApi* HostModelEditorApi();

// Tables by number: OrtApi (0), OrtEpApi (1), OrtModelEditorApi (2).
constexpr int kOrtTableCount = 3;
// The name of slot `index` of table `table`, or null past the end.
const char* SlotName(int table, size_t index);
size_t SlotCount(int table);
// Whether nxrt implements slot `index` (false: the slot holds its stub).
bool IsImplemented(int table, size_t index);

// What the host keeps per loaded library for the calls it makes into the tables: the calls it
// made to slots nxrt does not implement, by "OrtApi::Name", and the env configuration entries it
// sees (OrtEpApi::GetEnvConfigEntries).
class PluginLibraryState {
 public:
  PluginLibraryState(std::string library, Logger logger, bool allow_virtual_devices = false)
      : library_(std::move(library)),
        logger_(std::move(logger)),
        allow_virtual_devices_(allow_virtual_devices) {}
  void Record(const std::string& slot);
  std::map<std::string, uint64_t> Counts() const;
  // onnxruntime's "allow_virtual_devices" entry: the library was registered with virtual-device
  // requests (or under a name ending in ".virtual"), so its factories may create virtual
  // hardware devices (OrtEpApi::CreateHardwareDevice).
  bool allow_virtual_devices() const { return allow_virtual_devices_; }

 private:
  std::string library_;
  Logger logger_;
  bool allow_virtual_devices_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> counts_;
};

// While alive, calls into the ORT tables on this thread are counted against `calls` (the host
// opens one around every call into a plugin; a plugin's own threads count as unattributed).
class LibraryScope {
 public:
  explicit LibraryScope(PluginLibraryState* calls);
  ~LibraryScope();
  LibraryScope(const LibraryScope&) = delete;
  LibraryScope& operator=(const LibraryScope&) = delete;

 private:
  PluginLibraryState* previous_;
};

// Stub calls no scope was open for.
PluginLibraryState& UnattributedCalls();
// The library whose call is running on this thread (UnattributedCalls() outside any scope).
const PluginLibraryState& CurrentLibrary();

}  // namespace nxrt::ort
