// OrtApi slots that read graph views: OrtGraph, OrtNode, OrtValueInfo, OrtOpAttr and the type
// infos of values (ort_graph_view.h holds the structs).
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>

#include "base/error.h"
#include "graph/group_graph.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "ort_plugins/ort_graph_view.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {
namespace {

// Copies `items` into a caller's array of `capacity` entries.
template <class T>
OrtStatus* CopyOut(const char* fn, const std::vector<T>& items, T* out, size_t capacity) {
  if (out == nullptr && !items.empty()) return NullArgument(fn);
  if (capacity < items.size()) {
    return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": room for " +
                                                  std::to_string(capacity) + " entries, " +
                                                  std::to_string(items.size()) + " needed");
  }
  for (size_t i = 0; i < items.size(); ++i) out[i] = items[i];
  return nullptr;
}

// Views a plugin made with Graph_GetGraphView, released with ReleaseGraph; the host's own views
// are not the plugin's to release.
struct OwnedGraphs {
  std::mutex mutex;
  std::unordered_set<const OrtGraph*> live;
};
OwnedGraphs& PluginGraphs() {
  static auto* graphs = new OwnedGraphs();
  return *graphs;
}

// ---- Value infos --------------------------------------------------------------------------------

OrtStatus* GetValueInfoName(const OrtValueInfo* v, const char** out) {
  if (!v || !out) return NullArgument("GetValueInfoName");
  *out = v->name.c_str();
  return nullptr;
}
OrtStatus* GetValueInfoTypeInfo(const OrtValueInfo* v, const OrtTypeInfo** out) {
  if (!v || !out) return NullArgument("GetValueInfoTypeInfo");
  *out = &v->type;
  return nullptr;
}

const Graph& Ir(const OrtValueInfo* v) { return *v->graph->ir; }

OrtStatus* ValueInfoGetValueProducer(const OrtValueInfo* v, const OrtNode** node,
                                     size_t* output_index) {
  if (!v || !node) return NullArgument("ValueInfo_GetValueProducer");
  *node = nullptr;
  if (output_index) *output_index = 0;
  const int p = Ir(v).value(v->index).producer;
  if (p < 0 || static_cast<size_t>(p) >= v->graph->node_list.size()) return nullptr;
  const OrtNode* producer = v->graph->node_list[static_cast<size_t>(p)];
  *node = producer;
  if (output_index) {
    for (size_t i = 0; i < producer->outputs.size(); ++i)
      if (producer->outputs[i] == v) *output_index = i;
  }
  return nullptr;
}

// Every use of `v` by a node of its graph: (node, input index), -1 for an implicit input.
std::vector<std::pair<const OrtNode*, int64_t>> Uses(const OrtValueInfo* v) {
  std::vector<std::pair<const OrtNode*, int64_t>> uses;
  std::vector<int> consumers = Ir(v).value(v->index).consumers;
  std::sort(consumers.begin(), consumers.end());
  consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
  for (int c : consumers) {
    if (c < 0 || static_cast<size_t>(c) >= v->graph->node_list.size()) continue;
    const OrtNode* n = v->graph->node_list[static_cast<size_t>(c)];
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (n->inputs[i] == v) uses.emplace_back(n, static_cast<int64_t>(i));
    for (const OrtValueInfo* implicit : n->implicit_inputs)
      if (implicit == v) uses.emplace_back(n, -1);
  }
  return uses;
}

