#include "session/qdq_folding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "nxrt/nxrt_ep_api.h"
#include "session/qdq_channels_last.h"
#include "session/qdq_tables.h"

namespace nxrt {
namespace {

bool IsOnnx(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
bool Is8Bit(NxElementType t) { return t == NX_TYPE_UINT8 || t == NX_TYPE_INT8; }

const Value* Constant(const Graph& g, int v) {
  return v >= 0 ? g.value(v).initializer.get() : nullptr;
}

// Two optional constants with the same type and bytes (both absent counts as equal).
bool SameConstant(const Graph& g, int a, int b) {
  if (a == b) return true;
  const Value* x = Constant(g, a);
  const Value* y = Constant(g, b);
  if (!x || !y || x->type != y->type || x->count != y->count || x->data == nullptr ||
      y->data == nullptr)
    return false;
  const size_t bytes = x->type == NX_TYPE_FLOAT ? 4 : x->type == NX_TYPE_INT32 ? 4 : 1;
  return std::memcmp(x->data, y->data, x->count * bytes) == 0;
}

float FloatAt(const Value& v, size_t i) { return static_cast<const float*>(v.data)[i]; }

// A DequantizeLinear or QuantizeLinear node with a constant float32 scale and a constant 8-bit
// (or, for DQ, int32) zero point: its parts.
struct QParams {
  const Node* node = nullptr;
  int data = -1;                           // input 0
  int scale = -1;                          // the scale value
  int zp = -1;                             // the zero point value (-1 if absent)
  NxElementType type = NX_TYPE_UNDEFINED;  // the quantized type
  size_t channels = 1;                     // scale elements
  int64_t axis = 1;
};

std::optional<QParams> ReadQParams(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1) return std::nullopt;
  QParams p;
  p.node = &n;
  p.data = n.inputs[0];
  p.scale = n.inputs[1];
  p.zp = n.inputs.size() > 2 ? n.inputs[2] : -1;
  const Value* s = Constant(g, p.scale);
  if (!s || s->type != NX_TYPE_FLOAT || s->count == 0 || s->dims.size() > 1) return std::nullopt;
  p.channels = s->count;
  if (const Attribute* a = n.FindAttribute("axis")) p.axis = a->i;
  // Blocked scales, float8 saturation and output_dtype (opset 19+ forms) are not folded.
  if (n.FindAttribute("block_size") || n.FindAttribute("saturate") ||
      n.FindAttribute("output_dtype"))
    return std::nullopt;
  const bool is_dq = IsOnnx(n, "DequantizeLinear");
  if (p.zp >= 0) {
    const Value* z = Constant(g, p.zp);
    if (!z || z->count != s->count) return std::nullopt;
    p.type = z->type;
  } else {
    // Without a zero point Q makes uint8; DQ reads its input's type.
    p.type = is_dq ? g.value(p.data).type.elem_type : NX_TYPE_UINT8;
  }
  if (!Is8Bit(p.type) && !(is_dq && p.type == NX_TYPE_INT32)) return std::nullopt;
  return p;
}

class QdqFolder {
 public:
  QdqFolder(Graph& g, const KernelRegistry& registry)
      : g_(g), registry_(registry), dead_(g.nodes.size(), false), replacement_(g.nodes.size()) {}

