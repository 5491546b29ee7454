// Placement: which of a session's EPs runs each node of a graph (and of its control-flow bodies),
// and the report applications read: the assigned subgraphs (EP, kind, hardware devices, nodes)
// and, for every node the preferred EP did not take, why.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/group_graph.h"
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
  kNonConvex,             // in a fused group that a path leaves and re-enters
  kCompileFailed,         // in a fused group the EP's CompileGroup failed on
};
// Stable names for reports: "no_kernel", "opset_not_covered", "type_constraint", "declined",
// "claimed_without_kernel", "capability_failed", "non_convex", "compile_failed".
const char* FallbackKindName(FallbackKind kind);

// One EP's verdict on a node it did not take.
struct EpVerdict {
  int ep = -1;
  FallbackKind kind = FallbackKind::kNoKernel;
  std::string detail;
};

// A group of nodes one EP compiles as one (node indices ascending = execution order).
struct FusedGroup {
  int ep = -1;
  std::vector<int> nodes;
  const NxHardwareDevice* device = nullptr;  // declared by the EP, or null (its first device)
};

// The placement of one graph's nodes (not of its bodies).
struct GraphPlacement {
  std::vector<int> node_ep;  // per node: EP index, -1 when no EP takes it
  // per node: the hardware device its EP named for it (a group's device for its members),
  // null = the EP's first device
  std::vector<const NxHardwareDevice*> node_device;
  std::vector<std::vector<EpVerdict>> verdicts;  // per node: the EPs ahead of its EP that passed
  std::vector<FusedGroup> groups;                // the accepted fused groups
  std::vector<int> node_group;                   // per node: index into `groups`, or -1
};

// Groups whose compilation failed, keyed by (EP, nodes), with the EP's message: placing again
// with them makes their nodes fall back.
using FailedGroups = std::map<std::pair<int, std::vector<int>>, std::string>;

// Asks every EP, in priority order, which nodes of `g` it claims (GetCapability, or every node
// its registry has a kernel for); the first claimant with a kernel (or a fused group) gets the
// node. A group that is not convex, or listed in `failed`, is rejected whole.
GraphPlacement PlaceGraph(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                          const NxLogger& logger, const FailedGroups* failed = nullptr);

// GroupBoundary and MakeGroupGraph: graph/group_graph.h (ort_plugins/ uses them too).

struct ReportNode {
  std::string name, domain, op_type;
  // ---- report edges (issue 6 item 4) ----
  // Value names, in order ("" for an omitted optional input or output). Filled for the nodes
  // of `AssignedSubgraph::nodes` (see AddEdgesAndCopies); empty in fallbacks.
  std::vector<std::string> inputs, outputs;
  // ---- end report edges ----
};

struct AssignedSubgraph {
  std::string graph;  // "" = the main graph; else the body's path, e.g. "loop/body"
  std::string ep_name;
  std::string kind;  // "kernels" (one kernel per node) or "fused" (compiled as one)
  std::vector<const NxHardwareDevice*> devices;
  std::vector<ReportNode> nodes;
  // The stream its kernels are queued on (ABI 13), e.g. "SimDevice:0x0000:kernels"; "" when they
  // run synchronously. Main-graph subgraphs only (bodies plan their streams when they run).
  std::string stream;
};

struct NodeFallback {
  std::string graph;
  ReportNode node;
  std::string preferred_ep;  // the session's first EP
  FallbackKind kind = FallbackKind::kNoKernel;
  std::string detail;
  std::string assigned_ep;  // the EP that runs it instead ("" when none can)
};

// ---- report copies (issue 6 item 4) ----
// A value that crosses from one memory to another: produced (or fed) in the memory of
// `from_ep` and read in the memory of `to_ep`.
struct ReportCopy {
  std::string graph;    // "" = the main graph; else the body's path
  std::string value;    // the value's name
  std::string from_ep;  // "" = a graph input, initializer or outer-scope value (host memory)
  std::string to_ep;    // "" = a graph output (delivered to the host)
  std::string from_memory, to_memory;  // DescribeMemory of both ends (two devices of one EP)
};
// ---- end report copies ----

struct AssignmentReport {
  std::vector<AssignedSubgraph> subgraphs;
  std::vector<NodeFallback> fallbacks;
  std::vector<ReportCopy> copies;  // report copies (issue 6 item 4): see AddEdgesAndCopies
};

// Adds `g` (placed as `placement`) and, recursively, its control-flow bodies to `report`.
// Subgraphs are the fused groups and the connected groups of kernel nodes on one EP, in
// execution order. `place_body` places a body (a session compiles its groups there too).
using BodyPlacer = std::function<GraphPlacement(const Graph& body)>;
void AddToReport(const Graph& g, const GraphPlacement& placement, const std::string& scope,
                 const std::vector<std::shared_ptr<EpInstance>>& eps, const BodyPlacer& place_body,
                 AssignmentReport& report);

// ---- report edges and copies (issue 6 item 4) ----
// Called by AddToReport for each graph it adds (main graph and bodies), dry runs included:
// fills the inputs/outputs of `g`'s report nodes (scope `scope`) and adds `g`'s copies to
// `report.copies`, ahead of those of its bodies. A copy is one per value and reading EP: a value
// read by a node whose EP's memory is not the memory it is in (a node's output: its EP's memory;
// graph inputs, initializers and outer-scope values: host memory), and a graph output produced in
// memory the host cannot read. (Per EP memory: a kernel that takes an input in host memory, or a
// pre-packed weight, may avoid a copy listed here.)
void AddEdgesAndCopies(const Graph& g, const GraphPlacement& placement, const std::string& scope,
                       const std::vector<std::shared_ptr<EpInstance>>& eps,
                       AssignmentReport& report);
// ---- end report edges and copies ----

// One line per EP: "EP CPU: 120 nodes in 3 subgraphs on cpu (Intel Xeon ...)"; and whether any
// node fell back.
std::vector<std::string> SummarizeReport(const AssignmentReport& report,
                                         const std::vector<std::shared_ptr<EpInstance>>& eps);

// ---- profiling: the hardware device of a node's profile event ----
// "cpu (GenuineIntel)" for a device (as the report describes it), "none" when null.
std::string DescribeHardwareDevice(const NxHardwareDevice* device);
// The device an EP's kernels run on, as the report assigns it: its first EP device's hardware
// device ("none" when it was created without EP devices).
std::string DescribeEpHardware(const EpInstance& ep);
// ---- end profiling ----

}  // namespace nxrt
