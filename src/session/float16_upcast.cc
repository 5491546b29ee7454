#include "session/float16_upcast.h"

#include <cstring>
#include <string>

namespace nxrt {
namespace {

// IEEE 754 binary16 -> binary32, exact (every float16 value, subnormals, infinities and NaNs
// included, is a float32 value).
float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: shift the mantissa up to an implicit leading 1, lowering the exponent.
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

bool IsHalfTensor(const ValuePtr& v) {
  return v && v->kind == NX_VALUE_TENSOR && v->type == NX_TYPE_FLOAT16 && IsHostReadable(*v);
}

// A float32 copy of a float16 tensor.
ValuePtr ToFloat(const Value& half) {
  ValuePtr f = MakeTensor(NX_TYPE_FLOAT, half.dims);
  const auto* src = static_cast<const uint16_t*>(half.data);
  auto* dst = static_cast<float*>(f->data);
  for (size_t i = 0; i < half.count; ++i) dst[i] = HalfToFloat(src[i]);
  return f;
}

bool IsOnnx(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// Elements of float16 initializers in `g` and its subgraphs.
int64_t Float16Weights(const Graph& g) {
  int64_t count = 0;
  for (const ValueDef& v : g.values)
    if (IsHalfTensor(v.initializer)) count += static_cast<int64_t>(v.initializer->count);
  for (const Node& n : g.nodes)
    for (const Attribute& a : n.attributes) {
      if (a.graph) count += Float16Weights(*a.graph);
      for (const auto& sub : a.graphs) count += Float16Weights(*sub);
    }
  return count;
}

// Whether the main graph's float16 interface can be kept with a Cast at each end: such a graph
// input or output is neither an initializer nor another graph input or output, and no subgraph
// reads it by name (the Casts rename what the nodes read).
bool InterfaceCastable(const Graph& g) {
  auto half = [&](int v) { return g.value(v).type.elem_type == NX_TYPE_FLOAT16; };
  for (int v : g.inputs) {
    if (!half(v)) continue;
    const ValueDef& d = g.value(v);
    if (d.initializer || d.is_graph_output) return false;
  }
  for (int v : g.outputs) {
    if (!half(v)) continue;
    const ValueDef& d = g.value(v);
    if (d.initializer || d.is_graph_input || d.producer < 0) return false;
  }
  for (const Node& n : g.nodes)
    for (int v : n.implicit_inputs)
      if (half(v) && (g.value(v).is_graph_input || g.value(v).is_graph_output)) return false;
  // The same value listed twice as an output would need two Casts into one name.
  for (size_t i = 0; i < g.outputs.size(); ++i)
    for (size_t j = i + 1; j < g.outputs.size(); ++j)
      if (g.outputs[i] == g.outputs[j] && half(g.outputs[i])) return false;
  return true;
}

// Retypes one graph (and its subgraphs) to float32; returns the values retyped.
int Retype(Graph& g) {
  int retyped = 0;
  for (ValueDef& v : g.values) {
    if (v.type.elem_type == NX_TYPE_FLOAT16) {
      v.type.elem_type = NX_TYPE_FLOAT;
      ++retyped;
    }
    if (IsHalfTensor(v.initializer)) v.initializer = ToFloat(*v.initializer);
  }
  for (Node& n : g.nodes) {
    const bool makes_type = IsOnnx(n, "Cast") || IsOnnx(n, "EyeLike") ||
                            IsOnnx(n, "RandomNormal") || IsOnnx(n, "RandomUniform") ||
                            IsOnnx(n, "RandomNormalLike") || IsOnnx(n, "RandomUniformLike") ||
                            IsOnnx(n, "Bernoulli") || IsOnnx(n, "SequenceEmpty");
    for (Attribute& a : n.attributes) {
      if (makes_type && (a.name == "to" || a.name == "dtype") && a.i == NX_TYPE_FLOAT16)
        a.i = NX_TYPE_FLOAT;
      if (IsHalfTensor(a.tensor)) a.tensor = ToFloat(*a.tensor);  // Constant, ConstantOfShape
      if (a.type_info.elem_type == NX_TYPE_FLOAT16) a.type_info.elem_type = NX_TYPE_FLOAT;
      for (TypeInfo& t : a.type_infos)  // Optional's `type` and the like
        if (t.elem_type == NX_TYPE_FLOAT16) t.elem_type = NX_TYPE_FLOAT;
      if (a.graph) retyped += Retype(*a.graph);
      for (auto& sub : a.graphs) retyped += Retype(*sub);
    }
  }
  return retyped;
}

Node CastNode(Graph& g, const std::string& name, int input, int output, NxElementType to) {
  Node cast;
  cast.owner = &g;
  cast.name = name;
  cast.op_type = "Cast";
  cast.opset = g.opsets.count("") ? g.opsets.at("") : 13;
  cast.inputs = {input};
  cast.outputs = {output};
  Attribute a;
  a.name = "to";
  a.type = NX_ATTR_INT;
  a.i = to;
  cast.attributes.push_back(std::move(a));
  return cast;
}

// A fresh value named after `base`, typed as `like` but float32.
int AddFloatValue(Graph& g, const std::string& base, const ValueDef& like) {
  std::string name = base + "__nxrt_float32";
  while (g.FindValue(name) >= 0) name += "_";
  const int v = g.GetOrAddValue(name);
  g.value(v).type = like.type;
  g.value(v).type.elem_type = NX_TYPE_FLOAT;
  return v;
}

}  // namespace

int UpcastFloat16(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps, int cpu_ep,
                  const Config& config, const Logger& logger) {
  if (cpu_ep < 0 || eps.size() != 1) return 0;
  const std::string* option = config.Find("session.float16_as_float32");
  if (option != nullptr && *option == "0") return 0;
  if (Float16Weights(graph) < kMinFloat16Weights || !InterfaceCastable(graph)) return 0;

  // The interface first, while the types still say which values are float16.
  std::vector<Node> added;
  for (int v : graph.inputs) {
    if (graph.value(v).type.elem_type != NX_TYPE_FLOAT16) continue;
    const int f = AddFloatValue(graph, graph.value(v).name, graph.value(v));
    for (Node& n : graph.nodes)
      for (int& in : n.inputs)
        if (in == v) in = f;
    added.push_back(CastNode(graph, graph.value(v).name + "_to_float32", v, f, NX_TYPE_FLOAT));
  }
  for (int v : graph.outputs) {
    if (graph.value(v).type.elem_type != NX_TYPE_FLOAT16) continue;
    const int f = AddFloatValue(graph, graph.value(v).name, graph.value(v));
    for (Node& n : graph.nodes) {
      for (int& out : n.outputs)
        if (out == v) out = f;
      for (int& in : n.inputs)
        if (in == v) in = f;
    }
    added.push_back(CastNode(graph, graph.value(v).name + "_to_float16", f, v, NX_TYPE_FLOAT16));
  }
  // Retype everything but the interface values, which stay float16.
  std::vector<int> interface;
  for (int v : graph.inputs)
    if (graph.value(v).type.elem_type == NX_TYPE_FLOAT16) interface.push_back(v);
  for (int v : graph.outputs)
    if (graph.value(v).type.elem_type == NX_TYPE_FLOAT16) interface.push_back(v);
  const int retyped = Retype(graph);
  for (int v : interface) graph.value(v).type.elem_type = NX_TYPE_FLOAT16;
  // The Casts back to float16 were made after Retype would have turned them into float32 ones.
  for (Node& cast : added) graph.nodes.push_back(std::move(cast));
  graph.Finalize();
  logger.Log(NX_LOG_INFO, graph.source + ": computing the float16 model in float32 (" +
                              std::to_string(retyped) + " float16 values retyped)");
  return retyped;
}

}  // namespace nxrt
