// The host table's device part (ABI version 3 on): hardware devices, the EP devices a factory
// declares, and the virtual devices it creates.
#include <cstring>
#include <initializer_list>
#include <string>

#include "base/error.h"
#include "plugins/host_api_parts.h"
#include "plugins/host_objects.h"

namespace nxrt::host_api {
namespace {

// ---- Devices (version 3) ----
NxDeviceType HardwareDeviceGetType(const NxHardwareDevice* d) {
  return d ? d->type : NX_DEVICE_OTHER;
}
const char* HardwareDeviceGetVendor(const NxHardwareDevice* d) {
  return d ? d->vendor.c_str() : "";
}
uint32_t HardwareDeviceGetVendorId(const NxHardwareDevice* d) { return d ? d->vendor_id : 0; }
uint32_t HardwareDeviceGetDeviceId(const NxHardwareDevice* d) { return d ? d->device_id : 0; }
size_t HardwareDeviceGetMetadataCount(const NxHardwareDevice* d) {
  return d ? d->metadata.size() : 0;
}
bool HardwareDeviceGetMetadata(const NxHardwareDevice* d, size_t index, const char** key,
                               const char** value) {
  if (d == nullptr || index >= d->metadata.size()) return false;
  if (key) *key = d->metadata[index].first.c_str();
  if (value) *value = d->metadata[index].second.c_str();
  return true;
}
const char* HardwareDeviceGetMetadataValue(const NxHardwareDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  const std::string* v = d->Find(key);
  return v ? v->c_str() : nullptr;
}

// Copies `n` pairs, refusing NULL strings, repeated keys and keys the host sets itself.
NxStatus* CopyKeyValues(const char* what, const NxKeyValue* kv, size_t n,
                        std::initializer_list<const char*> reserved, KeyValues& out) {
  if (n > 0 && kv == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": pairs are null").c_str());
  for (size_t i = 0; i < n; ++i) {
    if (kv[i].key == nullptr || kv[i].key[0] == '\0' || kv[i].value == nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": entry " + std::to_string(i) +
                                                " has a null or empty key or a null value")
                                                   .c_str());
    }
    for (const char* r : reserved) {
      if (std::strcmp(kv[i].key, r) == 0) {
        return CreateStatus(
            NX_INVALID_ARGUMENT,
            (std::string(what) + ": '" + r + "' is set by the host, not by the EP").c_str());
      }
    }
    if (FindKey(out, kv[i].key) != nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT,
                          (std::string(what) + ": key '" + kv[i].key + "' given twice").c_str());
    }
    out.emplace_back(kv[i].key, kv[i].value);
  }
  return nullptr;
}

NxStatus* VirtualDeviceListAdd(NxVirtualDeviceList* list, NxDeviceType type, const char* vendor,
                               uint32_t vendor_id, uint32_t device_id, const NxKeyValue* metadata,
                               size_t num_metadata) {
  if (list == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "VirtualDeviceList_Add: list is null");
  if (RawEnum(type) < NX_DEVICE_CPU || RawEnum(type) > NX_DEVICE_OTHER)
    return CreateStatus(NX_INVALID_ARGUMENT, "VirtualDeviceList_Add: unknown device type");
  return CatchAsStatus([&] {
    HardwareDevice d;
    d.type = type;
    d.vendor = vendor ? vendor : "";
    d.vendor_id = vendor_id;
    d.device_id = device_id;
    ThrowIfStatus(CopyKeyValues("VirtualDeviceList_Add", metadata, num_metadata,
                                {"is_virtual", "discovered_by"}, d.metadata),
                  "");
    list->added.push_back(std::move(d));
  });
}

NxStatus* EpDeviceListAdd(NxEpDeviceList* list, const NxHardwareDevice* device,
                          const NxKeyValue* ep_metadata, size_t num_metadata,
                          const NxKeyValue* default_options, size_t num_options) {
  if (list == nullptr || list->offered == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "EpDeviceList_Add: list is null");
  bool offered = false;
  for (const NxHardwareDevice* d : *list->offered) offered = offered || d == device;
  if (device == nullptr || !offered) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "EpDeviceList_Add: the device is not one of those offered");
  }
  for (const auto& e : list->added) {
    if (e.device == device)
      return CreateStatus(NX_INVALID_ARGUMENT, "EpDeviceList_Add: the device was added twice");
  }
  return CatchAsStatus([&] {
    NxEpDeviceList::Entry e;
    e.device = device;
    ThrowIfStatus(CopyKeyValues("EpDeviceList_Add metadata", ep_metadata, num_metadata,
                                {"version", "library_path"}, e.metadata),
                  "");
    ThrowIfStatus(
        CopyKeyValues("EpDeviceList_Add options", default_options, num_options, {}, e.options), "");
    list->added.push_back(std::move(e));
  });
}

const NxHardwareDevice* EpDeviceGetHardwareDevice(const NxEpDevice* d) {
  return d ? d->device : nullptr;
}
const char* EpDeviceGetMetadataValue(const NxEpDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  const std::string* v = FindKey(d->metadata, key);
  return v ? v->c_str() : nullptr;
}

}  // namespace

void FillDevicesApi(NxHostApi& api) {
  api.HardwareDevice_GetType = HardwareDeviceGetType;
  api.HardwareDevice_GetVendor = HardwareDeviceGetVendor;
  api.HardwareDevice_GetVendorId = HardwareDeviceGetVendorId;
  api.HardwareDevice_GetDeviceId = HardwareDeviceGetDeviceId;
  api.HardwareDevice_GetMetadataCount = HardwareDeviceGetMetadataCount;
  api.HardwareDevice_GetMetadata = HardwareDeviceGetMetadata;
  api.HardwareDevice_GetMetadataValue = HardwareDeviceGetMetadataValue;
  api.VirtualDeviceList_Add = VirtualDeviceListAdd;
  api.EpDeviceList_Add = EpDeviceListAdd;
  api.EpDevice_GetHardwareDevice = EpDeviceGetHardwareDevice;
  api.EpDevice_GetMetadataValue = EpDeviceGetMetadataValue;
}

}  // namespace nxrt::host_api
