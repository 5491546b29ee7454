#include "session/saved_groups.h"

#include <set>

#include "base/error.h"
#include "ort_plugins/ort_plugin_library.h"
#include "plugins/host_objects.h"
#include "session/fused_groups.h"

namespace nxrt {
namespace {

// Replaces node `index` of `g` by the nodes of `body` (which read `g`'s values by name and
// produce the node's outputs).
void Inline(Graph& g, size_t index, const Graph& body) {
  std::vector<Node> added;
  auto map = [&](int v) {
    if (v < 0) return v;
    const ValueDef& def = body.value(v);
    const int mapped = g.GetOrAddValue(def.name);
    ValueDef& target = g.value(mapped);
    if (target.type.elem_type == NX_TYPE_UNDEFINED && !def.is_outer_scope) target.type = def.type;
    return mapped;
  };
  for (const Node& n : body.nodes) {
    Node copy = n;
    copy.owner = &g;
    copy.index = -1;
    copy.assigned_ep = -1;
    for (int& v : copy.inputs) v = map(v);
    for (int& v : copy.outputs) v = map(v);
    for (int& v : copy.implicit_inputs) v = map(v);
    for (Attribute& a : copy.attributes) {
      if (a.graph) a.graph->parent = &g;
      for (auto& sub : a.graphs) sub->parent = &g;
    }
    added.push_back(std::move(copy));
  }
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + added.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i == index) {
      for (Node& n : added) nodes.push_back(std::move(n));
    } else {
      nodes.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(nodes);
  g.Finalize();
}

}  // namespace

void CheckPluginContexts(const Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                         const std::map<std::string, std::string>& metadata,
                         const NxLogger& logger) {
  std::set<std::string> checked;
  for (const Node& node : g.nodes) {
    const std::string source = ContextSource(node);
    if (source.empty() || !checked.insert(source).second) continue;
    const auto it = metadata.find("ep_compatibility_info." + source);
    if (it == metadata.end()) continue;  // nothing recorded: the plugin checks for itself
    for (const auto& e : eps) {
      if (e->name() != source || !ort::IsWrappedFactory(e->factory().raw)) continue;
      std::vector<const NxHardwareDevice*> devices;
      for (const NxEpDevice* d : e->devices()) devices.push_back(d->device);
      const NxCompatibility c = CheckContextCompatibility(e->factory(), devices, it->second);
      NXRT_CHECK(c != NX_COMPATIBILITY_NEEDS_RECOMPILATION && c != NX_COMPATIBILITY_UNSUPPORTED,
                 NX_INVALID_MODEL,
                 "the model's EPContext nodes were compiled by EP '" + source +
                     "' for a device they do not suit (" + CompatibilityName(c) +
                     "; compatibility '" + it->second +
                     "'): compile the model again for this device (nxrt compile)");
      if (c == NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL) {
        logger.logger.Log(
            NX_LOG_WARNING,
            "the model's EPContext nodes of EP '" + source +
                "' run on this device but were compiled for another (compatibility '" + it->second +
                "'); compiling again would suit it better");
      }
    }
  }
}

int ResolveSavedGroups(Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                       const std::map<std::string, std::string>& metadata, NxFallbackMode fallback,
                       const NxLogger& logger) {
  int replaced = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& node = g.nodes[i];
    const std::string source = ContextSource(node);
    if (source.empty()) continue;
    size_t at = node.attributes.size();
    for (size_t a = 0; a < node.attributes.size(); ++a)
      if (node.attributes[a].name == kOriginalNodesAttribute && node.attributes[a].graph) at = a;
    if (at == node.attributes.size()) continue;
    const EpInstance* ep = nullptr;
    for (const auto& e : eps)
      if (e->name() == source) ep = e.get();
    std::string why;
    if (ep == nullptr) {
      why = "the session has no EP named '" + source + "'";
    } else if (auto it = metadata.find("ep_compatibility_info." + source); it != metadata.end()) {
      std::vector<const NxHardwareDevice*> devices;
      for (const NxEpDevice* d : ep->devices()) devices.push_back(d->device);
      const NxCompatibility c = CheckContextCompatibility(ep->factory(), devices, it->second);
      if (c == NX_COMPATIBILITY_NEEDS_RECOMPILATION || c == NX_COMPATIBILITY_UNSUPPORTED)
        why = std::string("its payload does not suit this device (") + CompatibilityName(c) +
              "; compatibility '" + it->second + "')";
    }
    if (why.empty() || fallback == NX_FALLBACK_FORBID) {
      // Used as compiled (or refused later with that reason): the kept nodes are not needed,
      // and nobody must place or compile them as a body.
      node.attributes.erase(node.attributes.begin() + static_cast<std::ptrdiff_t>(at));
      continue;
    }
    const std::shared_ptr<Graph> body = node.attributes[at].graph;
    logger.logger.Log(NX_LOG_WARNING, node.Describe() + ": " + why + "; running its " +
                                          std::to_string(body->nodes.size()) +
                                          " original nodes instead");
    Inline(g, i, *body);
    ++replaced;
    i = static_cast<size_t>(-1);  // indices changed: look again from the start
  }
  return replaced;
}

}  // namespace nxrt
