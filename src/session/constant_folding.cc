#include "session/constant_folding.h"

#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model.h"
#include "session/session.h"

namespace nxrt {
namespace {

// Operators whose output is not a function of their inputs, or that make sequences and
// optionals (initializers are tensors).
bool NeverFolded(const Node& node) {
  static const std::set<std::string> kOps = {
      "RandomNormal",      "RandomNormalLike",  "RandomUniform",
      "RandomUniformLike", "Multinomial",       "Bernoulli",
      "Dropout",           "SequenceConstruct", "SequenceEmpty",
      "SequenceInsert",    "SequenceErase",     "SequenceAt",
      "SequenceLength",    "SplitToSequence",   "ConcatFromSequence",
      "SequenceMap",       "Optional",          "OptionalGetElement",
      "OptionalHasElement"};
  if (!node.domain.empty() && node.domain != "ai.onnx") return true;
  for (const Attribute& a : node.attributes)
    if (a.graph || !a.graphs.empty()) return true;  // control flow: bodies run per call
  return kOps.count(node.op_type) > 0;
}

// Which nodes fold: in graph (topological) order, an eligible node whose every present input is
// an initializer or the output of a node that folds.
std::vector<bool> FoldableNodes(const Graph& g, const std::function<bool(const Node&)>& eligible) {
  std::vector<bool> foldable(g.nodes.size(), false);
  for (const Node& node : g.nodes) {
    if (!eligible(node) || NeverFolded(node)) continue;
    bool constant = false;
    bool all = true;
    for (int v : node.inputs) {
      if (v < 0) continue;
      const ValueDef& def = g.value(v);
      const bool from_folded = def.producer >= 0 && foldable[static_cast<size_t>(def.producer)];
      const bool init = def.initializer != nullptr && def.initializer->kind == NX_VALUE_TENSOR;
      if (!from_folded && !init) {
        all = false;
        break;
      }
      constant = true;
    }
    foldable[static_cast<size_t>(node.index)] = all && constant;
  }
  return foldable;
}

// A value some kept node (or subgraph) reads, or the graph returns.
bool NeededOutside(const Graph& g, int v, const std::vector<bool>& foldable) {
  const ValueDef& def = g.value(v);
  if (def.is_graph_output) return true;
  for (int c : def.consumers)
    if (!foldable[static_cast<size_t>(c)]) return true;
  return false;
}

// `def` now holds the constant tensor `t`.
void MakeConstant(ValueDef& def, const ValuePtr& t) {
  def.initializer = t;
  def.type.kind = NX_VALUE_TENSOR;
  def.type.elem_type = t->type;
  def.type.has_shape = true;
  def.type.dims = t->dims;
  def.type.dim_params.assign(t->dims.size(), "");
}

}  // namespace

int ResolveOuterConstants(Graph& body, const Graph& enclosing) {
  int resolved = 0;
  for (ValueDef& def : body.values) {
    if (!def.is_outer_scope) continue;
    const int v = enclosing.FindValue(def.name);
    if (v < 0) continue;
    const ValuePtr& init = enclosing.value(v).initializer;
    if (!init || init->kind != NX_VALUE_TENSOR) continue;
    MakeConstant(def, init);
    def.is_outer_scope = false;
    ++resolved;
  }
  return resolved;
}

namespace {

int FoldEligible(Graph& graph, const std::function<bool(const Node&)>& eligible, Env& env,
                 size_t memory_limit, const Logger& logger) {
  const std::vector<bool> foldable = FoldableNodes(graph, eligible);
  size_t count = 0;
  for (bool f : foldable) count += f ? 1 : 0;
  if (count == 0) return 0;

  // The foldable nodes as a model of their own: constant inputs as its initializers, the values
  // the rest of the graph needs as its outputs.
  auto folding = std::make_shared<Graph>();
  folding->name = graph.name + " (constant folding)";
  folding->source = graph.source;
  folding->opsets = graph.opsets;
  std::vector<int> needed;  // values of `graph`, in the folding graph's output order
  for (const Node& node : graph.nodes) {
    if (!foldable[static_cast<size_t>(node.index)]) continue;
    Node copy;
    copy.name = node.name;
    copy.op_type = node.op_type;
    copy.domain = node.domain;
    copy.opset = node.opset;
    copy.attributes = node.attributes;
    for (int v : node.inputs) {
      if (v < 0) {
        copy.inputs.push_back(-1);
        continue;
      }
      const ValueDef& def = graph.value(v);
      const int w = folding->GetOrAddValue(def.name);
      ValueDef& mine = folding->value(w);
      mine.type = def.type;
      if (def.producer < 0) mine.initializer = def.initializer;
      copy.inputs.push_back(w);
    }
    for (int v : node.outputs) {
      if (v < 0) {
        copy.outputs.push_back(-1);
        continue;
      }
      const ValueDef& def = graph.value(v);
      const int w = folding->GetOrAddValue(def.name);
      folding->value(w).type = def.type;
      copy.outputs.push_back(w);
      if (NeededOutside(graph, v, foldable)) {
        folding->value(w).is_graph_output = true;
        folding->outputs.push_back(w);
        needed.push_back(v);
      }
    }
    folding->nodes.push_back(std::move(copy));
  }
  if (needed.empty()) return 0;  // nothing outside reads them: the run never needed them either

  std::vector<ValuePtr> results;
  try {
    folding->Finalize();
    auto model = std::make_shared<Model>();
    model->graph = folding;
    model->source = graph.source;
    SessionOptions options;
    options.intra_op_threads = 1;
    options.optimization_level = 0;  // the nodes as they are; no folding inside folding
    options.log_level = NX_LOG_ERROR;
    options.memory_limit = memory_limit;
    Session session(env, model, options);
    std::vector<std::string_view> names;
    for (int w : folding->outputs) names.push_back(folding->value(w).name);
    results = session.Run({}, {}, names);
  } catch (const std::exception& e) {
    logger.Log(NX_LOG_INFO, graph.source + ": constant folding skipped for graph '" + graph.name +
                                "': " + e.what());
    return 0;
  }
  for (const ValuePtr& r : results)
    if (!r || r->kind != NX_VALUE_TENSOR) return 0;

  for (size_t i = 0; i < needed.size(); ++i) {
    MakeConstant(graph.value(needed[i]), results[i]);
  }
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size() - count);
  for (Node& node : graph.nodes)
    if (!foldable[static_cast<size_t>(node.index)]) kept.push_back(std::move(node));
  graph.nodes = std::move(kept);
  graph.Finalize();
  // Initializers only folded nodes read are garbage now (the folded results replace them).
  for (ValueDef& def : graph.values) {
    if (def.initializer && def.consumers.empty() && !def.is_graph_output) def.initializer.reset();
  }
  logger.Log(NX_LOG_INFO, graph.source + ": constant folding: " + std::to_string(count) +
                              " nodes of graph '" + graph.name + "' computed at creation");
  return static_cast<int>(count);
}

}  // namespace

int FoldConstants(Graph& graph, int cpu_ep, Env& env, size_t memory_limit, const Logger& logger) {
  if (cpu_ep < 0) return 0;
  return FoldEligible(
      graph, [cpu_ep](const Node& n) { return n.assigned_ep == cpu_ep; }, env, memory_limit,
      logger);
}

int FoldConstantsBeforePlacement(Graph& graph, Env& env, size_t memory_limit,
                                 const Logger& logger) {
  return FoldEligible(
      graph, [](const Node& n) { return n.assigned_ep < 0; }, env, memory_limit, logger);
}

}  // namespace nxrt
