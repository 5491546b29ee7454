// What an application configures before creating a session.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/config.h"
#include "devices/ep_device.h"
#include "nxrt/nxrt_c_api.h"

namespace nxrt {

// One explicitly appended EP: by name (all its EP devices) or for some of its EP devices.
struct EpRequest {
  std::string name;                            // EP name (when `devices` is empty)
  std::vector<const NxEpDevice*> devices;      // EP devices of one EP
  std::map<std::string, std::string> options;  // become "ep.<lower name>.<key>" config entries
};

// A custom selection: sees every EP device and the model's metadata, returns an ordered choice.
using EpSelector = std::function<std::vector<const NxEpDevice*>(
    const std::vector<const NxEpDevice*>& devices, const KeyValues& model_metadata)>;

struct SessionOptions {
  int intra_op_threads = 0;  // 0 = one per core
  NxLogLevel log_level = NX_LOG_WARNING;
  int optimization_level = 1;                 // 0 = none; 1 = basic (constant folding at load)
  Config config;                              // free-form "session.*" entries
  std::vector<EpRequest> eps;                 // explicit selection, in priority order
  std::optional<NxEpSelectionPolicy> policy;  // automatic selection
  EpSelector selector;                        // custom selection (replaces `policy`)
  NxFallbackMode fallback = NX_FALLBACK_ALLOW;
  std::string profile_file;  // non-empty: record a profile, written there as Chrome trace JSON
  size_t memory_limit = 0;   // bytes of tensors the session's runs may hold at once; 0 = none
  // NxEnv_CompileModel: keep what each compiled group's EP exports (CompiledGroups::exported).
  bool export_compiled = false;
};

// What the caller sets for one run (NxRunOptions and the run call): its stop conditions and
// where unbound outputs go.
struct RunLimits {
  const std::atomic<bool>* terminate = nullptr;  // the run stops once it reads true
  double timeout_seconds = 0;                    // time limit from the run's start; 0 = none
  // Per requested output (may be shorter; interned descriptions): the memory an unbound output
  // is handed over in; null or missing = host memory.
  std::span<const NxMemoryInfo* const> output_memories;
};

}  // namespace nxrt
