#include "session/placement.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "base/error.h"
#include "base/memory_info.h"
#include "devices/ep_device.h"
#include "devices/hardware_device.h"
#include "devices/vulkan_software_gpu.h"
#include "graph/group_graph.h"
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
    case FallbackKind::kNonConvex:
      return "non_convex";
    case FallbackKind::kCompileFailed:
      return "compile_failed";
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

// "cpu (AuthenticAMD)"; a virtual device with the id its EP gave it, which tells apart two of
// one EP: "virtual npu 1 (nxrt examples)"; a software renderer: "software gpu (Mesa)".
std::string DescribeHardware(const NxHardwareDevice& d) {
  return std::string(IsVirtual(d)       ? "virtual "
                     : IsSoftwareGpu(d) ? "software "
                                        : "") +
         DeviceTypeName(d.type) + (IsVirtual(d) ? " " + std::to_string(d.device_id) : "") + " (" +
         d.vendor + ")";
}

// Why `group` (sorted node indices) is not convex: "" when it is, else the path that leaves it
// and comes back. Nodes are in topological order, so one forward sweep finds every outside
// node reachable from the group; the group is convex iff no member reads from one of those.
std::string NonConvexPath(const Graph& g, const std::vector<int>& group) {
  const size_t n = g.nodes.size();
  std::vector<char> member(n, 0);
  for (int i : group) member[static_cast<size_t>(i)] = 1;
  std::vector<int> reached_from(n, -1);  // outside nodes: the member a path from it reaches them
  for (size_t i = static_cast<size_t>(group.front()); i < n; ++i) {
    const Node& node = g.nodes[i];
    for (int v : ReadsOf(node)) {
      const int p = g.value(v).producer;
      if (p < 0) continue;
      const size_t pi = static_cast<size_t>(p);
      const int origin = member[pi] ? p : reached_from[pi];
      if (origin < 0) continue;
      if (member[i] && !member[pi])
        return "a path from " + g.nodes[static_cast<size_t>(origin)].Describe() +
               " leaves the group through " + g.nodes[pi].Describe() + " and re-enters at " +
               node.Describe();
      if (!member[i] && reached_from[i] < 0) reached_from[i] = origin;
    }
  }
  return "";
}

// Value names, "" for an omitted optional input or output.
std::vector<std::string> ValueNames(const Graph& g, const std::vector<int>& values) {
  std::vector<std::string> names;
  names.reserve(values.size());
  for (int v : values) names.push_back(v >= 0 ? g.value(v).name : std::string());
  return names;
}

}  // namespace

