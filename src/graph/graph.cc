#include "graph/graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include "base/error.h"

namespace nxrt {

const Attribute* Node::FindAttribute(const std::string& attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::Describe() const {
  if (!name.empty()) return op_type + " node '" + name + "'";
  return op_type + " node #" + std::to_string(index);
}

int Graph::GetOrAddValue(const std::string& value_name) {
  auto it = value_index_.find(value_name);
  if (it != value_index_.end()) return it->second;
  int index = static_cast<int>(values.size());
  values.push_back(ValueDef{});
  values.back().name = value_name;
  value_index_.emplace(value_name, index);
  return index;
}

int Graph::FindValue(std::string_view value_name) const {
  auto it = value_index_.find(value_name);
  return it == value_index_.end() ? -1 : it->second;
}

namespace {

// True if an enclosing graph can provide `value_name` (for subgraph bodies).
bool VisibleInOuterScope(const Graph* graph, const std::string& value_name) {
  for (const Graph* g = graph->parent; g != nullptr; g = g->parent) {
    int v = g->FindValue(value_name);
    if (v >= 0) return true;
  }
  return false;
}

// An outer-scope value takes the type known where it is defined (a body rarely declares it), so
// EPs asked about the body see it.
void TakeOuterType(const Graph* graph, ValueDef& def) {
  for (const Graph* g = graph->parent; g != nullptr && def.type.elem_type == NX_TYPE_UNDEFINED;
       g = g->parent) {
    const int v = g->FindValue(def.name);
    if (v >= 0) def.type = g->value(v).type;
  }
}

// Names a body reads without defining them (its own or its nested bodies' free names), in first-
// use order: what the node that owns the body must supply from outside.
void FreeNames(const Graph& body, std::vector<std::string>& out) {
  std::set<std::string> defined;
  for (int v : body.inputs) defined.insert(body.value(v).name);
  for (const ValueDef& v : body.values)
    if (v.initializer || v.is_graph_input) defined.insert(v.name);
  for (const Node& n : body.nodes)
    for (int o : n.outputs)
      if (o >= 0) defined.insert(body.value(o).name);
  std::set<std::string> seen(out.begin(), out.end());
  auto use = [&](const std::string& name) {
    if (!defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const Node& n : body.nodes) {
    for (int in : n.inputs)
      if (in >= 0) use(body.value(in).name);
    for (const Attribute& a : n.attributes) {
      std::vector<std::string> inner;
      if (a.graph) FreeNames(*a.graph, inner);
      for (const auto& g : a.graphs) FreeNames(*g, inner);
      for (const std::string& name : inner) use(name);
    }
  }
  for (int o : body.outputs) use(body.value(o).name);
}

}  // namespace

void Graph::Finalize() {
  // Control-flow nodes read, through their bodies, values of this graph (or of enclosing ones):
  // those are the nodes' implicit inputs, ordered and kept alive like inputs.
  for (Node& node : nodes) {
    node.implicit_inputs.clear();
    std::vector<std::string> names;
    for (const Attribute& a : node.attributes) {
      if (a.graph) FreeNames(*a.graph, names);
      for (const auto& g : a.graphs) FreeNames(*g, names);
    }
    for (const std::string& name : names) {
      if (std::find_if(node.implicit_inputs.begin(), node.implicit_inputs.end(),
                       [&](int v) { return value(v).name == name; }) != node.implicit_inputs.end())
        continue;
      int v = FindValue(name);
      if (v < 0) v = GetOrAddValue(name);  // provided further out (checked below)
      node.implicit_inputs.push_back(v);
    }
  }
  const std::string where = source.empty() ? "" : source + ": ";
  for (ValueDef& v : values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    Node& node = nodes[n];
    node.owner = this;
    node.index = static_cast<int>(n);
    for (int out : node.outputs) {
      if (out < 0) continue;
      ValueDef& v = value(out);
      if (v.producer >= 0) {
        Throw(NX_INVALID_MODEL, where + node.Describe() + ": output '" + v.name +
                                    "' is already produced by " + nodes[v.producer].Describe());
      }
      if (v.initializer || v.is_graph_input) {
        Throw(NX_INVALID_MODEL, where + node.Describe() + ": output '" + v.name +
                                    "' is also a graph input or initializer");
      }
      v.producer = static_cast<int>(n);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    Node& node = nodes[n];
    for (int in : node.inputs) {
      if (in < 0) continue;
      ValueDef& v = value(in);
      if (v.producer < 0 && !v.initializer && !v.is_graph_input) {
        if (parent != nullptr && VisibleInOuterScope(this, v.name)) {
          v.is_outer_scope = true;
          TakeOuterType(this, v);
        } else {
          Throw(NX_INVALID_MODEL,
                where + node.Describe() + ": input '" + v.name +
                    "' is not a graph input, an initializer or any node's output");
        }
      }
      v.consumers.push_back(static_cast<int>(n));
    }
    for (int in : node.implicit_inputs) {
      ValueDef& v = value(in);
      if (v.producer < 0 && !v.initializer && !v.is_graph_input) {
        if (parent != nullptr && VisibleInOuterScope(this, v.name)) {
          v.is_outer_scope = true;
          TakeOuterType(this, v);
        } else {
          Throw(NX_INVALID_MODEL, where + node.Describe() + ": a subgraph reads '" + v.name +
                                      "', which no enclosing graph defines");
        }
      }
      v.consumers.push_back(static_cast<int>(n));
    }
  }
  for (int out : outputs) {
    const ValueDef& v = value(out);
    if (v.producer < 0 && !v.initializer && !v.is_graph_input &&
        !(parent != nullptr && VisibleInOuterScope(this, v.name))) {
      Throw(NX_INVALID_MODEL, where + "graph output '" + v.name + "' is never produced");
    }
  }
  for (int out : outputs) {
    ValueDef& v = value(out);
    if (v.producer < 0 && !v.initializer && !v.is_graph_input) {
      v.is_outer_scope = true;
      TakeOuterType(this, v);
    }
  }

  // Kahn's algorithm, stable with respect to the file order.
  std::vector<int> pending(nodes.size(), 0);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int in : nodes[n].inputs)
      if (in >= 0 && value(in).producer >= 0) ++pending[n];
    for (int in : nodes[n].implicit_inputs)
      if (value(in).producer >= 0) ++pending[n];
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (pending[n] == 0) ready.push(static_cast<int>(n));
  std::vector<int> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int out : nodes[n].outputs) {
      if (out < 0) continue;
      for (int c : value(out).consumers)
        if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (pending[n] > 0) {
        Throw(NX_INVALID_MODEL, where + "the graph has a cycle through " + nodes[n].Describe());
      }
    }
  }
  bool sorted = true;
  for (size_t i = 0; i < order.size(); ++i) sorted = sorted && order[i] == static_cast<int>(i);
  if (!sorted) {
    std::vector<Node> reordered;
    reordered.reserve(nodes.size());
    for (int n : order) reordered.push_back(std::move(nodes[n]));
    nodes = std::move(reordered);
    Finalize();  // relink with the new indices (now already sorted)
  }
}

}  // namespace nxrt
