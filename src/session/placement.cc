#include "session/placement.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "base/error.h"
#include "base/memory_info.h"
#include "devices/ep_device.h"
#include "devices/hardware_device.h"
#include "plugins/host_objects.h"

namespace nxrt {

const char* FallbackKindName(FallbackKind kind) {
  switch (kind) {
    case FallbackKind::kNoKernel:
      return "no_kernel";
    case FallbackKind::kOpsetNotCovered:
      return "opset_not_covered";
    case FallbackKind::kTypeConstraint:
      return "type_constraint";
    case FallbackKind::kDeclined:
      return "declined";
    case FallbackKind::kClaimedWithoutKernel:
      return "claimed_without_kernel";
    case FallbackKind::kCapabilityFailed:
      return "capability_failed";
  }
  return "unknown";
}

namespace {

FallbackKind KindOf(LookupFailure f) {
  switch (f) {
    case LookupFailure::kOpset:
      return FallbackKind::kOpsetNotCovered;
    case LookupFailure::kType:
      return FallbackKind::kTypeConstraint;
    default:
      return FallbackKind::kNoKernel;
  }
}

// Why EP `ep` has no kernel for `node`, as a verdict.
EpVerdict NoKernel(int e, const EpInstance& ep, const Node& node) {
  EpVerdict v{e, FallbackKind::kNoKernel, "the EP has no kernel registry"};
  if (ep.registry() == nullptr) return v;
  LookupFailure failure = LookupFailure::kNone;
  ep.registry()->Find(node, &v.detail, &failure);
  v.kind = KindOf(failure);
  return v;
}

// The hardware device an EP's subgraphs run on: its first EP device's (none when it was
// created without EP devices).
std::vector<const NxHardwareDevice*> DevicesOf(const EpInstance& ep) {
  if (ep.devices().empty() || ep.devices().front()->device == nullptr) return {};
  return {ep.devices().front()->device};
}

std::string DescribeHardware(const NxHardwareDevice& d) {
  return std::string(IsVirtual(d) ? "virtual " : "") + DeviceTypeName(d.type) + " (" + d.vendor +
         ")";
}

}  // namespace

GraphPlacement PlaceGraph(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                          const NxLogger& logger) {
  GraphPlacement p;
  p.node_ep.assign(g.nodes.size(), -1);
  p.verdicts.assign(g.nodes.size(), {});
  for (size_t e = 0; e < eps.size(); ++e) {
    EpInstance& ep = *eps[e];
    const int ei = static_cast<int>(e);
    NxCapability cap;
    cap.graph = &g;
    NxEp* raw = ep.raw();
    bool capability_failed = false;
    std::string failure;
    if (raw->GetCapability != nullptr) {
      NxStatus* st = raw->GetCapability(raw, reinterpret_cast<const NxGraph*>(&g), &cap);
      if (st != nullptr) {
        failure = st->message;
        logger.logger.Log(
            NX_LOG_WARNING,
            "EP '" + ep.name() + "' GetCapability failed (it claims no node): " + failure);
        delete st;
        cap.claimed.clear();
        capability_failed = true;
      }
    } else if (ep.registry() != nullptr) {
      // No GetCapability: every node the registry has a kernel for.
      for (const Node& node : g.nodes) {
        if (p.node_ep[node.index] >= 0) continue;
        if (ep.registry()->Find(node, nullptr))
          cap.claimed.push_back(&node);
        else
          p.verdicts[node.index].push_back(NoKernel(ei, ep, node));
      }
    }
    std::vector<char> claimed(g.nodes.size(), 0);
    for (const Node* node : cap.claimed) {
      claimed[node->index] = 1;
      if (p.node_ep[node->index] >= 0) continue;  // a higher-priority EP has it
      if (!ep.registry() || !ep.registry()->Find(*node, nullptr)) {
        p.verdicts[node->index].push_back(
            {ei, FallbackKind::kClaimedWithoutKernel, "claimed the node but has no kernel for it"});
        continue;
      }
      p.node_ep[node->index] = ei;
    }
    // Why an EP with its own GetCapability left a node: no kernel, or it declined.
    if (raw->GetCapability != nullptr) {
      for (const Node& node : g.nodes) {
        if (claimed[node.index] || p.node_ep[node.index] >= 0) continue;
        if (capability_failed) {
          p.verdicts[node.index].push_back(
              {ei, FallbackKind::kCapabilityFailed, "its GetCapability failed: " + failure});
        } else if (ep.registry() != nullptr && ep.registry()->Find(node, nullptr) == nullptr) {
          p.verdicts[node.index].push_back(NoKernel(ei, ep, node));
        } else {
          p.verdicts[node.index].push_back(
              {ei, FallbackKind::kDeclined, "its GetCapability declined the node"});
        }
      }
    }
  }
  return p;
}

void AddToReport(const Graph& g, const GraphPlacement& placement, const std::string& scope,
                 const std::vector<std::shared_ptr<EpInstance>>& eps, const NxLogger& logger,
                 AssignmentReport& report) {
  const size_t n = g.nodes.size();
  // Subgraphs: nodes joined by a value from one to the other, both on the same EP.
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const Node& node : g.nodes) {
    for (int v : node.inputs) {
      if (v < 0) continue;
      const int producer = g.value(v).producer;
      if (producer < 0) continue;
      const size_t a = static_cast<size_t>(producer), b = static_cast<size_t>(node.index);
      if (placement.node_ep[a] >= 0 && placement.node_ep[a] == placement.node_ep[b])
        parent[find(a)] = find(b);
    }
  }
  // In execution order (nodes are sorted): a subgraph is listed where its first node runs.
  std::map<size_t, size_t> subgraph_of_root;
  for (const Node& node : g.nodes) {
    const int e = placement.node_ep[node.index];
    if (e < 0) continue;
    const size_t root = find(static_cast<size_t>(node.index));
    auto it = subgraph_of_root.find(root);
    if (it == subgraph_of_root.end()) {
      AssignedSubgraph sg;
      sg.graph = scope;
      sg.ep_name = eps[static_cast<size_t>(e)]->name();
      sg.kind = "kernels";
      sg.devices = DevicesOf(*eps[static_cast<size_t>(e)]);
      report.subgraphs.push_back(std::move(sg));
      it = subgraph_of_root.emplace(root, report.subgraphs.size() - 1).first;
    }
    report.subgraphs[it->second].nodes.push_back({node.name, node.domain, node.op_type});
  }
  // Fallbacks: nodes the first (preferred) EP did not take.
  for (const Node& node : g.nodes) {
    const int e = placement.node_ep[node.index];
    if (e == 0 || eps.empty()) continue;
    for (const EpVerdict& v : placement.verdicts[node.index]) {
      if (v.ep != 0) continue;
      report.fallbacks.push_back({scope,
                                  {node.name, node.domain, node.op_type},
                                  eps[0]->name(),
                                  v.kind,
                                  v.detail,
                                  e >= 0 ? eps[static_cast<size_t>(e)]->name() : std::string()});
    }
  }
  // Control-flow bodies, placed like any graph.
  for (const Node& node : g.nodes) {
    for (const Attribute& a : node.attributes) {
      std::vector<const Graph*> bodies;
      if (a.graph) bodies.push_back(a.graph.get());
      for (const auto& b : a.graphs) bodies.push_back(b.get());
      for (const Graph* body : bodies) {
        const std::string name = node.name.empty() ? node.op_type : node.name;
        const std::string path = (scope.empty() ? "" : scope + "/") + name + "/" + a.name;
        AddToReport(*body, PlaceGraph(*body, eps, logger), path, eps, logger, report);
      }
    }
  }
}

