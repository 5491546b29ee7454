#include "session/qdq_tables.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "nxrt/nxrt_ep_api.h"

namespace nxrt::qdq {
namespace {

bool IsOnnx(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// One element of a constant as float (float, 8-bit or int32 data); nullopt for other types.
std::optional<float> ElementOf(const Value& v, size_t i) {
  if (v.data == nullptr || i >= v.count) return std::nullopt;
  switch (v.type) {
    case NX_TYPE_FLOAT:
      return static_cast<const float*>(v.data)[i];
    case NX_TYPE_UINT8:
      return static_cast<float>(static_cast<const uint8_t*>(v.data)[i]);
    case NX_TYPE_INT8:
      return static_cast<float>(static_cast<const int8_t*>(v.data)[i]);
    case NX_TYPE_INT32:
      return static_cast<float>(static_cast<const int32_t*>(v.data)[i]);
    default:
      return std::nullopt;
  }
}

// A one-element constant tensor behind `v` (initializer or Constant node), as float.
std::optional<float> OneElement(const Graph& g, int v, NxElementType* type = nullptr) {
  if (v < 0) return std::nullopt;
  const ValueDef& def = g.value(v);
  const Value* c = def.initializer.get();
  if (c == nullptr && def.producer >= 0) {
    const Node& p = g.nodes[static_cast<size_t>(def.producer)];
    if (IsOnnx(p, "Constant") && p.attributes.size() == 1) {
      const Attribute& a = p.attributes[0];
      if (a.name == "value" && a.tensor) c = a.tensor.get();
      if (a.name == "value_float" && a.type == NX_ATTR_FLOAT) {
        if (type) *type = NX_TYPE_FLOAT;
        return a.f;
      }
    }
  }
  if (c == nullptr || c->count != 1) return std::nullopt;
  if (type) *type = c->type;
  return ElementOf(*c, 0);
}

// Saturating range of an 8-bit type.
int32_t Low(bool is_signed) { return is_signed ? -128 : 0; }
int32_t High(bool is_signed) { return is_signed ? 127 : 255; }

// The per-tensor parameters of a Q or DQ node whose scale and zero point are constants.
std::optional<Quantization> ParamsOf(const Graph& g, const Node& n, NxElementType data_type) {
  if (n.inputs.size() < 2 || n.FindAttribute("block_size") || n.FindAttribute("output_dtype"))
    return std::nullopt;
  Quantization q;
  auto scale = OneElement(g, n.inputs[1]);
  if (!scale) return std::nullopt;
  q.scale = *scale;
  NxElementType zp_type = data_type;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    auto zp = OneElement(g, n.inputs[2], &zp_type);
    if (!zp) return std::nullopt;
    q.zero_point = static_cast<int32_t>(*zp);
  }
  q.is_signed = zp_type == NX_TYPE_INT8;
  return q;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ONNX's attribute `name` of `n` as float, or `fallback`.
float FloatAttr(const Node& n, const char* name, float fallback) {
  const Attribute* a = n.FindAttribute(name);
  return a != nullptr && a->type == NX_ATTR_FLOAT ? a->f : fallback;
}

}  // namespace

std::optional<float> ConstantScalar(const Graph& g, int v) {
  NxElementType type = NX_TYPE_UNDEFINED;
  if (auto c = OneElement(g, v, &type)) {
    if (type == NX_TYPE_FLOAT) return c;
    return std::nullopt;
  }
  if (v < 0 || g.value(v).producer < 0) return std::nullopt;
  const Node& dq = g.nodes[static_cast<size_t>(g.value(v).producer)];
  if (!IsOnnx(dq, "DequantizeLinear") || dq.inputs.empty()) return std::nullopt;
  const int data = dq.inputs[0];
  NxElementType data_type = NX_TYPE_UNDEFINED;
  std::optional<float> code = OneElement(g, data, &data_type);
  if (!code && data >= 0 && g.value(data).producer >= 0) {
    // DQ(Q(float constant)): the quantized constant, as QuantizeLinear would store it.
    const Node& q = g.nodes[static_cast<size_t>(g.value(data).producer)];
    if (!IsOnnx(q, "QuantizeLinear") || q.inputs.empty()) return std::nullopt;
    auto real = OneElement(g, q.inputs[0], &data_type);
    if (!real || data_type != NX_TYPE_FLOAT) return std::nullopt;
    auto qp = ParamsOf(g, q, NX_TYPE_UINT8);
    if (!qp || qp->scale == 0.0f) return std::nullopt;
    auto stored = Quantize(*qp, *real);
    if (!stored) return std::nullopt;
    data_type = qp->is_signed ? NX_TYPE_INT8 : NX_TYPE_UINT8;
    code = qp->is_signed ? static_cast<float>(static_cast<int8_t>(*stored))
                         : static_cast<float>(*stored);
  }
  if (!code) return std::nullopt;
  auto dp = ParamsOf(g, dq, data_type);
  if (!dp) return std::nullopt;
  return (*code - static_cast<float>(dp->zero_point)) * dp->scale;
}

std::optional<UnaryFn> UnaryFunctionOf(const Graph& g, const Node& n, int x) {
  if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  const std::string& op = n.op_type;
  // Binary arithmetic with a constant scalar on the other side.
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
    if (n.inputs.size() != 2) return std::nullopt;
    const bool x_first = n.inputs[0] == x;
    if (!x_first && n.inputs[1] != x) return std::nullopt;
    auto c = ConstantScalar(g, n.inputs[x_first ? 1 : 0]);
    if (!c) return std::nullopt;
    const float k = *c;
    if (op == "Add") return UnaryFn([k](float v) { return v + k; });
    if (op == "Mul") return UnaryFn([k](float v) { return v * k; });
    if (op == "Sub")
      return x_first ? UnaryFn([k](float v) { return v - k; })
                     : UnaryFn([k](float v) { return k - v; });
    if (op == "Div")
      return x_first ? UnaryFn([k](float v) { return v / k; })
                     : UnaryFn([k](float v) { return k / v; });
    return x_first ? UnaryFn([k](float v) { return static_cast<float>(std::pow(double(v), k)); })
                   : UnaryFn([k](float v) { return static_cast<float>(std::pow(double(k), v)); });
  }
  if (n.inputs[0] != x) return std::nullopt;
  if (op == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (n.opset >= 0 && n.opset < 11) {
      lo = FloatAttr(n, "min", lo);
      hi = FloatAttr(n, "max", hi);
    } else {
      for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
        if (n.inputs[i] < 0) continue;
        auto c = ConstantScalar(g, n.inputs[i]);
        if (!c) return std::nullopt;
        (i == 1 ? lo : hi) = *c;
      }
    }
    return UnaryFn([lo, hi](float v) { return std::min(std::max(v, lo), hi); });
  }
  if (n.inputs.size() != 1) return std::nullopt;
  // Transcendental functions in double, rounded to float once.
  auto real = [](auto f) { return UnaryFn([f](float v) { return static_cast<float>(f(v)); }); };
  if (op == "Relu") return UnaryFn([](float v) { return v < 0.0f ? 0.0f : v; });
  if (op == "Neg") return UnaryFn([](float v) { return -v; });
  if (op == "Abs") return UnaryFn([](float v) { return std::fabs(v); });
  if (op == "Reciprocal") return UnaryFn([](float v) { return 1.0f / v; });
  if (op == "Sqrt") return UnaryFn([](float v) { return std::sqrt(v); });
  if (op == "LeakyRelu") {
    const float alpha = FloatAttr(n, "alpha", 0.01f);
    return UnaryFn([alpha](float v) { return v < 0.0f ? v * alpha : v; });
  }
  if (op == "Sigmoid") return real([](double v) { return Sigmoid(v); });
  if (op == "Tanh") return real([](double v) { return std::tanh(v); });
  if (op == "Erf") return real([](double v) { return std::erf(v); });
  if (op == "Exp") return real([](double v) { return std::exp(v); });
  if (op == "Log") return real([](double v) { return std::log(v); });
  if (op == "Softplus") return real([](double v) { return std::log1p(std::exp(v)); });
  if (op == "Softsign") return real([](double v) { return v / (1.0 + std::fabs(v)); });
  if (op == "Elu") {
    const double alpha = FloatAttr(n, "alpha", 1.0f);
    return real([alpha](double v) { return v < 0 ? alpha * std::expm1(v) : v; });
  }
  if (op == "Selu") {
    const double alpha = FloatAttr(n, "alpha", 1.67326319217681884765625f);
    const double gamma = FloatAttr(n, "gamma", 1.05070102214813232421875f);
    return real([alpha, gamma](double v) { return gamma * (v <= 0 ? alpha * std::expm1(v) : v); });
  }
  if (op == "HardSigmoid") {
    const double alpha = FloatAttr(n, "alpha", 0.2f), beta = FloatAttr(n, "beta", 0.5f);
    return real([alpha, beta](double v) { return std::clamp(alpha * v + beta, 0.0, 1.0); });
  }
  if (op == "HardSwish")
    return real([](double v) { return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0); });
  if (op == "Gelu") {
    const Attribute* a = n.FindAttribute("approximate");
    if (a != nullptr && a->s == "tanh")
      return real([](double v) {
        return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      });
    if (a != nullptr && a->s != "none") return std::nullopt;
    return real([](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); });
  }
  return std::nullopt;
}

