#include "session/shape_value_folding.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/value.h"
#include "graph/known_integers.h"

namespace nxrt {
namespace {

bool HasSubgraphs(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.graph || !a.graphs.empty()) return true;
  return false;
}

// A value read by name inside some node's subgraph (an outer-scope reference).
bool ReadByName(const Graph& g, int v) {
  for (int c : g.value(v).consumers) {
    const auto& implicit = g.nodes[static_cast<size_t>(c)].implicit_inputs;
    if (std::count(implicit.begin(), implicit.end(), v) > 0) return true;
  }
  return false;
}

ValuePtr MakeInitializer(const KnownIntegers& k) {
  ValuePtr t = MakeTensor(k.type, k.dims);
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (k.type == NX_TYPE_INT64) {
      static_cast<int64_t*>(t->data)[i] = k.values[i];
    } else {
      static_cast<int32_t*>(t->data)[i] = static_cast<int32_t>(k.values[i]);
    }
  }
  return t;
}

}  // namespace

int FoldShapeValues(Graph& graph) {
  const KnownIntegerTable known = KnownIntegerValues(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  int count = 0;
  for (const Node& n : graph.nodes) {
    if (!n.domain.empty() || HasSubgraphs(n) || n.outputs.empty()) continue;
    bool all = true;
    for (int v : n.outputs) {
      all = all && v >= 0 && known[static_cast<size_t>(v)] && !graph.value(v).is_graph_output &&
            !ReadByName(graph, v);
    }
    if (!all) continue;
    removed[static_cast<size_t>(n.index)] = true;
    ++count;
  }
  if (count == 0) return 0;
  for (const Node& n : graph.nodes) {
    if (!removed[static_cast<size_t>(n.index)]) continue;
    for (int v : n.outputs) {
      ValueDef& def = graph.value(v);
      const KnownIntegers& k = *known[static_cast<size_t>(v)];
      def.initializer = MakeInitializer(k);
      def.type.kind = NX_VALUE_TENSOR;
      def.type.elem_type = k.type;
      def.type.has_shape = true;
      def.type.dims = k.dims;
      def.type.dim_params.assign(k.dims.size(), "");
    }
  }
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size() - static_cast<size_t>(count));
  for (Node& n : graph.nodes)
    if (!removed[static_cast<size_t>(n.index)]) kept.push_back(std::move(n));
  graph.nodes = std::move(kept);
  graph.Finalize();
  // Initializers only the removed nodes read (Slice bounds, the Concat's constant half).
  for (ValueDef& def : graph.values)
    if (def.initializer && def.consumers.empty() && !def.is_graph_output && !def.is_graph_input)
      def.initializer.reset();
  return count;
}

}  // namespace nxrt