std::vector<std::string> SummarizeReport(const AssignmentReport& report,
                                         const std::vector<std::shared_ptr<EpInstance>>& eps) {
  std::vector<std::string> lines;
  for (const auto& ep : eps) {
    size_t nodes = 0, subgraphs = 0;
    for (const AssignedSubgraph& sg : report.subgraphs) {
      if (sg.ep_name != ep->name()) continue;
      ++subgraphs;
      nodes += sg.nodes.size();
    }
    std::string line = "EP " + ep->name() + ": " + std::to_string(nodes) + " node" +
                       (nodes == 1 ? "" : "s") + " in " + std::to_string(subgraphs) + " subgraph" +
                       (subgraphs == 1 ? "" : "s");
    const auto devices = DevicesOf(*ep);
    line += devices.empty() ? " (no hardware device)" : " on " + DescribeHardware(*devices[0]);
    lines.push_back(line);
  }
  if (!report.fallbacks.empty()) {
    std::map<std::string, size_t> by_ep;
    for (const NodeFallback& f : report.fallbacks)
      ++by_ep[f.assigned_ep.empty() ? "none" : f.assigned_ep];
    std::string line = std::to_string(report.fallbacks.size()) + " node" +
                       (report.fallbacks.size() == 1 ? "" : "s") + " fell back from " +
                       report.fallbacks.front().preferred_ep + " (";
    bool first = true;
    for (const auto& [ep, count] : by_ep) {
      line += (first ? "" : ", ") + std::to_string(count) + " to " + ep;
      first = false;
    }
    lines.push_back(line + ")");
  }
  return lines;
}

}  // namespace nxrt