OrtStatus* ValueInfoGetValueNumConsumers(const OrtValueInfo* v, size_t* out) {
  if (!v || !out) return NullArgument("ValueInfo_GetValueNumConsumers");
  return Guard("ValueInfo_GetValueNumConsumers", [&]() -> OrtStatus* {
    *out = Uses(v).size();
    return nullptr;
  });
}
OrtStatus* ValueInfoGetValueConsumers(const OrtValueInfo* v, const OrtNode** nodes,
                                      int64_t* input_indices, size_t count) {
  if (!v) return NullArgument("ValueInfo_GetValueConsumers");
  return Guard("ValueInfo_GetValueConsumers", [&]() -> OrtStatus* {
    auto uses = Uses(v);
    if (count < uses.size() || (!uses.empty() && (!nodes || !input_indices)))
      return NewOrtStatus(ORT_INVALID_ARGUMENT, "ValueInfo_GetValueConsumers: arrays too small");
    for (size_t i = 0; i < uses.size(); ++i) {
      nodes[i] = uses[i].first;
      input_indices[i] = uses[i].second;
    }
    return nullptr;
  });
}
OrtStatus* ValueInfoGetInitializerValue(const OrtValueInfo* v, const OrtValue** out) {
  if (!v || !out) return NullArgument("ValueInfo_GetInitializerValue");
  *out = reinterpret_cast<const OrtValue*>(v->initializer);
  return nullptr;
}
// nxrt reads external data into memory at load time: no initializer is external here.
OrtStatus* ValueInfoGetExternalInitializerInfo(const OrtValueInfo* v, void** out) {
  if (!v || !out) return NullArgument("ValueInfo_GetExternalInitializerInfo");
  *out = nullptr;
  return nullptr;
}
OrtStatus* ValueInfoIsRequiredGraphInput(const OrtValueInfo* v, bool* out) {
  if (!v || !out) return NullArgument("ValueInfo_IsRequiredGraphInput");
  *out = v->required_input;
  return nullptr;
}
OrtStatus* ValueInfoIsOptionalGraphInput(const OrtValueInfo* v, bool* out) {
  if (!v || !out) return NullArgument("ValueInfo_IsOptionalGraphInput");
  *out = false;  // nxrt treats an input with an initializer as the initializer
  return nullptr;
}
OrtStatus* ValueInfoIsGraphOutput(const OrtValueInfo* v, bool* out) {
  if (!v || !out) return NullArgument("ValueInfo_IsGraphOutput");
  *out = v->graph_output;
  return nullptr;
}
OrtStatus* ValueInfoIsConstantInitializer(const OrtValueInfo* v, bool* out) {
  if (!v || !out) return NullArgument("ValueInfo_IsConstantInitializer");
  *out = v->initializer != nullptr;
  return nullptr;
}
OrtStatus* ValueInfoIsFromOuterScope(const OrtValueInfo* v, bool* out) {
  if (!v || !out) return NullArgument("ValueInfo_IsFromOuterScope");
  *out = v->outer_scope;
  return nullptr;
}

// ---- Graphs -------------------------------------------------------------------------------------

OrtStatus* GraphGetName(const OrtGraph* g, const char** out) {
  if (!g || !out) return NullArgument("Graph_GetName");
  *out = g->name.c_str();
  return nullptr;
}
OrtStatus* GraphGetModelPath(const OrtGraph* g, const char** out) {
  if (!g || !out) return NullArgument("Graph_GetModelPath");
  *out = g->model_path.c_str();
  return nullptr;
}
OrtStatus* GraphGetOnnxIRVersion(const OrtGraph* g, int64_t* out) {
  if (!g || !out) return NullArgument("Graph_GetOnnxIRVersion");
  *out = g->ir_version;
  return nullptr;
}
OrtStatus* GraphGetNumOperatorSets(const OrtGraph* g, size_t* out) {
  if (!g || !out) return NullArgument("Graph_GetNumOperatorSets");
  *out = g->opset_domains.size();
  return nullptr;
}
OrtStatus* GraphGetOperatorSets(const OrtGraph* g, const char** domains, int64_t* versions,
                                size_t count) {
  if (!g || ((!domains || !versions) && !g->opset_domains.empty()))
    return NullArgument("Graph_GetOperatorSets");
  if (count < g->opset_domains.size())
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "Graph_GetOperatorSets: arrays too small");
  for (size_t i = 0; i < g->opset_domains.size(); ++i) {
    domains[i] = g->opset_domains[i].c_str();
    versions[i] = g->opset_versions[i];
  }
  return nullptr;
}