std::optional<BinaryFn> BinaryFunctionOf(const Node& n) {
  if (!n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  if (n.op_type == "Add") return BinaryFn([](float a, float b) { return a + b; });
  if (n.op_type == "Sub") return BinaryFn([](float a, float b) { return a - b; });
  if (n.op_type == "Mul") return BinaryFn([](float a, float b) { return a * b; });
  if (n.op_type == "Div") return BinaryFn([](float a, float b) { return a / b; });
  return std::nullopt;
}

float Dequantize(const Quantization& q, int code) {
  const int32_t v = q.is_signed ? int32_t(static_cast<int8_t>(code)) : code;
  return static_cast<float>(v - q.zero_point) * q.scale;
}

std::optional<uint8_t> Quantize(const Quantization& q, float x) {
  const float scaled = x / q.scale;
  if (std::isnan(scaled)) return std::nullopt;
  // nearbyint rounds half to even in the default rounding mode, as QuantizeLinear does.
  const float r = std::nearbyint(scaled) + static_cast<float>(q.zero_point);
  const float s = std::clamp(r, float(Low(q.is_signed)), float(High(q.is_signed)));
  const int32_t v = static_cast<int32_t>(s);
  return static_cast<uint8_t>(v);
}

std::optional<Table> Tabulate(bool is_signed, const std::function<float(int code)>& real,
                              const Quantization& out) {
  if (out.scale == 0.0f || !std::isfinite(out.scale)) return std::nullopt;
  Table t{};
  for (int v = Low(is_signed); v <= High(is_signed); ++v) {
    const int code = static_cast<uint8_t>(v);
    const float y = real(code);
    if (!std::isfinite(y)) return std::nullopt;
    auto q = Quantize(out, y);
    if (!q) return std::nullopt;
    t[static_cast<size_t>(code)] = *q;
  }
  return t;
}

}  // namespace nxrt::qdq
