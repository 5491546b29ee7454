// An onnxruntime plugin's OrtEp seen as an NxEp: GetCapability over a graph view, fused groups
// compiled by OrtEp::Compile into kernels that run the plugin's OrtNodeComputeInfo. Also what
// stands behind the handles those calls pass: session options, graph support info, compute
// contexts and kernel contexts.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "nxrt/nxrt_ep_api.h"
#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_graph_view.h"

namespace onnx {
class NodeProto;
}

struct OrtSessionOptions {
  nxrt::Config config;  // a copy: the plugin may keep the pointer for the EP's lifetime
};

struct OrtRunOptions {
  nxrt::Config config;
};

namespace nxrt::ort {
struct WrappedEp;
struct CompiledKernel;
}  // namespace nxrt::ort

// What GetCapability fills: the groups and nodes the plugin claims in one graph view.
struct OrtEpGraphSupportInfo {
  nxrt::ort::WrappedEp* ep = nullptr;
  const OrtGraph* view = nullptr;
  NxCapability* capability = nullptr;
};

struct OrtNodeComputeContext {
  std::string node_name;
};

// What a compute info (compiled group) or an OrtKernelImpl (kernel-registry node) computes with.
struct OrtKernelContext {
  NxKernelContext* nx = nullptr;
  // Fused-node input k is input (*input_map)[k] of the group; null: the node's inputs as they are.
  const std::vector<size_t>* input_map = nullptr;
  const OrtLogger* logger = nullptr;
};

namespace nxrt::ort {

struct WrappedFactory;

// What a session that writes a compiled model (session option "ep.context_enable" = "1", set by
// NxEnv_CompileModel) keeps of a group the plugin compiled: the EPContext node its Compile
// returned and its OrtEp::GetCompiledModelCompatibilityInfo string.
struct ExportedContext {
  std::shared_ptr<const onnx::NodeProto> node;
  std::string compatibility;
};
// Hands that over once for a kernel of a wrapped EP; nullopt for any other EP or kernel, and
// for a group the plugin returned no EPContext node for.
std::optional<ExportedContext> TakeExportedContext(const NxEp* ep, const NxKernel* kernel);

// OrtEpFactory::CreateEp for an nxrt session; the result is released with ReleaseWrappedEp.
NxStatus* CreateWrappedEp(WrappedFactory& factory, const NxEpCreateArgs* args, NxEp** ep);
void ReleaseWrappedEp(WrappedFactory& factory, NxEp* ep);

// Fills the OrtApi / OrtEpApi slots of sessions: session options, support info, compute and
// kernel contexts.
void InstallEpAdapterApi(OrtApi& api, OrtEpApi& ep_api);
// Graph views (ort_graph_api.cc) and values, types and allocators (ort_value_api.cc).
void InstallGraphApi(OrtApi& api);
void InstallValueApi(OrtApi& api, OrtEpApi& ep_api);

}  // namespace nxrt::ort
