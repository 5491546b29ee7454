#include "ort_plugins/ort_plugin_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "base/error.h"
#include "devices/ep_device.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "ort_plugins/ort_host_objects.h"
#include "ort_plugins/ort_virtual_devices.h"
#include "ort_plugins/ort_wrapped_factory.h"
#include "plugins/host_objects.h"

namespace nxrt::ort {
namespace {

// onnxruntime offers room for this many factories and EP devices per factory.
constexpr size_t kMaxOrtFactories = 4;
constexpr size_t kMaxEpDevices = 32;

WrappedFactory* Wrapped(NxEpFactory* f) { return static_cast<WrappedFactory*>(f); }
const WrappedFactory* Wrapped(const NxEpFactory* f) {
  return static_cast<const WrappedFactory*>(f);
}

const char* WrappedName(const NxEpFactory* self) { return Wrapped(self)->name.c_str(); }
const char* WrappedVendor(const NxEpFactory* self) { return Wrapped(self)->vendor.c_str(); }
const char* WrappedVersion(const NxEpFactory* self) { return Wrapped(self)->version.c_str(); }
uint32_t WrappedVendorId(const NxEpFactory* self) { return Wrapped(self)->vendor_id; }

NxStatus* WrappedCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** ep) {
  if (ep == nullptr || args == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT, "CreateEp: null argument");
  return CreateWrappedEp(*Wrapped(self), args, ep);
}

void WrappedReleaseEp(NxEpFactory* self, NxEp* ep) { ReleaseWrappedEp(*Wrapped(self), ep); }

// onnxruntime offers devices NPU first, then GPU, then CPU; plugins may rely on that order.
std::vector<const OrtHardwareDevice*> OfferOrder(const NxHardwareDevice* const* devices,
                                                 size_t count) {
  std::vector<const OrtHardwareDevice*> out;
  for (NxDeviceType type : {NX_DEVICE_NPU, NX_DEVICE_GPU, NX_DEVICE_CPU}) {
    for (size_t i = 0; i < count; ++i)
      if (devices[i] != nullptr && devices[i]->type == type) out.push_back(AsOrt(devices[i]));
  }
  return out;
}

NxStatus* WrappedGetSupportedDevices(NxEpFactory* self, const NxHardwareDevice* const* devices,
                                     size_t num_devices, NxEpDeviceList* supported) {
  WrappedFactory* w = Wrapped(self);
  return CatchAsStatus([&] {
    // The host's copies of this factory's virtual devices follow the discovered devices.
    std::vector<const NxHardwareDevice*> hardware, copies;
    for (size_t i = 0; i < num_devices; ++i) {
      if (devices[i] != nullptr) (IsVirtual(*devices[i]) ? copies : hardware).push_back(devices[i]);
    }
    std::vector<std::unique_ptr<OrtEpDevice>> answer;
    if (w->answer && w->offered_hardware == hardware) {
      answer = std::move(*w->answer);
    } else {
      w->kept_virtual.clear();  // they belonged to an answer for other hardware
      answer = QuerySupportedDevices(*w, hardware);
    }
    w->answer.reset();
    NXRT_CHECK(copies.size() == w->kept_virtual.size(), NX_FAIL,
               w->Context("was offered virtual devices it did not create"));
    std::set<const NxHardwareDevice*> seen;
    std::vector<std::unique_ptr<OrtEpDevice>> kept;
    for (auto& d : answer) {
      if (IsPluginMadeDevice(d->device)) {
        auto it = std::find(w->kept_virtual.begin(), w->kept_virtual.end(), d.get());
        if (it == w->kept_virtual.end()) {
          if (!w->calls->allow_virtual_devices()) {
            w->logger->logger.Log(NX_LOG_WARNING,
                                  w->Context("made a virtual device although no virtual device "
                                             "was requested; its EP device is ignored"));
          }
          continue;  // no request asked for it
        }
        d->device = copies[static_cast<size_t>(it - w->kept_virtual.begin())];
      }
      NXRT_CHECK(seen.insert(d->device).second, NX_INVALID_PLUGIN,
                 w->Context("GetSupportedDevices returned two EP devices on one hardware device"));
      supported->added.push_back({d->device, d->metadata.ToKeyValues(), d->options.ToKeyValues()});
      kept.push_back(std::move(d));
    }
    w->kept_virtual.clear();
    for (auto& d : kept) w->ep_devices.push_back(std::move(d));
    CollectDeviceMemories(*w);
  });
}

// OrtEpFactory::ValidateCompiledModelCompatibilityInfo, for NxEnv_GetModelCompatibility and
// `nxrt certify`. onnxruntime's "supported, prefer recompilation" is nxrt's "supported but
// suboptimal": the payload runs.
NxStatus* WrappedCheckCompatibility(NxEpFactory* self, const NxHardwareDevice* const* devices,
                                    size_t num_devices, const char* compatibility,
                                    NxCompatibility* result) {
  WrappedFactory* w = Wrapped(self);
  return CatchAsStatus([&] {
    *result = NX_COMPATIBILITY_OPTIMAL;  // what the host assumes when a factory cannot say
    if (w->ort->ort_version_supported < 23 ||
        w->ort->ValidateCompiledModelCompatibilityInfo == nullptr)
      return;
    // The plugin is handed its own device where it made one (a virtual device).
    std::vector<const OrtHardwareDevice*> offered;
    for (size_t i = 0; i < num_devices; ++i) {
      const NxHardwareDevice* device = devices[i];
      for (const auto& d : w->ep_devices)
        if (d->device == devices[i]) device = d->plugin_device;
      offered.push_back(AsOrt(device));
    }
    OrtCompiledModelCompatibility answer = OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(w->calls.get());
      status = w->ort->ValidateCompiledModelCompatibilityInfo(
          w->ort, offered.data(), offered.size(), compatibility, &answer);
    }
    ThrowIfOrtStatus(status, w->Context("ValidateCompiledModelCompatibilityInfo failed"));
    switch (RawEnum(answer)) {
      case OrtCompiledModelCompatibility_EP_NOT_APPLICABLE:
        *result = NX_COMPATIBILITY_NOT_APPLICABLE;
        break;
      case OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL:
        *result = NX_COMPATIBILITY_OPTIMAL;
        break;
      case OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION:
        *result = NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL;
        break;
      case OrtCompiledModelCompatibility_EP_UNSUPPORTED:
        *result = NX_COMPATIBILITY_UNSUPPORTED;
        break;
      default:
        Throw(NX_INVALID_PLUGIN,
              w->Context("ValidateCompiledModelCompatibilityInfo gave an unknown answer") + " " +
                  std::to_string(RawEnum(answer)));
    }
  });
}