GraphPlacement PlaceGraph(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                          const NxLogger& logger, const FailedGroups* failed) {
  GraphPlacement p;
  p.node_ep.assign(g.nodes.size(), -1);
  p.verdicts.assign(g.nodes.size(), {});
  p.node_group.assign(g.nodes.size(), -1);
  p.node_device.assign(g.nodes.size(), nullptr);
  for (size_t e = 0; e < eps.size(); ++e) {
    EpInstance& ep = *eps[e];
    const int ei = static_cast<int>(e);
    NxCapability cap;
    cap.graph = &g;
    NxEp* raw = ep.raw();
    cap.can_compile = raw->version >= 6 && raw->CompileGroup != nullptr;
    cap.node_ep = &p.node_ep;
    for (const NxEpDevice* d : ep.devices())
      if (d->device != nullptr) cap.devices.push_back(d->device);
    bool capability_failed = false;
    std::string failure;
    if (raw->GetCapability != nullptr) {
      NxStatus* st = raw->GetCapability(raw, reinterpret_cast<const NxGraph*>(&g), &cap);
      if (st != nullptr) {
        NxStatusCode code = NX_FAIL;
        if (!TakeStatus(st, code, failure))
          failure = "it returned a status pointer the host did not create";
        logger.logger.Log(
            NX_LOG_WARNING,
            "EP '" + ep.name() + "' GetCapability failed (it claims no node): " + failure);
        cap.claimed.clear();
        cap.claimed_device.clear();
        cap.groups.clear();
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
    // Fused groups first: each is taken whole (less the nodes a higher-priority EP has) or
    // rejected whole.
    for (const NxCapability::Group& claim : cap.groups) {
      std::vector<int> nodes;
      for (const Node* node : claim.nodes) {
        claimed[static_cast<size_t>(node->index)] = 1;
        if (p.node_ep[static_cast<size_t>(node->index)] < 0) nodes.push_back(node->index);
      }
      if (nodes.empty()) continue;
      std::sort(nodes.begin(), nodes.end());
      std::string why = NonConvexPath(g, nodes);
      FallbackKind kind = FallbackKind::kNonConvex;
      if (why.empty() && failed != nullptr) {
        auto it = failed->find({ei, nodes});
        if (it != failed->end()) {
          // A saved group (one EPContext node) is loaded, not compiled.
          const bool saved =
              nodes.size() == 1 && g.nodes[static_cast<size_t>(nodes[0])].op_type == "EPContext";
          why = std::string(saved ? "loading its compiled payload failed: "
                                  : "its CompileGroup failed: ") +
                it->second;
          kind = FallbackKind::kCompileFailed;
        }
      } else if (!why.empty()) {
        why = "the fused group of " + std::to_string(nodes.size()) + " nodes is not convex: " + why;
      }
      if (!why.empty()) {
        for (int i : nodes) p.verdicts[static_cast<size_t>(i)].push_back({ei, kind, why});
        continue;
      }
      for (int i : nodes) {
        p.node_ep[static_cast<size_t>(i)] = ei;
        p.node_group[static_cast<size_t>(i)] = static_cast<int>(p.groups.size());
        p.node_device[static_cast<size_t>(i)] = claim.device;
      }
      p.groups.push_back({ei, std::move(nodes), claim.device});
    }
    for (const Node* node : cap.claimed) {
      claimed[node->index] = 1;
      if (p.node_ep[node->index] >= 0) continue;  // a higher-priority EP has it
      if (!ep.registry() || !ep.registry()->Find(*node, nullptr)) {
        p.verdicts[node->index].push_back(
            {ei, FallbackKind::kClaimedWithoutKernel, "claimed the node but has no kernel for it"});
        continue;
      }
      p.node_ep[node->index] = ei;
      auto device = cap.claimed_device.find(node);
      if (device != cap.claimed_device.end()) p.node_device[node->index] = device->second;
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
                 const std::vector<std::shared_ptr<EpInstance>>& eps, const BodyPlacer& place_body,
                 AssignmentReport& report) {
  const size_t n = g.nodes.size();
  // Subgraphs: nodes joined by a value from one to the other, both on the same EP and device.
  auto device_of = [&](size_t node) {
    return placement.node_device.empty() ? nullptr : placement.node_device[node];
  };
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
      // Kernel nodes join kernel nodes of their EP; a fused group is one subgraph of its own.
      const int ga = placement.node_group.empty() ? -1 : placement.node_group[a];
      const int gb = placement.node_group.empty() ? -1 : placement.node_group[b];
      if (placement.node_ep[a] >= 0 && placement.node_ep[a] == placement.node_ep[b] && ga == gb &&
          device_of(a) == device_of(b))
        parent[find(a)] = find(b);
    }
  }
  // In execution order (nodes are sorted): a subgraph is listed where its first node runs.
  // Group members are joined to the group's first node (a group need not be connected).
  for (const FusedGroup& group : placement.groups)
    for (int i : group.nodes)
      parent[find(static_cast<size_t>(i))] = find(static_cast<size_t>(group.nodes.front()));
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
      const int group = placement.node_group.empty() ? -1 : placement.node_group[node.index];
      sg.kind = group >= 0 ? "fused" : "kernels";
      sg.devices = DevicesOf(*eps[static_cast<size_t>(e)]);
      if (const NxHardwareDevice* declared = device_of(static_cast<size_t>(node.index)))
        sg.devices = {declared};
      report.subgraphs.push_back(std::move(sg));
      it = subgraph_of_root.emplace(root, report.subgraphs.size() - 1).first;
    }
    report.subgraphs[it->second].nodes.push_back({node.name, node.domain, node.op_type,
                                                  ValueNames(g, node.inputs),
                                                  ValueNames(g, node.outputs)});
  }
  // Fallbacks: nodes the first (preferred) EP did not take.
  for (const Node& node : g.nodes) {
    const int e = placement.node_ep[node.index];
    if (e == 0 || eps.empty()) continue;
    for (const EpVerdict& v : placement.verdicts[node.index]) {
      if (v.ep != 0) continue;
      report.fallbacks.push_back({scope,
                                  {node.name, node.domain, node.op_type, {}, {}},
                                  eps[0]->name(),
                                  v.kind,
                                  v.detail,
                                  e >= 0 ? eps[static_cast<size_t>(e)]->name() : std::string()});
    }
  }
  // Control-flow bodies, placed like any graph.
  for (const Node& node : g.nodes) {
    // A control-flow node inside a fused group is compiled with it, body and all.
    if (!placement.node_group.empty() && placement.node_group[node.index] >= 0) continue;
    for (const Attribute& a : node.attributes) {
      std::vector<const Graph*> bodies;
      if (a.graph) bodies.push_back(a.graph.get());
      for (const auto& b : a.graphs) bodies.push_back(b.get());
      for (const Graph* body : bodies) {
        const std::string name = node.name.empty() ? node.op_type : node.name;
        const std::string path = (scope.empty() ? "" : scope + "/") + name + "/" + a.name;
        AddToReport(*body, place_body(*body), path, eps, place_body, report);
      }
    }
  }
  AddEdgesAndCopies(g, placement, scope, eps, report);  // report edges and copies (issue 6)
}

