#include "graph/group_graph.h"

#include <algorithm>

namespace nxrt {
namespace {

// The nodes that read value `v` (as an input or, through a body, implicitly).
// (Finalize lists implicit readers among the consumers.)
template <typename Fn>
void ForEachReader(const Graph& g, int v, Fn fn) {
  for (int c : g.value(v).consumers) fn(c);
}

}  // namespace

// Values a node reads: inputs and implicit inputs.
std::vector<int> ReadsOf(const Node& node) {
  std::vector<int> reads;
  for (int v : node.inputs)
    if (v >= 0) reads.push_back(v);
  for (int v : node.implicit_inputs) reads.push_back(v);
  return reads;
}

void GroupBoundary(const Graph& g, const std::vector<int>& group, std::vector<int>& inputs,
                   std::vector<int>& outputs) {
  std::vector<char> member(g.nodes.size(), 0);
  for (int i : group) member[static_cast<size_t>(i)] = 1;
  inputs.clear();
  outputs.clear();
  auto add_once = [](std::vector<int>& list, int v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (int i : group) {
    const Node& node = g.nodes[static_cast<size_t>(i)];
    for (int v : ReadsOf(node)) {
      const int p = g.value(v).producer;
      if (p < 0 || !member[static_cast<size_t>(p)]) add_once(inputs, v);
    }
  }
  for (int i : group) {
    for (int v : g.nodes[static_cast<size_t>(i)].outputs) {
      if (v < 0) continue;
      bool used_outside = g.value(v).is_graph_output;
      ForEachReader(g, v, [&](int reader) {
        used_outside = used_outside || !member[static_cast<size_t>(reader)];
      });
      if (used_outside) add_once(outputs, v);
    }
  }
}

std::unique_ptr<Graph> MakeGroupGraph(const Graph& g, const std::vector<int>& group,
                                      const std::string& name, std::vector<int>& inputs,
                                      std::vector<int>& outputs) {
  GroupBoundary(g, group, inputs, outputs);
  auto sub = std::make_unique<Graph>();
  sub->name = name;
  sub->source = g.source;
  sub->opsets = g.opsets;
  sub->parent = g.parent;
  auto copy_value = [&](int v) {
    const ValueDef& from = g.value(v);
    const int to = sub->GetOrAddValue(from.name);
    ValueDef& def = sub->value(to);
    def.type = from.type;
    return to;
  };
  for (int v : inputs) {
    const int to = copy_value(v);
    ValueDef& def = sub->value(to);
    def.initializer = g.value(v).initializer;  // shared, read-only
    def.is_graph_input = def.initializer == nullptr;
    sub->inputs.push_back(to);
  }
  for (int i : group) {
    Node node = g.nodes[static_cast<size_t>(i)];
    for (int& v : node.inputs)
      if (v >= 0) v = copy_value(v);
    for (int& v : node.outputs)
      if (v >= 0) v = copy_value(v);
    node.implicit_inputs.clear();  // recomputed by Finalize
    node.assigned_ep = -1;
    node.assigned_device = nullptr;
    sub->nodes.push_back(std::move(node));
  }
  for (int v : outputs) {
    const int to = sub->FindValue(g.value(v).name);
    sub->value(to).is_graph_output = true;
    sub->outputs.push_back(to);
  }
  sub->Finalize();
  return sub;
}

}  // namespace nxrt
