#include "ort_plugins/ort_api_table.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "base/error.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "ort_plugins/ort_host_objects.h"
#include "ort_plugins/ort_model_editor.h"
#include "ort_plugins/ort_virtual_devices.h"
#include "ort_plugins/ort_wrapped_ep.h"

namespace nxrt::ort {
namespace {

struct SlotInfo {
  const char* name;
  int since;
  char kind;  // 'S' status, 'V' void, 'Z' value
};

#define NXRT_ORT_SLOT(name, since, kind) {#name, since, #kind[0]},
constexpr SlotInfo kApiSlots[] = {
#include "ort_plugins/ort_api_slots.inc"
};
constexpr SlotInfo kEpApiSlots[] = {
#include "ort_plugins/ort_ep_api_slots.inc"
};
constexpr SlotInfo kEditorApiSlots[] = {
#include "ort_plugins/ort_model_editor_api_slots.inc"
};
#undef NXRT_ORT_SLOT

constexpr size_t kApiSlotCount = sizeof(kApiSlots) / sizeof(kApiSlots[0]);
constexpr size_t kEpApiSlotCount = sizeof(kEpApiSlots) / sizeof(kEpApiSlots[0]);
constexpr size_t kEditorApiSlotCount = sizeof(kEditorApiSlots) / sizeof(kEditorApiSlots[0]);
static_assert(sizeof(OrtApi) == kApiSlotCount * sizeof(OrtApiSlot));
static_assert(sizeof(OrtEpApi) == kEpApiSlotCount * sizeof(OrtApiSlot));
static_assert(sizeof(OrtModelEditorApi) == kEditorApiSlotCount * sizeof(OrtApiSlot));

constexpr const char* kTableNames[] = {"OrtApi", "OrtEpApi", "OrtModelEditorApi"};

thread_local PluginLibraryState* current_calls = nullptr;

std::string QualifiedName(int table, size_t index) {
  return std::string(kTableNames[table]) + "::" + SlotName(table, index);
}

void RecordStubCall(int table, size_t index) {
  PluginLibraryState* calls = current_calls ? current_calls : &UnattributedCalls();
  calls->Record(QualifiedName(table, index));
}

// One stub per slot, so the message can name it. Arguments are ignored: with the C calling
// convention the caller owns them, so a stub of any signature may take none.
template <int Table, size_t Index>
OrtStatus* StatusStub() {
  RecordStubCall(Table, Index);
  return NewOrtStatus(ORT_NOT_IMPLEMENTED, QualifiedName(Table, Index) +
                                               " is not implemented by nxrt's ORT plugin host");
}
template <int Table, size_t Index>
uintptr_t ValueStub() {
  RecordStubCall(Table, Index);
  return 0;
}
template <int Table, size_t Index>
void VoidStub() {
  RecordStubCall(Table, Index);
}

template <int Table, size_t Index>
OrtApiSlot StubFor(char kind) {
  return kind == 'S'   ? reinterpret_cast<OrtApiSlot>(&StatusStub<Table, Index>)
         : kind == 'V' ? reinterpret_cast<OrtApiSlot>(&VoidStub<Table, Index>)
                       : reinterpret_cast<OrtApiSlot>(&ValueStub<Table, Index>);
}

// A pack expanded in a list, not a fold: compilers cap the nesting of fold expressions (clang
// at 256) below the table's 415 slots.
template <int Table, size_t... I>
void FillStubs(OrtApiSlot* slots, const SlotInfo* info, std::index_sequence<I...>) {
  const OrtApiSlot stubs[] = {StubFor<Table, I>(info[I].kind)...};
  for (size_t i = 0; i < sizeof...(I); ++i) slots[i] = stubs[i];
}

OrtStatus* InvalidArgument(const char* fn, const char* what) {
  return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": " + what);
}

// ---- Status -----------------------------------------------------------------------------------

OrtStatus* CreateStatus(OrtErrorCode code, const char* message) {
  return NewOrtStatus(code, message ? message : "");
}
OrtErrorCode GetErrorCode(const OrtStatus* status) {
  return IsHostOrtStatus(status) ? status->code : ORT_FAIL;
}
const char* GetErrorMessage(const OrtStatus* status) {
  return IsHostOrtStatus(status) ? status->message.c_str() : "(not a status of this host)";
}
void ReleaseStatus(OrtStatus* status) { FreeOrtStatus(status); }

// ---- Key/value pairs --------------------------------------------------------------------------

void CreateKeyValuePairs(OrtKeyValuePairs** out) {
  if (out == nullptr) return;
  *out = new (std::nothrow) OrtKeyValuePairs();
}
void AddKeyValuePair(OrtKeyValuePairs* kv, const char* key, const char* value) {
  if (kv == nullptr || key == nullptr || value == nullptr || key[0] == '\0') return;
  try {
    kv->Set(key, value);
  } catch (...) {
  }
}
const char* GetKeyValue(const OrtKeyValuePairs* kv, const char* key) {
  return kv && key ? kv->Get(key) : nullptr;
}
void GetKeyValuePairs(const OrtKeyValuePairs* kv, const char* const** keys,
                      const char* const** values, size_t* count) {
  if (keys) *keys = kv ? kv->key_ptrs.data() : nullptr;
  if (values) *values = kv ? kv->value_ptrs.data() : nullptr;
  if (count) *count = kv ? kv->keys.size() : 0;
}
void RemoveKeyValuePair(OrtKeyValuePairs* kv, const char* key) {
  if (kv && key) kv->Remove(key);
}
void ReleaseKeyValuePairs(OrtKeyValuePairs* kv) { delete kv; }

// ---- Memory descriptions ----------------------------------------------------------------------

OrtMemoryInfoDeviceType DeviceTypeFromName(const std::string& name) {
  if (name == "Cpu" || name == "CpuInput" || name == "CpuOutput")
    return OrtMemoryInfoDeviceType_CPU;
  return OrtMemoryInfoDeviceType_GPU;  // onnxruntime's legacy names: Cuda, OpenVINO_GPU, ...
}

OrtStatus* CreateMemoryInfo(const char* name, OrtAllocatorType type, int id, OrtMemType mem_type,
                            OrtMemoryInfo** out) {
  if (name == nullptr || out == nullptr)
    return InvalidArgument("CreateMemoryInfo", "null argument");
  return Guard("CreateMemoryInfo", [&]() -> OrtStatus* {
    auto info = std::make_unique<OrtMemoryInfo>();
    info->name = name;
    info->id = id;
    info->allocator_type = type;
    info->mem_type = mem_type;
    info->device.device_type = DeviceTypeFromName(info->name);
    info->device.device_id = id;
    const int mt = RawEnum(mem_type);
    if (info->device.device_type != OrtMemoryInfoDeviceType_CPU &&
        (mt == OrtMemTypeCPUInput || mt == OrtMemTypeCPUOutput)) {
      info->device.memory_type = OrtDeviceMemoryType_HOST_ACCESSIBLE;
    }
    *out = info.release();
    return nullptr;
  });
}

OrtStatus* CreateCpuMemoryInfo(OrtAllocatorType type, OrtMemType mem_type, OrtMemoryInfo** out) {
  return CreateMemoryInfo("Cpu", type, 0, mem_type, out);
}

OrtStatus* CreateMemoryInfoV2(const char* name, OrtMemoryInfoDeviceType device_type,
                              uint32_t vendor_id, int32_t device_id, OrtDeviceMemoryType mem_type,
                              size_t alignment, OrtAllocatorType allocator_type,
                              OrtMemoryInfo** out) {
  if (name == nullptr || out == nullptr)
    return InvalidArgument("CreateMemoryInfo_V2", "null argument");
  const int dt = RawEnum(device_type), mt = RawEnum(mem_type);
  if (dt < OrtMemoryInfoDeviceType_CPU || dt > OrtMemoryInfoDeviceType_NPU)
    return InvalidArgument("CreateMemoryInfo_V2", "unknown device type");
  if (mt != OrtDeviceMemoryType_DEFAULT && mt != OrtDeviceMemoryType_HOST_ACCESSIBLE)
    return InvalidArgument("CreateMemoryInfo_V2", "unknown device memory type");
  return Guard("CreateMemoryInfo_V2", [&]() -> OrtStatus* {
    auto info = std::make_unique<OrtMemoryInfo>();
    info->name = name;
    info->id = device_id;
    info->allocator_type = allocator_type;
    info->mem_type =
        mt == OrtDeviceMemoryType_HOST_ACCESSIBLE ? OrtMemTypeCPUOutput : OrtMemTypeDefault;
    info->device = {device_type, mem_type, vendor_id, device_id, alignment};
    *out = info.release();
    return nullptr;
  });
}

void ReleaseMemoryInfo(OrtMemoryInfo* info) { delete info; }

bool SameDevice(const OrtMemoryDevice& a, const OrtMemoryDevice& b) {
  return RawEnum(a.device_type) == RawEnum(b.device_type) &&
         RawEnum(a.memory_type) == RawEnum(b.memory_type) && a.vendor_id == b.vendor_id &&
         a.device_id == b.device_id;
}

OrtStatus* CompareMemoryInfo(const OrtMemoryInfo* a, const OrtMemoryInfo* b, int* out) {
  if (!a || !b || !out) return InvalidArgument("CompareMemoryInfo", "null argument");
  const bool same = a->name == b->name && RawEnum(a->mem_type) == RawEnum(b->mem_type) &&
                    RawEnum(a->allocator_type) == RawEnum(b->allocator_type) &&
                    SameDevice(a->device, b->device);
  *out = same ? 0 : -1;
  return nullptr;
}
OrtStatus* MemoryInfoGetName(const OrtMemoryInfo* info, const char** out) {
  if (!info || !out) return InvalidArgument("MemoryInfoGetName", "null argument");
  *out = info->name.c_str();
  return nullptr;
}
OrtStatus* MemoryInfoGetId(const OrtMemoryInfo* info, int* out) {
  if (!info || !out) return InvalidArgument("MemoryInfoGetId", "null argument");
  *out = info->id;
  return nullptr;
}
OrtStatus* MemoryInfoGetMemType(const OrtMemoryInfo* info, OrtMemType* out) {
  if (!info || !out) return InvalidArgument("MemoryInfoGetMemType", "null argument");
  *out = info->mem_type;
  return nullptr;
}
OrtStatus* MemoryInfoGetType(const OrtMemoryInfo* info, OrtAllocatorType* out) {
  if (!info || !out) return InvalidArgument("MemoryInfoGetType", "null argument");
  *out = info->allocator_type;
  return nullptr;
}
void MemoryInfoGetDeviceType(const OrtMemoryInfo* info, OrtMemoryInfoDeviceType* out) {
  if (info && out) *out = info->device.device_type;
}
OrtDeviceMemoryType MemoryInfoGetDeviceMemType(const OrtMemoryInfo* info) {
  return info ? info->device.memory_type : OrtDeviceMemoryType_DEFAULT;
}
uint32_t MemoryInfoGetVendorId(const OrtMemoryInfo* info) {
  return info ? info->device.vendor_id : 0;
}

// ---- Logging ------------------------------------------------------------------------------------

NxLogLevel ToNxLevel(OrtLoggingLevel level) {
  const int l = RawEnum(level);
  return l <= ORT_LOGGING_LEVEL_VERBOSE   ? NX_LOG_VERBOSE
         : l == ORT_LOGGING_LEVEL_INFO    ? NX_LOG_INFO
         : l == ORT_LOGGING_LEVEL_WARNING ? NX_LOG_WARNING
         : l == ORT_LOGGING_LEVEL_ERROR   ? NX_LOG_ERROR
                                          : NX_LOG_FATAL;
}

OrtStatus* LoggerLogMessage(const OrtLogger* logger, OrtLoggingLevel level, const char* message,
                            const char* file, int line, const char* function) {
  if (logger == nullptr || message == nullptr)
    return InvalidArgument("Logger_LogMessage", "null argument");
  (void)file;
  (void)line;
  (void)function;
  return Guard("Logger_LogMessage", [&]() -> OrtStatus* {
    logger->logger.Log(ToNxLevel(level), message);
    return nullptr;
  });
}

OrtStatus* LoggerGetLoggingSeverityLevel(const OrtLogger* logger, OrtLoggingLevel* out) {
  if (logger == nullptr || out == nullptr)
    return InvalidArgument("Logger_GetLoggingSeverityLevel", "null argument");
  *out = static_cast<OrtLoggingLevel>(logger->logger.min_level());
  return nullptr;
}

// ---- Hardware and EP devices ------------------------------------------------------------------

// NXRT_ORT_PLUGIN_CPU_VENDOR_ID (e.g. 0x8086): the PCI vendor id ORT plugins are told the CPU
// has. Some vendor plugins offer only their vendor's devices although their CPU path runs on
// any x86-64 CPU (OpenVINO's: OpenVINO's CPU plugin runs on AMD CPUs too). Read once.
std::optional<uint32_t> CpuVendorIdForPlugins() {
  static const std::optional<uint32_t> id = []() -> std::optional<uint32_t> {
    const char* v = std::getenv("NXRT_ORT_PLUGIN_CPU_VENDOR_ID");
    if (v == nullptr || *v == '\0') return std::nullopt;
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(v, &end, 0);
    if (end == v || *end != '\0' || parsed > 0xffff) {
      std::fprintf(stderr,
                   "[nxrt W] NXRT_ORT_PLUGIN_CPU_VENDOR_ID=%s is not a PCI vendor id "
                   "(e.g. 0x8086); ignored\n",
                   v);
      return std::nullopt;
    }
    return static_cast<uint32_t>(parsed);
  }();
  return id;
}

OrtHardwareDeviceType HardwareDeviceType(const OrtHardwareDevice* d) {
  if (d == nullptr) return OrtHardwareDeviceType_CPU;
  switch (AsNx(d)->type) {
    case NX_DEVICE_GPU:
      return OrtHardwareDeviceType_GPU;
    case NX_DEVICE_NPU:
      return OrtHardwareDeviceType_NPU;
    default:
      return OrtHardwareDeviceType_CPU;
  }
}
uint32_t HardwareDeviceVendorId(const OrtHardwareDevice* d) {
  if (d == nullptr) return 0;
  if (AsNx(d)->type == NX_DEVICE_CPU) {
    if (std::optional<uint32_t> id = CpuVendorIdForPlugins()) return *id;
  }
  return AsNx(d)->vendor_id;
}
const char* HardwareDeviceVendor(const OrtHardwareDevice* d) {
  return d ? AsNx(d)->vendor.c_str() : "";
}
uint32_t HardwareDeviceDeviceId(const OrtHardwareDevice* d) { return d ? AsNx(d)->device_id : 0; }
const OrtKeyValuePairs* HardwareDeviceMetadata(const OrtHardwareDevice* d) {
  return d ? HardwareMetadata(AsNx(d)) : nullptr;
}

const char* EpDeviceEpName(const OrtEpDevice* d) { return d ? d->ep_name.c_str() : nullptr; }
const char* EpDeviceEpVendor(const OrtEpDevice* d) { return d ? d->ep_vendor.c_str() : nullptr; }
const OrtKeyValuePairs* EpDeviceEpMetadata(const OrtEpDevice* d) {
  return d ? &d->metadata : nullptr;
}
const OrtKeyValuePairs* EpDeviceEpOptions(const OrtEpDevice* d) {
  return d ? &d->options : nullptr;
}
const OrtHardwareDevice* EpDeviceDevice(const OrtEpDevice* d) {
  return d ? AsOrt(d->plugin_device) : nullptr;
}
const OrtMemoryInfo* EpDeviceMemoryInfo(const OrtEpDevice* d, OrtDeviceMemoryType type) {
  if (d == nullptr) return nullptr;
  return RawEnum(type) == OrtDeviceMemoryType_HOST_ACCESSIBLE ? d->host_memory.get()
                                                              : d->device_memory.get();
}

const OrtEpApi* GetEpApi() { return HostEpApi(); }
const OrtModelEditorApi* GetModelEditorApi() { return HostModelEditorApi(); }

// ---- OrtEpApi -----------------------------------------------------------------------------------

OrtStatus* CreateEpDevice(OrtEpFactory* factory, const OrtHardwareDevice* device,
                          const OrtKeyValuePairs* metadata, const OrtKeyValuePairs* options,
                          OrtEpDevice** out) {
  if (factory == nullptr || device == nullptr || out == nullptr)
    return InvalidArgument("CreateEpDevice", "null argument");
  return Guard("CreateEpDevice", [&]() -> OrtStatus* {
    auto d = std::make_unique<OrtEpDevice>();
    d->factory = factory;
    d->device = AsNx(device);
    d->plugin_device = d->device;
    const char* name = factory->GetName ? factory->GetName(factory) : nullptr;
    const char* vendor = factory->GetVendor ? factory->GetVendor(factory) : nullptr;
    d->ep_name = name ? name : "";
    d->ep_vendor = vendor ? vendor : "";
    if (metadata) {
      if (metadata->Get("version") != nullptr) {
        return InvalidArgument("CreateEpDevice",
                               "EP metadata may not contain 'version': the host adds it");
      }
      d->metadata = *metadata;
    }
    if (options) d->options = *options;
    RememberEpDevice(d.get());
    *out = d.release();
    return nullptr;
  });
}
// Only a device the plugin still owns: one the host took (or garbage) is left alone.
void ReleaseEpDevice(OrtEpDevice* d) {
  if (!IsHostEpDevice(d)) return;
  ForgetEpDevice(d);
  delete d;
}

OrtStatus* EpDeviceAddAllocatorInfo(OrtEpDevice* d, const OrtMemoryInfo* info) {
  if (d == nullptr || info == nullptr)
    return InvalidArgument("EpDevice_AddAllocatorInfo", "null argument");
  return Guard("EpDevice_AddAllocatorInfo", [&]() -> OrtStatus* {
    auto copy = std::make_unique<OrtMemoryInfo>(*info);
    if (RawEnum(info->device.memory_type) == OrtDeviceMemoryType_HOST_ACCESSIBLE)
      d->host_memory = std::move(copy);
    else if (RawEnum(info->allocator_type) == OrtReadOnlyAllocator)
      d->read_only_memory = std::move(copy);
    else
      d->device_memory = std::move(copy);
    return nullptr;
  });
}

const OrtMemoryDevice* MemoryInfoGetMemoryDevice(const OrtMemoryInfo* info) {
  return info ? &info->device : nullptr;
}
bool MemoryDeviceAreEqual(const OrtMemoryDevice* a, const OrtMemoryDevice* b) {
  return a && b && SameDevice(*a, *b);
}
OrtMemoryInfoDeviceType MemoryDeviceGetDeviceType(const OrtMemoryDevice* d) {
  return d ? d->device_type : OrtMemoryInfoDeviceType_CPU;
}
OrtDeviceMemoryType MemoryDeviceGetMemoryType(const OrtMemoryDevice* d) {
  return d ? d->memory_type : OrtDeviceMemoryType_DEFAULT;
}
uint32_t MemoryDeviceGetVendorId(const OrtMemoryDevice* d) { return d ? d->vendor_id : 0; }
uint32_t MemoryDeviceGetDeviceId(const OrtMemoryDevice* d) {
  return d ? static_cast<uint32_t>(d->device_id) : 0;
}

// Level 24: the env's configuration entries, as the calling library sees them. The one entry
// nxrt gives is onnxruntime's "allow_virtual_devices", for libraries registered with
// virtual-device requests (ort_virtual_devices.cc).
OrtStatus* GetEnvConfigEntries(OrtKeyValuePairs** out) {
  if (out == nullptr) return InvalidArgument("GetEnvConfigEntries", "null argument");
  return Guard("GetEnvConfigEntries", [&]() -> OrtStatus* {
    auto entries = std::make_unique<OrtKeyValuePairs>();
    if (CurrentLibrary().allow_virtual_devices()) entries->Set("allow_virtual_devices", "1");
    *out = entries.release();
    return nullptr;
  });
}

// ---- The tables ---------------------------------------------------------------------------------

OrtApi BuildApi() {
  OrtApi api{};
  FillStubs<0>(reinterpret_cast<OrtApiSlot*>(&api), kApiSlots,
               std::make_index_sequence<kApiSlotCount>());
  api.CreateStatus = Slot(&CreateStatus);
  api.GetErrorCode = Slot(&GetErrorCode);
  api.GetErrorMessage = Slot(&GetErrorMessage);
  api.ReleaseStatus = Slot(&ReleaseStatus);
  api.CreateMemoryInfo = Slot(&CreateMemoryInfo);
  api.CreateCpuMemoryInfo = Slot(&CreateCpuMemoryInfo);
  api.CompareMemoryInfo = Slot(&CompareMemoryInfo);
  api.MemoryInfoGetName = Slot(&MemoryInfoGetName);
  api.MemoryInfoGetId = Slot(&MemoryInfoGetId);
  api.MemoryInfoGetMemType = Slot(&MemoryInfoGetMemType);
  api.MemoryInfoGetType = Slot(&MemoryInfoGetType);
  api.MemoryInfoGetDeviceType = Slot(&MemoryInfoGetDeviceType);
  api.CreateMemoryInfo_V2 = Slot(&CreateMemoryInfoV2);
  api.MemoryInfoGetDeviceMemType = Slot(&MemoryInfoGetDeviceMemType);
  api.MemoryInfoGetVendorId = Slot(&MemoryInfoGetVendorId);
  api.ReleaseMemoryInfo = Slot(&ReleaseMemoryInfo);
  api.Logger_LogMessage = Slot(&LoggerLogMessage);
  api.Logger_GetLoggingSeverityLevel = Slot(&LoggerGetLoggingSeverityLevel);
  api.CreateKeyValuePairs = Slot(&CreateKeyValuePairs);
  api.AddKeyValuePair = Slot(&AddKeyValuePair);
  api.GetKeyValue = Slot(&GetKeyValue);
  api.GetKeyValuePairs = Slot(&GetKeyValuePairs);
  api.RemoveKeyValuePair = Slot(&RemoveKeyValuePair);
  api.ReleaseKeyValuePairs = Slot(&ReleaseKeyValuePairs);
  api.HardwareDevice_Type = Slot(&HardwareDeviceType);
  api.HardwareDevice_VendorId = Slot(&HardwareDeviceVendorId);
  api.HardwareDevice_Vendor = Slot(&HardwareDeviceVendor);
  api.HardwareDevice_DeviceId = Slot(&HardwareDeviceDeviceId);
  api.HardwareDevice_Metadata = Slot(&HardwareDeviceMetadata);
  api.EpDevice_EpName = Slot(&EpDeviceEpName);
  api.EpDevice_EpVendor = Slot(&EpDeviceEpVendor);
  api.EpDevice_EpMetadata = Slot(&EpDeviceEpMetadata);
  api.EpDevice_EpOptions = Slot(&EpDeviceEpOptions);
  api.EpDevice_Device = Slot(&EpDeviceDevice);
  api.EpDevice_MemoryInfo = Slot(&EpDeviceMemoryInfo);
  api.GetEpApi = Slot(&GetEpApi);
  api.GetModelEditorApi = Slot(&GetModelEditorApi);
  InstallGraphApi(api);
  return api;
}

OrtEpApi BuildEpApi() {
  OrtEpApi api{};
  FillStubs<1>(reinterpret_cast<OrtApiSlot*>(&api), kEpApiSlots,
               std::make_index_sequence<kEpApiSlotCount>());
  api.CreateEpDevice = Slot(&CreateEpDevice);
  api.ReleaseEpDevice = Slot(&ReleaseEpDevice);
  api.EpDevice_AddAllocatorInfo = Slot(&EpDeviceAddAllocatorInfo);
  api.MemoryInfo_GetMemoryDevice = Slot(&MemoryInfoGetMemoryDevice);
  api.MemoryDevice_AreEqual = Slot(&MemoryDeviceAreEqual);
  api.MemoryDevice_GetDeviceType = Slot(&MemoryDeviceGetDeviceType);
  api.MemoryDevice_GetMemoryType = Slot(&MemoryDeviceGetMemoryType);
  api.MemoryDevice_GetVendorId = Slot(&MemoryDeviceGetVendorId);
  api.MemoryDevice_GetDeviceId = Slot(&MemoryDeviceGetDeviceId);
  api.GetEnvConfigEntries = Slot(&GetEnvConfigEntries);
  return api;
}

OrtModelEditorApi BuildEditorApi() {
  OrtModelEditorApi api{};
  FillStubs<2>(reinterpret_cast<OrtApiSlot*>(&api), kEditorApiSlots,
               std::make_index_sequence<kEditorApiSlotCount>());
  return api;
}

const OrtApi* GetApi(uint32_t version) {
  // Each level's table extends the one before, so ours serves every level up to it; above it
  // the table would be too short, and NULL tells the library to ask for less.
  if (version < 1 || version > NXRT_ORT_API_LEVEL) return nullptr;
  return HostApi();
}
const char* GetVersionString() { return NXRT_ORT_VERSION_STRING; }

}  // namespace

