#include "ort_plugins/ort_host_objects.h"

#include <map>
#include <mutex>
#include <unordered_set>

#include "base/error.h"

void OrtKeyValuePairs::Set(const std::string& key, const std::string& value) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) {
      values[i] = value;
      Refresh();
      return;
    }
  }
  keys.push_back(key);
  values.push_back(value);
  Refresh();
}

void OrtKeyValuePairs::Remove(const std::string& key) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) {
      keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(i));
      values.erase(values.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  Refresh();
}

const char* OrtKeyValuePairs::Get(const std::string& key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return values[i].c_str();
  return nullptr;
}

void OrtKeyValuePairs::Refresh() {
  key_ptrs.clear();
  value_ptrs.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    key_ptrs.push_back(keys[i].c_str());
    value_ptrs.push_back(values[i].c_str());
  }
}

nxrt::KeyValues OrtKeyValuePairs::ToKeyValues() const {
  nxrt::KeyValues out;
  for (size_t i = 0; i < keys.size(); ++i) out.emplace_back(keys[i], values[i]);
  return out;
}

namespace nxrt::ort {
namespace {

struct StatusRegistry {
  std::mutex mutex;
  std::unordered_set<const OrtStatus*> live;
};

// Never destroyed: a plugin may release statuses from static destructors at exit.
StatusRegistry& Statuses() {
  static auto* registry = new StatusRegistry();
  return *registry;
}

}  // namespace

OrtStatus* NewOrtStatus(OrtErrorCode code, std::string message) noexcept {
  try {
    auto* s = new OrtStatus{code, std::move(message)};
    StatusRegistry& r = Statuses();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.insert(s);
    return s;
  } catch (...) {
    return nullptr;
  }
}

void FreeOrtStatus(OrtStatus* status) noexcept {
  if (status == nullptr) return;
  StatusRegistry& r = Statuses();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.live.erase(status) == 0) return;
  }
  delete status;
}

bool IsHostOrtStatus(const OrtStatus* status) noexcept {
  if (status == nullptr) return false;
  StatusRegistry& r = Statuses();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.count(status) != 0;
}

bool TakeOrtStatus(OrtStatus* status, OrtErrorCode& code, std::string& message) {
  if (status == nullptr) {
    code = ORT_OK;
    message.clear();
    return true;
  }
  StatusRegistry& r = Statuses();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.live.erase(status) == 0) return false;
  }
  code = status->code;
  message = std::move(status->message);
  delete status;
  return true;
}

namespace {
struct EpDeviceRegistry {
  std::mutex mutex;
  std::unordered_set<const OrtEpDevice*> live;
};
EpDeviceRegistry& EpDevices() {
  static auto* registry = new EpDeviceRegistry();
  return *registry;
}
}  // namespace

void RememberEpDevice(const OrtEpDevice* device) {
  EpDeviceRegistry& r = EpDevices();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.insert(device);
}

bool IsHostEpDevice(const OrtEpDevice* device) {
  if (device == nullptr) return false;
  EpDeviceRegistry& r = EpDevices();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.count(device) != 0;
}

void ForgetEpDevice(const OrtEpDevice* device) {
  EpDeviceRegistry& r = EpDevices();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.erase(device);
}

NxStatusCode ToNxCode(OrtErrorCode code) {
  switch (RawEnum(code)) {
    case ORT_OK:
      return NX_OK;
    case ORT_INVALID_ARGUMENT:
      return NX_INVALID_ARGUMENT;
    case ORT_NO_SUCHFILE:
    case ORT_NOT_FOUND:
      return NX_NOT_FOUND;
    case ORT_NOT_IMPLEMENTED:
      return NX_NOT_IMPLEMENTED;
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
      return NX_INVALID_MODEL;
    case ORT_MODEL_LOAD_CANCELED:
      return NX_CANCELLED;
    case ORT_RUNTIME_EXCEPTION:
    case ORT_EP_FAIL:
    case ORT_ENGINE_ERROR:
      return NX_RUNTIME_ERROR;
    default:
      return NX_FAIL;
  }
}

void ThrowIfOrtStatus(OrtStatus* status, const std::string& context) {
  if (status == nullptr) return;
  OrtErrorCode code = ORT_FAIL;
  std::string message;
  if (!TakeOrtStatus(status, code, message)) {
    Throw(NX_INVALID_PLUGIN, context +
                                 ": returned a status pointer the host did not create (garbage "
                                 "or already released)");
  }
  Throw(ToNxCode(code), context + ": " + message);
}

NxMemoryInfo ToNxMemoryInfo(const OrtMemoryInfo& info) {
  NxMemoryInfo m{};
  m.version = 1;
  m.name = info.name.c_str();
  switch (RawEnum(info.device.device_type)) {
    case OrtMemoryInfoDeviceType_GPU:
      m.device_type = NX_DEVICE_GPU;
      break;
    case OrtMemoryInfoDeviceType_NPU:
      m.device_type = NX_DEVICE_NPU;
      break;
    case OrtMemoryInfoDeviceType_FPGA:
      m.device_type = NX_DEVICE_FPGA;
      break;
    default:
      m.device_type = NX_DEVICE_CPU;
  }
  m.vendor_id = info.device.vendor_id;
  m.device_id = info.device.device_id;
  const bool host = m.device_type == NX_DEVICE_CPU ||
                    RawEnum(info.device.memory_type) == OrtDeviceMemoryType_HOST_ACCESSIBLE;
  m.kind = host ? NX_MEMORY_HOST_ACCESSIBLE : NX_MEMORY_DEVICE;
  if (m.device_type == NX_DEVICE_CPU) {
    m.vendor_id = 0;  // host memory is one memory whoever names it
    m.device_id = 0;
  }
  m.alignment = info.device.alignment;
  return m;
}

namespace {
std::mutex metadata_mutex;
using MetadataViews = std::map<const NxHardwareDevice*, std::unique_ptr<OrtKeyValuePairs>>;
MetadataViews& Views() {
  static auto* views = new MetadataViews();
  return *views;
}
}  // namespace

const OrtKeyValuePairs* HardwareMetadata(const NxHardwareDevice* device) {
  std::lock_guard<std::mutex> lock(metadata_mutex);
  auto& slot = Views()[device];
  if (!slot) {
    slot = std::make_unique<OrtKeyValuePairs>();
    for (const auto& [k, v] : device->metadata) slot->Set(k, v);
    // onnxruntime's discovery names: "Discrete" (GPUs), "pci_bus_id", "is_virtual".
    if (const std::string* d = device->Find("discrete")) slot->Set("Discrete", *d);
  }
  return slot.get();
}

void ForgetHardwareMetadata(const NxHardwareDevice* device) {
  std::lock_guard<std::mutex> lock(metadata_mutex);
  Views().erase(device);
}

}  // namespace nxrt::ort
