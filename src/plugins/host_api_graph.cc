// The host table's graph part: read-only views of graphs, nodes, value infos and attributes
// (handles are the IR's own structs, cast), and the capability calls an EP claims nodes with.
#include <algorithm>
#include <string>

#include "base/error.h"
#include "graph/op_since_version.h"
#include "plugins/host_api_parts.h"
#include "plugins/host_objects.h"

namespace nxrt::host_api {
namespace {

// ---- Graph view ----
size_t GraphGetNodeCount(const NxGraph* g) { return G(g)->nodes.size(); }
const NxNode* GraphGetNode(const NxGraph* g, size_t i) {
  return i < G(g)->nodes.size() ? reinterpret_cast<const NxNode*>(&G(g)->nodes[i]) : nullptr;
}
size_t GraphGetInputCount(const NxGraph* g) { return G(g)->inputs.size(); }
const NxValueInfo* GraphGetInput(const NxGraph* g, size_t i) {
  return i < G(g)->inputs.size() ? VI(G(g), G(g)->inputs[i]) : nullptr;
}
size_t GraphGetOutputCount(const NxGraph* g) { return G(g)->outputs.size(); }
const NxValueInfo* GraphGetOutput(const NxGraph* g, size_t i) {
  return i < G(g)->outputs.size() ? VI(G(g), G(g)->outputs[i]) : nullptr;
}
int32_t GraphGetOpsetVersion(const NxGraph* g, const char* domain) {
  std::string d = domain ? domain : "";
  if (d == "ai.onnx") d.clear();
  auto it = G(g)->opsets.find(d);
  return it == G(g)->opsets.end() ? -1 : it->second;
}

const char* NodeGetName(const NxNode* n) { return N(n)->name.c_str(); }
const char* NodeGetOpType(const NxNode* n) { return N(n)->op_type.c_str(); }
const char* NodeGetDomain(const NxNode* n) { return N(n)->domain.c_str(); }
int32_t NodeGetOpsetVersion(const NxNode* n) { return N(n)->opset; }
int32_t NodeGetSinceVersion(const NxNode* n) {
  return OpSinceVersion(N(n)->domain, N(n)->op_type, N(n)->opset);
}
size_t NodeGetInputCount(const NxNode* n) { return N(n)->inputs.size(); }
const NxValueInfo* NodeGetInput(const NxNode* n, size_t i) {
  return i < N(n)->inputs.size() ? VI(N(n)->owner, N(n)->inputs[i]) : nullptr;
}
size_t NodeGetOutputCount(const NxNode* n) { return N(n)->outputs.size(); }
const NxValueInfo* NodeGetOutput(const NxNode* n, size_t i) {
  return i < N(n)->outputs.size() ? VI(N(n)->owner, N(n)->outputs[i]) : nullptr;
}
size_t NodeGetAttributeCount(const NxNode* n) { return N(n)->attributes.size(); }
const NxAttribute* NodeGetAttributeAt(const NxNode* n, size_t i) {
  return i < N(n)->attributes.size() ? reinterpret_cast<const NxAttribute*>(&N(n)->attributes[i])
                                     : nullptr;
}
const NxAttribute* NodeGetAttribute(const NxNode* n, const char* name) {
  if (!name) return nullptr;
  return reinterpret_cast<const NxAttribute*>(N(n)->FindAttribute(name));
}

const char* ValueInfoGetName(const NxValueInfo* v) { return V(v)->name.c_str(); }
NxValueKind ValueInfoGetKind(const NxValueInfo* v) { return V(v)->type.kind; }
NxElementType ValueInfoGetElementType(const NxValueInfo* v) { return V(v)->type.elem_type; }
bool ValueInfoGetShape(const NxValueInfo* v, const int64_t** dims, size_t* rank) {
  const TypeInfo& t = V(v)->type;
  if (!t.has_shape) return false;
  if (dims) *dims = t.dims.data();
  if (rank) *rank = t.dims.size();
  return true;
}
const NxValue* ValueInfoGetConstant(const NxValueInfo* v) { return V(v)->initializer.get(); }

const char* AttributeGetName(const NxAttribute* a) { return A(a)->name.c_str(); }
NxAttributeType AttributeGetType(const NxAttribute* a) {
  return static_cast<NxAttributeType>(A(a)->type);
}
int64_t AttributeGetInt(const NxAttribute* a) { return A(a)->i; }
float AttributeGetFloat(const NxAttribute* a) { return A(a)->f; }
const char* AttributeGetString(const NxAttribute* a, size_t* size) {
  if (size) *size = A(a)->s.size();
  return A(a)->s.data();
}
const int64_t* AttributeGetInts(const NxAttribute* a, size_t* count) {
  if (count) *count = A(a)->ints.size();
  return A(a)->ints.data();
}
const float* AttributeGetFloats(const NxAttribute* a, size_t* count) {
  if (count) *count = A(a)->floats.size();
  return A(a)->floats.data();
}
size_t AttributeGetStringCount(const NxAttribute* a) { return A(a)->strings.size(); }
const char* AttributeGetStringAt(const NxAttribute* a, size_t i, size_t* size) {
  if (i >= A(a)->strings.size()) {
    if (size) *size = 0;
    return nullptr;
  }
  if (size) *size = A(a)->strings[i].size();
  return A(a)->strings[i].data();
}
const NxValue* AttributeGetTensor(const NxAttribute* a) { return A(a)->tensor.get(); }
const NxGraph* AttributeGetGraph(const NxAttribute* a) {
  return reinterpret_cast<const NxGraph*>(A(a)->graph.get());
}

size_t AttributeGetTensorCount(const NxAttribute* a) { return a ? A(a)->tensors.size() : 0; }
const NxValue* AttributeGetTensorAt(const NxAttribute* a, size_t i) {
  return a && i < A(a)->tensors.size() ? A(a)->tensors[i].get() : nullptr;
}
size_t AttributeGetGraphCount(const NxAttribute* a) { return a ? A(a)->graphs.size() : 0; }
const NxGraph* AttributeGetGraphAt(const NxAttribute* a, size_t i) {
  return a && i < A(a)->graphs.size() ? reinterpret_cast<const NxGraph*>(A(a)->graphs[i].get())
                                      : nullptr;
}

bool AttributeGetTypeInfo(const NxAttribute* attr, NxValueKind* kind, NxElementType* elem) {
  if (attr == nullptr || A(attr)->type != NX_ATTR_TYPE_PROTO) return false;
  if (kind) *kind = A(attr)->type_info.kind;
  if (elem) *elem = A(attr)->type_info.elem_type;
  return true;
}

// ---- Capability ----
// Whether `node` is one of `graph`'s nodes, decided from the pointer alone: a plugin may pass a
// stale node of another (released) graph, which must not be read.
bool IsNodeOf(const nxrt::Graph* graph, const NxNode* node) {
  if (graph == nullptr || node == nullptr || graph->nodes.empty()) return false;
  const auto base = reinterpret_cast<uintptr_t>(graph->nodes.data());
  const auto p = reinterpret_cast<uintptr_t>(node);
  const uintptr_t bytes = graph->nodes.size() * sizeof(nxrt::Node);
  return p >= base && p - base < bytes && (p - base) % sizeof(nxrt::Node) == 0;
}

bool CapabilityIsNodeTaken(const NxCapability* cap, const NxNode* node) {
  if (!cap || !node || !cap->node_ep || !IsNodeOf(cap->graph, node)) return false;
  const size_t i = static_cast<size_t>(N(node)->index);
  return i < cap->node_ep->size() && (*cap->node_ep)[i] >= 0;
}

NxStatus* CapabilityAddNode(NxCapability* cap, const NxNode* node) {
  if (!cap || !node) return CreateStatus(NX_INVALID_ARGUMENT, "Capability_AddNode: null argument");
  if (!IsNodeOf(cap->graph, node)) {
    return CreateStatus(NX_INVALID_ARGUMENT, "Capability_AddNode: the node is not in this graph");
  }
  for (const auto& group : cap->groups) {
    if (std::find(group.nodes.begin(), group.nodes.end(), N(node)) != group.nodes.end())
      return CreateStatus(NX_INVALID_ARGUMENT, ("Capability_AddNode: " + N(node)->Describe() +
                                                " is already claimed in a fused group")
                                                   .c_str());
  }
  cap->claimed.push_back(N(node));
  return nullptr;
}

// ---- A device per kernel node (version 12) ----
NxStatus* CapabilityAddNodeWithOptions(NxCapability* cap, const NxNode* node,
                                       const NxNodeOptions* options) {
  const NxHardwareDevice* device =
      options != nullptr && options->version >= 12 ? options->hardware_device : nullptr;
  if (cap != nullptr && device != nullptr &&
      std::find(cap->devices.begin(), cap->devices.end(), device) == cap->devices.end()) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddNodeWithOptions: the hardware device is not one of the "
                        "EP's devices in this session");
  }
  if (NxStatus* status = CapabilityAddNode(cap, node)) return status;
  if (device != nullptr) cap->claimed_device[N(node)] = device;
  return nullptr;
}