namespace {
struct Tables {
  OrtApi api;
  OrtEpApi ep_api;
  OrtModelEditorApi editor_api;

  const OrtApiSlot* Slots(int table) const {
    return table == 0   ? reinterpret_cast<const OrtApiSlot*>(&api)
           : table == 1 ? reinterpret_cast<const OrtApiSlot*>(&ep_api)
                        : reinterpret_cast<const OrtApiSlot*>(&editor_api);
  }
};
const Tables& TheTables() {
  static const Tables tables = [] {
    Tables t{BuildApi(), BuildEpApi(), BuildEditorApi()};
    InstallValueApi(t.api, t.ep_api);
    InstallEpAdapterApi(t.api, t.ep_api);
    InstallKernelApi(t.api, t.ep_api);
    InstallStreamApi(t.api, t.ep_api);
    InstallVirtualDeviceApi(t.ep_api);
    InstallModelEditorApi(t.api, t.editor_api);
    return t;
  }();
  return tables;
}
}  // namespace

const OrtApi* HostApi() { return &TheTables().api; }

bool IsImplemented(int table, size_t index) {
  static const Tables stubs_only = [] {
    Tables t{};
    FillStubs<0>(reinterpret_cast<OrtApiSlot*>(&t.api), kApiSlots,
                 std::make_index_sequence<kApiSlotCount>());
    FillStubs<1>(reinterpret_cast<OrtApiSlot*>(&t.ep_api), kEpApiSlots,
                 std::make_index_sequence<kEpApiSlotCount>());
    FillStubs<2>(reinterpret_cast<OrtApiSlot*>(&t.editor_api), kEditorApiSlots,
                 std::make_index_sequence<kEditorApiSlotCount>());
    return t;
  }();
  if (index >= SlotCount(table)) return false;
  return TheTables().Slots(table)[index] != stubs_only.Slots(table)[index];
}
const OrtEpApi* HostEpApi() { return &TheTables().ep_api; }
const OrtModelEditorApi* HostModelEditorApi() { return &TheTables().editor_api; }

