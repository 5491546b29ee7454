#include "blocked/blocked_capability.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "blocked/blocked_ops.h"

namespace nxrt::cpu::blocked {

void FailedGroups::Add(std::string key) {
  std::lock_guard<std::mutex> lock(mu_);
  keys_.insert(std::move(key));
}

bool FailedGroups::Contains(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_.count(key) != 0;
}

std::string GroupKey(const std::vector<const NxNode*>& nodes) {
  std::string key;
  for (const NxNode* node : nodes) {
    ep::NodeView v(node);
    key += v.output_count() > 0 && v.output(0).present() ? v.output(0).name() : v.name();
    key += '\n';
  }
  return key;
}

namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int i) {
    while (parent[static_cast<size_t>(i)] != i) {
      parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
      i = parent[static_cast<size_t>(i)];
    }
    return i;
  }
  void Join(int a, int b) { parent[static_cast<size_t>(Find(a))] = Find(b); }
};

// The graph as the finder needs it: per node its classification and, per input, the node that
// produces it (-1: a graph input, an initializer or an outer-scope value).
struct NodeTable {
  std::vector<const NxNode*> nodes;
  std::vector<BlockedOp> op;
  std::vector<std::vector<int>> producers;  // per node, per input
  std::vector<std::vector<int>> consumers;  // per node: nodes reading any of its outputs
};

NodeTable ReadGraph(const NxGraph* graph, const NxKernelRegistry* registry,
                    const NxCapability* capability) {
  const NxHostApi& host = ep::Host();
  NodeTable t;
  const size_t n = host.Graph_GetNodeCount(graph);
  t.nodes.resize(n);
  t.op.assign(n, BlockedOp::kNone);
  t.producers.resize(n);
  t.consumers.resize(n);
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, bool> alias_constant;
  for (size_t i = 0; i < n; ++i) {
    const NxNode* node = host.Graph_GetNode(graph, i);
    t.nodes[i] = node;
    ep::NodeView view(node);
    for (size_t k = 0; k < view.input_count(); ++k) {
      ep::ValueInfoView in = view.input(k);
      int p = -1;
      if (in.present()) {
        auto it = producer.find(in.name());
        if (it != producer.end()) p = it->second;
      }
      t.producers[i].push_back(p);
      if (p >= 0) t.consumers[static_cast<size_t>(p)].push_back(static_cast<int>(i));
    }
    auto is_constant = [&](const ep::ValueInfoView& v) {
      if (v.constant().has_value()) return true;
      auto it = alias_constant.find(v.name());
      return it != alias_constant.end();
    };
    // A node an EP of higher priority took stays out of groups (host ABI 8 tells).
    const bool taken = host.version >= 8 && host.Capability_IsNodeTaken(capability, node);
    if (!taken && host.KernelRegistry_HasKernel(registry, node, nullptr)) {
      t.op[i] = ClassifyNode(view, is_constant);
      if (t.op[i] == BlockedOp::kConstantAlias) alias_constant[view.output(0).name()] = true;
    }
    for (size_t k = 0; k < view.output_count(); ++k) {
      ep::ValueInfoView out = view.output(k);
      if (out.present()) producer[out.name()] = static_cast<int>(i);
    }
  }
  for (auto& c : t.consumers) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  return t;
}

// Connected components of `members` (node indices), joined through values one member produces
// and another reads. Each component is sorted (topological order).
std::vector<std::vector<int>> Components(const NodeTable& t, const std::vector<int>& members) {
  std::vector<char> in_set(t.nodes.size(), 0);
  for (int m : members) in_set[static_cast<size_t>(m)] = 1;
  UnionFind uf(t.nodes.size());
  for (int m : members)
    for (int p : t.producers[static_cast<size_t>(m)])
      if (p >= 0 && in_set[static_cast<size_t>(p)]) uf.Join(m, p);
  std::unordered_map<int, std::vector<int>> by_root;
  for (int m : members) by_root[uf.Find(m)].push_back(m);
  std::vector<std::vector<int>> out;
  for (auto& [root, nodes] : by_root) {
    std::sort(nodes.begin(), nodes.end());
    out.push_back(std::move(nodes));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The first member (in topological order) that reads a value computed outside the group from
// something the group computed (the host rejects such groups), or -1 when the group is convex.
int FirstNonConvexMember(const NodeTable& t, const std::vector<int>& group) {
  std::vector<char> member(t.nodes.size(), 0), reached(t.nodes.size(), 0);
  for (int m : group) member[static_cast<size_t>(m)] = 1;
  const size_t first = static_cast<size_t>(group.front());
  for (size_t i = first; i < t.nodes.size(); ++i) {
    bool from_group = false, from_reached = false;
    for (int p : t.producers[i]) {
      if (p < 0) continue;
      from_group |= member[static_cast<size_t>(p)] != 0;
      from_reached |= reached[static_cast<size_t>(p)] != 0;
    }
    if (member[i]) {
      if (from_reached) return static_cast<int>(i);
    } else if (from_group || from_reached) {
      reached[i] = 1;
    }
  }
  return -1;
}

bool Worthwhile(const NodeTable& t, const std::vector<int>& group) {
  int convs = 0, others = 0;
  for (int i : group) {
    const BlockedOp op = t.op[static_cast<size_t>(i)];
    if (op == BlockedOp::kConv)
      ++convs;
    else if (op != BlockedOp::kConstantAlias)
      ++others;
  }
  // A lone convolution gains nothing from the layout: the Conv kernel reorders as well as a
  // group would. Two operators share at least one reorder.
  return convs >= 1 && convs + others >= 2;
}

// Convex groups from the connected components: a component that is not convex is cut before
// its first offending member and the rest is split into components again.
std::vector<std::vector<int>> ConvexGroups(const NodeTable& t) {
  std::vector<int> members;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.op[i] != BlockedOp::kNone) members.push_back(static_cast<int>(i));
  std::vector<std::vector<int>> work = Components(t, members), out;
  while (!work.empty()) {
    std::vector<int> group = std::move(work.back());
    work.pop_back();
    if (!Worthwhile(t, group)) continue;
    const int cut = FirstNonConvexMember(t, group);
    if (cut < 0) {
      out.push_back(std::move(group));
      continue;
    }
    std::vector<int> head, tail;
    for (int i : group) (i < cut ? head : tail).push_back(i);
    for (auto& part : Components(t, head)) work.push_back(std::move(part));
    for (auto& part : Components(t, tail)) work.push_back(std::move(part));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void ClaimNodes(const NxGraph* graph, const NxKernelRegistry* registry, NxCapability* capability,
                bool blocked_groups, const FailedGroups& failed) {
  const NxHostApi& host = ep::Host();
  NodeTable t = ReadGraph(graph, registry, capability);
  std::vector<char> grouped(t.nodes.size(), 0);
  if (blocked_groups && host.version >= 6) {
    for (const std::vector<int>& group : ConvexGroups(t)) {
      std::vector<const NxNode*> nodes;
      for (int i : group) nodes.push_back(t.nodes[static_cast<size_t>(i)]);
      if (failed.Contains(GroupKey(nodes))) continue;
      ep::AddFusedGroup(capability, nodes);
      for (int i : group) grouped[static_cast<size_t>(i)] = 1;
    }
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (grouped[i] || !host.KernelRegistry_HasKernel(registry, t.nodes[i], nullptr)) continue;
    ep::ThrowIfError(host.Capability_AddNode(capability, t.nodes[i]));
  }
}

}  // namespace nxrt::cpu::blocked
