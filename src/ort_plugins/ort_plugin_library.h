// Hosting a plugin EP library built for onnxruntime (it exports CreateEpFactories and
// ReleaseEpFactory): its factories are created through nxrt's ORT tables and each is wrapped in
// an NxEpFactory, so the rest of nxrt (devices, selection, sessions) uses it like a native one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/logger.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt::ort {

// Whether the dlopen'ed library exports onnxruntime's plugin EP entry points.
bool IsOrtPluginLibrary(void* handle);

// Calls the library's CreateEpFactories and fills `factories` with wrappers (at most
// `max_factories`, *count set). Throws NX_INVALID_PLUGIN or the library's own error.
// `logger` gets the library's log messages and the host's warnings about it.
// `allow_virtual_devices`: the env entry of that name the library sees (ort_virtual_devices.h).
void CreateWrappedFactories(void* handle, const std::string& path,
                            const std::string& registration_name, const Logger& logger,
                            bool allow_virtual_devices, NxEpFactory** factories,
                            size_t max_factories, size_t* count);

// Tells a wrapped factory which discovered hardware it will be offered, before the host asks it
// for virtual devices (it answers both from one GetSupportedDevices call). No-op for others.
void SetOfferedHardware(NxEpFactory* factory, const std::vector<const NxHardwareDevice*>& hardware);

// Releases a wrapper and, through the library's ReleaseEpFactory, the factory inside it.
void ReleaseWrappedFactory(NxEpFactory* factory);

// Calls the wrapped factory's library made to slots nxrt does not implement ("OrtApi::Name" ->
// count); empty for a native factory.
std::map<std::string, uint64_t> UnimplementedCallCounts(const NxEpFactory* factory);

// The onnxruntime API level a wrapped factory was built for (its ort_version_supported).
uint32_t OrtApiLevelOf(const NxEpFactory* factory);

// Whether `factory` wraps an onnxruntime plugin factory.
bool IsWrappedFactory(const NxEpFactory* factory);

}  // namespace nxrt::ort
