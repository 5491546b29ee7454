#include <mutex>
#include <unordered_set>

#include "base/error.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_host_objects.h"
#include "ort_plugins/ort_model_editor.h"

namespace nxrt::ort {
namespace {

// Nodes plugins made and still own (or handed back in Compile): pointers are checked against
// this set before the host reads them.
struct PluginNodes {
  std::mutex mutex;
  std::unordered_set<const OrtNode*> live;
};
PluginNodes& Nodes() {
  static auto* nodes = new PluginNodes();  // never destroyed: plugins may release at exit
  return *nodes;
}

std::unique_ptr<OrtOpAttr> CopyAttr(const OrtOpAttr& a) {
  auto copy = std::make_unique<OrtOpAttr>();
  const AttrView v = ViewOf(a);
  copy->name = a.name;
  copy->type = a.type;
  copy->i = v.i;
  copy->f = v.f;
  copy->s = *v.s;
  copy->ints = *v.ints;
  copy->floats = *v.floats;
  copy->strings = *v.strings;
  return copy;
}

OrtStatus* CreateNode(const char* op_type, const char* domain, const char* name,
                      const char* const* inputs, size_t num_inputs, const char* const* outputs,
                      size_t num_outputs, OrtOpAttr** attributes, size_t num_attributes,
                      OrtNode** out) {
  if (!op_type || !domain || !name || !out || (num_inputs && !inputs) ||
      (num_outputs && !outputs) || (num_attributes && !attributes))
    return NullArgument("OrtModelEditorApi::CreateNode");
  *out = nullptr;
  return Guard("OrtModelEditorApi::CreateNode", [&]() -> OrtStatus* {
    auto node = std::make_unique<OrtNode>();
    node->plugin_made = true;
    node->op_type = op_type;
    node->domain = domain;
    node->name = name;
    // An omitted optional input or output is an empty name, as in ONNX.
    for (size_t i = 0; i < num_inputs; ++i)
      node->input_names.emplace_back(inputs[i] ? inputs[i] : "");
    for (size_t i = 0; i < num_outputs; ++i)
      node->output_names.emplace_back(outputs[i] ? outputs[i] : "");
    for (size_t i = 0; i < num_attributes; ++i) {
      if (attributes[i] == nullptr)
        return NewOrtStatus(ORT_INVALID_ARGUMENT, "OrtModelEditorApi::CreateNode: attribute " +
                                                      std::to_string(i) + " is null");
      node->attributes.push_back(CopyAttr(*attributes[i]));  // the caller keeps its own
    }
    std::lock_guard<std::mutex> lock(Nodes().mutex);
    Nodes().live.insert(node.get());
    *out = node.release();
    return nullptr;
  });
}

// Releases a node the plugin made; the nodes of a graph view belong to the view.
void ReleaseNode(OrtNode* node) { TakePluginNode(node).reset(); }

}  // namespace

std::unique_ptr<OrtNode> TakePluginNode(const OrtNode* node) {
  if (node == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(Nodes().mutex);
  if (Nodes().live.erase(node) == 0) return nullptr;
  return std::unique_ptr<OrtNode>(const_cast<OrtNode*>(node));
}

onnx::NodeProto ToNodeProto(const OrtNode& node) {
  onnx::NodeProto proto;
  proto.set_name(node.name);
  proto.set_op_type(node.op_type);
  proto.set_domain(node.domain);
  for (const std::string& in : node.input_names) proto.add_input(in);
  for (const std::string& out : node.output_names) proto.add_output(out);
  for (const auto& a : node.attributes) {
    onnx::AttributeProto* attr = proto.add_attribute();
    attr->set_name(a->name);
    const AttrView v = ViewOf(*a);
    switch (a->type) {
      case ORT_OP_ATTR_INT:
        attr->set_type(onnx::AttributeProto::INT);
        attr->set_i(v.i);
        break;
      case ORT_OP_ATTR_FLOAT:
        attr->set_type(onnx::AttributeProto::FLOAT);
        attr->set_f(v.f);
        break;
      case ORT_OP_ATTR_INTS:
        attr->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : *v.ints) attr->add_ints(x);
        break;
      case ORT_OP_ATTR_FLOATS:
        attr->set_type(onnx::AttributeProto::FLOATS);
        for (float x : *v.floats) attr->add_floats(x);
        break;
      case ORT_OP_ATTR_STRING:
        attr->set_type(onnx::AttributeProto::STRING);
        attr->set_s(*v.s);
        break;
      case ORT_OP_ATTR_STRINGS:
        attr->set_type(onnx::AttributeProto::STRINGS);
        for (const std::string& x : *v.strings) attr->add_strings(x);
        break;
      default:
        Throw(NX_INVALID_PLUGIN, "node '" + node.name + "' has attribute '" + a->name +
                                     "' of a kind nxrt cannot write");
    }
  }
  return proto;
}

void InstallModelEditorApi(OrtApi& api, OrtModelEditorApi& editor) {
  api.ReleaseNode = Slot(&ReleaseNode);
  editor.CreateNode = Slot(&CreateNode);
}

}  // namespace nxrt::ort
