#include "blocked/blocked_group.h"

#include <unordered_map>

namespace nxrt::cpu::blocked {

int64_t GroupNode::Int(const std::string& key, int64_t fallback) const {
  auto it = ints.find(key);
  return it == ints.end() || it->second.empty() ? fallback : it->second[0];
}
std::vector<int64_t> GroupNode::Ints(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = ints.find(key);
  return it == ints.end() ? fallback : it->second;
}
float GroupNode::Float(const std::string& key, float fallback) const {
  auto it = floats.find(key);
  return it == floats.end() ? fallback : it->second;
}
std::string GroupNode::String(const std::string& key, const std::string& fallback) const {
  auto it = strings.find(key);
  return it == strings.end() ? fallback : it->second;
}

namespace {

void ReadAttributes(const NxNode* node, GroupNode& out) {
  const NxHostApi& host = ep::Host();
  const size_t n = host.Node_GetAttributeCount(node);
  for (size_t i = 0; i < n; ++i) {
    const NxAttribute* a = host.Node_GetAttributeAt(node, i);
    const std::string name = host.Attribute_GetName(a);
    switch (host.Attribute_GetType(a)) {
      case NX_ATTR_INT:
        out.ints[name] = {host.Attribute_GetInt(a)};
        break;
      case NX_ATTR_INTS: {
        size_t count = 0;
        const int64_t* p = host.Attribute_GetInts(a, &count);
        out.ints[name] = std::vector<int64_t>(p, p + count);
        break;
      }
      case NX_ATTR_FLOAT:
        out.floats[name] = host.Attribute_GetFloat(a);
        break;
      case NX_ATTR_STRING: {
        size_t size = 0;
        const char* p = host.Attribute_GetString(a, &size);
        out.strings[name] = std::string(p, size);
        break;
      }
      default:
        break;  // no member reads other kinds
    }
  }
}

std::shared_ptr<GroupConstant> BorrowConstant(const ep::ConstTensor& t) {
  auto c = std::make_shared<GroupConstant>();
  c->dims = t.shape_vector();
  if (t.type() == NX_TYPE_FLOAT) c->data = std::span<const float>(t.data<float>(), t.size());
  constexpr size_t kMaxInts = 16;  // members read a few (a Resize's 4 sizes)
  if (t.type() == NX_TYPE_INT64 && t.size() <= kMaxInts)
    c->ints.assign(t.data<int64_t>(), t.data<int64_t>() + t.size());
  return c;
}

}  // namespace

GroupDesc ReadGroup(const NxGraph* group, int64_t block) {
  const NxHostApi& host = ep::Host();
  GroupDesc d;
  std::unordered_map<std::string, int> index;
  auto value_of = [&](const ep::ValueInfoView& v) {
    auto it = index.find(v.name());
    if (it != index.end()) return it->second;
    GroupValue value;
    value.name = v.name();
    if (auto shape = v.shape(); shape && shape->size() == 4 && v.type() == NX_TYPE_FLOAT)
      value.dims = *shape;
    d.values.push_back(std::move(value));
    return index[d.values.back().name] = static_cast<int>(d.values.size() - 1);
  };
  d.num_inputs = host.Graph_GetInputCount(group);
  for (size_t i = 0; i < d.num_inputs; ++i) {
    ep::ValueInfoView v(host.Graph_GetInput(group, i));
    GroupValue& value = d.values[static_cast<size_t>(value_of(v))];
    value.input = static_cast<int>(i);
    if (auto c = v.constant()) {
      value.constant = BorrowConstant(*c);
      value.dims.clear();
    }
  }
  d.num_outputs = host.Graph_GetOutputCount(group);
  for (size_t i = 0; i < d.num_outputs; ++i) {
    ep::ValueInfoView v(host.Graph_GetOutput(group, i));
    d.values[static_cast<size_t>(value_of(v))].output = static_cast<int>(i);
  }
  const size_t n = host.Graph_GetNodeCount(group);
  for (size_t i = 0; i < n; ++i) {
    const NxNode* raw = host.Graph_GetNode(group, i);
    ep::NodeView node(raw);
    GroupNode g;
    g.name = node.name();
    g.op_type = node.op_type();
    g.opset = node.opset();
    for (size_t k = 0; k < node.input_count(); ++k) {
      ep::ValueInfoView v = node.input(k);
      g.inputs.push_back(v.present() ? value_of(v) : -1);
    }
    for (size_t k = 0; k < node.output_count(); ++k) g.outputs.push_back(value_of(node.output(k)));
    auto is_constant = [&](const ep::ValueInfoView& v) {
      return d.values[static_cast<size_t>(value_of(v))].constant != nullptr;
    };
    g.op = ClassifyNode(node, block, is_constant);
    NXRT_EP_ENFORCE(g.op != BlockedOp::kNone,
                    "blocked group: " + node.describe() + " cannot run in the blocked layout");
    if (g.op == BlockedOp::kConstantAlias) {
      d.values[static_cast<size_t>(g.outputs[0])].constant =
          d.values[static_cast<size_t>(g.inputs[0])].constant;
      d.values[static_cast<size_t>(g.outputs[0])].dims.clear();
    }
    ReadAttributes(raw, g);
    d.nodes.push_back(std::move(g));
  }
  for (const GroupValue& v : d.values)
    for (int64_t dim : v.dims)
      if (dim < 0) d.static_shapes = false;
  if (!d.static_shapes)  // compiled again at run time, after the view is gone
    for (GroupValue& v : d.values)
      if (v.constant) v.constant->Own();
  return d;
}

}  // namespace nxrt::cpu::blocked
