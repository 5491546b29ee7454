// Saved groups (EPContext nodes written by NxEnv_CompileModel) that kept their original nodes:
// before placement, each is either used as compiled (the device suits the payload: the kept
// nodes are dropped) or replaced by its original nodes (no session EP wrote it, or its EP says
// the payload does not suit this device and fallback is allowed).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "nxrt/nxrt_c_api.h"
#include "session/ep_instance.h"

namespace nxrt {

// The GRAPH attribute of an EPContext node holding the nodes it replaced.
inline constexpr const char* kOriginalNodesAttribute = "nxrt_original_nodes";

// Resolves every saved group of `g` that kept its original nodes (see above); returns how many
// were replaced by their nodes. `metadata` is the model's (compatibility strings). Logs one
// warning per replaced group.
// EPContext nodes an onnxruntime plugin EP compiled (its own nodes, loaded by its GetCapability
// and Compile): asks the plugin's factory about the model's "ep_compatibility_info.<EP>" for the
// session's devices, as onnxruntime does at session creation. Throws NX_INVALID_MODEL when the
// payloads need recompilation or do not run here; warns when they run but suboptimally.
void CheckPluginContexts(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                         const std::map<std::string, std::string>& metadata,
                         const NxLogger& logger);

int ResolveSavedGroups(Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                       const std::map<std::string, std::string>& metadata, NxFallbackMode fallback,
                       const NxLogger& logger);

}  // namespace nxrt