#define NXRT_ORT_GRAPH_LIST(Name, member)                                                \
  OrtStatus* GraphGetNum##Name(const OrtGraph* g, size_t* out) {                         \
    if (!g || !out) return NullArgument("Graph_GetNum" #Name);                           \
    *out = g->member.size();                                                             \
    return nullptr;                                                                      \
  }                                                                                      \
  OrtStatus* GraphGet##Name(const OrtGraph* g, const OrtValueInfo** out, size_t count) { \
    if (!g) return NullArgument("Graph_Get" #Name);                                      \
    return CopyOut("Graph_Get" #Name, g->member, out, count);                            \
  }
NXRT_ORT_GRAPH_LIST(Inputs, inputs)
NXRT_ORT_GRAPH_LIST(Outputs, outputs)
NXRT_ORT_GRAPH_LIST(Initializers, initializers)
#undef NXRT_ORT_GRAPH_LIST

OrtStatus* GraphGetNumNodes(const OrtGraph* g, size_t* out) {
  if (!g || !out) return NullArgument("Graph_GetNumNodes");
  *out = g->node_list.size();
  return nullptr;
}
OrtStatus* GraphGetNodes(const OrtGraph* g, const OrtNode** out, size_t count) {
  if (!g) return NullArgument("Graph_GetNodes");
  return CopyOut("Graph_GetNodes", g->node_list, out, count);
}
OrtStatus* GraphGetParentNode(const OrtGraph* g, const OrtNode** out) {
  if (!g || !out) return NullArgument("Graph_GetParentNode");
  *out = g->parent_node;
  return nullptr;
}

// A view of some nodes of `g`: their inputs from outside the set become graph inputs (or
// initializers), values used after them or returned by the model its outputs.
OrtStatus* GraphGetGraphView(const OrtGraph* g, const OrtNode** nodes, size_t count,
                             OrtGraph** out) {
  if (!g || !out || (count > 0 && !nodes)) return NullArgument("Graph_GetGraphView");
  *out = nullptr;
  return Guard("Graph_GetGraphView", [&]() -> OrtStatus* {
    std::vector<int> group;
    for (size_t i = 0; i < count; ++i) {
      if (!g->HasNode(nodes[i]) || nodes[i]->ir == nullptr)
        return NewOrtStatus(ORT_INVALID_ARGUMENT,
                            "Graph_GetGraphView: a node is not a node of this graph");
      group.push_back(nodes[i]->ir->index);
    }
    std::sort(group.begin(), group.end());
    group.erase(std::unique(group.begin(), group.end()), group.end());
    std::vector<int> inputs, outputs;
    std::unique_ptr<Graph> ir = MakeGroupGraph(*g->ir, group, g->name, inputs, outputs);
    std::unique_ptr<OrtGraph> view = MakeGraphView(*ir, g->model_path, g->parent_node);
    view->owned_ir = std::move(ir);
    OwnedGraphs& owned = PluginGraphs();
    std::lock_guard<std::mutex> lock(owned.mutex);
    owned.live.insert(view.get());
    *out = view.release();
    return nullptr;
  });
}

void ReleaseGraph(OrtGraph* g) {
  if (g == nullptr) return;
  OwnedGraphs& owned = PluginGraphs();
  {
    std::lock_guard<std::mutex> lock(owned.mutex);
    if (owned.live.erase(g) == 0) return;  // the host's, or not a graph
  }
  delete g;
}

// ---- Nodes --------------------------------------------------------------------------------------

OrtStatus* NodeGetId(const OrtNode* n, size_t* out) {
  if (!n || !out) return NullArgument("Node_GetId");
  *out = n->id;
  return nullptr;
}
OrtStatus* NodeGetName(const OrtNode* n, const char** out) {
  if (!n || !out) return NullArgument("Node_GetName");
  *out = n->name.c_str();
  return nullptr;
}
OrtStatus* NodeGetOperatorType(const OrtNode* n, const char** out) {
  if (!n || !out) return NullArgument("Node_GetOperatorType");
  *out = n->op_type.c_str();
  return nullptr;
}
OrtStatus* NodeGetDomain(const OrtNode* n, const char** out) {
  if (!n || !out) return NullArgument("Node_GetDomain");
  *out = n->domain.c_str();
  return nullptr;
}
OrtStatus* NodeGetSinceVersion(const OrtNode* n, int* out) {
  if (!n || !out) return NullArgument("Node_GetSinceVersion");
  *out = n->since_version;
  return nullptr;
}

#define NXRT_ORT_NODE_LIST(Name, member)                                               \
  OrtStatus* NodeGetNum##Name(const OrtNode* n, size_t* out) {                         \
    if (!n || !out) return NullArgument("Node_GetNum" #Name);                          \
    *out = n->member.size();                                                           \
    return nullptr;                                                                    \
  }                                                                                    \
  OrtStatus* NodeGet##Name(const OrtNode* n, const OrtValueInfo** out, size_t count) { \
    if (!n) return NullArgument("Node_Get" #Name);                                     \
    return CopyOut("Node_Get" #Name, n->member, out, count);                           \
  }
NXRT_ORT_NODE_LIST(Inputs, inputs)
NXRT_ORT_NODE_LIST(Outputs, outputs)
NXRT_ORT_NODE_LIST(ImplicitInputs, implicit_inputs)
#undef NXRT_ORT_NODE_LIST

OrtStatus* NodeGetNumAttributes(const OrtNode* n, size_t* out) {
  if (!n || !out) return NullArgument("Node_GetNumAttributes");
  *out = n->attributes.size();
  return nullptr;
}
OrtStatus* NodeGetAttributes(const OrtNode* n, const OrtOpAttr** out, size_t count) {
  if (!n) return NullArgument("Node_GetAttributes");
  std::vector<const OrtOpAttr*> attrs;
  for (const auto& a : n->attributes) attrs.push_back(a.get());
  return CopyOut("Node_GetAttributes", attrs, out, count);
}
OrtStatus* NodeGetAttributeByName(const OrtNode* n, const char* name, const OrtOpAttr** out) {
  if (!n || !name || !out) return NullArgument("Node_GetAttributeByName");
  *out = nullptr;
  for (const auto& a : n->attributes) {
    if (a->name == name) {
      *out = a.get();
      return nullptr;
    }
  }
  // onnxruntime answers NULL for an optional attribute the node leaves unset; nxrt does not
  // keep operator schemas, so every absent attribute reads that way.
  return nullptr;
}
OrtStatus* NodeGetNumSubgraphs(const OrtNode* n, size_t* out) {
  if (!n || !out) return NullArgument("Node_GetNumSubgraphs");
  *out = n->subgraphs.size();
  return nullptr;
}
OrtStatus* NodeGetSubgraphs(const OrtNode* n, const OrtGraph** graphs, size_t count,
                            const char** attribute_names) {
  if (!n) return NullArgument("Node_GetSubgraphs");
  if (OrtStatus* s = CopyOut("Node_GetSubgraphs", n->subgraphs, graphs, count)) return s;
  if (attribute_names != nullptr)
    for (size_t i = 0; i < n->subgraphs.size(); ++i)
      attribute_names[i] = n->subgraph_attribute_names[i];
  return nullptr;
}
OrtStatus* NodeGetGraph(const OrtNode* n, const OrtGraph** out) {
  if (!n || !out) return NullArgument("Node_GetGraph");
  *out = n->graph;
  return nullptr;
}
OrtStatus* NodeGetEpName(const OrtNode* n, const char** out) {
  if (!n || !out) return NullArgument("Node_GetEpName");
  *out = n->ep_name.c_str();
  return nullptr;
}

// ---- Attributes ---------------------------------------------------------------------------------

OrtStatus* OpAttrGetType(const OrtOpAttr* a, OrtOpAttrType* out) {
  if (!a || !out) return NullArgument("OpAttr_GetType");
  *out = a->type;
  return nullptr;
}
OrtStatus* OpAttrGetName(const OrtOpAttr* a, const char** out) {
  if (!a || !out) return NullArgument("OpAttr_GetName");
  *out = a->name.c_str();
  return nullptr;
}

// Writes the attribute as `type` into `data` (`len` bytes) and sets *out to the bytes it takes;
// too little room is an error that still reports the size. Strings are written without a
// terminator; a string list as each string followed by a NUL.
OrtStatus* ReadOpAttr(const OrtOpAttr* a, OrtOpAttrType type, void* data, size_t len, size_t* out) {
  if (!a || !out) return NullArgument("ReadOpAttr");
  const AttrView v = ViewOf(*a);
  auto fits = [&](size_t need, const char* what) -> OrtStatus* {
    *out = need;
    if (len < need || (need > 0 && data == nullptr))
      return NewOrtStatus(ORT_INVALID_ARGUMENT,
                          std::string("ReadOpAttr: not enough room for ") + what);
    return nullptr;
  };
  switch (type) {
    case ORT_OP_ATTR_INT: {
      if (OrtStatus* s = fits(sizeof(int64_t), "an int64")) return s;
      if (!v.has_i) return NewOrtStatus(ORT_INVALID_ARGUMENT, "ReadOpAttr: not an int attribute");
      std::memcpy(data, &v.i, sizeof v.i);
      return nullptr;
    }
    case ORT_OP_ATTR_FLOAT: {
      if (OrtStatus* s = fits(sizeof(float), "a float")) return s;
      if (!v.has_f) return NewOrtStatus(ORT_INVALID_ARGUMENT, "ReadOpAttr: not a float attribute");
      std::memcpy(data, &v.f, sizeof v.f);
      return nullptr;
    }
    case ORT_OP_ATTR_INTS: {
      if (OrtStatus* s = fits(v.ints->size() * sizeof(int64_t), "the int64 list")) return s;
      if (!v.ints->empty()) std::memcpy(data, v.ints->data(), v.ints->size() * sizeof(int64_t));
      return nullptr;
    }
    case ORT_OP_ATTR_FLOATS: {
      if (OrtStatus* s = fits(v.floats->size() * sizeof(float), "the float list")) return s;
      if (!v.floats->empty()) std::memcpy(data, v.floats->data(), v.floats->size() * sizeof(float));
      return nullptr;
    }
    case ORT_OP_ATTR_STRING: {
      if (OrtStatus* s = fits(v.s->size(), "the string")) return s;
      if (!v.s->empty()) std::memcpy(data, v.s->data(), v.s->size());
      return nullptr;
    }
    case ORT_OP_ATTR_STRINGS: {
      size_t need = 0;
      for (const std::string& s : *v.strings) need += s.size() + 1;
      if (OrtStatus* s = fits(need, "the string list")) return s;
      char* p = static_cast<char*>(data);
      for (const std::string& s : *v.strings) {
        std::memcpy(p, s.data(), s.size());
        p += s.size();
        *p++ = '\0';
      }
      return nullptr;
    }
    default:
      *out = 0;
      return NewOrtStatus(ORT_INVALID_ARGUMENT,
                          "ReadOpAttr: graphs and tensors are read with Node_GetSubgraphs and "
                          "OpAttr_GetTensorAttributeAsOrtValue");
  }
}

// Attributes a plugin makes (for the EPContext nodes it returns from Compile).
OrtStatus* CreateOpAttr(const char* name, const void* data, int len, OrtOpAttrType type,
                        OrtOpAttr** out) {
  if (!name || !out || len < 0 || (len > 0 && !data)) return NullArgument("CreateOpAttr");
  return Guard("CreateOpAttr", [&]() -> OrtStatus* {
    auto a = std::make_unique<OrtOpAttr>();
    a->name = name;
    a->type = type;
    const size_t n = static_cast<size_t>(len);
    switch (type) {
      case ORT_OP_ATTR_INT:
        a->i = *static_cast<const int64_t*>(data);
        break;
      case ORT_OP_ATTR_FLOAT:
        a->f = *static_cast<const float*>(data);
        break;
      case ORT_OP_ATTR_INTS:
        a->ints.assign(static_cast<const int64_t*>(data), static_cast<const int64_t*>(data) + n);
        break;
      case ORT_OP_ATTR_FLOATS:
        a->floats.assign(static_cast<const float*>(data), static_cast<const float*>(data) + n);
        break;
      case ORT_OP_ATTR_STRING:
        a->s.assign(static_cast<const char*>(data), n);
        break;
      case ORT_OP_ATTR_STRINGS:
        for (size_t i = 0; i < n; ++i)
          a->strings.emplace_back(static_cast<const char* const*>(data)[i]);
        break;
      default:
        return NewOrtStatus(ORT_INVALID_ARGUMENT, "CreateOpAttr: unsupported attribute type");
    }
    *out = a.release();
    return nullptr;
  });
}

void ReleaseOpAttr(OrtOpAttr* a) {
  if (a != nullptr && a->ir == nullptr) delete a;  // the model's attributes are the host's
}

// ---- Model metadata ---------------------------------------------------------------------------
// The graph view knows its graph, not the model file around it: the producer, domain,
// description and custom entries read empty (nxrt keeps them on the model, which plugins do not
// see yet) and the version 0.

}  // namespace
}  // namespace nxrt::ort

