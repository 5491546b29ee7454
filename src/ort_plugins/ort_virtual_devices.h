// Virtual hardware devices of onnxruntime plugins. onnxruntime lets a factory create hardware
// devices of its own (OrtEpApi::CreateHardwareDevice, metadata "is_virtual" = "1") when the env
// allows it ("allow_virtual_devices"), e.g. an NPU to compile for on a machine without one.
// nxrt maps this onto its virtual-device requests (docs/devices.md, section 4):
//  - a library registered with requests (or under a name ending in ".virtual", onnxruntime's
//    convention, which requests every type) sees "allow_virtual_devices" = "1";
//  - the factory's EP devices on hardware it made answer the requests: those of the requested
//    type whose metadata or EP metadata match every option of the request; the host copies
//    each kept device, marks it virtual and owns it, like any virtual device;
//  - the plugin keeps its own device: it is what the plugin is handed back (CreateEp,
//    EpDevice_Device); devices no request asked for are dropped.
#pragma once

#include <vector>

#include "nxrt/nxrt_ep_api.h"
#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_wrapped_factory.h"

namespace nxrt::ort {

// OrtEpApi::CreateHardwareDevice / ReleaseHardwareDevice.
void InstallVirtualDeviceApi(OrtEpApi& ep_api);

// Whether `device` is a hardware device a plugin made with CreateHardwareDevice and still holds.
bool IsPluginMadeDevice(const NxHardwareDevice* device);

// NxEpFactory::CreateVirtualDevices of a wrapped factory: asks the plugin for its EP devices
// (once: WrappedGetSupportedDevices reuses the answer) and adds a copy of each virtual device
// that answers the request.
NxStatus* WrappedCreateVirtualDevices(NxEpFactory* self, NxDeviceType type,
                                      const NxKeyValue* options, size_t num_options,
                                      NxVirtualDeviceList* list);

}  // namespace nxrt::ort
