// Internal to the host side of the plugin ABI: host_api.cc builds the NxHostApi table, and each
// ABI area fills its part of it from a file of its own (host_api_<area>.cc). Also the handle
// casts and the status constructor those files share.
#pragma once

#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt::host_api {

// The table parts, one per file.
// host_api.cc: status, logging, config.
void FillCoreApi(NxHostApi& api);
// host_api_graph.cc: graph, node, value-info and attribute views; capability.
void FillGraphApi(NxHostApi& api);
// host_api_kernels.cc: kernel registries, kernel info, kernel context (inputs, output
// allocation, scratch, parallel-for, profiling, stop requests).
void FillKernelsApi(NxHostApi& api);
// host_api_values.cc: values, sequences and optionals (with the context calls that set them as
// outputs), memory infos, the prepack cache.
void FillValuesApi(NxHostApi& api);
// host_api_devices.cc: hardware devices, EP devices, virtual device lists.
void FillDevicesApi(NxHostApi& api);
// host_api_control_flow.cc: the If / Loop / Scan / SequenceMap kernels, through their slots.
void FillControlFlowApi(NxHostApi& api);

// NxHostApi::CreateStatus (host_api.cc): every part reports errors through it.
NxStatus* CreateStatus(NxStatusCode code, const char* message);

// Handles an EP sees are the IR's own structs.
inline const Graph* G(const NxGraph* g) { return reinterpret_cast<const Graph*>(g); }
inline const Node* N(const NxNode* n) { return reinterpret_cast<const Node*>(n); }
inline const ValueDef* V(const NxValueInfo* v) { return reinterpret_cast<const ValueDef*>(v); }
inline const Attribute* A(const NxAttribute* a) { return reinterpret_cast<const Attribute*>(a); }
inline const NxValueInfo* VI(const Graph* g, int index) {
  return index < 0 ? nullptr : reinterpret_cast<const NxValueInfo*>(&g->value(index));
}

}  // namespace nxrt::host_api
