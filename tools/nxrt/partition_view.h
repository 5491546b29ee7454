// The pictures of `nxrt partition`: the placement report as a graph (nodes with their EP and
// device, the values between them, the copies between memories, control-flow bodies), written
// as Graphviz DOT (--dot) or as one self-contained HTML page (--html). Both are drawn from a
// ViewModel built from the public report (nxrt.hpp) alone.
#pragma once

#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

namespace nxrt::cli {

// One node of the picture: a node of an assigned subgraph, or a node no EP can run (a dry run's
// fallback with no assigned EP; its edges are unknown).
struct ViewNode {
  size_t graph = 0;   // index into ViewModel::graphs
  int subgraph = -1;  // index into the report's subgraphs; -1 = no EP runs it
  std::string name;   // as in the model ("" when unnamed)
  std::string label;  // name, or "<op_type>" when unnamed
  std::string domain, op_type;
  std::string ep;       // "" = no EP
  std::string kind;     // "kernels", "fused", or "" (no EP)
  std::string devices;  // DeviceText of its subgraph ("-" when none)
  std::vector<std::string> inputs, outputs;
  std::vector<size_t> bodies;  // the graphs of its control-flow bodies
};

// A value from one node to another in the same graph.
struct ViewEdge {
  size_t from = 0, to = 0;  // node indices
  std::string value;
  bool copy = false;  // it crosses from one memory to another
};

// A copy at a graph's boundary: a graph input/initializer/outer value copied for `node`
// (incoming), or a graph output `node` produced copied to the host (outgoing).
struct ViewBoundaryCopy {
  size_t node = 0;
  std::string value;
  std::string from_ep, to_ep;
};

struct ViewGraph {
  std::string path;           // "" = main graph; else the body's path
  int parent = -1;            // the graph holding its control-flow node; -1 for the main graph
  int owner = -1;             // that control-flow node; -1 for the main graph (or when unknown)
  std::string attribute;      // the body's attribute name ("then_branch", "body")
  std::vector<size_t> nodes;  // report order
  std::vector<ViewEdge> edges;
  std::vector<ViewBoundaryCopy> copies_in, copies_out;
  std::string Title() const { return path.empty() ? "main graph" : path; }
};

struct ViewModel {
  std::vector<ViewNode> nodes;      // subgraph nodes in report order, then nodes no EP runs
  std::vector<ViewGraph> graphs;    // the main graph first, then bodies in report order
  std::vector<std::string> eps;     // EP names in order of first appearance
  std::vector<std::string> colors;  // per EP: its fill colour ("#rrggbb")
  size_t copies = 0;                // the report's copies
  // The fill colour of `ep` ("" = no EP: grey).
  std::string Color(const std::string& ep) const;
};

ViewModel BuildViewModel(const AssignmentReport& report);

// "Conv x53, Relu x49, Add x16" (most frequent first, then by name).
std::string OpCounts(const std::vector<AssignedNode>& nodes);
// The hardware devices of a subgraph ("cpu GenuineIntel 0x8086:0x06a7"; "-" when none).
std::string DeviceText(const AssignedSubgraph& sg);

// Graphviz DOT: a digraph with one cluster per assigned subgraph (label: EP, kind, device),
// nodes "name\nop_type" filled with their EP's colour (legend included), edges for values
// (labelled when the name is short), copies as small red diamonds on dashed red edges, and
// control-flow bodies as nested clusters labelled with their path.
std::string PartitionDot(const std::string& model, const AssignmentReport& report);

// One self-contained HTML page (inline CSS, SVG and a little JavaScript; no external URL): a
// summary (per EP: nodes, subgraphs, devices; subgraphs; fallbacks with reasons; copies) and
// every graph drawn in layers (topological depth), nodes coloured by EP with their name, op
// type, EP and device, values as arrows, copies marked in red.
std::string PartitionHtml(const std::string& model, const AssignmentReport& report);

}  // namespace nxrt::cli