  int Run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!n.domain.empty()) continue;
      if (n.op_type == "Conv") {
        TryConv(n);
      } else if (n.op_type == "QLinearConv") {
        AdoptQLinearConv(n);
      } else if (n.op_type == "MatMul") {
        TryMatMul(n);
      } else if (n.op_type == "Gemm") {
        TryGemm(n);
      } else if (n.op_type == "Add") {
        if (!TryTable(n)) TryBinary(n, "QLinearAdd");
      } else if (n.op_type == "Mul") {
        if (!TryTable(n)) TryBinary(n, "QLinearMul");
      } else if (n.op_type == "GlobalAveragePool") {
        TryGlobalAveragePool(n);
      } else if (n.op_type == "MaxPool" || n.op_type == "Flatten" || n.op_type == "Reshape" ||
                 (n.op_type == "Resize" && IsNearest(n))) {
        TryPassThrough(n);
      } else if (n.op_type == "Split") {
        TrySplit(n);
      } else if (n.op_type == "Concat") {
        TryConcat(n);
      } else {
        TryTable(n);
      }
    }
    if (folds_ == 0) return 0;
    std::vector<Node> kept;
    kept.reserve(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (replacement_[i])
        kept.push_back(std::move(*replacement_[i]));
      else if (!dead_[i])
        kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    g_.Finalize();
    RemoveUnusedQdq();
    return folds_;
  }

 private:
  // Per-tensor DQ producing activation `v` (any input), if that is what produces it.
  std::optional<QParams> ActivationDq(int v) const {
    if (v < 0) return std::nullopt;
    const int p = g_.value(v).producer;
    if (p < 0 || dead_[static_cast<size_t>(p)]) return std::nullopt;
    const Node& n = g_.nodes[static_cast<size_t>(p)];
    if (!IsOnnx(n, "DequantizeLinear")) return std::nullopt;
    auto q = ReadQParams(g_, n);
    if (!q || q->channels != 1 || !Is8Bit(q->type)) return std::nullopt;
    return q;
  }

  // The DQ of a constant 8-bit weight with a zero point (per tensor or per channel) producing
  // `v`, if that is what produces it; `data` gets the quantized constant.
  std::optional<QParams> WeightDq(int v, const Value** data) const {
    const int p = v >= 0 ? g_.value(v).producer : -1;
    if (p < 0 || !IsOnnx(g_.nodes[static_cast<size_t>(p)], "DequantizeLinear")) return std::nullopt;
    auto q = ReadQParams(g_, g_.nodes[static_cast<size_t>(p)]);
    *data = q ? Constant(g_, q->data) : nullptr;
    if (!*data || !Is8Bit((*data)->type) || q->zp < 0) return std::nullopt;
    return q;
  }

  // The only consumer of `v` (not a graph output), if it is a per-tensor Q.
  std::optional<QParams> SoleQ(int v, const Node** consumer = nullptr) const {
    const Node* n = SoleConsumer(v);
    if (consumer) *consumer = n;
    if (!n || !IsOnnx(*n, "QuantizeLinear")) return std::nullopt;
    auto q = ReadQParams(g_, *n);
    if (!q || q->channels != 1 || q->data != v) return std::nullopt;
    return q;
  }

  const Node* SoleConsumer(int v) const {
    const ValueDef& def = g_.value(v);
    if (def.is_graph_output || def.consumers.size() != 1) return nullptr;
    const Node& n = g_.nodes[static_cast<size_t>(def.consumers[0])];
    return dead_[static_cast<size_t>(n.index)] ? nullptr : &n;
  }

  // Installs `folded` in place of `chain` (last node last) if the EP has a kernel for it. The
  // DQ nodes feeding the chain are not in it: RemoveUnusedQdq drops those left unused.
  bool Commit(Node folded, const std::vector<const Node*>& chain) {
    const Node& last = *chain.back();
    folded.owner = &g_;
    folded.index = last.index;
    folded.assigned_ep = -1;
    if (folded.opset < 0) folded.opset = 1;
    if (registry_.Find(folded, nullptr) == nullptr) return false;
    for (const Node* n : chain) dead_[static_cast<size_t>(n->index)] = true;
    replacement_[static_cast<size_t>(last.index)] = std::make_unique<Node>(std::move(folded));
    ++folds_;
    return true;
  }

