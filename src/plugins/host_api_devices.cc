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

// The key and value of entry `i` of either form of key/value array (version 14 added the
// versioned one: an array of pointers, none null, each entry of version 14 or later).
NxStatus* EntryAt(const char* /*what*/, const NxKeyValue* kv, size_t i, const char** key,
                  const char** value) {
  *key = kv[i].key;
  *value = kv[i].value;
  return nullptr;
}
NxStatus* EntryAt(const char* what, const NxKeyValue2* const* kv, size_t i, const char** key,
                  const char** value) {
  if (kv[i] == nullptr || kv[i]->version < 14) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        (std::string(what) + ": entry " + std::to_string(i) +
                         (kv[i] == nullptr ? " is null" : " has a version below 14"))
                            .c_str());
  }
  *key = kv[i]->key;
  *value = kv[i]->value;
  return nullptr;
}

// Copies `n` pairs, refusing NULL strings, repeated keys and keys the host sets itself.
template <class Pairs>
NxStatus* CopyKeyValues(const char* what, Pairs kv, size_t n,
                        std::initializer_list<const char*> reserved, KeyValues& out) {
  if (n > 0 && kv == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": pairs are null").c_str());
  for (size_t i = 0; i < n; ++i) {
    const char* key = nullptr;
    const char* value = nullptr;
    if (NxStatus* bad = EntryAt(what, kv, i, &key, &value)) return bad;
    if (key == nullptr || key[0] == '\0' || value == nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": entry " + std::to_string(i) +
                                                " has a null or empty key or a null value")
                                                   .c_str());
    }
    for (const char* r : reserved) {
      if (std::strcmp(key, r) == 0) {
        return CreateStatus(
            NX_INVALID_ARGUMENT,
            (std::string(what) + ": '" + r + "' is set by the host, not by the EP").c_str());
      }
    }
    if (FindKey(out, key) != nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT,
                          (std::string(what) + ": key '" + key + "' given twice").c_str());
    }
    out.emplace_back(key, value);
  }
  return nullptr;
}

template <class Pairs>
NxStatus* AddVirtualDevice(const char* what, NxVirtualDeviceList* list, NxDeviceType type,
                           const char* vendor, uint32_t vendor_id, uint32_t device_id,
                           Pairs metadata, size_t num_metadata) {
  if (list == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": list is null").c_str());
  if (RawEnum(type) < NX_DEVICE_CPU || RawEnum(type) > NX_DEVICE_OTHER) {
    return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": unknown device type").c_str());
  }
  return CatchAsStatus([&] {
    HardwareDevice d;
    d.type = type;
    d.vendor = vendor ? vendor : "";
    d.vendor_id = vendor_id;
    d.device_id = device_id;
    ThrowIfStatus(
        CopyKeyValues(what, metadata, num_metadata, {"is_virtual", "discovered_by"}, d.metadata),
        "");
    list->added.push_back(std::move(d));
  });
}

template <class Pairs>
NxStatus* AddEpDevice(const std::string& what, NxEpDeviceList* list, const NxHardwareDevice* device,
                      Pairs ep_metadata, size_t num_metadata, Pairs default_options,
                      size_t num_options) {
  if (list == nullptr || list->offered == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, (what + ": list is null").c_str());
  bool offered = false;
  for (const NxHardwareDevice* d : *list->offered) offered = offered || d == device;
  if (device == nullptr || !offered) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        (what + ": the device is not one of those offered").c_str());
  }
  for (const auto& e : list->added) {
    if (e.device == device)
      return CreateStatus(NX_INVALID_ARGUMENT, (what + ": the device was added twice").c_str());
  }
  return CatchAsStatus([&] {
    NxEpDeviceList::Entry e;
    e.device = device;
    ThrowIfStatus(CopyKeyValues((what + " metadata").c_str(), ep_metadata, num_metadata,
                                {"version", "library_path"}, e.metadata),
                  "");
    ThrowIfStatus(
        CopyKeyValues((what + " options").c_str(), default_options, num_options, {}, e.options),
        "");
    list->added.push_back(std::move(e));
  });
}

NxStatus* VirtualDeviceListAdd(NxVirtualDeviceList* list, NxDeviceType type, const char* vendor,
                               uint32_t vendor_id, uint32_t device_id, const NxKeyValue* metadata,
                               size_t num_metadata) {
  return AddVirtualDevice("VirtualDeviceList_Add", list, type, vendor, vendor_id, device_id,
                          metadata, num_metadata);
}
NxStatus* VirtualDeviceListAdd2(NxVirtualDeviceList* list, NxDeviceType type, const char* vendor,
                                uint32_t vendor_id, uint32_t device_id,
                                const NxKeyValue2* const* metadata, size_t num_metadata) {
  return AddVirtualDevice("VirtualDeviceList_Add2", list, type, vendor, vendor_id, device_id,
                          metadata, num_metadata);
}

NxStatus* EpDeviceListAdd(NxEpDeviceList* list, const NxHardwareDevice* device,
                          const NxKeyValue* ep_metadata, size_t num_metadata,
                          const NxKeyValue* default_options, size_t num_options) {
  return AddEpDevice("EpDeviceList_Add", list, device, ep_metadata, num_metadata, default_options,
                     num_options);
}
NxStatus* EpDeviceListAdd2(NxEpDeviceList* list, const NxHardwareDevice* device,
                           const NxKeyValue2* const* ep_metadata, size_t num_metadata,
                           const NxKeyValue2* const* default_options, size_t num_options) {
  return AddEpDevice("EpDeviceList_Add2", list, device, ep_metadata, num_metadata, default_options,
                     num_options);
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
  api.VirtualDeviceList_Add2 = VirtualDeviceListAdd2;
  api.EpDeviceList_Add2 = EpDeviceListAdd2;
}

}  // namespace nxrt::host_api
