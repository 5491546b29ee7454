// `nxrt partition --dot FILE`: the placement as a Graphviz digraph (render with
// `dot -Tsvg FILE -o partition.svg`).
#include <string>
#include <vector>

#include "nxrt/partition_view.h"

namespace nxrt::cli {
namespace {

// A DOT string literal's contents: quotes and backslashes escaped, control characters dropped.
std::string Esc(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20) {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string Q(const std::string& s) { return "\"" + Esc(s) + "\""; }

// Value names this long or shorter label their edge.
constexpr size_t kShortValue = 16;

struct DotWriter {
  const AssignmentReport& report;
  const ViewModel& m;
  std::string out;
  size_t copy_nodes = 0;
  std::vector<std::string> copy_edges;  // written after every node is declared

  void Line(int depth, const std::string& text) {
    out.append(static_cast<size_t>(depth) * 2, ' ');
    out += text;
    out += '\n';
  }

  std::string NodeId(size_t i) const { return "n" + std::to_string(i); }

  void Node(int depth, size_t i) {
    const ViewNode& n = m.nodes[i];
    std::string label = Esc(n.label) + "\\n" + Esc(n.op_type);
    std::string style = "rounded,filled";
    if (n.ep.empty()) {
      label += "\\n(no EP)";
      style += ",dashed";
    }
    const std::string tooltip = n.label + " (" + (n.domain.empty() ? "" : n.domain + ".") +
                                n.op_type + ") on " + (n.ep.empty() ? "no EP" : n.ep) +
                                (n.devices == "-" ? "" : ", " + n.devices);
    Line(depth, NodeId(i) + " [label=\"" + label + "\", fillcolor=" + Q(m.Color(n.ep)) +
                    ", style=" + Q(style) + ", tooltip=" + Q(tooltip) + "];");
  }

  std::string CopyNode(int depth, const std::string& value, const std::string& from,
                       const std::string& to) {
    const std::string id = "c" + std::to_string(copy_nodes++);
    const std::string tip = "copy " + value + ": " + (from.empty() ? "host" : from) + " -> " +
                            (to.empty() ? "host" : to);
    Line(depth, id + " [shape=diamond, style=\"filled,dashed\", fillcolor=\"#ffd6d6\", " +
                    "color=red, fontcolor=red, fontsize=7, margin=\"0.02,0.02\", label=" +
                    Q("copy " + value) + ", tooltip=" + Q(tip) + "];");
    return id;
  }

  void Graph(int depth, size_t g) {
    const ViewGraph& vg = m.graphs[g];
    // Its nodes, one cluster per assigned subgraph (report order), then those no EP runs.
    size_t k = 0;
    while (k < vg.nodes.size()) {
      const ViewNode& first = m.nodes[vg.nodes[k]];
      if (first.subgraph < 0) {
        Node(depth, vg.nodes[k++]);
        continue;
      }
      const AssignedSubgraph& sg = report.subgraphs[static_cast<size_t>(first.subgraph)];
      Line(depth, "subgraph cluster_s" + std::to_string(first.subgraph) + " {");
      Line(depth + 1, "label=\"#" + std::to_string(first.subgraph) + " " + Esc(sg.ep_name) + " (" +
                          Esc(sg.kind) + ")\\n" + Esc(DeviceText(sg)) + "\";");
      Line(depth + 1, "style=\"rounded,filled\"; fillcolor=\"#fafafa\"; color=" +
                          Q(m.Color(sg.ep_name)) + "; penwidth=2;");
      while (k < vg.nodes.size() && m.nodes[vg.nodes[k]].subgraph == first.subgraph)
        Node(depth + 1, vg.nodes[k++]);
      Line(depth, "}");
    }
    // Copies at its boundary: inputs copied in, outputs copied to the host.
    for (const ViewBoundaryCopy& c : vg.copies_in) {
      const std::string id = CopyNode(depth, c.value, c.from_ep, c.to_ep);
      copy_edges.push_back(id + " -> " + NodeId(c.node) +
                           " [style=dashed, color=red, arrowsize=0.6];");
    }
    for (const ViewBoundaryCopy& c : vg.copies_out) {
      const std::string id = CopyNode(depth, c.value, c.from_ep, c.to_ep);
      copy_edges.push_back(NodeId(c.node) + " -> " + id +
                           " [style=dashed, color=red, arrowsize=0.6];");
    }
    // Copies between its nodes: a diamond on the edge.
    for (const ViewEdge& e : vg.edges) {
      if (!e.copy) continue;
      const std::string id = CopyNode(depth, e.value, m.nodes[e.from].ep, m.nodes[e.to].ep);
      copy_edges.push_back(NodeId(e.from) + " -> " + id + " [style=dashed, color=red];");
      copy_edges.push_back(id + " -> " + NodeId(e.to) + " [style=dashed, color=red];");
    }
    // Its bodies, nested.
    for (size_t b = 0; b < m.graphs.size(); ++b) {
      if (m.graphs[b].parent != static_cast<int>(g)) continue;
      const ViewGraph& body = m.graphs[b];
      Line(depth, "subgraph cluster_g" + std::to_string(b) + " {");
      Line(depth + 1, "label=" + Q(body.path) + "; style=\"dashed,rounded\"; color=\"#888888\";");
      Graph(depth + 1, b);
      Line(depth, "}");
    }
  }
};

}  // namespace

std::string PartitionDot(const std::string& model, const AssignmentReport& report) {
  const ViewModel m = BuildViewModel(report);
  DotWriter w{report, m, {}, 0, {}};
  w.Line(0, "digraph partition {");
  w.Line(1, "graph [rankdir=TB, compound=true, newrank=true, fontname=\"Helvetica\", " +
                std::string("fontsize=10, labelloc=t, label=") +
                Q("nxrt partition: " + model + " (" + std::to_string(m.nodes.size()) + " nodes, " +
                  std::to_string(m.copies) + " copies)") +
                "];");
  w.Line(1, "node [shape=box, fontname=\"Helvetica\", fontsize=9];");
  w.Line(1, "edge [fontname=\"Helvetica\", fontsize=7, color=\"#555555\", arrowsize=0.7];");
  // Legend: a swatch per EP, one for nodes no EP runs, one for copies.
  w.Line(1, "subgraph cluster_legend {");
  w.Line(2, "label=\"legend\"; style=dashed; color=\"#888888\";");
  bool no_ep = false;
  for (const ViewNode& n : m.nodes) no_ep = no_ep || n.ep.empty();
  for (size_t i = 0; i < m.eps.size(); ++i)
    w.Line(2, "legend_" + std::to_string(i) + " [label=" + Q(m.eps[i]) +
                  ", style=\"rounded,filled\", fillcolor=" + Q(m.colors[i]) + "];");
  if (no_ep)
    w.Line(2, "legend_none [label=\"no EP\", style=\"rounded,filled,dashed\", fillcolor=" +
                  Q(m.Color("")) + "];");
  w.Line(2,
         "legend_copy [label=\"copy\", shape=diamond, style=\"filled,dashed\", "
         "fillcolor=\"#ffd6d6\", color=red, fontcolor=red, fontsize=7];");
  w.Line(1, "}");
  w.Graph(1, 0);
  // Values between nodes (those with a copy go through its diamond).
  for (const ViewGraph& g : m.graphs) {
    for (const ViewEdge& e : g.edges) {
      if (e.copy) continue;
      std::string attrs = "tooltip=" + Q(e.value);
      if (e.value.size() <= kShortValue) attrs += ", label=" + Q(e.value);
      w.Line(1, w.NodeId(e.from) + " -> " + w.NodeId(e.to) + " [" + attrs + "];");
    }
  }
  for (const std::string& e : w.copy_edges) w.Line(1, e);
  // Control-flow nodes to their bodies.
  for (size_t b = 1; b < m.graphs.size(); ++b) {
    const ViewGraph& body = m.graphs[b];
    if (body.owner < 0 || body.nodes.empty()) continue;
    w.Line(1, w.NodeId(static_cast<size_t>(body.owner)) + " -> " + w.NodeId(body.nodes.front()) +
                  " [style=dotted, color=\"#888888\", arrowhead=odot, lhead=cluster_g" +
                  std::to_string(b) + ", label=" + Q(body.attribute) + "];");
  }
  w.Line(0, "}");
  return w.out;
}

}  // namespace nxrt::cli