  // A [256] uint8 or int8 initializer holding `codes`.
  int AddTableInitializer(const std::string& base, const qdq::Table& codes, NxElementType type) {
    std::string name = base;
    for (int i = 1; g_.FindValue(name) >= 0; ++i) name = base + "_" + std::to_string(i);
    const int v = g_.GetOrAddValue(name);
    ValueDef& def = g_.value(v);
    const std::vector<int64_t> dims{256};
    def.initializer = MakeTensor(type, dims);
    std::memcpy(def.initializer->data, codes.data(), codes.size());
    def.type.elem_type = type;
    def.type.has_shape = true;
    def.type.dims = dims;
    def.type.dim_params.assign(1, "");
    return v;
  }

  int AddInt32Initializer(const std::string& base, const std::vector<int32_t>& data) {
    std::string name = base;
    for (int i = 1; g_.FindValue(name) >= 0; ++i) name = base + "_" + std::to_string(i);
    const int v = g_.GetOrAddValue(name);
    ValueDef& def = g_.value(v);
    const std::vector<int64_t> dims{static_cast<int64_t>(data.size())};
    def.initializer = MakeTensor(NX_TYPE_INT32, dims);
    std::memcpy(def.initializer->data, data.data(), data.size() * sizeof(int32_t));
    def.type.elem_type = NX_TYPE_INT32;
    def.type.has_shape = true;
    def.type.dims = dims;
    def.type.dim_params.assign(1, "");
    return v;
  }

  // The int32 bias QLinearConv wants (scale x_scale * w_scale, zero point 0) for Conv input
  // `b`: the DQ's int32 constant itself when it already is that (what quantize_static writes),
  // else the float bias requantized into a new initializer. -1 if `b` is neither form.
  int QuantizedBias(int b, const QParams& x, const QParams& w, int64_t m) {
    const Value* xs = Constant(g_, x.scale);
    const Value* ws = Constant(g_, w.scale);
    auto acc_scale = [&](int64_t c) {
      return FloatAt(*xs, 0) * FloatAt(*ws, w.channels == 1 ? 0 : static_cast<size_t>(c));
    };
    std::vector<double> real(static_cast<size_t>(m));
    // torch shares equal biases through Identity nodes; quantize_static quantizes only the first
    // user's, so a later one reads Identity(DQ(int32 constant)) of another convolution's scale.
    for (int hops = 0; hops < 8; ++hops) {
      const int producer = g_.value(b).producer;
      if (producer < 0 || !IsOnnx(g_.nodes[static_cast<size_t>(producer)], "Identity")) break;
      b = g_.nodes[static_cast<size_t>(producer)].inputs[0];
      if (b < 0) return -1;
    }
    const int p = g_.value(b).producer;
    if (const Value* f = Constant(g_, b)) {
      if (f->type != NX_TYPE_FLOAT || f->count != static_cast<size_t>(m)) return -1;
      for (int64_t c = 0; c < m; ++c) real[c] = FloatAt(*f, static_cast<size_t>(c));
    } else if (p >= 0 && IsOnnx(g_.nodes[static_cast<size_t>(p)], "DequantizeLinear")) {
      auto q = ReadQParams(g_, g_.nodes[static_cast<size_t>(p)]);
      const Value* data = q ? Constant(g_, q->data) : nullptr;
      if (!q || !data || data->type != NX_TYPE_INT32 || data->count != static_cast<size_t>(m) ||
          (q->channels != 1 && q->channels != static_cast<size_t>(m)))
        return -1;
      const Value* bs = Constant(g_, q->scale);
      const Value* bz = Constant(g_, q->zp);
      bool exact = bz == nullptr || bz->type == NX_TYPE_INT32;
      for (int64_t c = 0; c < m; ++c) {
        const size_t k = q->channels == 1 ? 0 : static_cast<size_t>(c);
        const int32_t zp = bz ? static_cast<const int32_t*>(bz->data)[k] : 0;
        const float s = FloatAt(*bs, k);
        real[c] = double(static_cast<const int32_t*>(data->data)[c] - int64_t(zp)) * s;
        exact = exact && zp == 0 && std::fabs(s - acc_scale(c)) <= 1e-6f * std::fabs(acc_scale(c));
      }
      if (exact) return q->data;
    } else {
      return -1;
    }
    std::vector<int32_t> quantized(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      const double s = acc_scale(c);
      const double r = s != 0 ? std::nearbyint(real[c] / s) : 0.0;
      if (!(std::fabs(r) < 2147483647.0)) return -1;
      quantized[c] = static_cast<int32_t>(r);
    }
    return AddInt32Initializer(g_.value(b).name + "_qdq_int32", quantized);
  }

