// Ahead-of-time compilation to a file (NxEnv_CompileModel, `nxrt compile`): a session places and
// compiles the model as usual (for EP devices that may be virtual), every group whose EP exports
// it (NxEp::ExportCompiledGroup) becomes one EPContext node (domain com.microsoft) in a copy of
// the model, and that copy is written. Everything else stays as the input model has it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "devices/ep_device.h"
#include "session/env.h"
#include "session/session_options.h"

namespace nxrt {

struct CompileModelRequest {
  std::string model_path;  // the input model, or (when empty) `model_data`
  const void* model_data = nullptr;
  size_t model_size = 0;
  std::string output_path;
  // Payloads in files next to the output model ("<output stem>_<group>.ctx", embed_mode 0)
  // instead of inside the EPContext nodes (embed_mode 1).
  bool external_payloads = false;
  // Keep each group's original nodes inside its EPContext node (GRAPH attribute
  // "nxrt_original_nodes"), so that a device its payload does not suit runs them instead.
  bool keep_original_nodes = false;
};

// One line per saved group (and per group that could not be saved), for progress output.
using CompileProgress = std::function<void(const std::string& line)>;

// Compiles and writes the model; returns how many groups were saved as EPContext nodes. Throws
// nxrt::Error. `options` selects the EPs as for a session (optimization is turned off: the
// written model keeps the input's own nodes).
size_t CompileModelToFile(Env& env, const CompileModelRequest& request, SessionOptions options,
                          const CompileProgress& progress);

// Whether the compiled groups a model file holds for `device`'s EP suit that device, as its
// factory judges (NxEpFactory::CheckCompatibility); NX_COMPATIBILITY_NOT_APPLICABLE when the
// model holds none for that EP.
NxCompatibility ModelCompatibility(const std::string& model_path, const NxEpDevice& device);

}  // namespace nxrt
