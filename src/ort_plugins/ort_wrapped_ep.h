// One onnxruntime OrtEp seen as an NxEp for one session (shared by the compile path in
// ort_ep_adapter.cc and the kernel path in ort_kernel_adapter.cc).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nxrt/nxrt_ep_api.h"
#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "ort_plugins/ort_kernel_registry.h"
#include "ort_plugins/ort_wrapped_factory.h"

namespace nxrt::ort {

struct WrappedEp;

// One definition of a kernel-based plugin's registry as nxrt registered it (the create_state of
// every nxrt definition made from it).
struct OrtKernelEntry {
  WrappedEp* ep = nullptr;
  OrtKernelDef def;  // what EpGraphSupportInfo_LookUpKernel hands out
  OrtKernelCreateFunc create = nullptr;
  void* state = nullptr;
};

struct WrappedEp : NxEp {
  WrappedFactory* factory = nullptr;
  OrtEp* ort = nullptr;
  std::string name;
  OrtSessionOptions options;
  std::unique_ptr<OrtLogger> logger;
  std::vector<const OrtHardwareDevice*> devices;
  std::vector<const OrtKeyValuePairs*> device_metadata;
  // Per claimed group (keyed by its nodes' first outputs): the plugin's fusion options.
  std::mutex mutex;
  std::map<std::string, bool> drop_initializers;
  // Every compute info Compile returned; handed back in one call when the EP is released.
  std::vector<OrtNodeComputeInfo*> compute_infos;
  // The session writes a compiled model: Compile's EPContext nodes are kept.
  bool writes_context = false;
  // A kernel-based plugin (level 24, OrtEp::GetKernelRegistry): its kernel definitions as
  // nxrt's registry, and what each definition's create function needs.
  NxKernelRegistry* kernels = nullptr;
  std::vector<std::unique_ptr<OrtKernelEntry>> kernel_entries;
  // Allocators of the plugin's device memories that kernels asked for (KernelInfoGetAllocator),
  // released with the EP.
  std::map<const NxMemoryInfo*, OrtAllocator*> device_allocators;
  // The plugin's data transfer for weights copied to device memory before PrePackWeight.
  NxDataTransfer* weight_transfer = nullptr;
  // Runs: the plugin's OnRunStart / OnRunEnd see these (empty) run options; a plugin whose
  // IsConcurrentRunSupported says no gets one run at a time, as in onnxruntime (run_lock is
  // held from OnRunStart to OnRunEnd, on the thread that runs).
  OrtRunOptions run_options;
  bool serialize_runs = false;
  std::mutex run_lock;

  std::string Context(const std::string& what) const {
    return factory->path + ": EP '" + name + "' " + what;
  }
};

// Asks a level-24 plugin EP for its kernel registry and builds `ep.kernels` from it (nothing when
// the plugin has none). Throws with the plugin's reason when GetKernelRegistry fails.
void LoadKernelRegistry(WrappedEp& ep);
// Releases what LoadKernelRegistry built (the plugin's registry stays the plugin's).
void ReleaseKernelRegistry(WrappedEp& ep);

// The plugin's allocator of device memory `memory` (OrtEpFactory::CreateAllocator), made once per
// EP; throws with the plugin's reason.
OrtAllocator* DeviceAllocator(WrappedEp& ep, const NxMemoryInfo* memory);
// Releases those and the weight transfer (with the EP).
void ReleaseDeviceAllocators(WrappedEp& ep);
// A copy of host tensor `weight` in device memory `memory`, made with the plugin's allocator and
// data transfer: onnxruntime hands PrePackWeight the weight where the kernel computes.
std::shared_ptr<NxValue> DeviceCopyOfWeight(WrappedEp& ep, const NxValue& weight,
                                            const NxMemoryInfo* memory);

// Streams (ort_streams.cc). Whether the plugin's factory says it is stream aware; a stream of the
// plugin for the memory of `device` (*stream = NULL where the plugin makes none or the device has
// no memory of its own); the plugin's stream behind an nxrt stream (null for other streams).
bool IsStreamAware(const WrappedFactory& factory);
NxStatus* CreatePluginStream(WrappedEp& ep, const NxHardwareDevice* device, NxStream** stream);
OrtSyncStream* PluginStreamOf(NxStream* stream);
void InstallStreamApi(OrtApi& api, OrtEpApi& ep_api);

// Fills the OrtApi / OrtEpApi slots of kernel-based plugins: kernel registries and definitions,
// kernel infos, single-node claims and kernel lookup, shared pre-packed weights and the
// runtime's If/Loop/Scan kernels.
void InstallKernelApi(OrtApi& api, OrtEpApi& ep_api);

}  // namespace nxrt::ort