// ---- report edges and copies (issue 6 item 4) ----
namespace {

// Whether a kernel needing memory `need` reads a value in memory `have` without a copy (null =
// host memory): the same memory, or host memory wanted and `have` is host-accessible.
bool ReadsWithoutCopy(const NxMemoryInfo* have, const NxMemoryInfo* need) {
  if (have == nullptr) have = HostMemory();
  if (need == nullptr) need = HostMemory();
  if (SameMemory(have, need)) return true;
  return SameMemory(need, HostMemory()) && HostAccessible(have);
}

}  // namespace

void AddEdgesAndCopies(const Graph& g, const GraphPlacement& placement, const std::string& scope,
                       const std::vector<std::shared_ptr<EpInstance>>& eps,
                       AssignmentReport& report) {
  auto ep_of = [&](int node) { return placement.node_ep[static_cast<size_t>(node)]; };
  // The memory a node's kernel works in: its EP's memory on the node's device (null = host).
  auto memory_of = [&](int node) {
    const auto n = static_cast<size_t>(node);
    return eps[static_cast<size_t>(placement.node_ep[n])]->MemoryFor(
        placement.node_device.empty() ? nullptr : placement.node_device[n]);
  };
  // Node inputs and outputs are filled where AddToReport lists the nodes.
  // Copies: one per value and reading memory that differs from the value's.
  std::vector<ReportCopy> copies;
  std::set<std::pair<int, const NxMemoryInfo*>> seen;  // (value, reading memory)
  for (const Node& node : g.nodes) {
    const int c = ep_of(node.index);
    if (c < 0) continue;
    const NxMemoryInfo* need = memory_of(node.index);
    for (int v : node.inputs) {
      if (v < 0) continue;
      const int p = g.value(v).producer;
      const int from = p >= 0 ? ep_of(p) : -1;
      if (p >= 0 && from < 0) continue;  // its producer runs nowhere (a dry run)
      const NxMemoryInfo* have = from >= 0 ? memory_of(p) : nullptr;
      if (ReadsWithoutCopy(have, need)) continue;
      if (!seen.insert({v, need}).second) continue;
      copies.push_back({scope, g.value(v).name,
                        from >= 0 ? eps[static_cast<size_t>(from)]->name() : std::string(),
                        eps[static_cast<size_t>(c)]->name(), DescribeMemory(have),
                        DescribeMemory(need)});
    }
  }
  for (int v : g.outputs) {
    const int p = g.value(v).producer;
    const int from = p >= 0 ? ep_of(p) : -1;
    if (from < 0 || HostAccessible(memory_of(p))) continue;
    copies.push_back({scope, g.value(v).name, eps[static_cast<size_t>(from)]->name(), "",
                      DescribeMemory(memory_of(p)), DescribeMemory(HostMemory())});
  }
  // Ahead of the copies of `g`'s bodies (added before this call returns to the caller).
  const std::string prefix = scope.empty() ? "" : scope + "/";
  auto at = std::find_if(report.copies.begin(), report.copies.end(), [&](const ReportCopy& c) {
    return (scope.empty() || c.graph.compare(0, prefix.size(), prefix) == 0);
  });
  report.copies.insert(at, copies.begin(), copies.end());
}
// ---- end report edges and copies ----

std::vector<std::string> SummarizeReport(const AssignmentReport& report,
                                         const std::vector<std::shared_ptr<EpInstance>>& eps) {
  std::vector<std::string> lines;
  for (const auto& ep : eps) {
    size_t nodes = 0, subgraphs = 0, fused = 0;
    std::vector<const NxHardwareDevice*> devices;
    for (const AssignedSubgraph& sg : report.subgraphs) {
      if (sg.ep_name != ep->name()) continue;
      ++subgraphs;
      fused += sg.kind == "fused" ? 1 : 0;
      nodes += sg.nodes.size();
      for (const NxHardwareDevice* d : sg.devices)
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
    std::string line = "EP " + ep->name() + ": " + std::to_string(nodes) + " node" +
                       (nodes == 1 ? "" : "s") + " in " + std::to_string(subgraphs) + " subgraph" +
                       (subgraphs == 1 ? "" : "s");
    if (fused > 0) line += " (" + std::to_string(fused) + " fused)";
    if (devices.empty()) devices = DevicesOf(*ep);
    if (devices.empty()) line += " (no hardware device)";
    for (size_t i = 0; i < devices.size(); ++i)
      line += (i == 0 ? " on " : " and ") + DescribeHardware(*devices[i]);
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

// ---- profiling: the hardware device of a node's profile event ----
std::string DescribeHardwareDevice(const NxHardwareDevice* device) {
  return device != nullptr ? DescribeHardware(*device) : "none";
}
std::string DescribeEpHardware(const EpInstance& ep) {
  const auto devices = DevicesOf(ep);
  return DescribeHardwareDevice(devices.empty() ? nullptr : devices.front());
}
// ---- end profiling ----

}  // namespace nxrt