// ---- Compiled groups (version 6) ----
NxStatus* CapabilityAddFusedGroup(NxCapability* cap, const NxNode* const* nodes, size_t count,
                                  const NxFusionOptions* options) {
  if (!cap || !nodes || count == 0)
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddFusedGroup: null argument or empty group");
  if (!cap->can_compile)
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddFusedGroup: the EP has no CompileGroup (NxEp version >= 6)");
  return CatchAsStatus([&] {
    NxCapability::Group group;
    for (size_t i = 0; i < count; ++i) {
      const nxrt::Node* node = N(nodes[i]);
      NXRT_CHECK(node != nullptr, NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: node " + std::to_string(i) + " is null");
      NXRT_CHECK(IsNodeOf(cap->graph, nodes[i]), NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: node " + std::to_string(i) + " is not in this graph");
      const bool in_group =
          std::find(group.nodes.begin(), group.nodes.end(), node) != group.nodes.end();
      bool taken = std::find(cap->claimed.begin(), cap->claimed.end(), node) != cap->claimed.end();
      for (const auto& other : cap->groups)
        taken =
            taken || std::find(other.nodes.begin(), other.nodes.end(), node) != other.nodes.end();
      NXRT_CHECK(!in_group && !taken, NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: " + node->Describe() + " is already claimed");
      group.nodes.push_back(node);
    }
    if (options != nullptr && options->version >= 6 && options->hardware_device != nullptr) {
      NXRT_CHECK(std::find(cap->devices.begin(), cap->devices.end(), options->hardware_device) !=
                     cap->devices.end(),
                 NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: the declared hardware device is not one of the EP's "
                 "devices");
      group.device = options->hardware_device;
    }
    cap->groups.push_back(std::move(group));
  });
}

}  // namespace

void FillGraphApi(NxHostApi& api) {
  api.Graph_GetNodeCount = GraphGetNodeCount;
  api.Graph_GetNode = GraphGetNode;
  api.Graph_GetInputCount = GraphGetInputCount;
  api.Graph_GetInput = GraphGetInput;
  api.Graph_GetOutputCount = GraphGetOutputCount;
  api.Graph_GetOutput = GraphGetOutput;
  api.Graph_GetOpsetVersion = GraphGetOpsetVersion;
  api.Node_GetName = NodeGetName;
  api.Node_GetOpType = NodeGetOpType;
  api.Node_GetDomain = NodeGetDomain;
  api.Node_GetOpsetVersion = NodeGetOpsetVersion;
  api.Node_GetSinceVersion = NodeGetSinceVersion;
  api.Attribute_GetTensorCount = AttributeGetTensorCount;
  api.Attribute_GetTensorAt = AttributeGetTensorAt;
  api.Attribute_GetGraphCount = AttributeGetGraphCount;
  api.Attribute_GetGraphAt = AttributeGetGraphAt;
  api.Attribute_GetTypeInfo = AttributeGetTypeInfo;
  api.Node_GetInputCount = NodeGetInputCount;
  api.Node_GetInput = NodeGetInput;
  api.Node_GetOutputCount = NodeGetOutputCount;
  api.Node_GetOutput = NodeGetOutput;
  api.Node_GetAttributeCount = NodeGetAttributeCount;
  api.Node_GetAttributeAt = NodeGetAttributeAt;
  api.Node_GetAttribute = NodeGetAttribute;
  api.ValueInfo_GetName = ValueInfoGetName;
  api.ValueInfo_GetKind = ValueInfoGetKind;
  api.ValueInfo_GetElementType = ValueInfoGetElementType;
  api.ValueInfo_GetShape = ValueInfoGetShape;
  api.ValueInfo_GetConstant = ValueInfoGetConstant;
  api.Attribute_GetName = AttributeGetName;
  api.Attribute_GetType = AttributeGetType;
  api.Attribute_GetInt = AttributeGetInt;
  api.Attribute_GetFloat = AttributeGetFloat;
  api.Attribute_GetString = AttributeGetString;
  api.Attribute_GetInts = AttributeGetInts;
  api.Attribute_GetFloats = AttributeGetFloats;
  api.Attribute_GetStringCount = AttributeGetStringCount;
  api.Attribute_GetStringAt = AttributeGetStringAt;
  api.Attribute_GetTensor = AttributeGetTensor;
  api.Attribute_GetGraph = AttributeGetGraph;
  api.Capability_AddNode = CapabilityAddNode;
  api.Capability_AddNodeWithOptions = CapabilityAddNodeWithOptions;
  api.Capability_AddFusedGroup = CapabilityAddFusedGroup;
  api.Capability_IsNodeTaken = CapabilityIsNodeTaken;
}

}  // namespace nxrt::host_api