const char* CopyString(const char* s) { return s ? s : ""; }

std::unique_ptr<WrappedFactory> Wrap(OrtEpFactory* ort, OrtReleaseEpFactoryFn release,
                                     const std::string& path,
                                     const std::shared_ptr<PluginLibraryState>& calls,
                                     const std::shared_ptr<OrtLogger>& logger) {
  auto w = std::make_unique<WrappedFactory>();
  w->ort = ort;
  w->release = release;
  w->path = path;
  w->calls = calls;
  w->logger = logger;
  NXRT_CHECK(ort != nullptr, NX_INVALID_PLUGIN, path + ": returned a null factory");
  NXRT_CHECK(ort->ort_version_supported >= 22, NX_INVALID_PLUGIN,
             path + ": factory built for onnxruntime API version " +
                 std::to_string(ort->ort_version_supported) + ", older than plugin EPs (22)");
  NXRT_CHECK(
      ort->GetName && ort->GetVendor && ort->GetSupportedDevices && ort->CreateEp && ort->ReleaseEp,
      NX_INVALID_PLUGIN, path + ": factory leaves a required function empty");
  LibraryScope scope(calls.get());
  w->name = CopyString(ort->GetName(ort));
  NXRT_CHECK(!w->name.empty(), NX_INVALID_PLUGIN, path + ": factory has no name");
  w->vendor = CopyString(ort->GetVendor(ort));
  if (ort->ort_version_supported >= 23) {
    w->vendor_id = ort->GetVendorId ? ort->GetVendorId(ort) : 0;
    w->version = ort->GetVersion ? CopyString(ort->GetVersion(ort)) : "";
  }
  if (w->version.empty()) w->version = "0.0.0";
  NxEpFactory& nx = *w;
  nx = NxEpFactory{};
  nx.version = 12;
  nx.GetName = &WrappedName;
  nx.GetVendor = &WrappedVendor;
  nx.GetVersion = &WrappedVersion;
  nx.GetVendorId = &WrappedVendorId;
  nx.CreateEp = &WrappedCreateEp;
  nx.ReleaseEp = &WrappedReleaseEp;
  nx.GetSupportedDevices = &WrappedGetSupportedDevices;
  nx.CheckCompatibility = &WrappedCheckCompatibility;
  nx.CreateVirtualDevices = &WrappedCreateVirtualDevices;
  InstallDeviceMemoryApi(nx);
  return w;
}

}  // namespace

