#include "ort_plugins/ort_graph_view.h"

#include "graph/op_since_version.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt::ort {
namespace {

OrtOpAttrType AttributeType(int nx_type) {
  switch (nx_type) {
    case NX_ATTR_INT:
      return ORT_OP_ATTR_INT;
    case NX_ATTR_INTS:
      return ORT_OP_ATTR_INTS;
    case NX_ATTR_FLOAT:
      return ORT_OP_ATTR_FLOAT;
    case NX_ATTR_FLOATS:
      return ORT_OP_ATTR_FLOATS;
    case NX_ATTR_STRING:
      return ORT_OP_ATTR_STRING;
    case NX_ATTR_STRINGS:
      return ORT_OP_ATTR_STRINGS;
    case NX_ATTR_GRAPH:
      return ORT_OP_ATTR_GRAPH;
    case NX_ATTR_TENSOR:
      return ORT_OP_ATTR_TENSOR;
    default:  // tensors, graphs, type protos: the interface has no type for them
      return ORT_OP_ATTR_UNDEFINED;
  }
}

// Builds the view of one graph; subgraph views are built for nodes that carry graphs.
class ViewBuilder {
 public:
  ViewBuilder(OrtGraph& view, const Graph& g) : view_(view), g_(g) {
    view_.values.resize(g.values.size());
  }

  const OrtValueInfo* Info(int v) {
    if (v < 0 || static_cast<size_t>(v) >= g_.values.size()) return nullptr;
    std::unique_ptr<OrtValueInfo>& slot = view_.values[static_cast<size_t>(v)];
    if (!slot) {
      const ValueDef& d = g_.value(v);
      slot = std::make_unique<OrtValueInfo>();
      slot->graph = &view_;
      slot->index = v;
      slot->name = d.name;
      slot->type = MakeTypeInfo(d.type);
      slot->initializer = d.initializer.get();
      slot->required_input = d.is_graph_input && d.initializer == nullptr;
      slot->graph_output = d.is_graph_output;
      slot->outer_scope = d.is_outer_scope;
    }
    return slot.get();
  }

  void AddNode(const Node& n) {
    auto node = std::make_unique<OrtNode>();
    node->graph = &view_;
    node->ir = &n;
    node->id = static_cast<size_t>(n.index);
    node->name = n.name;
    node->op_type = n.op_type;
    node->domain = n.domain;
    node->since_version = OpSinceVersion(n.domain, n.op_type, n.opset);
    for (int v : n.inputs) node->inputs.push_back(Info(v));
    for (int v : n.outputs) node->outputs.push_back(Info(v));
    for (int v : n.implicit_inputs) node->implicit_inputs.push_back(Info(v));
    for (const Attribute& a : n.attributes) {
      auto attr = std::make_unique<OrtOpAttr>();
      attr->ir = &a;
      attr->name = a.name;
      attr->type = AttributeType(a.type);
      node->attributes.push_back(std::move(attr));
      auto add_subgraph = [&](const std::shared_ptr<Graph>& sub) {
        if (!sub) return;
        view_.subgraphs.push_back(MakeGraphView(*sub, view_.model_path, node.get()));
        node->subgraphs.push_back(view_.subgraphs.back().get());
        node->subgraph_attribute_names.push_back(a.name.c_str());
      };
      add_subgraph(a.graph);
      for (const auto& sub : a.graphs) add_subgraph(sub);
    }
    view_.node_list.push_back(node.get());
    view_.node_set.insert(node.get());
    view_.nodes.push_back(std::move(node));
  }

 private:
  OrtGraph& view_;
  const Graph& g_;
};

}  // namespace

OrtTypeInfo MakeTypeInfo(const TypeInfo& type) {
  OrtTypeInfo info;
  OrtTensorTypeAndShapeInfo tensor;
  tensor.element_type = static_cast<int>(type.elem_type);
  tensor.has_shape = type.has_shape;
  if (type.has_shape) {
    tensor.dims = type.dims;
    tensor.dim_params.resize(type.dims.size());
    for (size_t i = 0; i < type.dim_params.size() && i < type.dims.size(); ++i)
      tensor.dim_params[i] = type.dim_params[i];
  }
  for (const std::string& p : tensor.dim_params) tensor.dim_param_ptrs.push_back(p.c_str());
  if (type.kind == NX_VALUE_TENSOR) {
    info.type = ONNX_TYPE_TENSOR;
    info.tensor = std::move(tensor);
  } else {
    info.type = type.kind == NX_VALUE_SEQUENCE ? ONNX_TYPE_SEQUENCE : ONNX_TYPE_OPTIONAL;
    info.element = std::make_unique<OrtTypeInfo>();
    info.element->type = ONNX_TYPE_TENSOR;
    info.element->tensor = std::move(tensor);
  }
  return info;
}

OrtTensorTypeAndShapeInfo MakeTensorInfo(const Value& value) {
  OrtTensorTypeAndShapeInfo info;
  info.element_type = static_cast<int>(value.type);
  info.has_shape = true;
  info.dims = value.dims;
  info.dim_params.assign(value.dims.size(), "");
  for (const std::string& p : info.dim_params) info.dim_param_ptrs.push_back(p.c_str());
  return info;
}

std::unique_ptr<OrtGraph> MakeGraphView(const Graph& graph, const std::string& model_path,
                                        const OrtNode* parent_node) {
  auto view = std::make_unique<OrtGraph>();
  view->ir = &graph;
  view->parent_node = parent_node;
  view->name = graph.name;
  view->model_path = model_path;
  for (const auto& [domain, version] : graph.opsets) {
    view->opset_domains.push_back(domain);
    view->opset_versions.push_back(version);
  }
  ViewBuilder build(*view, graph);
  for (int v : graph.inputs) {
    if (graph.value(v).initializer == nullptr) view->inputs.push_back(build.Info(v));
  }
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const ValueDef& d = graph.values[v];
    if (d.initializer != nullptr && !d.is_outer_scope)
      view->initializers.push_back(build.Info(static_cast<int>(v)));
  }
  for (int v : graph.outputs) view->outputs.push_back(build.Info(v));
  for (const Node& n : graph.nodes) build.AddNode(n);
  return view;
}

std::unique_ptr<OrtNode> MakeFusedNode(const OrtGraph& group_view, const std::string& name,
                                       const std::string& ep_name,
                                       const std::vector<const OrtValueInfo*>& inputs,
                                       const std::vector<const OrtValueInfo*>& outputs) {
  auto node = std::make_unique<OrtNode>();
  node->graph = &group_view;
  node->name = name;
  node->op_type = name;
  node->domain = "com.nxrt.fused";
  node->ep_name = ep_name;
  node->inputs = inputs;
  node->outputs = outputs;
  return node;
}

AttrView ViewOf(const OrtOpAttr& a) {
  AttrView v;
  if (a.ir != nullptr) {
    v.has_i = a.ir->type == NX_ATTR_INT;
    v.has_f = a.ir->type == NX_ATTR_FLOAT;
    v.i = a.ir->i;
    v.f = a.ir->f;
    v.s = &a.ir->s;
    v.ints = &a.ir->ints;
    v.floats = &a.ir->floats;
    v.strings = &a.ir->strings;
  } else {
    v.has_i = a.type == ORT_OP_ATTR_INT;
    v.has_f = a.type == ORT_OP_ATTR_FLOAT;
    v.i = a.i;
    v.f = a.f;
    v.s = &a.s;
    v.ints = &a.ints;
    v.floats = &a.floats;
    v.strings = &a.strings;
  }
  return v;
}

}  // namespace nxrt::ort
