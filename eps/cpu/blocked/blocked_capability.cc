#include "blocked/blocked_capability.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
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
  std::vector<char> graph_output;           // per node: one of its outputs leaves the graph
};

// The value of a one-element float initializer read by `node` (the other operand than `x`).
std::optional<float> ScalarOperand(const ep::NodeView& node, const std::string& x) {
  for (size_t k = 0; k < node.input_count(); ++k) {
    ep::ValueInfoView v = node.input(k);
    if (!v.present() || v.name() == x) continue;
    std::optional<ep::ConstTensor> c = v.constant();
    if (c && c->type() == NX_TYPE_FLOAT && c->size() == 1) return c->data<float>()[0];
  }
  return std::nullopt;
}

bool Near(std::optional<float> v, float want) {
  return v && std::fabs(*v - want) <= 1e-3f * std::fabs(want);
}

// The only consumer of node i's output, when it has exactly one and the value stays in the
// graph; else -1.
int SoleConsumer(const NodeTable& t, int i) {
  const auto& c = t.consumers[static_cast<size_t>(i)];
  return c.size() == 1 && !t.graph_output[static_cast<size_t>(i)] ? c[0] : -1;
}

std::string OutputName(const NodeTable& t, int i) {
  return ep::NodeView(t.nodes[static_cast<size_t>(i)]).output(0).name();
}

// Whether the Erf node i sits in a whole written-out Gelu, x / sqrt(2) (or x * 1/sqrt(2)) ->
// Erf -> + 1 -> * x -> * 0.5, every step a member and read only by the next.
bool InWholeGelu(const NodeTable& t, int i) {
  auto op_is = [&](int n, BlockedOp op, const char* type) {
    return n >= 0 && t.op[static_cast<size_t>(n)] == op &&
           ep::NodeView(t.nodes[static_cast<size_t>(n)]).op_type() == type;
  };
  auto view = [&](int n) { return ep::NodeView(t.nodes[static_cast<size_t>(n)]); };
  const int scale = t.producers[static_cast<size_t>(i)][0];
  if (scale < 0 || SoleConsumer(t, scale) != i ||
      t.op[static_cast<size_t>(scale)] != BlockedOp::kLinear)
    return false;
  const std::string erf_in = OutputName(t, scale);
  std::string x;
  for (size_t k = 0; k < view(scale).input_count(); ++k)
    if (!view(scale).input(k).constant()) x = view(scale).input(k).name();
  const bool scaled =
      (op_is(scale, BlockedOp::kLinear, "Div") &&
       Near(ScalarOperand(view(scale), x), 1.41421356f)) ||
      (op_is(scale, BlockedOp::kLinear, "Mul") && Near(ScalarOperand(view(scale), x), 0.70710678f));
  const int add = SoleConsumer(t, i);
  if (!scaled || !op_is(add, BlockedOp::kLinear, "Add") ||
      ScalarOperand(view(add), OutputName(t, i)) != 1.0f)
    return false;
  const int mul = SoleConsumer(t, add);
  if (!op_is(mul, BlockedOp::kMul, "Mul")) return false;
  const std::string a = view(mul).input(0).name(), b = view(mul).input(1).name();
  const std::string plus_one = OutputName(t, add);
  if (!((a == x && b == plus_one) || (a == plus_one && b == x))) return false;
  const int half = SoleConsumer(t, mul);
  return op_is(half, BlockedOp::kLinear, "Mul") &&
         ScalarOperand(view(half), OutputName(t, mul)) == 0.5f;
}

// Erf is a member only inside a whole written-out Gelu (the program runs the pattern as one
// Gelu; an Erf on its own has no blocked step).
void KeepOnlyWholeGelus(NodeTable& t) {
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.op[i] == BlockedOp::kGeluErf && !InWholeGelu(t, static_cast<int>(i)))
      t.op[i] = BlockedOp::kNone;
}

