// The IR: a graph of nodes and values, with initializers and nested subgraphs. Built by the model
// loader, read by the partitioner (through the plugin graph view) and by the session.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/value.h"

namespace nxrt {

class Graph;

// What is known statically about a value.
struct TypeInfo {
  NxValueKind kind = NX_VALUE_TENSOR;
  NxElementType elem_type = NX_TYPE_UNDEFINED;  // tensor type, or that of the sequence's tensors
  bool has_shape = false;
  std::vector<int64_t> dims;            // -1 for unknown or symbolic
  std::vector<std::string> dim_params;  // symbolic names ("" when the dim is fixed/unknown)
};

struct ValueDef {
  std::string name;
  TypeInfo type;
  int producer = -1;           // index of the producing node, -1 if none
  std::vector<int> consumers;  // node indices (one entry per use)
  ValuePtr initializer;        // constant data, if this is an initializer
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool is_outer_scope = false;  // read from an enclosing graph (subgraphs only)
};

struct Attribute {
  std::string name;
  int type = 0;  // NxAttributeType
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  ValuePtr tensor;
  std::vector<ValuePtr> tensors;
  std::shared_ptr<Graph> graph;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo type_info;                // TYPE_PROTO (Optional's `type`)
  std::vector<TypeInfo> type_infos;  // TYPE_PROTOS
};

struct Node {
  Graph* owner = nullptr;
  int index = -1;
  std::string name;
  std::string op_type;
  std::string domain;        // "" for ai.onnx
  int opset = -1;            // imported opset version of `domain`
  std::vector<int> inputs;   // value indices; -1 for an omitted optional input
  std::vector<int> outputs;  // value indices; -1 for an omitted optional output
  // Values of this graph (or outer ones, then marked is_outer_scope here) that the node's
  // subgraphs read: control flow needs them although the node does not list them as inputs.
  std::vector<int> implicit_inputs;
  std::vector<Attribute> attributes;
  int assigned_ep = -1;  // placement: index of the session's EP that runs it (-1 = none yet)
  // placement: the hardware device of that EP it runs on (ABI 12), null = the EP's first device
  const NxHardwareDevice* assigned_device = nullptr;

  const Attribute* FindAttribute(const std::string& attr_name) const;
  // "Conv node 'conv1'" (or "Conv node #3" when unnamed) for messages.
  std::string Describe() const;
};

class Graph {
 public:
  std::string name;
  std::string source;                 // file name (or "<buffer>") for messages
  std::map<std::string, int> opsets;  // domain ("" = ai.onnx) -> version
  std::vector<Node> nodes;            // topologically sorted after Finalize()
  std::vector<ValueDef> values;
  std::vector<int> inputs;  // graph inputs that are not initializers
  std::vector<int> outputs;
  const Graph* parent = nullptr;  // enclosing graph of a subgraph

  // Index of the value named `value_name`, creating it if needed.
  int GetOrAddValue(const std::string& value_name);
  // Index of the value named `value_name`, or -1 (no string is made for the lookup).
  int FindValue(std::string_view value_name) const;
  ValueDef& value(int index) { return values[static_cast<size_t>(index)]; }
  const ValueDef& value(int index) const { return values[static_cast<size_t>(index)]; }

  // Links producers/consumers, checks the graph (dangling inputs, duplicate outputs, cycles) and
  // sorts nodes topologically. Throws NX_INVALID_MODEL naming the node and the reason.
  void Finalize();

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> value_index_;
};

}  // namespace nxrt
