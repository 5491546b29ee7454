// The ViewModel behind `nxrt partition --dot/--html`: the report's nodes grouped by graph, the
// values between them, the copies placed on edges or at graph boundaries, bodies linked to their
// control-flow node, and a stable colour per EP.
#include "nxrt/partition_view.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "nxrt/ep_args.h"

namespace nxrt::cli {
namespace {

// Light fills that keep black text readable; the CPU EP always gets the first, other EPs one
// picked by a hash of their name (so an EP keeps its colour from model to model), the next free
// one on a clash. Red is left out: it marks copies.
constexpr const char* kPalette[] = {"#a6cee3", "#fdbf6f", "#b2df8a", "#cab2d6",
                                    "#ffff99", "#8dd3c7", "#fccde5", "#bebada",
                                    "#80b1d3", "#ccebc5", "#ffed6f", "#e5c494"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kNoEpColor = "#e0e0e0";

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

std::string OpCounts(const std::vector<AssignedNode>& nodes) {
  std::map<std::string, size_t> counts;
  for (const AssignedNode& n : nodes)
    ++counts[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
  std::vector<std::pair<std::string, size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [op, count] : sorted)
    out += (out.empty() ? "" : ", ") + op + (count > 1 ? " x" + std::to_string(count) : "");
  return out;
}

std::string DeviceText(const AssignedSubgraph& sg) {
  if (sg.devices.empty()) return "-";
  std::string out;
  for (const HardwareDevice& d : sg.devices) out += (out.empty() ? "" : "; ") + DescribeHardware(d);
  return out;
}

std::string ViewModel::Color(const std::string& ep) const {
  for (size_t i = 0; i < eps.size(); ++i)
    if (eps[i] == ep) return colors[i];
  return kNoEpColor;
}

ViewModel BuildViewModel(const AssignmentReport& report) {
  ViewModel m;
  std::map<std::string, size_t> graph_index;
  auto graph_of = [&](const std::string& path) {
    auto it = graph_index.find(path);
    if (it != graph_index.end()) return it->second;
    ViewGraph g;
    g.path = path;
    m.graphs.push_back(std::move(g));
    graph_index[path] = m.graphs.size() - 1;
    return m.graphs.size() - 1;
  };
  graph_of("");
  auto add_ep = [&](const std::string& ep) {
    if (!ep.empty() && std::find(m.eps.begin(), m.eps.end(), ep) == m.eps.end())
      m.eps.push_back(ep);
  };
  auto add_node = [&](ViewNode n) {
    n.label = n.name.empty() ? n.op_type : n.name;
    m.graphs[n.graph].nodes.push_back(m.nodes.size());
    m.nodes.push_back(std::move(n));
  };
  for (size_t s = 0; s < report.subgraphs.size(); ++s) {
    const AssignedSubgraph& sg = report.subgraphs[s];
    add_ep(sg.ep_name);
    const std::string devices = DeviceText(sg);
    for (const AssignedNode& node : sg.nodes) {
      ViewNode n;
      n.graph = graph_of(sg.graph);
      n.subgraph = static_cast<int>(s);
      n.name = node.name;
      n.domain = node.domain;
      n.op_type = node.op_type;
      n.ep = sg.ep_name;
      n.kind = sg.kind;
      n.devices = devices;
      n.inputs = node.inputs;
      n.outputs = node.outputs;
      add_node(std::move(n));
    }
  }
  for (const NodeFallback& f : report.fallbacks) {
    if (!f.assigned_ep.empty()) continue;
    ViewNode n;
    n.graph = graph_of(f.graph);
    n.name = f.node.name;
    n.domain = f.node.domain;
    n.op_type = f.node.op_type;
    n.devices = "-";
    add_node(std::move(n));
  }

  // Colours: the CPU EP first, the others by name hash (the next free one on a clash).
  std::vector<char> taken(kPaletteSize, 0);
  m.colors.assign(m.eps.size(), "");
  for (size_t pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < m.eps.size(); ++i) {
      const bool cpu = m.eps[i] == "CPU";
      if ((pass == 0) != cpu) continue;
      size_t c = cpu ? 0 : 1 + Fnv1a(m.eps[i]) % (kPaletteSize - 1);
      for (size_t probe = 0; probe < kPaletteSize && taken[c]; ++probe)
        c = c + 1 < kPaletteSize ? c + 1 : 1;
      taken[c] = 1;
      m.colors[i] = kPalette[c];
    }
  }

  // Bodies: a body's path is its control-flow node's graph path + "/" + the node's name (its op
  // type when unnamed) + "/" + the attribute.
  std::map<std::string, size_t> node_by_prefix;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const ViewNode& n = m.nodes[i];
    const std::string& path = m.graphs[n.graph].path;
    node_by_prefix.emplace((path.empty() ? "" : path + "/") + n.label + "/", i);
  }
  for (size_t g = 1; g < m.graphs.size(); ++g) {
    ViewGraph& body = m.graphs[g];
    const size_t slash = body.path.rfind('/');
    body.attribute = slash == std::string::npos ? body.path : body.path.substr(slash + 1);
    auto it = slash == std::string::npos ? node_by_prefix.end()
                                         : node_by_prefix.find(body.path.substr(0, slash + 1));
    if (it != node_by_prefix.end()) {
      body.owner = static_cast<int>(it->second);
      body.parent = static_cast<int>(m.nodes[it->second].graph);
      m.nodes[it->second].bodies.push_back(g);
    } else {
      // Its node is not in the report: under the longest graph path that prefixes it.
      body.parent = 0;
      size_t best = 0;
      for (size_t o = 1; o < m.graphs.size(); ++o) {
        const std::string prefix = m.graphs[o].path + "/";
        if (o != g && body.path.compare(0, prefix.size(), prefix) == 0 && prefix.size() > best) {
          best = prefix.size();
          body.parent = static_cast<int>(o);
        }
      }
    }
  }

