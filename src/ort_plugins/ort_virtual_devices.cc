#include "ort_plugins/ort_virtual_devices.h"

#include <algorithm>
#include <memory>
#include <string>

#include "base/error.h"
#include "devices/hardware_device.h"
#include "ort_plugins/ort_api_helpers.h"
#include "plugins/host_objects.h"

namespace nxrt::ort {
namespace {

LiveSet<NxHardwareDevice>& PluginMade() {
  static auto* live = new LiveSet<NxHardwareDevice>();
  return *live;
}

NxDeviceType ToNxType(OrtHardwareDeviceType type) {
  switch (RawEnum(type)) {
    case OrtHardwareDeviceType_CPU:
      return NX_DEVICE_CPU;
    case OrtHardwareDeviceType_GPU:
      return NX_DEVICE_GPU;
    case OrtHardwareDeviceType_NPU:
      return NX_DEVICE_NPU;
    default:
      return NX_DEVICE_OTHER;
  }
}

// OrtEpApi::CreateHardwareDevice: a device the plugin owns until ReleaseHardwareDevice. It is an
// NxHardwareDevice, so every HardwareDevice_* getter reads it.
OrtStatus* CreateHardwareDevice(OrtHardwareDeviceType type, uint32_t vendor_id, uint32_t device_id,
                                const char* vendor_name, const OrtKeyValuePairs* metadata,
                                OrtHardwareDevice** out) {
  if (vendor_name == nullptr || out == nullptr) return NullArgument("CreateHardwareDevice");
  return Guard("CreateHardwareDevice", [&]() -> OrtStatus* {
    auto device = std::make_unique<NxHardwareDevice>();
    device->type = ToNxType(type);
    device->vendor = vendor_name;
    device->vendor_id = vendor_id;
    device->device_id = device_id;
    if (metadata != nullptr) {
      for (size_t i = 0; i < metadata->keys.size(); ++i)
        device->Set(metadata->keys[i], metadata->values[i]);
    }
    PluginMade().Add(device.get());
    *out = reinterpret_cast<OrtHardwareDevice*>(device.release());
    return nullptr;
  });
}

// Only a device the plugin made and still holds: anything else is left alone.
void ReleaseHardwareDevice(OrtHardwareDevice* device) {
  const NxHardwareDevice* d = AsNx(device);
  if (!PluginMade().Remove(d)) return;
  ForgetHardwareMetadata(d);
  delete d;
}

// A request option matches when the device's metadata or the EP device's metadata has the key
// with the value (OpenVINO's plugin, for one, names its NPU generations in EP metadata:
// "npu_platform").
bool Answers(const OrtEpDevice& d, const NxKeyValue* options, size_t num_options) {
  for (size_t i = 0; i < num_options; ++i) {
    const std::string key = options[i].key ? options[i].key : "";
    const std::string value = options[i].value ? options[i].value : "";
    const std::string* on_device = d.device->Find(key);
    const char* in_metadata = d.metadata.Get(key);
    if (!(on_device && *on_device == value) && !(in_metadata && value == in_metadata)) return false;
  }
  return true;
}

// "npu_platform=4000, npu_platform=5010" (the values the plugin's virtual devices of `type` have
// for the request's keys), to say what a request that matched nothing could have asked for.
std::string OfferedValues(const std::vector<std::unique_ptr<OrtEpDevice>>& devices,
                          NxDeviceType type, const NxKeyValue* options, size_t num_options) {
  std::string out;
  for (const auto& d : devices) {
    if (!IsPluginMadeDevice(d->device) || d->device->type != type) continue;
    std::string one;
    for (size_t i = 0; i < num_options; ++i) {
      const std::string key = options[i].key ? options[i].key : "";
      const std::string* on_device = d->device->Find(key);
      const char* in_metadata = d->metadata.Get(key);
      const std::string value = on_device ? *on_device : in_metadata ? in_metadata : "(none)";
      one += (one.empty() ? "" : " ") + key + "=" + value;
    }
    out += (out.empty() ? "" : ", ") + one;
  }
  return out;
}

}  // namespace

void InstallVirtualDeviceApi(OrtEpApi& ep_api) {
  ep_api.CreateHardwareDevice = Slot(&CreateHardwareDevice);
  ep_api.ReleaseHardwareDevice = Slot(&ReleaseHardwareDevice);
}

bool IsPluginMadeDevice(const NxHardwareDevice* device) { return PluginMade().Has(device); }

NxStatus* WrappedCreateVirtualDevices(NxEpFactory* self, NxDeviceType type,
                                      const NxKeyValue* options, size_t num_options,
                                      NxVirtualDeviceList* list) {
  auto* w = static_cast<WrappedFactory*>(self);
  return CatchAsStatus([&] {
    if (!w->answer) w->answer = QuerySupportedDevices(*w, w->offered_hardware);
    size_t added = 0;
    bool any_of_type = false;
    for (const auto& d : *w->answer) {
      if (!IsPluginMadeDevice(d->device) || d->device->type != type) continue;
      any_of_type = true;
      if (std::find(w->kept_virtual.begin(), w->kept_virtual.end(), d.get()) !=
              w->kept_virtual.end() ||
          !Answers(*d, options, num_options))
        continue;
      list->added.push_back(static_cast<const HardwareDevice&>(*d->device));
      w->kept_virtual.push_back(d.get());
      ++added;
    }
    if (added == 0 && any_of_type && num_options > 0) {
      w->logger->logger.Log(
          NX_LOG_WARNING,
          w->Context("has virtual devices of that type, but none with the requested options; it "
                     "offers: ") +
              OfferedValues(*w->answer, type, options, num_options));
    }
  });
}

}  // namespace nxrt::ort