NodeTable ReadGraph(const NxGraph* graph, const NxKernelRegistry* registry,
                    const NxCapability* capability, int block) {
  const NxHostApi& host = ep::Host();
  NodeTable t;
  const size_t n = host.Graph_GetNodeCount(graph);
  t.nodes.resize(n);
  t.op.assign(n, BlockedOp::kNone);
  t.producers.resize(n);
  t.consumers.resize(n);
  t.graph_output.assign(n, 0);
  std::unordered_map<std::string, bool> graph_outputs;
  for (size_t i = 0; i < host.Graph_GetOutputCount(graph); ++i)
    graph_outputs[ep::ValueInfoView(host.Graph_GetOutput(graph, i)).name()] = true;
  std::unordered_map<std::string, int> producer;
  std::vector<char> eligible(n, 0);
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
    // A node an EP of higher priority took stays out of groups (host ABI 8 tells).
    const bool taken = host.version >= 8 && host.Capability_IsNodeTaken(capability, node);
    eligible[i] = !taken && host.KernelRegistry_HasKernel(registry, node, nullptr);
    for (size_t k = 0; k < view.output_count(); ++k) {
      ep::ValueInfoView out = view.output(k);
      if (!out.present()) continue;
      producer[out.name()] = static_cast<int>(i);
      if (graph_outputs.count(out.name())) t.graph_output[i] = 1;
    }
  }
  for (auto& c : t.consumers) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  // Views of constants (kConstantAlias) make their readers' operands constant. A view whose
  // value leaves the graph or is read by a node that cannot be a member has nothing to compute
  // in a group (its value must come out of it): it stays a node, and its readers are classified
  // again without it, until nothing changes.
  std::vector<char> demoted(n, 0);
  for (size_t round = 0; round <= n; ++round) {
    std::unordered_map<std::string, bool> alias_constant;
    for (size_t i = 0; i < n; ++i) {
      t.op[i] = BlockedOp::kNone;
      if (!eligible[i]) continue;
      ep::NodeView view(t.nodes[i]);
      auto is_constant = [&](const ep::ValueInfoView& v) {
        return v.constant().has_value() || alias_constant.count(v.name()) != 0;
      };
      const BlockedOp op = ClassifyNode(view, block, is_constant);
      if (op == BlockedOp::kConstantAlias && demoted[i]) continue;
      t.op[i] = op;
      if (op == BlockedOp::kConstantAlias) alias_constant[view.output(0).name()] = true;
    }
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (t.op[i] != BlockedOp::kConstantAlias) continue;
      bool escapes = t.graph_output[i] != 0;
      for (int c : t.consumers[i]) escapes |= t.op[static_cast<size_t>(c)] == BlockedOp::kNone;
      if (escapes) {
        demoted[i] = 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  KeepOnlyWholeGelus(t);
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
  int convs = 0, structural = 0;
  for (int i : group) {
    const BlockedOp op = t.op[static_cast<size_t>(i)];
    if (op == BlockedOp::kConv) ++convs;
    structural += op == BlockedOp::kMaxPool || op == BlockedOp::kAveragePool ||
                  op == BlockedOp::kGlobalPool || op == BlockedOp::kConcat ||
                  op == BlockedOp::kBatchNorm;
  }
  // A lone convolution gains nothing from the layout, nor does one with only what the Conv
  // kernel fuses itself (activations, scalar affine steps, a written-out Gelu, a residual Add or
  // Mul): the nodes' own kernels skip the two reorders and the padded channels. A lone
  // depthwise 3x3 + Relu over 36 channels at 56x56 took 0.143 ms as a group, 0.043 as nodes
  // (onnxruntime 0.074). Two convolutions, or one with a pool, Concat or BatchNormalization,
  // share at least one reorder.
  return convs >= 2 || (convs == 1 && structural >= 1);
}

// A group without the constant views whose value is also read outside it (or leaves the graph):
// a group computes its outputs, and a view has nothing to compute. Those stay nodes, and the
// group reads their value as an input. (Their inputs are constants, so convexity holds.)
std::vector<int> WithoutEscapingViews(const NodeTable& t, std::vector<int> group) {
  std::vector<char> member(t.nodes.size(), 0);
  for (int m : group) member[static_cast<size_t>(m)] = 1;
  std::erase_if(group, [&](int i) {
    if (t.op[static_cast<size_t>(i)] != BlockedOp::kConstantAlias) return false;
    if (t.graph_output[static_cast<size_t>(i)]) return true;
    for (int c : t.consumers[static_cast<size_t>(i)])
      if (!member[static_cast<size_t>(c)]) return true;
    return false;
  });
  return group;
}

// A Concat whose value only leaves the group and that reads a value from outside gains nothing
// inside it: the outside value is reordered in only to be reordered out again (ShuffleNetV2's
// units concatenate a passed-through half with the branch's output, then shuffle it outside:
// 4.0 -> 4.3 ms when shape inference first made those Concats members). Such Concats stay nodes
// (their inputs computed inside leave the group instead); removing a member no member reads
// keeps the group convex.
std::vector<int> WithoutPassThroughConcats(const NodeTable& t, std::vector<int> group) {
  std::vector<char> member(t.nodes.size(), 0);
  for (int m : group) member[static_cast<size_t>(m)] = 1;
  std::erase_if(group, [&](int i) {
    if (t.op[static_cast<size_t>(i)] != BlockedOp::kConcat) return false;
    for (int c : t.consumers[static_cast<size_t>(i)])
      if (member[static_cast<size_t>(c)]) return false;
    bool outside = false;
    for (int p : t.producers[static_cast<size_t>(i)])
      outside |= p < 0 || !member[static_cast<size_t>(p)];
    if (outside) member[static_cast<size_t>(i)] = 0;
    return outside;
  });
  return group;
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
      group = WithoutPassThroughConcats(t, std::move(group));
      if (Worthwhile(t, group)) out.push_back(WithoutEscapingViews(t, std::move(group)));
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
                int block, const FailedGroups& failed) {
  const NxHostApi& host = ep::Host();
  NodeTable t = ReadGraph(graph, registry, capability, std::max(block, 1));
  std::vector<char> grouped(t.nodes.size(), 0);
  if (block > 0 && host.version >= 6) {
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