  void TryConv(const Node& conv) {
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return;
    auto x = ActivationDq(conv.inputs[0]);
    if (!x || x->zp < 0) return;
    const Value* wq = nullptr;
    auto w = WeightDq(conv.inputs[1], &wq);
    if (!w || wq->dims.size() < 3) return;
    const int64_t m = wq->dims[0];
    // Per output channel means along axis 0 of the weight.
    if (w->channels != 1 && (static_cast<int64_t>(w->channels) != m ||
                             (w->axis != 0 && w->axis != -static_cast<int64_t>(wq->dims.size()))))
      return;
    const Node* after = SoleConsumer(conv.outputs[0]);
    if (!after) return;
    std::vector<const Node*> chain{&conv};
    bool relu = false;
    if (IsOnnx(*after, "Relu")) {
      relu = true;
      chain.push_back(after);
      after = SoleConsumer(after->outputs[0]);
      if (!after) return;
    }
    auto y = SoleQ(chain.back()->outputs[0]);
    if (!y || y->zp < 0) return;
    int bias = -1;
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) {
      bias = QuantizedBias(conv.inputs[2], *x, *w, m);
      if (bias < 0) return;
    }
    chain.push_back(y->node);
    Node q;
    q.name = conv.name.empty() ? "qlinear_conv" : conv.name + "_qlinear";
    // com.nxrt's QLinearConv: ONNX's, plus a fused Relu (on the quantized output a clamp at the
    // zero point) and the CPU's fast int8 arithmetic, which may saturate as onnxruntime's
    // does for these models (eps/cpu/kernels/linalg/qconv_dnnl.h).
    q.op_type = "QLinearConv";
    q.domain = "com.nxrt";
    q.opset = 1;
    if (relu) {
      Attribute a;
      a.name = "activation";
      a.type = NX_ATTR_STRING;
      a.s = "Relu";
      q.attributes.push_back(a);
    }
    for (const Attribute& a : conv.attributes) q.attributes.push_back(a);
    q.inputs = {x->data, x->scale, x->zp, w->data, w->scale, w->zp, y->scale, y->zp};
    if (bias >= 0) q.inputs.push_back(bias);
    q.outputs = {y->node->outputs[0]};
    Commit(std::move(q), chain);
  }

  // ONNX's QLinearConv (quantize_static's QOperator form) with constant int8 weights => the
  // com.nxrt one (the same inputs and attributes), which the NHWC pass then keeps channels-last
  // between convolutions, adds and pools as it does for folded QDQ models.
  void AdoptQLinearConv(const Node& conv) {
    if (conv.inputs.size() < 8 || conv.outputs.size() != 1 || conv.inputs[3] < 0) return;
    const Value* w = Constant(g_, conv.inputs[3]);
    if (w == nullptr || w->type != NX_TYPE_INT8 || w->dims.size() != 4) return;
    Node q = conv;
    q.domain = "com.nxrt";
    q.opset = 1;
    Commit(std::move(q), {&conv});
  }

  // DQ(a), DQ(const 2-D b, per tensor or per column) -> MatMul -> Q => QLinearMatMul.
  void TryMatMul(const Node& mm) {
    if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return;
    auto a = ActivationDq(mm.inputs[0]);
    if (!a || a->zp < 0) return;
    const Value* bq = nullptr;
    auto b = WeightDq(mm.inputs[1], &bq);
    if (!b || bq->dims.size() != 2) return;
    if (b->channels != 1 &&
        (static_cast<int64_t>(b->channels) != bq->dims[1] || (b->axis != 1 && b->axis != -1)))
      return;
    auto y = SoleQ(mm.outputs[0]);
    if (!y || y->zp < 0) return;
    Node q;
    q.name = mm.name.empty() ? "qlinear_matmul" : mm.name + "_qlinear";
    q.op_type = "QLinearMatMul";
    q.opset = 10;
    q.inputs = {a->data, a->scale, a->zp, b->data, b->scale, b->zp, y->scale, y->zp};
    q.outputs = {y->node->outputs[0]};
    Commit(std::move(q), {&mm, y->node});
  }

  // DQ(a), DQ(const 2-D b, per tensor or per output column) [, bias] -> Gemm [-> Q] =>
  // com.microsoft QGemm: the classifier of quantize_static's CNNs (torch's Linear: transB = 1,
  // weight scales per output channel, the bias a DQ of int32), which ran as a float Gemm on the
  // dequantized weights: four times the bytes of the int8 ones, 7% of a QDQ MobileNetV2. Its
  // float output when no sole Q follows. alpha and beta must be 1 (the int32 bias is in the
  // product's scale) and A not transposed.
  void TryGemm(const Node& gemm) {
    if (gemm.inputs.size() < 2 || gemm.inputs.size() > 3 || gemm.outputs.size() != 1) return;
    auto int_attr = [&](const char* name) {
      const Attribute* a = gemm.FindAttribute(name);
      return a ? a->i : 0;
    };
    auto float_attr = [&](const char* name) {
      const Attribute* a = gemm.FindAttribute(name);
      return a ? a->f : 1.f;
    };
    if (int_attr("transA") != 0 || float_attr("alpha") != 1.f || float_attr("beta") != 1.f) return;
    const bool trans_b = int_attr("transB") != 0;
    auto a = ActivationDq(gemm.inputs[0]);
    if (!a || a->zp < 0) return;
    const Value* bq = nullptr;
    auto b = WeightDq(gemm.inputs[1], &bq);
    if (!b || bq->dims.size() != 2) return;
    // Per column of the product: axis 1 of B [K, N], axis 0 of a transposed B [N, K].
    const int64_t n = trans_b ? bq->dims[0] : bq->dims[1];
    const int64_t n_axis = trans_b ? 0 : 1;
    if (b->channels != 1 &&
        (static_cast<int64_t>(b->channels) != n || (b->axis != n_axis && b->axis != n_axis - 2)))
      return;
    int bias = -1;
    if (gemm.inputs.size() > 2 && gemm.inputs[2] >= 0) {
      bias = QuantizedBias(gemm.inputs[2], *a, *b, n);
      if (bias < 0) return;
    }
    auto y = SoleQ(gemm.outputs[0]);
    if (y && y->zp < 0) return;
    Node q;
    q.name = gemm.name.empty() ? "qgemm" : gemm.name + "_qgemm";
    q.op_type = "QGemm";
    q.domain = "com.microsoft";
    q.opset = 1;
    if (trans_b) {
      Attribute t;
      t.name = "transB";
      t.type = NX_ATTR_INT;
      t.i = 1;
      q.attributes.push_back(t);
    }
    q.inputs = {a->data, a->scale, a->zp, b->data, b->scale, b->zp, bias};
    if (y) {
      q.inputs.push_back(y->scale);
      q.inputs.push_back(y->zp);
      q.outputs = {y->node->outputs[0]};
      Commit(std::move(q), {&gemm, y->node});
    } else {
      q.outputs = {gemm.outputs[0]};
      Commit(std::move(q), {&gemm});
    }
  }

  // DQ(a), DQ(b) -> Add or Mul -> Q of two activations => com.microsoft QLinearAdd / QLinearMul
  // (`qop`): residual sums, squeeze-and-excitation scales, gates. A sum or product that is a
  // function of one tensor became a table first (TryTable).
  void TryBinary(const Node& op, const char* qop) {
    if (op.inputs.size() != 2 || op.outputs.size() != 1) return;
    auto a = ActivationDq(op.inputs[0]);
    auto b = ActivationDq(op.inputs[1]);
    if (!a || !b || a->zp < 0 || b->zp < 0) return;
    auto c = SoleQ(op.outputs[0]);
    if (!c || c->zp < 0 || a->type != c->type || b->type != c->type) return;
    Node q;
    q.name = (op.name.empty() ? std::string(qop) : op.name) + "_qlinear";
    q.op_type = qop;
    q.domain = "com.microsoft";
    q.inputs = {a->data, a->scale, a->zp, b->data, b->scale, b->zp, c->scale, c->zp};
    q.outputs = {c->node->outputs[0]};
    Commit(std::move(q), {&op, c->node});
  }

  // An 8-bit value as a table of the codes of some base value: a table this pass made, or the
  // value itself (the identity).
  struct Tabulated {
    int base = -1;
    bool base_signed = false;
    qdq::Table codes{};
  };

  Tabulated AsTable(int v, bool is_signed) const {
    auto it = tables_.find(v);
    if (it != tables_.end()) return it->second;
    Tabulated t{v, is_signed, {}};
    for (size_t c = 0; c < 256; ++c) t.codes[c] = static_cast<uint8_t>(c);
    return t;
  }

  qdq::Quantization QuantizationOf(const QParams& p) const {
    qdq::Quantization q;
    q.scale = FloatAt(*Constant(g_, p.scale), 0);
    q.is_signed = p.type == NX_TYPE_INT8;
    if (const Value* z = Constant(g_, p.zp)) {
      q.zero_point = q.is_signed ? int32_t(static_cast<const int8_t*>(z->data)[0])
                                 : int32_t(static_cast<const uint8_t*>(z->data)[0]);
    }
    return q;
  }

  // DQ -> elementwise float ops -> Q where the ops compute a function of one 8-bit tensor
  // (qdq_tables.h: unary ops, arithmetic with constant scalars, and binary ops whose two sides
  // are both functions of the same tensor, as x * sigmoid(x) or GELU's x * (1 + erf(...))) =>
  // one com.nxrt TableLookup of that tensor's codes. Tables this pass made compose: GELU's
  // islands become one table.
  bool TryTable(const Node& op) {
    if (!op.domain.empty() || op.outputs.size() != 1 || op.inputs.empty()) return false;
    std::function<float(int)> real;  // base code -> the op's real output
    Tabulated base;
    std::vector<int> variable;
    for (int v : op.inputs)
      if (v >= 0 && !qdq::ConstantScalar(g_, v)) variable.push_back(v);
    if (variable.size() == 2) {
      auto fn = qdq::BinaryFunctionOf(op);
      auto a = ActivationDq(variable[0]);
      auto b = ActivationDq(variable[1]);
      if (!fn || !a || !b) return false;
      const Tabulated ta = AsTable(a->data, a->type == NX_TYPE_INT8);
      const Tabulated tb = AsTable(b->data, b->type == NX_TYPE_INT8);
      if (ta.base != tb.base) return false;
      const qdq::Quantization qa = QuantizationOf(*a), qb = QuantizationOf(*b);
      real = [f = *fn, ta, tb, qa, qb](int code) {
        return f(qdq::Dequantize(qa, ta.codes[static_cast<size_t>(code)]),
                 qdq::Dequantize(qb, tb.codes[static_cast<size_t>(code)]));
      };
      base = ta;
    } else if (variable.size() == 1) {
      auto a = ActivationDq(variable[0]);
      if (!a) return false;
      auto fn = qdq::UnaryFunctionOf(g_, op, variable[0]);
      if (!fn) return false;
      const Tabulated ta = AsTable(a->data, a->type == NX_TYPE_INT8);
      const qdq::Quantization qa = QuantizationOf(*a);
      real = [f = *fn, ta, qa](int code) {
        return f(qdq::Dequantize(qa, ta.codes[static_cast<size_t>(code)]));
      };
      base = ta;
    } else {
      return false;
    }
    // Further elementwise ops up to the QuantizeLinear.
    std::vector<const Node*> chain{&op};
    for (const Node* next = SoleConsumer(op.outputs[0]);
         next != nullptr && !IsOnnx(*next, "QuantizeLinear");
         next = SoleConsumer(chain.back()->outputs[0])) {
      auto fn = qdq::UnaryFunctionOf(g_, *next, chain.back()->outputs[0]);
      if (!fn) return false;
      real = [f = *fn, inner = std::move(real)](int code) { return f(inner(code)); };
      chain.push_back(next);
    }
    auto y = SoleQ(chain.back()->outputs[0]);
    if (!y || y->zp < 0) return false;
    auto table = qdq::Tabulate(base.base_signed, real, QuantizationOf(*y));
    if (!table) return false;
    Node t;
    t.name = (op.name.empty() ? std::string("qdq") : op.name) + "_table";
    t.op_type = "TableLookup";
    t.domain = "com.nxrt";
    t.opset = 1;
    t.inputs = {base.base, AddTableInitializer(g_.value(y->node->outputs[0]).name + "_table",
                                               *table, y->type)};
    t.outputs = {y->node->outputs[0]};
    chain.push_back(y->node);
    if (!Commit(std::move(t), chain)) return false;
    tables_[y->node->outputs[0]] = Tabulated{base.base, base.base_signed, *table};
    return true;
  }

  void TryGlobalAveragePool(const Node& pool) {
    if (pool.inputs.size() != 1 || pool.outputs.size() != 1) return;
    auto x = ActivationDq(pool.inputs[0]);
    auto y = SoleQ(pool.outputs[0]);
    if (!x || !y || x->zp < 0 || y->zp < 0 || x->type != y->type) return;
    Node q;
    q.name = pool.name.empty() ? "qlinear_global_average_pool" : pool.name + "_qlinear";
    q.op_type = "QLinearGlobalAveragePool";
    q.domain = "com.microsoft";
    Attribute layout;
    layout.name = "channels_last";
    layout.type = NX_ATTR_INT;
    layout.i = 0;
    q.attributes.push_back(layout);
    q.inputs = {x->data, x->scale, x->zp, y->scale, y->zp};
    q.outputs = {y->node->outputs[0]};
    Commit(std::move(q), {&pool, y->node});
  }

  // DQ -> op -> Q with Q undoing DQ: the op runs on the quantized tensor itself.
  void TryPassThrough(const Node& op) {
    if (op.inputs.empty() || op.outputs.size() != 1) return;
    auto x = ActivationDq(op.inputs[0]);
    auto y = SoleQ(op.outputs[0]);
    if (!x || !y || x->type != y->type || !SameConstant(g_, x->scale, y->scale) ||
        !SameConstant(g_, x->zp, y->zp))
      return;
    Node q = op;
    q.inputs[0] = x->data;
    q.outputs = {y->node->outputs[0]};
    Commit(std::move(q), {&op, y->node});
  }

  // A Resize that picks input elements (mode nearest): it runs on the 8-bit values themselves.
  static bool IsNearest(const Node& n) {
    const Attribute* mode = n.FindAttribute("mode");
    return mode == nullptr || mode->s == "nearest";
  }

  // DQ -> Split -> Q on every output, each Q undoing the DQ (YOLO's C2f halves): the Split runs
  // on the 8-bit tensor.
  void TrySplit(const Node& split) {
    if (split.inputs.empty() || split.outputs.empty()) return;
    auto x = ActivationDq(split.inputs[0]);
    if (!x) return;
    std::vector<const Node*> chain;
    Node q = split;
    q.inputs[0] = x->data;
    for (size_t i = 0; i < split.outputs.size(); ++i) {
      if (split.outputs[i] < 0) return;
      auto y = SoleQ(split.outputs[i]);
      if (!y || y->type != x->type || !SameConstant(g_, x->scale, y->scale) ||
          !SameConstant(g_, x->zp, y->zp))
        return;
      q.outputs[i] = y->node->outputs[0];
      chain.push_back(y->node);
    }
    chain.push_back(&split);
    Commit(std::move(q), chain);
  }

  // DQ(x1), DQ(x2), ... -> Concat -> Q => QLinearConcat, which copies the inputs quantized like
  // the output and requantizes the others by table.
  void TryConcat(const Node& concat) {
    if (concat.inputs.empty() || concat.outputs.size() != 1) return;
    auto y = SoleQ(concat.outputs[0]);
    if (!y || y->zp < 0) return;
    Node q;
    q.name = concat.name.empty() ? "qlinear_concat" : concat.name + "_qlinear";
    q.op_type = "QLinearConcat";
    q.domain = "com.microsoft";
    q.inputs = {y->scale, y->zp};
    for (int v : concat.inputs) {
      auto x = ActivationDq(v);
      if (!x || x->zp < 0 || x->type != y->type) return;
      q.inputs.insert(q.inputs.end(), {x->data, x->scale, x->zp});
    }
    for (const Attribute& a : concat.attributes) q.attributes.push_back(a);
    q.outputs = {y->node->outputs[0]};
    Commit(std::move(q), {&concat, y->node});
  }

  // DQ and Q nodes (and tables: a table composed into a later one) whose outputs nobody reads
  // any more (their readers were folded).
  void RemoveUnusedQdq() {
    auto unused = [&](const Node& n) {
      if (!IsOnnx(n, "DequantizeLinear") && !IsOnnx(n, "QuantizeLinear") &&
          !(n.domain == "com.nxrt" && n.op_type == "TableLookup"))
        return false;
      if (n.outputs.size() != 1 || n.outputs[0] < 0) return false;
      const ValueDef& out = g_.value(n.outputs[0]);
      return out.consumers.empty() && !out.is_graph_output;
    };
    // Removing a DQ can leave the Q before it unused: repeat until nothing changes.
    while (std::any_of(g_.nodes.begin(), g_.nodes.end(), unused)) {
      std::vector<Node> kept;
      kept.reserve(g_.nodes.size());
      for (Node& n : g_.nodes)
        if (!unused(n)) kept.push_back(std::move(n));
      g_.nodes = std::move(kept);
      g_.Finalize();
    }
  }

  Graph& g_;
  const KernelRegistry& registry_;
  std::vector<bool> dead_;
  std::vector<std::unique_ptr<Node>> replacement_;
  std::map<int, Tabulated> tables_;  // the tables this pass made, by output value
  int folds_ = 0;
};

}  // namespace

int FoldQdq(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps, int cpu_ep,
            const Logger& logger) {
  if (cpu_ep < 0 || eps.size() != 1) return 0;
  const KernelRegistry* registry = eps[static_cast<size_t>(cpu_ep)]->registry();
  if (registry == nullptr) return 0;
  bool any = false;
  for (const Node& n : graph.nodes)
    any = any || IsOnnx(n, "DequantizeLinear") || IsOnnx(n, "QLinearConv");
  if (!any) return 0;
  const int folds = QdqFolder(graph, *registry).Run();
  if (folds > 0) QuantizedChannelsLast(graph, *registry);
  if (folds > 0)
    logger.Log(NX_LOG_INFO, graph.source + ": folded " + std::to_string(folds) +
                                " QuantizeLinear/DequantizeLinear islands into quantized ops");
  return folds;
}

}  // namespace nxrt
