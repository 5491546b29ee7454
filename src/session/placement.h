// Placement: which of a session's EPs runs each node of a graph (and of its control-flow bodies),
// and the report applications read: the assigned subgraphs (EP, kind, hardware devices, nodes)
// and, for every node the preferred EP did not take, why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "nxrt/nxrt_types.h"
#include "session/ep_instance.h"

struct NxLogger;

namespace nxrt {

// Why an EP did not take a node.
enum class FallbackKind {
  kNoKernel,              // no kernel for that op and domain
  kOpsetNotCovered,       // kernels for the op, none for the node's opset
  kTypeConstraint,        // a kernel for the opset, but a type constraint is not met
  kDeclined,              // the EP has a kernel, its GetCapability did not claim the node
  kClaimedWithoutKernel,  // claimed, but the registry has no kernel for it
  kCapabilityFailed,      // GetCapability returned an error (the EP claims nothing)
};
// Stable names for reports: "no_kernel", "opset_not_covered", "type_constraint", "declined",
// "claimed_without_kernel", "capability_failed".
const char* FallbackKindName(FallbackKind kind);

// One EP's verdict on a node it did not take.
struct EpVerdict {
  int ep = -1;
  FallbackKind kind = FallbackKind::kNoKernel;
  std::string detail;
};

// The placement of one graph's nodes (not of its bodies).
struct GraphPlacement {
  std::vector<int> node_ep;                      // per node: EP index, -1 when no EP takes it
  std::vector<std::vector<EpVerdict>> verdicts;  // per node: the EPs ahead of its EP that passed
};

// Asks every EP, in priority order, which nodes of `g` it claims (GetCapability, or every node
// its registry has a kernel for); the first claimant with a kernel gets the node.
GraphPlacement PlaceGraph(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                          const NxLogger& logger);

struct ReportNode {
  std::string name, domain, op_type;
};

struct AssignedSubgraph {
  std::string graph;  // "" = the main graph; else the body's path, e.g. "loop/body"
  std::string ep_name;
  std::string kind;  // "kernels" (one kernel per node) or "fused" (compiled as one)
  std::vector<const NxHardwareDevice*> devices;
  std::vector<ReportNode> nodes;
};

struct NodeFallback {
  std::string graph;
  ReportNode node;
  std::string preferred_ep;  // the session's first EP
  FallbackKind kind = FallbackKind::kNoKernel;
  std::string detail;
  std::string assigned_ep;  // the EP that runs it instead ("" when none can)
};

struct AssignmentReport {
  std::vector<AssignedSubgraph> subgraphs;
  std::vector<NodeFallback> fallbacks;
};

// Adds `g` (placed as `placement`) and, recursively, its control-flow bodies to `report`.
// Subgraphs are the connected groups of nodes on one EP, in execution order.
void AddToReport(const Graph& g, const GraphPlacement& placement, const std::string& scope,
                 const std::vector<std::shared_ptr<EpInstance>>& eps, const NxLogger& logger,
                 AssignmentReport& report);

// One line per EP: "EP CPU: 120 nodes in 3 subgraphs on cpu (Intel Xeon ...)"; and whether any
// node fell back.
std::vector<std::string> SummarizeReport(const AssignmentReport& report,
                                         const std::vector<std::shared_ptr<EpInstance>>& eps);

}  // namespace nxrt