  // Edges: from a value's producer to each node of the same graph reading it.
  for (ViewGraph& g : m.graphs) {
    std::map<std::string, size_t> producer;
    for (size_t i : g.nodes)
      for (const std::string& v : m.nodes[i].outputs)
        if (!v.empty()) producer.emplace(v, i);
    for (size_t i : g.nodes) {
      std::set<std::string> seen;
      for (const std::string& v : m.nodes[i].inputs) {
        if (v.empty() || !seen.insert(v).second) continue;
        auto it = producer.find(v);
        if (it != producer.end() && it->second != i) g.edges.push_back({it->second, i, v, false});
      }
    }
  }

  // Copies: on the edges they sit on, or at the graph's boundary.
  m.copies = report.copies.size();
  for (const ReportCopy& c : report.copies) {
    auto gi = graph_index.find(c.graph);
    if (gi == graph_index.end()) continue;
    ViewGraph& g = m.graphs[gi->second];
    if (c.to_ep.empty()) {
      for (size_t i : g.nodes) {
        const ViewNode& n = m.nodes[i];
        if (n.ep == c.from_ep && std::count(n.outputs.begin(), n.outputs.end(), c.value)) {
          g.copies_out.push_back({i, c.value, c.from_ep, c.to_ep});
          break;
        }
      }
    } else if (c.from_ep.empty()) {
      for (size_t i : g.nodes) {
        const ViewNode& n = m.nodes[i];
        if (n.ep == c.to_ep && std::count(n.inputs.begin(), n.inputs.end(), c.value))
          g.copies_in.push_back({i, c.value, c.from_ep, c.to_ep});
      }
    } else {
      for (ViewEdge& e : g.edges)
        if (e.value == c.value && m.nodes[e.from].ep == c.from_ep && m.nodes[e.to].ep == c.to_ep)
          e.copy = true;
    }
  }
  return m;
}

}  // namespace nxrt::cli