struct OrtModelMetadata {
  std::string graph_name;
  std::map<std::string, std::string> custom;
};

namespace nxrt::ort {
namespace {

OrtStatus* GraphGetModelMetadata(const OrtGraph* g, OrtModelMetadata** out) {
  if (!g || !out) return NullArgument("Graph_GetModelMetadata");
  return Guard("Graph_GetModelMetadata", [&]() -> OrtStatus* {
    auto m = std::make_unique<OrtModelMetadata>();
    m->graph_name = g->name;
    *out = m.release();
    return nullptr;
  });
}
void ReleaseModelMetadata(OrtModelMetadata* m) { delete m; }

// A copy of `s` in memory from `allocator`, as the metadata getters return strings.
OrtStatus* AllocatedString(OrtAllocator* allocator, const std::string& s, char** out) {
  if (!allocator || !allocator->Alloc || !out) return NullArgument("ModelMetadata");
  auto* p = static_cast<char*>(allocator->Alloc(allocator, s.size() + 1));
  if (p == nullptr) return NewOrtStatus(ORT_FAIL, "ModelMetadata: out of memory");
  std::memcpy(p, s.c_str(), s.size() + 1);
  *out = p;
  return nullptr;
}

#define NXRT_ORT_METADATA_STRING(Name, expr)                                                  \
  OrtStatus* ModelMetadataGet##Name(const OrtModelMetadata* m, OrtAllocator* a, char** out) { \
    if (!m) return NullArgument("ModelMetadataGet" #Name);                                    \
    return AllocatedString(a, expr, out);                                                     \
  }
NXRT_ORT_METADATA_STRING(ProducerName, std::string())
NXRT_ORT_METADATA_STRING(GraphName, m->graph_name)
NXRT_ORT_METADATA_STRING(Domain, std::string())
NXRT_ORT_METADATA_STRING(Description, std::string())
NXRT_ORT_METADATA_STRING(GraphDescription, std::string())
#undef NXRT_ORT_METADATA_STRING

OrtStatus* ModelMetadataLookupCustomMetadataMap(const OrtModelMetadata* m, OrtAllocator* a,
                                                const char* key, char** out) {
  if (!m || !key || !out) return NullArgument("ModelMetadataLookupCustomMetadataMap");
  auto it = m->custom.find(key);
  if (it == m->custom.end()) {
    *out = nullptr;
    return nullptr;
  }
  return AllocatedString(a, it->second, out);
}
OrtStatus* ModelMetadataGetCustomMetadataMapKeys(const OrtModelMetadata* m, OrtAllocator* a,
                                                 char*** keys, int64_t* count) {
  if (!m || !keys || !count) return NullArgument("ModelMetadataGetCustomMetadataMapKeys");
  *keys = nullptr;
  *count = 0;
  if (m->custom.empty()) return nullptr;
  if (!a || !a->Alloc) return NullArgument("ModelMetadataGetCustomMetadataMapKeys");
  auto** array = static_cast<char**>(a->Alloc(a, m->custom.size() * sizeof(char*)));
  if (array == nullptr) return NewOrtStatus(ORT_FAIL, "ModelMetadata: out of memory");
  size_t i = 0;
  for (const auto& [k, v] : m->custom) {
    if (OrtStatus* s = AllocatedString(a, k, &array[i])) return s;
    ++i;
  }
  *keys = array;
  *count = static_cast<int64_t>(i);
  return nullptr;
}
OrtStatus* ModelMetadataGetVersion(const OrtModelMetadata* m, int64_t* out) {
  if (!m || !out) return NullArgument("ModelMetadataGetVersion");
  *out = 0;
  return nullptr;
}

// No initializer is external here (ValueInfo_GetExternalInitializerInfo), so there is never one
// to release; NULL is accepted like onnxruntime does.
void ReleaseExternalInitializerInfo(void*) {}

// ---- Type infos ---------------------------------------------------------------------------------

OrtStatus* CastTypeInfoToTensorInfo(const OrtTypeInfo* t, const OrtTensorTypeAndShapeInfo** out) {
  if (!t || !out) return NullArgument("CastTypeInfoToTensorInfo");
  *out = t->type == ONNX_TYPE_TENSOR ? &t->tensor : nullptr;
  return nullptr;
}
OrtStatus* GetOnnxTypeFromTypeInfo(const OrtTypeInfo* t, ONNXType* out) {
  if (!t || !out) return NullArgument("GetOnnxTypeFromTypeInfo");
  *out = t->type;
  return nullptr;
}
void ReleaseTypeInfo(OrtTypeInfo* t) { delete t; }

OrtStatus* GetTensorElementType(const OrtTensorTypeAndShapeInfo* t, int* out) {
  if (!t || !out) return NullArgument("GetTensorElementType");
  *out = t->element_type;
  return nullptr;
}
OrtStatus* GetDimensionsCount(const OrtTensorTypeAndShapeInfo* t, size_t* out) {
  if (!t || !out) return NullArgument("GetDimensionsCount");
  *out = t->dims.size();
  return nullptr;
}
OrtStatus* GetDimensions(const OrtTensorTypeAndShapeInfo* t, int64_t* out, size_t count) {
  if (!t || (!out && count > 0)) return NullArgument("GetDimensions");
  for (size_t i = 0; i < count && i < t->dims.size(); ++i) out[i] = t->dims[i];
  return nullptr;
}
OrtStatus* GetSymbolicDimensions(const OrtTensorTypeAndShapeInfo* t, const char** out,
                                 size_t count) {
  if (!t || (!out && count > 0)) return NullArgument("GetSymbolicDimensions");
  for (size_t i = 0; i < count && i < t->dim_param_ptrs.size(); ++i) out[i] = t->dim_param_ptrs[i];
  return nullptr;
}
// The element count; a dimension that is not known makes it unknown (SIZE_MAX here, as -1 in
// onnxruntime's signed reading).
OrtStatus* GetTensorShapeElementCount(const OrtTensorTypeAndShapeInfo* t, size_t* out) {
  if (!t || !out) return NullArgument("GetTensorShapeElementCount");
  size_t count = 1;
  for (int64_t d : t->dims) {
    if (d < 0) {
      *out = SIZE_MAX;
      return nullptr;
    }
    count *= static_cast<size_t>(d);
  }
  *out = count;
  return nullptr;
}
void ReleaseTensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo* t) { delete t; }
// Level 24: tells a value whose shape nxrt does not know apart from a scalar.
bool TensorTypeAndShapeHasShape(const OrtTensorTypeAndShapeInfo* t) { return t && t->has_shape; }

}  // namespace

