#include "session/identity_bypass.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace nxrt {

namespace {

// The values of a constant integer tensor (int32 or int64), or nullopt.
std::optional<std::vector<int64_t>> ConstantInts(const Graph& graph, int v) {
  if (v < 0) return std::nullopt;
  const ValuePtr& init = graph.value(v).initializer;
  if (!init || init->data == nullptr) return std::nullopt;
  std::vector<int64_t> out(init->count);
  if (init->type == NX_TYPE_INT64) {
    const auto* d = static_cast<const int64_t*>(init->data);
    std::copy(d, d + init->count, out.begin());
  } else if (init->type == NX_TYPE_INT32) {
    const auto* d = static_cast<const int32_t*>(init->data);
    std::copy(d, d + init->count, out.begin());
  } else {
    return std::nullopt;
  }
  return out;
}

// A Slice that keeps all of its input: on every sliced axis it starts at 0, ends at or past the
// axis's (statically known) size and steps by 1. GhostNet's modules concatenate their two halves
// and slice the result to the module's width, which is often the whole of it; each such Slice
// cut a blocked group in two.
bool KeepsEverything(const Graph& graph, const Node& n) {
  if (!n.domain.empty() || n.op_type != "Slice" || n.inputs.empty() || n.inputs[0] < 0 ||
      n.outputs.size() != 1)
    return false;
  const TypeInfo& x = graph.value(n.inputs[0]).type;
  if (x.kind != NX_VALUE_TENSOR || !x.has_shape) return false;
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    const Attribute* s = n.FindAttribute("starts");
    const Attribute* e = n.FindAttribute("ends");
    const Attribute* a = n.FindAttribute("axes");
    if (s == nullptr || e == nullptr) return false;
    starts = s->ints;
    ends = e->ints;
    if (a != nullptr) axes = a->ints;
  } else {
    auto input = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (i >= n.inputs.size() || n.inputs[i] < 0) return std::vector<int64_t>();
      return ConstantInts(graph, n.inputs[i]);
    };
    auto s = input(1), e = input(2), a = input(3), st = input(4);
    if (!s || !e || !a || !st || s->empty()) return false;
    starts = *s;
    ends = *e;
    axes = *a;
    steps = *st;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (axes.empty())
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i) axes.push_back(i);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      (!steps.empty() && steps.size() != starts.size()))
    return false;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank) return false;
    const int64_t dim = x.dims[static_cast<size_t>(axis)];
    if (dim < 0) return false;
    const int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    if (start > 0 || ends[i] < dim || (!steps.empty() && steps[i] != 1)) return false;
  }
  return true;
}

// A Pad that adds nothing: all of its pads are 0 (whatever the mode). torch exports
// F.avg_pool2d(x, 2, 2) with ceil_mode off as Pad(0, ...) -> AveragePool (GhostNetV2's attention
// gates), and each cut a blocked group in two.
bool PadsNothing(const Graph& graph, const Node& n) {
  if (!n.domain.empty() || n.op_type != "Pad" || n.inputs.empty() || n.inputs[0] < 0 ||
      n.outputs.size() != 1)
    return false;
  std::optional<std::vector<int64_t>> pads;
  if (n.opset < 11) {
    const Attribute* a = n.FindAttribute(n.opset < 2 ? "paddings" : "pads");
    if (a != nullptr) pads = a->ints;
  } else if (n.inputs.size() >= 2) {
    pads = ConstantInts(graph, n.inputs[1]);
  }
  if (!pads || pads->empty()) return false;
  return std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
}

}  // namespace

int BypassIdentities(Graph& graph) {
  // value -> the value it is an Identity of (following chains of Identities).
  std::vector<int> source(graph.values.size(), -1);
  std::vector<bool> removed(graph.nodes.size(), false);
  int count = 0;
  for (const Node& n : graph.nodes) {  // topological order: a chain's head comes first
    const bool identity = n.domain.empty() && n.op_type == "Identity" && n.inputs.size() == 1;
    if (!(identity || KeepsEverything(graph, n) || PadsNothing(graph, n)) ||
        n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0)
      continue;
    const int in = n.inputs[0], out = n.outputs[0];
    const ValueDef& x = graph.value(in);
    int origin = source[static_cast<size_t>(in)];
    if (origin < 0 && !x.is_outer_scope) origin = in;
    if (origin < 0) continue;
    const ValueDef& y = graph.value(out);
    if (y.is_graph_output) continue;
    bool read_by_name = false;  // a subgraph's outer-scope reference
    for (int c : y.consumers) {
      const Node& reader = graph.nodes[static_cast<size_t>(c)];
      read_by_name = read_by_name || std::count(reader.implicit_inputs.begin(),
                                                reader.implicit_inputs.end(), out) > 0;
    }
    if (read_by_name) continue;
    source[static_cast<size_t>(out)] = origin;
    removed[static_cast<size_t>(n.index)] = true;
    ++count;
  }
  if (count == 0) return 0;
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size() - static_cast<size_t>(count));
  for (Node& n : graph.nodes) {
    if (removed[static_cast<size_t>(n.index)]) continue;
    for (int& v : n.inputs)
      if (v >= 0 && source[static_cast<size_t>(v)] >= 0) v = source[static_cast<size_t>(v)];
    kept.push_back(std::move(n));
  }
  graph.nodes = std::move(kept);
  graph.Finalize();
  return count;
}

}  // namespace nxrt