std::vector<std::unique_ptr<OrtEpDevice>> QuerySupportedDevices(
    WrappedFactory& factory, const std::vector<const NxHardwareDevice*>& hardware) {
  WrappedFactory* w = &factory;
  const std::vector<const OrtHardwareDevice*> offered =
      OfferOrder(hardware.data(), hardware.size());
  OrtEpDevice* out[kMaxEpDevices] = {};
  size_t count = 0;
  OrtStatus* status = nullptr;
  {
    LibraryScope scope(w->calls.get());
    status = w->ort->GetSupportedDevices(w->ort, offered.data(), offered.size(), out, kMaxEpDevices,
                                         &count);
  }
  // Whatever the factory created is the host's now, even when it also reports an error.
  const size_t returned = count < kMaxEpDevices ? count : kMaxEpDevices;
  std::vector<std::unique_ptr<OrtEpDevice>> owned;
  for (size_t i = 0; i < returned; ++i) {
    NXRT_CHECK(IsHostEpDevice(out[i]), NX_INVALID_PLUGIN,
               w->Context("GetSupportedDevices returned an EP device the host did not create "
                          "(null, garbage or released)"));
    ForgetEpDevice(out[i]);
    owned.emplace_back(out[i]);
  }
  ThrowIfOrtStatus(status, w->Context("GetSupportedDevices failed"));
  NXRT_CHECK(count <= kMaxEpDevices, NX_INVALID_PLUGIN,
             w->Context("GetSupportedDevices reported more EP devices than fit"));
  for (auto& d : owned) {
    bool offered_device = IsPluginMadeDevice(d->device);
    for (const OrtHardwareDevice* o : offered) offered_device |= AsNx(o) == d->device;
    NXRT_CHECK(offered_device, NX_INVALID_PLUGIN,
               w->Context("GetSupportedDevices returned an EP device on a hardware device it "
                          "was not offered and did not create"));
    NXRT_CHECK(d->factory == w->ort, NX_INVALID_PLUGIN,
               w->Context("GetSupportedDevices returned another factory's EP device"));
  }
  return owned;
}

bool IsOrtPluginLibrary(void* handle) {
  return dlsym(handle, NXRT_ORT_CREATE_FACTORIES_SYMBOL) != nullptr &&
         dlsym(handle, NXRT_ORT_RELEASE_FACTORY_SYMBOL) != nullptr;
}

void CreateWrappedFactories(void* handle, const std::string& path,
                            const std::string& registration_name, const Logger& logger,
                            bool allow_virtual_devices, NxEpFactory** factories,
                            size_t max_factories, size_t* count) {
  *count = 0;
  auto create =
      reinterpret_cast<OrtCreateEpFactoriesFn>(dlsym(handle, NXRT_ORT_CREATE_FACTORIES_SYMBOL));
  auto release =
      reinterpret_cast<OrtReleaseEpFactoryFn>(dlsym(handle, NXRT_ORT_RELEASE_FACTORY_SYMBOL));
  NXRT_CHECK(create && release, NX_INVALID_PLUGIN, path + ": not an onnxruntime plugin EP library");
  auto calls = std::make_shared<PluginLibraryState>(path, logger, allow_virtual_devices);
  auto ort_logger = std::make_shared<OrtLogger>(OrtLogger{logger});
  OrtEpFactory* raw[kMaxOrtFactories] = {};
  size_t created = 0;
  OrtStatus* status = nullptr;
  {
    LibraryScope scope(calls.get());
    status = create(registration_name.c_str(), HostApiBase(), ort_logger.get(), raw,
                    kMaxOrtFactories, &created);
  }
  ThrowIfOrtStatus(status, path + ": the onnxruntime plugin library refused to register");
  NXRT_CHECK(created <= kMaxOrtFactories && created <= max_factories, NX_INVALID_PLUGIN,
             path + ": reported " + std::to_string(created) + " factories, at most " +
                 std::to_string(kMaxOrtFactories) + " fit");
  NXRT_CHECK(created > 0, NX_INVALID_PLUGIN, path + ": the EP library created no factory");
  std::vector<std::unique_ptr<WrappedFactory>> wrapped;
  try {
    for (size_t i = 0; i < created; ++i)
      wrapped.push_back(Wrap(raw[i], release, path, calls, ort_logger));
  } catch (...) {
    LibraryScope scope(calls.get());
    for (size_t i = 0; i < created; ++i) {
      if (raw[i] != nullptr) FreeOrtStatus(release(raw[i]));
    }
    throw;
  }
  for (size_t i = 0; i < created; ++i) factories[i] = wrapped[i].release();
  *count = created;
}

void ReleaseWrappedFactory(NxEpFactory* factory) {
  if (factory == nullptr) return;
  std::unique_ptr<WrappedFactory> w(Wrapped(factory));
  w->ep_devices.clear();
  LibraryScope scope(w->calls.get());
  OrtStatus* status = w->release(w->ort);
  if (status != nullptr) {
    OrtErrorCode code;
    std::string message;
    if (!TakeOrtStatus(status, code, message)) message = "a status the host did not create";
    w->logger->logger.Log(NX_LOG_WARNING, w->Context("ReleaseEpFactory failed: ") + message);
  }
}

void SetOfferedHardware(NxEpFactory* factory,
                        const std::vector<const NxHardwareDevice*>& hardware) {
  if (IsWrappedFactory(factory)) Wrapped(factory)->offered_hardware = hardware;
}

bool IsWrappedFactory(const NxEpFactory* factory) {
  return factory != nullptr && factory->GetName == &WrappedName;
}

uint32_t OrtApiLevelOf(const NxEpFactory* factory) {
  return IsWrappedFactory(factory) ? Wrapped(factory)->ort->ort_version_supported : 0;
}

std::map<std::string, uint64_t> UnimplementedCallCounts(const NxEpFactory* factory) {
  if (!IsWrappedFactory(factory)) return {};
  return Wrapped(factory)->calls->Counts();
}

}  // namespace nxrt::ort
