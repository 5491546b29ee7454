// Choosing a session's EPs from the env's EP devices: the automatic policies (prefer-cpu/gpu/
// npu, max-performance, min-power), folding an ordered choice of EP devices into one EP per
// factory, and the model facts a custom selection callback sees.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "devices/ep_device.h"
#include "model/model.h"
#include "nxrt/nxrt_c_api.h"

namespace nxrt {

// One EP the session creates, with the EP devices it was chosen for (in priority order).
struct EpChoice {
  EpFactory* factory = nullptr;
  std::vector<const NxEpDevice*> devices;
};

// What a policy knows about one EP device, with the defaults for hints the EP did not declare.
struct EpDeviceFacts {
  NxDeviceType type = NX_DEVICE_OTHER;
  bool is_virtual = false;
  bool is_software = false;   // a software renderer listed as a GPU (NXRT_SOFTWARE_GPU)
  int discrete = -1;          // 1 discrete, 0 integrated, -1 unknown (GPUs)
  bool vendor_match = false;  // the device's vendor wrote the EP
  bool default_cpu = false;   // the runtime's own CPU EP
  double performance = 0;     // performance_hint or its default (higher is faster)
  double power = 0;           // power_hint or its default (watts)
};
EpDeviceFacts FactsOf(const NxEpDevice& d, const EpFactory* default_cpu);

// The EP devices `policy` chooses from `all` (env order), best first. `default_cpu` is the
// runtime's CPU EP factory (ranked last among CPU EPs). Software GPUs are never chosen by a
// policy: they run slower than the CPU EP and serve only explicit choices. Empty when nothing fits
// (prefer-gpu on a machine without a GPU EP device): the caller decides about fallback.
std::vector<const NxEpDevice*> RankByPolicy(NxEpSelectionPolicy policy,
                                            const std::vector<const NxEpDevice*>& all,
                                            const EpFactory* default_cpu);

// Groups an ordered choice of EP devices by EP, keeping the order of first appearance.
std::vector<EpChoice> FoldByEp(const std::vector<const NxEpDevice*>& ordered);

// "prefer-cpu", ... and back (nullopt for an unknown name).
const char* PolicyName(NxEpSelectionPolicy policy);
std::optional<NxEpSelectionPolicy> ParsePolicy(const std::string& name);

// The model facts a selection callback sees: producer_name, producer_version, domain,
// model_version, doc_string, graph_name, then the model's metadata_props.
KeyValues SelectionMetadata(const Model& model);

}  // namespace nxrt