void InstallGraphApi(OrtApi& api) {
  api.GetValueInfoName = Slot(&GetValueInfoName);
  api.GetValueInfoTypeInfo = Slot(&GetValueInfoTypeInfo);
  api.ValueInfo_GetValueProducer = Slot(&ValueInfoGetValueProducer);
  api.ValueInfo_GetValueNumConsumers = Slot(&ValueInfoGetValueNumConsumers);
  api.ValueInfo_GetValueConsumers = Slot(&ValueInfoGetValueConsumers);
  api.ValueInfo_GetInitializerValue = Slot(&ValueInfoGetInitializerValue);
  api.ValueInfo_GetExternalInitializerInfo = Slot(&ValueInfoGetExternalInitializerInfo);
  api.ValueInfo_IsRequiredGraphInput = Slot(&ValueInfoIsRequiredGraphInput);
  api.ValueInfo_IsOptionalGraphInput = Slot(&ValueInfoIsOptionalGraphInput);
  api.ValueInfo_IsGraphOutput = Slot(&ValueInfoIsGraphOutput);
  api.ValueInfo_IsConstantInitializer = Slot(&ValueInfoIsConstantInitializer);
  api.ValueInfo_IsFromOuterScope = Slot(&ValueInfoIsFromOuterScope);
  api.Graph_GetName = Slot(&GraphGetName);
  api.Graph_GetModelPath = Slot(&GraphGetModelPath);
  api.Graph_GetOnnxIRVersion = Slot(&GraphGetOnnxIRVersion);
  api.Graph_GetNumOperatorSets = Slot(&GraphGetNumOperatorSets);
  api.Graph_GetOperatorSets = Slot(&GraphGetOperatorSets);
  api.Graph_GetNumInputs = Slot(&GraphGetNumInputs);
  api.Graph_GetInputs = Slot(&GraphGetInputs);
  api.Graph_GetNumOutputs = Slot(&GraphGetNumOutputs);
  api.Graph_GetOutputs = Slot(&GraphGetOutputs);
  api.Graph_GetNumInitializers = Slot(&GraphGetNumInitializers);
  api.Graph_GetInitializers = Slot(&GraphGetInitializers);
  api.Graph_GetNumNodes = Slot(&GraphGetNumNodes);
  api.Graph_GetNodes = Slot(&GraphGetNodes);
  api.Graph_GetParentNode = Slot(&GraphGetParentNode);
  api.Graph_GetGraphView = Slot(&GraphGetGraphView);
  api.ReleaseGraph = Slot(&ReleaseGraph);
  api.Node_GetId = Slot(&NodeGetId);
  api.Node_GetName = Slot(&NodeGetName);
  api.Node_GetOperatorType = Slot(&NodeGetOperatorType);
  api.Node_GetDomain = Slot(&NodeGetDomain);
  api.Node_GetSinceVersion = Slot(&NodeGetSinceVersion);
  api.Node_GetNumInputs = Slot(&NodeGetNumInputs);
  api.Node_GetInputs = Slot(&NodeGetInputs);
  api.Node_GetNumOutputs = Slot(&NodeGetNumOutputs);
  api.Node_GetOutputs = Slot(&NodeGetOutputs);
  api.Node_GetNumImplicitInputs = Slot(&NodeGetNumImplicitInputs);
  api.Node_GetImplicitInputs = Slot(&NodeGetImplicitInputs);
  api.Node_GetNumAttributes = Slot(&NodeGetNumAttributes);
  api.Node_GetAttributes = Slot(&NodeGetAttributes);
  api.Node_GetAttributeByName = Slot(&NodeGetAttributeByName);
  api.Node_GetNumSubgraphs = Slot(&NodeGetNumSubgraphs);
  api.Node_GetSubgraphs = Slot(&NodeGetSubgraphs);
  api.Node_GetGraph = Slot(&NodeGetGraph);
  api.Node_GetEpName = Slot(&NodeGetEpName);
  api.OpAttr_GetType = Slot(&OpAttrGetType);
  api.OpAttr_GetName = Slot(&OpAttrGetName);
  api.ReadOpAttr = Slot(&ReadOpAttr);
  api.CreateOpAttr = Slot(&CreateOpAttr);
  api.ReleaseOpAttr = Slot(&ReleaseOpAttr);
  api.CastTypeInfoToTensorInfo = Slot(&CastTypeInfoToTensorInfo);
  api.GetOnnxTypeFromTypeInfo = Slot(&GetOnnxTypeFromTypeInfo);
  api.ReleaseTypeInfo = Slot(&ReleaseTypeInfo);
  api.GetTensorElementType = Slot(&GetTensorElementType);
  api.GetDimensionsCount = Slot(&GetDimensionsCount);
  api.GetDimensions = Slot(&GetDimensions);
  api.GetSymbolicDimensions = Slot(&GetSymbolicDimensions);
  api.GetTensorShapeElementCount = Slot(&GetTensorShapeElementCount);
  api.ReleaseTensorTypeAndShapeInfo = Slot(&ReleaseTensorTypeAndShapeInfo);
  api.TensorTypeAndShape_HasShape = Slot(&TensorTypeAndShapeHasShape);
  api.Graph_GetModelMetadata = Slot(&GraphGetModelMetadata);
  api.ReleaseModelMetadata = Slot(&ReleaseModelMetadata);
  api.ModelMetadataGetProducerName = Slot(&ModelMetadataGetProducerName);
  api.ModelMetadataGetGraphName = Slot(&ModelMetadataGetGraphName);
  api.ModelMetadataGetDomain = Slot(&ModelMetadataGetDomain);
  api.ModelMetadataGetDescription = Slot(&ModelMetadataGetDescription);
  api.ModelMetadataGetGraphDescription = Slot(&ModelMetadataGetGraphDescription);
  api.ModelMetadataLookupCustomMetadataMap = Slot(&ModelMetadataLookupCustomMetadataMap);
  api.ModelMetadataGetCustomMetadataMapKeys = Slot(&ModelMetadataGetCustomMetadataMapKeys);
  api.ModelMetadataGetVersion = Slot(&ModelMetadataGetVersion);
  api.ReleaseExternalInitializerInfo = Slot(&ReleaseExternalInitializerInfo);
}

}  // namespace nxrt::ort
