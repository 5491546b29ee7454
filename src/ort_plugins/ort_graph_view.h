// The read-only graph an onnxruntime plugin EP sees (OrtGraph, OrtNode, OrtValueInfo, OrtOpAttr,
// OrtTypeInfo): built over nxrt's IR for one GetCapability or Compile call and dropped after it,
// so every pointer the plugin receives stays valid for the call, as onnxruntime promises.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "ort_plugins/ort_abi.h"

typedef enum ONNXType {
  ONNX_TYPE_UNKNOWN = 0,
  ONNX_TYPE_TENSOR = 1,
  ONNX_TYPE_SEQUENCE = 2,
  ONNX_TYPE_MAP = 3,
  ONNX_TYPE_OPAQUE = 4,
  ONNX_TYPE_SPARSETENSOR = 5,
  ONNX_TYPE_OPTIONAL = 6,
} ONNXType;

typedef enum OrtOpAttrType {
  ORT_OP_ATTR_UNDEFINED = 0,
  ORT_OP_ATTR_INT = 1,
  ORT_OP_ATTR_INTS = 2,
  ORT_OP_ATTR_FLOAT = 3,
  ORT_OP_ATTR_FLOATS = 4,
  ORT_OP_ATTR_STRING = 5,
  ORT_OP_ATTR_STRINGS = 6,
  ORT_OP_ATTR_GRAPH = 7,
  ORT_OP_ATTR_TENSOR = 8,
} OrtOpAttrType;

// Element types use ONNX's numbering, as nxrt's NxElementType does.
struct OrtTensorTypeAndShapeInfo {
  int element_type = 0;  // ONNXTensorElementDataType
  bool has_shape = false;
  std::vector<int64_t> dims;            // -1 for unknown and symbolic dimensions
  std::vector<std::string> dim_params;  // "" where a dimension has no name
  std::vector<const char*> dim_param_ptrs;
};

struct OrtTypeInfo {
  ONNXType type = ONNX_TYPE_UNKNOWN;
  OrtTensorTypeAndShapeInfo tensor;      // for tensors
  std::unique_ptr<OrtTypeInfo> element;  // for sequences and optionals
};

struct OrtValueInfo {
  const OrtGraph* graph = nullptr;
  int index = -1;  // in graph->ir
  std::string name;
  OrtTypeInfo type;
  const nxrt::Value* initializer = nullptr;
  bool required_input = false;
  bool graph_output = false;
  bool outer_scope = false;
};

struct OrtOpAttr {
  const nxrt::Attribute* ir = nullptr;  // null for attributes a plugin made (CreateOpAttr)
  std::string name;
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  // Owned contents of a plugin-made attribute.
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
};

struct OrtNode {
  const OrtGraph* graph = nullptr;
  const nxrt::Node* ir = nullptr;  // null for a fused node and a node a plugin made
  size_t id = 0;
  std::string name;
  std::string op_type;
  std::string domain;
  int since_version = 1;
  std::string ep_name;
  std::vector<const OrtValueInfo*> inputs;   // null for omitted optional inputs
  std::vector<const OrtValueInfo*> outputs;  // null for omitted optional outputs
  std::vector<const OrtValueInfo*> implicit_inputs;
  std::vector<std::unique_ptr<OrtOpAttr>> attributes;
  std::vector<const OrtGraph*> subgraphs;
  std::vector<const char*> subgraph_attribute_names;
  // A node a plugin made (OrtModelEditorApi::CreateNode): no graph, values named only.
  bool plugin_made = false;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
};

struct OrtGraph {
  const nxrt::Graph* ir = nullptr;
  const OrtNode* parent_node = nullptr;
  std::string name;
  std::string model_path;
  int64_t ir_version = 10;
  std::vector<std::string> opset_domains;
  std::vector<int64_t> opset_versions;
  // One per IR value that this view uses (null for the others).
  std::vector<std::unique_ptr<OrtValueInfo>> values;
  std::vector<const OrtValueInfo*> inputs;
  std::vector<const OrtValueInfo*> outputs;
  std::vector<const OrtValueInfo*> initializers;
  std::vector<std::unique_ptr<OrtNode>> nodes;
  std::vector<const OrtNode*> node_list;
  std::vector<std::unique_ptr<OrtGraph>> subgraphs;  // of this graph's nodes
  // A view a plugin asked for (Graph_GetGraphView) keeps its IR here.
  std::unique_ptr<nxrt::Graph> owned_ir;
  // The nodes above as a set: a node pointer a plugin hands back is checked against it before
  // it is read (a wild pointer is an error, not a crash).
  std::unordered_set<const OrtNode*> node_set;
  bool HasNode(const OrtNode* n) const { return n != nullptr && node_set.count(n) != 0; }

  const OrtValueInfo* Value(int index) const {
    return index >= 0 && static_cast<size_t>(index) < values.size() ? values[index].get() : nullptr;
  }
};

namespace nxrt::ort {

// A view of `graph` and its subgraphs. `model_path` is what Graph_GetModelPath returns ("" for a
// model read from memory). Initializers (values with constant data) are listed as initializers,
// not as inputs.
std::unique_ptr<OrtGraph> MakeGraphView(const Graph& graph, const std::string& model_path,
                                        const OrtNode* parent_node = nullptr);

// The node a fused group becomes: `inputs` / `outputs` are value infos of `group_view`.
std::unique_ptr<OrtNode> MakeFusedNode(const OrtGraph& group_view, const std::string& name,
                                       const std::string& ep_name,
                                       const std::vector<const OrtValueInfo*>& inputs,
                                       const std::vector<const OrtValueInfo*>& outputs);

// An attribute's contents, whether it is the model's (ir) or a plugin's (CreateOpAttr).
struct AttrView {
  bool has_i = false, has_f = false;
  int64_t i = 0;
  float f = 0;
  const std::string* s = nullptr;
  const std::vector<int64_t>* ints = nullptr;
  const std::vector<float>* floats = nullptr;
  const std::vector<std::string>* strings = nullptr;
};
AttrView ViewOf(const OrtOpAttr& a);

// The type info of a value as nxrt knows it statically.
OrtTypeInfo MakeTypeInfo(const TypeInfo& type);
// The type and shape of a tensor value.
OrtTensorTypeAndShapeInfo MakeTensorInfo(const Value& value);

}  // namespace nxrt::ort