const OrtApiBase* HostApiBase() {
  static const OrtApiBase base{&GetApi, &GetVersionString};
  return &base;
}

const char* SlotName(int table, size_t index) {
  if (table == 0) return index < kApiSlotCount ? kApiSlots[index].name : nullptr;
  if (table == 1) return index < kEpApiSlotCount ? kEpApiSlots[index].name : nullptr;
  if (table == 2) return index < kEditorApiSlotCount ? kEditorApiSlots[index].name : nullptr;
  return nullptr;
}

size_t SlotCount(int table) {
  return table == 0   ? kApiSlotCount
         : table == 1 ? kEpApiSlotCount
         : table == 2 ? kEditorApiSlotCount
                      : 0;
}

void PluginLibraryState::Record(const std::string& slot) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = counts_[slot]++ == 0;
  }
  if (first) {
    logger_.Log(NX_LOG_WARNING, "ORT plugin " + library_ + " called " + slot +
                                    ", which nxrt's ORT plugin host does not implement");
  }
}

std::map<std::string, uint64_t> PluginLibraryState::Counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

LibraryScope::LibraryScope(PluginLibraryState* calls) : previous_(current_calls) {
  current_calls = calls;
}
LibraryScope::~LibraryScope() { current_calls = previous_; }

PluginLibraryState& UnattributedCalls() {
  static auto* calls =
      new PluginLibraryState("(unknown library)", Logger(NX_LOG_WARNING, Logger::StderrSink()));
  return *calls;
}

const PluginLibraryState& CurrentLibrary() {
  return current_calls != nullptr ? *current_calls : UnattributedCalls();
}

}  // namespace nxrt::ort
