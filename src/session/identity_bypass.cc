#include "session/identity_bypass.h"

#include <algorithm>
#include <vector>

namespace nxrt {

int BypassIdentities(Graph& graph) {
  // value -> the value it is an Identity of (following chains of Identities).
  std::vector<int> source(graph.values.size(), -1);
  std::vector<bool> removed(graph.nodes.size(), false);
  int count = 0;
  for (const Node& n : graph.nodes) {  // topological order: a chain's head comes first
    if (!n.domain.empty() || n.op_type != "Identity" || n.inputs.size() != 1 ||
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
