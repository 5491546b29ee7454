#include "session/graph_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "base/error.h"
#include "graph/batch_norm_affine.h"
#include "graph/float_initializer.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

// The only consumer of value `v` when it has exactly one and is not a graph output.
const Node* SoleConsumer(const Graph& g, int v, const std::vector<bool>& dead) {
  if (v < 0) return nullptr;
  const ValueDef& def = g.value(v);
  if (def.is_graph_output || def.consumers.size() != 1) return nullptr;
  const Node& n = g.nodes[static_cast<size_t>(def.consumers[0])];
  return dead[static_cast<size_t>(n.index)] ? nullptr : &n;
}

bool IsOnnx(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// A float scalar constant (any rank with one element), if `v` is one.
std::optional<float> ScalarConstant(const Graph& g, int v) {
  if (v < 0) return std::nullopt;
  const ValuePtr& init = g.value(v).initializer;
  if (!init || init->count != 1) return std::nullopt;
  if (init->type == NX_TYPE_FLOAT) return *static_cast<const float*>(init->data);
  if (init->type == NX_TYPE_DOUBLE)
    return static_cast<float>(*static_cast<const double*>(init->data));
  return std::nullopt;
}

bool StaticShapesEqual(const Graph& g, int a, int b) {
  const TypeInfo& ta = g.value(a).type;
  const TypeInfo& tb = g.value(b).type;
  if (!ta.has_shape || !tb.has_shape || ta.dims != tb.dims) return false;
  for (int64_t d : ta.dims)
    if (d < 0) return false;
  return true;
}

// Describes `act` as a fused activation (name + params), if it is one we fuse.
bool ActivationOf(const Graph& g, const Node& act, std::string* name, std::vector<float>* params) {
  params->clear();
  if (!act.domain.empty()) return false;
  auto attr_f = [&](const char* key, float fallback) {
    const Attribute* a = act.FindAttribute(key);
    return a ? a->f : fallback;
  };
  if (act.op_type == "Relu" || act.op_type == "Sigmoid" || act.op_type == "Tanh") {
    *name = act.op_type;
    return true;
  }
  if (act.op_type == "LeakyRelu") {
    *name = "LeakyRelu";
    params->push_back(attr_f("alpha", 0.01f));
    return true;
  }
  if (act.op_type == "HardSwish") {  // x * HardSigmoid(x) with alpha 1/6, beta 0.5; no attributes
    *name = "HardSwish";
    return true;
  }
  if (act.op_type == "HardSigmoid") {
    *name = "HardSigmoid";
    params->push_back(attr_f("alpha", 0.2f));
    params->push_back(attr_f("beta", 0.5f));
    return true;
  }
  if (act.op_type == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (act.opset < 11) {
      lo = attr_f("min", lo);
      hi = attr_f("max", hi);
    } else {
      if (act.inputs.size() > 1 && act.inputs[1] >= 0) {
        auto v = ScalarConstant(g, act.inputs[1]);
        if (!v) return false;
        lo = *v;
      }
      if (act.inputs.size() > 2 && act.inputs[2] >= 0) {
        auto v = ScalarConstant(g, act.inputs[2]);
        if (!v) return false;
        hi = *v;
      }
    }
    *name = "Clip";
    *params = {lo, hi};
    return true;
  }
  return false;
}

Attribute StringAttr(const std::string& name, const std::string& value) {
  Attribute a;
  a.name = name;
  a.type = NX_ATTR_STRING;
  a.s = value;
  return a;
}

Attribute FloatAttr(const std::string& name, float value) {
  Attribute a;
  a.name = name;
  a.type = NX_ATTR_FLOAT;
  a.f = value;
  return a;
}

Attribute FloatsAttr(const std::string& name, const std::vector<float>& values) {
  Attribute a;
  a.name = name;
  a.type = NX_ATTR_FLOATS;
  a.floats = values;
  return a;
}

class Fuser {
 public:
  Fuser(Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps)
      : g_(g), eps_(eps), dead_(g.nodes.size(), false), replacement_(g.nodes.size()) {}

  // Pass 1 fuses convolutions and the written-out Gelu and HardSwish; pass 2 matrix products,
  // whose activation may be a Gelu pass 1 made.
  int Run(int pass) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (dead_[i]) continue;
      const Node& n = g_.nodes[i];
      if (pass == 2) {
        if (IsOnnx(n, "MatMul")) TryMatMul(n);
        if (IsOnnx(n, "MatMulInteger")) TryMatMulIntegerToFloat(n);
        if (IsOnnx(n, "ConvInteger")) TryConvIntegerToFloat(n);
        if (IsOnnx(n, "Softmax")) TryAttention(n);
      } else if (IsOnnx(n, "Conv")) {
        TryConv(n);
      } else if (IsOnnx(n, "Erf")) {
        TryGelu(n);
      } else if (IsOnnx(n, "ReduceMean")) {
        TryLayerNorm(n);
      } else if (IsOnnx(n, "Add")) {
        TryHardSwish(n);
      }
    }
    if (fusions_ == 0) return 0;
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
    return fusions_;
  }

 private:
  bool SameEp(const Node& a, const Node& b) const {
    return a.assigned_ep == b.assigned_ep && a.assigned_ep >= 0 &&
           a.assigned_device == b.assigned_device;
  }

  // Installs `fused` in place of `chain` (last node last) if the EP has a kernel for it.
  bool Commit(Node fused, const std::vector<const Node*>& chain, int opset = 1) {
    const Node& last = *chain.back();
    fused.owner = &g_;
    fused.index = last.index;
    fused.assigned_ep = chain.front()->assigned_ep;
    fused.assigned_device = chain.front()->assigned_device;
    fused.opset = opset;
    const KernelRegistry* registry = eps_[static_cast<size_t>(fused.assigned_ep)]->registry();
    if (registry == nullptr || registry->Find(fused, nullptr) == nullptr) return false;
    for (const Node* n : chain) dead_[static_cast<size_t>(n->index)] = true;
    replacement_[static_cast<size_t>(last.index)] = std::make_unique<Node>(std::move(fused));
    ++fusions_;
    return true;
  }

  // y -> Sigmoid -> Mul(y, Sigmoid(y)) (either operand order), where y feeds only these two
  // and the Sigmoid only the Mul: EfficientNet's SiLU after every convolution.
  bool MatchSwish(const Node& conv, int y, const Node** sigmoid, const Node** mul) const {
    const ValueDef& def = g_.value(y);
    if (def.is_graph_output || def.consumers.size() != 2) return false;
    const Node* a = &g_.nodes[static_cast<size_t>(def.consumers[0])];
    const Node* b = &g_.nodes[static_cast<size_t>(def.consumers[1])];
    if (IsOnnx(*b, "Sigmoid")) std::swap(a, b);
    if (!IsOnnx(*a, "Sigmoid") || !IsOnnx(*b, "Mul") || a->inputs.size() != 1 ||
        b->inputs.size() != 2 || a->outputs.size() != 1 || b->outputs.size() != 1 ||
        !SameEp(conv, *a) || !SameEp(conv, *b) || dead_[static_cast<size_t>(a->index)] ||
        dead_[static_cast<size_t>(b->index)]) {
      return false;
    }
    if (SoleConsumer(g_, a->outputs[0], dead_) != b) return false;
    const int s = a->outputs[0];
    if (!((b->inputs[0] == y && b->inputs[1] == s) || (b->inputs[0] == s && b->inputs[1] == y)))
      return false;
    *sigmoid = a;
    *mul = b;
    return true;
  }

  // x -> Add(x, 3) -> Clip(0, 6) -> Mul(x, clip) -> Div(6) (or Mul(1/6)), operands in either
  // order, where x feeds only the Add and the Mul: HardSwish as exporters without the op write it
  // (Paddle's PP-LCNet: 24 of them in PaddleOCR's detector). `chain` gets the four nodes.
  bool MatchHardSwish(int x, int ep, std::vector<const Node*>* chain) const {
    const ValueDef& def = g_.value(x);
    if (def.is_graph_output || def.consumers.size() != 2) return false;
    const Node* add = &g_.nodes[static_cast<size_t>(def.consumers[0])];
    const Node* mul = &g_.nodes[static_cast<size_t>(def.consumers[1])];
    if (IsOnnx(*mul, "Add")) std::swap(add, mul);
    auto usable = [&](const Node* n, size_t inputs) {
      return n->inputs.size() == inputs && n->outputs.size() == 1 && n->assigned_ep == ep &&
             !dead_[static_cast<size_t>(n->index)];
    };
    if (!IsOnnx(*add, "Add") || !IsOnnx(*mul, "Mul") || !usable(add, 2) || !usable(mul, 2))
      return false;
    auto other = [](const Node& n, int v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; };
    auto three = ScalarConstant(g_, other(*add, x));
    if (!three || *three != 3.0f) return false;
    const Node* clip = SoleConsumer(g_, add->outputs[0], dead_);
    std::string act;
    std::vector<float> bounds;
    if (!clip || !IsOnnx(*clip, "Clip") || clip->assigned_ep != ep || clip->outputs.size() != 1 ||
        !ActivationOf(g_, *clip, &act, &bounds) || bounds != std::vector<float>{0.0f, 6.0f})
      return false;
    if (SoleConsumer(g_, clip->outputs[0], dead_) != mul || other(*mul, clip->outputs[0]) != x)
      return false;
    const Node* scale = SoleConsumer(g_, mul->outputs[0], dead_);
    if (!scale || !usable(scale, 2) || scale->inputs[0] != mul->outputs[0]) return false;
    auto c = ScalarConstant(g_, scale->inputs[1]);
    const bool div6 = IsOnnx(*scale, "Div") && c && *c == 6.0f;
    const bool mul6 = IsOnnx(*scale, "Mul") && c && std::fabs(*c - 1.0f / 6.0f) < 1e-7f;
    if (!div6 && !mul6) return false;
    *chain = {add, clip, mul, scale};
    return true;
  }

  // A HardSwish written out (MatchHardSwish) whose input no convolution claimed: one HardSwish
  // node instead of four passes over the tensor.
  void TryHardSwish(const Node& add) {
    for (int x : add.inputs) {
      std::vector<const Node*> chain;
      if (x < 0 || !MatchHardSwish(x, add.assigned_ep, &chain) || chain.front() != &add) continue;
      Node fused;
      fused.name = add.name.empty() ? "hard_swish" : add.name + "_hard_swish";
      fused.op_type = "HardSwish";
      fused.inputs = {x};
      fused.outputs = {chain.back()->outputs[0]};
      Commit(std::move(fused), chain, /*opset=*/14);
      return;
    }
  }

  // A new float initializer of shape `dims` (a name no value has), for folded weights.
  int AddInitializer(const std::string& base, const std::vector<int64_t>& dims,
                     const std::vector<float>& data) {
    return AddFloatInitializer(g_, base, dims, data);
  }

  // Conv -> Mul(a) [-> Add(b)] or Conv -> Add(b), with a and b single-element float constants
  // (Paddle's learnable affine after each PP-LCNet convolution: y = a conv(x) + b), folded into
  // new weights a W and bias a B + b of `fused`; `chain` and `y` advance past the folded nodes.
  // Needs W (and B) as float initializers. Returns the node after the chain.
  // The per-output-channel scale and shift of an inference BatchNormalization on this EP reading
  // y (the convolution's output, channels on axis 1) whose four parameters are float constants of
  // m elements (graph/batch_norm_affine.h).
  bool BatchNormAffine(const Node& conv, const Node* bn, int y, int64_t m, std::vector<float>& s,
                       std::vector<float>& t) const {
    return bn && SameEp(conv, *bn) && !bn->inputs.empty() && bn->inputs[0] == y &&
           InferenceBatchNormAffine(g_, *bn, m, s, t);
  }

  // Folds what follows the convolution's output y into new weights and bias of `fused`: an
  // inference BatchNormalization (Paddle and un-folded PyTorch exports), then Mul by and Add of
  // single-element constants (Paddle's affine after PP-LCNet convolutions), each optional, in
  // that order. Returns the sole consumer of the last folded output.
  const Node* FoldScalarAffine(const Node& conv, Node& fused, std::vector<const Node*>& chain,
                               int& y) {
    const Node* next = SoleConsumer(g_, y, dead_);
    const int w_index = conv.inputs.size() > 1 ? conv.inputs[1] : -1;
    const int b_index = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
    if (!next || w_index < 0) return next;
    const ValuePtr w = g_.value(w_index).initializer;
    const ValuePtr b = b_index >= 0 ? g_.value(b_index).initializer : nullptr;
    if (!w || w->type != NX_TYPE_FLOAT || w->dims.empty() || w->dims[0] <= 0 ||
        (b_index >= 0 && !b) ||
        (b && (b->type != NX_TYPE_FLOAT || b->count != static_cast<size_t>(w->dims[0]))))
      return next;
    const int64_t m = w->dims[0];
    // y' = scale[o] * y + shift[o] per output channel o.
    std::vector<float> scale(static_cast<size_t>(m), 1.0f), shift(static_cast<size_t>(m), 0.0f);
    bool folded = false;
    if (BatchNormAffine(conv, next, y, m, scale, shift)) {
      chain.push_back(next);
      y = next->outputs[0];
      next = SoleConsumer(g_, y, dead_);
      folded = true;
    }
    auto operand = [&](const Node* n, const char* op) -> std::optional<float> {
      if (!n || !IsOnnx(*n, op) || !SameEp(conv, *n) || n->inputs.size() != 2 ||
          n->outputs.size() != 1)
        return std::nullopt;
      const int c = n->inputs[0] == y ? n->inputs[1] : n->inputs[0];
      // A constant of higher rank would broadcast the result to more dimensions.
      if (c < 0 || !g_.value(c).initializer ||
          g_.value(c).initializer->dims.size() > w->dims.size())
        return std::nullopt;
      return ScalarConstant(g_, c);
    };
    for (const char* op : {"Mul", "Add"}) {  // in this order, either may be missing
      const auto c = operand(next, op);
      if (!c) continue;
      for (int64_t o = 0; o < m; ++o) {
        if (op[0] == 'M') {
          scale[o] *= *c;
          shift[o] *= *c;
        } else {
          shift[o] += *c;
        }
      }
      chain.push_back(next);
      y = next->outputs[0];
      next = SoleConsumer(g_, y, dead_);
      folded = true;
    }
    if (!folded) return next;
    const size_t per_channel = w->count / static_cast<size_t>(m);
    std::vector<float> wf(static_cast<const float*>(w->data),
                          static_cast<const float*>(w->data) + w->count);
    for (size_t i = 0; i < wf.size(); ++i) wf[i] *= scale[i / per_channel];
    std::vector<float> bf(shift);
    for (int64_t o = 0; b && o < m; ++o)
      bf[o] = scale[o] * static_cast<const float*>(b->data)[o] + shift[o];
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    const std::vector<int64_t> w_dims(w->dims.begin(), w->dims.end());
    fused.inputs[1] = AddInitializer(base + "_folded_weight", w_dims, wf);
    fused.inputs[2] = AddInitializer(base + "_folded_bias", {m}, bf);
    return next;
  }

  void TryConv(const Node& conv) {
    if (conv.outputs.size() != 1) return;
    Node fused = conv;
    fused.domain = kNxrtDomain;
    fused.op_type = "FusedConv";
    fused.name = conv.name.empty() ? "fused_conv" : conv.name + "_fused";
    fused.inputs.resize(3, -1);
    std::vector<const Node*> chain{&conv};
    int y = conv.outputs[0];
    const Node* next = FoldScalarAffine(conv, fused, chain, y);
    // Residual Add: the other operand must have exactly the convolution's static shape.
    if (next && IsOnnx(*next, "Add") && SameEp(conv, *next) && next->inputs.size() == 2) {
      int other = next->inputs[0] == y ? next->inputs[1] : next->inputs[0];
      if (other >= 0 && other != y && StaticShapesEqual(g_, y, other)) {
        fused.inputs.push_back(other);
        chain.push_back(next);
        y = next->outputs[0];
        next = SoleConsumer(g_, y, dead_);
      }
    }
    std::string act;
    std::vector<float> params;
    const Node* sigmoid = nullptr;
    const Node* mul = nullptr;
    std::vector<const Node*> hard_swish;
    if (MatchSwish(conv, y, &sigmoid, &mul)) {  // y * Sigmoid(y): SiLU, two consumers of y
      fused.attributes.push_back(StringAttr("activation", "Swish"));
      chain.push_back(sigmoid);
      chain.push_back(mul);
      y = mul->outputs[0];
    } else if (MatchHardSwish(y, conv.assigned_ep, &hard_swish)) {
      fused.attributes.push_back(StringAttr("activation", "HardSwish"));
      chain.insert(chain.end(), hard_swish.begin(), hard_swish.end());
      y = hard_swish.back()->outputs[0];
    } else if (next && SameEp(conv, *next) && ActivationOf(g_, *next, &act, &params)) {
      fused.attributes.push_back(StringAttr("activation", act));
      if (!params.empty()) fused.attributes.push_back(FloatsAttr("activation_params", params));
      chain.push_back(next);
      y = next->outputs[0];
    }
    if (chain.size() == 1) return;
    fused.outputs = {y};
    Commit(std::move(fused), chain);
  }

  // x / sqrt(2) (or x * 1/sqrt(2)) -> Erf -> + 1 -> * x -> * 0.5, in either operand order.
  void TryGelu(const Node& erf) {
    if (erf.inputs.empty() || erf.inputs[0] < 0) return;
    const ValueDef& erf_in = g_.value(erf.inputs[0]);
    if (erf_in.producer < 0) return;
    const Node& scale = g_.nodes[static_cast<size_t>(erf_in.producer)];
    if (dead_[static_cast<size_t>(scale.index)] || scale.inputs.size() != 2 ||
        scale.outputs[0] != erf.inputs[0])
      return;
    int x = scale.inputs[0];
    auto c = ScalarConstant(g_, scale.inputs[1]);
    bool ok = c && ((IsOnnx(scale, "Div") && std::fabs(*c - 1.41421356f) < 1e-3f) ||
                    (IsOnnx(scale, "Mul") && std::fabs(*c - 0.70710678f) < 1e-3f));
    if (!ok || g_.value(erf.inputs[0]).consumers.size() != 1) return;
    const Node* add = SoleConsumer(g_, erf.outputs[0], dead_);
    if (!add || !IsOnnx(*add, "Add") || add->inputs.size() != 2) return;
    int one = add->inputs[0] == erf.outputs[0] ? add->inputs[1] : add->inputs[0];
    auto one_v = ScalarConstant(g_, one);
    if (!one_v || *one_v != 1.0f) return;
    const Node* mul_x = SoleConsumer(g_, add->outputs[0], dead_);
    if (!mul_x || !IsOnnx(*mul_x, "Mul") || mul_x->inputs.size() != 2) return;
    int other = mul_x->inputs[0] == add->outputs[0] ? mul_x->inputs[1] : mul_x->inputs[0];
    if (other != x) return;
    const Node* half = SoleConsumer(g_, mul_x->outputs[0], dead_);
    if (!half || !IsOnnx(*half, "Mul") || half->inputs.size() != 2) return;
    int h = half->inputs[0] == mul_x->outputs[0] ? half->inputs[1] : half->inputs[0];
    auto half_v = ScalarConstant(g_, h);
    if (!half_v || *half_v != 0.5f) return;
    for (const Node* n : {&scale, add, mul_x, half})
      if (!SameEp(erf, *n)) return;
    Node fused;
    fused.name = erf.name.empty() ? "gelu" : erf.name + "_gelu";
    fused.domain = kNxrtDomain;
    fused.op_type = "Gelu";
    fused.inputs = {x};
    fused.outputs = {half->outputs[0]};
    Commit(std::move(fused), {&scale, &erf, add, mul_x, half});
  }

  // MatMul(A, constant 2-D float B) -> Add(constant bias, one value per column) [-> activation]
  // where each feeds only the next: transformer feed-forward and projection layers.
  void TryMatMul(const Node& mm) {
    if (mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.inputs[0] < 0 || mm.inputs[1] < 0)
      return;
    const ValuePtr& b = g_.value(mm.inputs[1]).initializer;
    const TypeInfo& a_type = g_.value(mm.inputs[0]).type;
    if (!b || b->type != NX_TYPE_FLOAT || b->dims.size() != 2 || b->count == 0 ||
        a_type.elem_type != NX_TYPE_FLOAT)
      return;
    const int64_t n = b->dims[1];
    const int y = mm.outputs[0];
    const Node* add = SoleConsumer(g_, y, dead_);
    if (!add || !IsOnnx(*add, "Add") || !SameEp(mm, *add) || add->inputs.size() != 2 ||
        add->outputs.size() != 1)
      return;
    const int bias = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    if (bias < 0 || bias == y) return;
    const ValuePtr& c = g_.value(bias).initializer;
    if (!c || c->type != NX_TYPE_FLOAT || static_cast<int64_t>(c->count) != n || c->dims.empty() ||
        c->dims.back() != n)
      return;
    // A bias of higher rank than the product would broadcast the sum to more dimensions.
    if (c->dims.size() > 1) {
      const TypeInfo& y_type = g_.value(y).type;
      if (!y_type.has_shape || y_type.dims.size() < c->dims.size()) return;
    }
    Node fused;
    fused.name = mm.name.empty() ? "fused_matmul" : mm.name + "_fused";
    fused.domain = kNxrtDomain;
    fused.op_type = "FusedMatMul";
    fused.inputs = {mm.inputs[0], mm.inputs[1], bias};
    std::vector<const Node*> chain{&mm, add};
    int out = add->outputs[0];
    const Node* next = SoleConsumer(g_, out, dead_);
    std::string act;
    std::vector<float> params;
    if (next && SameEp(mm, *next) && next->outputs.size() == 1) {
      if (ActivationOf(g_, *next, &act, &params) &&
          (act == "Relu" || act == "LeakyRelu" || act == "Sigmoid" || act == "Tanh")) {
        fused.attributes.push_back(StringAttr("activation", act));
        if (!params.empty()) fused.attributes.push_back(FloatsAttr("activation_params", params));
        chain.push_back(next);
      } else if (IsErfGelu(*next)) {
        fused.attributes.push_back(StringAttr("activation", "Gelu"));
        chain.push_back(next);
      }
    }
    fused.outputs = {chain.back()->outputs[0]};
    Commit(std::move(fused), chain);
  }

  // Whether value v is per tensor: a constant of one element, or DynamicQuantizeLinear's scale
  // or zero point (scalars by definition).
  bool PerTensor(int v) const {
    if (v < 0) return false;
    const ValueDef& d = g_.value(v);
    if (d.initializer) return d.initializer->count == 1;
    if (d.producer < 0) return false;
    const Node& p = g_.nodes[static_cast<size_t>(d.producer)];
    return IsOnnx(p, "DynamicQuantizeLinear") && p.outputs.size() == 3 && p.outputs[0] != v;
  }

  // The float scaling quantize_dynamic writes after an integer product `op` (MatMulInteger or
  // ConvInteger, its zero points given): Cast(float) -> Mul(., a_scale * w_scale), where the
  // scales' Mul multiplies the activations' per-tensor scale and a float constant that
  // `weight_scale` accepts. The Cast, the Mul and the two scales (activations', weights'), if
  // that is what follows `op`.
  struct IntegerScaling {
    const Node* cast = nullptr;
    const Node* mul = nullptr;
    int a_scale = -1, w_scale = -1;
  };
  template <class WeightScale>
  std::optional<IntegerScaling> ScalingAfter(const Node& op, int a_zp, int w_zp,
                                             WeightScale&& weight_scale) const {
    if (a_zp >= 0 && !PerTensor(a_zp)) return std::nullopt;
    if (w_zp >= 0 && !g_.value(w_zp).initializer) return std::nullopt;
    IntegerScaling s;
    s.cast = SoleConsumer(g_, op.outputs[0], dead_);
    if (!s.cast || !IsOnnx(*s.cast, "Cast") || !SameEp(op, *s.cast) || s.cast->outputs.size() != 1)
      return std::nullopt;
    const Attribute* to = s.cast->FindAttribute("to");
    if (!to || to->i != NX_TYPE_FLOAT) return std::nullopt;
    s.mul = SoleConsumer(g_, s.cast->outputs[0], dead_);
    if (!s.mul || !IsOnnx(*s.mul, "Mul") || !SameEp(op, *s.mul) || s.mul->inputs.size() != 2 ||
        s.mul->outputs.size() != 1)
      return std::nullopt;
    const int cast_out = s.cast->outputs[0];
    const int scales = s.mul->inputs[0] == cast_out ? s.mul->inputs[1] : s.mul->inputs[0];
    if (scales < 0 || scales == cast_out || g_.value(scales).producer < 0) return std::nullopt;
    const Node& product = g_.nodes[static_cast<size_t>(g_.value(scales).producer)];
    if (!IsOnnx(product, "Mul") || product.inputs.size() != 2 || product.inputs[0] < 0 ||
        product.inputs[1] < 0)
      return std::nullopt;
    s.a_scale = product.inputs[0];
    s.w_scale = product.inputs[1];
    if (!weight_scale(s.w_scale) || !PerTensor(s.a_scale)) std::swap(s.a_scale, s.w_scale);
    if (!weight_scale(s.w_scale) || !PerTensor(s.a_scale)) return std::nullopt;
    if (g_.value(s.a_scale).type.elem_type != NX_TYPE_FLOAT) return std::nullopt;
    return s;
  }

  // quantize_dynamic's product: MatMulInteger(A, const 2-D B, a_zp, b_zp) -> Cast(float) ->
  // Mul(., a_scale * b_scale) [-> Add(const bias of N)], the scales' product a Mul of A's
  // per-tensor scale and B's constant one => com.microsoft MatMulIntegerToFloat, whose 8-bit
  // GEMM scales and biases each finished tile instead of three passes over an int32 and a float
  // copy of the product. The same float operations in the same order: float(sum) * (a_s * b_s)
  // (+ bias).
  void TryMatMulIntegerToFloat(const Node& mm) {
    if (mm.inputs.size() < 2 || mm.outputs.size() != 1 || mm.inputs[0] < 0 || mm.inputs[1] < 0)
      return;
    const ValuePtr& b = g_.value(mm.inputs[1]).initializer;
    if (!b || b->dims.size() != 2 || (b->type != NX_TYPE_INT8 && b->type != NX_TYPE_UINT8)) return;
    const int64_t n = b->dims[1];
    const int a_zp = mm.inputs.size() > 2 ? mm.inputs[2] : -1;
    const int b_zp = mm.inputs.size() > 3 ? mm.inputs[3] : -1;
    // B's scale: a float constant of 1 or N elements.
    const auto scaling = ScalingAfter(mm, a_zp, b_zp, [&](int v) {
      const ValuePtr& c = g_.value(v).initializer;
      return c && c->type == NX_TYPE_FLOAT && c->dims.size() <= 1 &&
             (c->count == 1 || static_cast<int64_t>(c->count) == n);
    });
    if (!scaling) return;
    const Node* mul = scaling->mul;
    Node fused;
    fused.name = mm.name.empty() ? "matmul_integer_to_float" : mm.name + "_to_float";
    fused.domain = "com.microsoft";
    fused.op_type = "MatMulIntegerToFloat";
    fused.inputs = {mm.inputs[0], mm.inputs[1], scaling->a_scale, scaling->w_scale, a_zp, b_zp};
    std::vector<const Node*> chain{&mm, scaling->cast, mul};
    const Node* add = SoleConsumer(g_, mul->outputs[0], dead_);
    if (add && IsOnnx(*add, "Add") && SameEp(mm, *add) && add->inputs.size() == 2 &&
        add->outputs.size() == 1) {
      const int bias = add->inputs[0] == mul->outputs[0] ? add->inputs[1] : add->inputs[0];
      const ValuePtr& c =
          bias >= 0 && bias != mul->outputs[0] ? g_.value(bias).initializer : ValuePtr{};
      if (c && c->type == NX_TYPE_FLOAT && c->dims.size() == 1 &&
          static_cast<int64_t>(c->count) == n) {
        fused.inputs.push_back(bias);
        chain.push_back(add);
      }
    }
    while (!fused.inputs.empty() && fused.inputs.back() < 0) fused.inputs.pop_back();
    fused.outputs = {chain.back()->outputs[0]};
    Commit(std::move(fused), chain);
  }

  // quantize_dynamic's convolution: ConvInteger(x, const W [M, ...], x_zp, const w_zp) ->
  // Cast(float) -> Mul(., x_scale * w_scale) [-> Add(const bias of M along the channel axis)]
  // [-> Relu | Clip], both scales per tensor (x's from DynamicQuantizeLinear, w's a constant) =>
  // com.nxrt ConvIntegerToFloat, whose tiles go to float once where the chain wrote an int32
  // copy and made three float passes over it (a third of quantize_dynamic's MobileNetV2). The
  // same float operations in the same order: float(sum) * (x_s * w_s) (+ bias), then the clamp.
  void TryConvIntegerToFloat(const Node& conv) {
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1 || conv.inputs[0] < 0 ||
        conv.inputs[1] < 0)
      return;
    const ValuePtr& w = g_.value(conv.inputs[1]).initializer;
    if (!w || w->dims.size() < 3 || (w->type != NX_TYPE_INT8 && w->type != NX_TYPE_UINT8)) return;
    const int64_t m = w->dims[0];
    const size_t rank = w->dims.size();  // of the output too
    const int x_zp = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
    const int w_zp = conv.inputs.size() > 3 ? conv.inputs[3] : -1;
    const auto scaling = ScalingAfter(conv, x_zp, w_zp, [&](int v) {
      const ValuePtr& c = g_.value(v).initializer;
      return c && c->type == NX_TYPE_FLOAT && c->count == 1;
    });
    if (!scaling) return;
    const Node* mul = scaling->mul;
    Node fused;
    fused.name = conv.name.empty() ? "conv_integer_to_float" : conv.name + "_to_float";
    fused.domain = "com.nxrt";
    fused.op_type = "ConvIntegerToFloat";
    fused.attributes = conv.attributes;
    fused.inputs = {conv.inputs[0], conv.inputs[1], x_zp, w_zp, scaling->a_scale, scaling->w_scale};
    std::vector<const Node*> chain{&conv, scaling->cast, mul};
    const Node* next = SoleConsumer(g_, mul->outputs[0], dead_);
    if (next && IsOnnx(*next, "Add") && SameEp(conv, *next) && next->inputs.size() == 2 &&
        next->outputs.size() == 1) {
      const int bias = next->inputs[0] == mul->outputs[0] ? next->inputs[1] : next->inputs[0];
      const ValuePtr& c =
          bias >= 0 && bias != mul->outputs[0] ? g_.value(bias).initializer : ValuePtr{};
      // One value per output channel, broadcast along axis 1: [1, M, 1...] or [M, 1...].
      bool per_channel = c && c->type == NX_TYPE_FLOAT && static_cast<int64_t>(c->count) == m &&
                         (c->dims.size() == rank || c->dims.size() == rank - 1);
      if (per_channel) {
        const size_t axis = c->dims.size() == rank ? 1 : 0;
        for (size_t d = 0; d < c->dims.size(); ++d)
          per_channel = per_channel && c->dims[d] == (d == axis ? m : 1);
      }
      if (per_channel) {
        fused.inputs.push_back(bias);
        chain.push_back(next);
        next = SoleConsumer(g_, next->outputs[0], dead_);
      }
    }
    std::string act;
    std::vector<float> params;
    if (next && SameEp(conv, *next) && next->outputs.size() == 1 &&
        ActivationOf(g_, *next, &act, &params) && (act == "Relu" || act == "Clip")) {
      fused.attributes.push_back(StringAttr("activation", act));
      if (act == "Clip") fused.attributes.push_back(FloatsAttr("activation_params", params));
      chain.push_back(next);
    }
    fused.outputs = {chain.back()->outputs[0]};
    Commit(std::move(fused), chain);
  }

  // The axes a ReduceMean with keepdims reduces, made non-negative and sorted, if they are known
  // (an attribute before opset 18, a constant input from it) and `rank` is.
  std::optional<std::vector<int64_t>> MeanAxes(const Node& r, int64_t rank) const {
    const Attribute* keep = r.FindAttribute("keepdims");
    if ((keep && keep->i == 0) || rank <= 0 || r.outputs.size() != 1) return std::nullopt;
    std::vector<int64_t> axes;
    if (r.opset >= 18) {
      if (r.inputs.size() < 2 || r.inputs[1] < 0) return std::nullopt;
      const ValuePtr& init = g_.value(r.inputs[1]).initializer;
      if (!init || init->type != NX_TYPE_INT64) return std::nullopt;
      const auto* data = static_cast<const int64_t*>(init->data);
      axes.assign(data, data + init->count);
    } else {
      const Attribute* a = r.FindAttribute("axes");
      if (!a) return std::nullopt;
      axes = a->ints;
    }
    if (axes.empty()) return std::nullopt;  // all axes, or none with noop_with_empty_axes
    for (int64_t& a : axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return std::nullopt;
    }
    std::sort(axes.begin(), axes.end());
    return axes;
  }

  // A float constant whose shape, without leading 1s, is `dims` (the normalized dimensions): a
  // LayerNormalization scale or bias that broadcasts exactly as the written-out Mul or Add did.
  // (No higher rank than x's, which the written-out form would have broadcast x to.)
  bool IsNormalizedConstant(int v, const std::vector<int64_t>& dims, int64_t rank) const {
    if (v < 0) return false;
    const ValuePtr& init = g_.value(v).initializer;
    if (!init || init->type != NX_TYPE_FLOAT || static_cast<int64_t>(init->dims.size()) > rank)
      return false;
    std::vector<int64_t> d = init->dims;
    while (!d.empty() && d.front() == 1 && d.size() > dims.size()) d.erase(d.begin());
    return d == dims;
  }

  // ReduceMean(x) -> Sub(x, mean) = d -> Pow(d, 2) or Mul(d, d) -> ReduceMean -> Add(epsilon)
  // -> Sqrt -> Div(d, .) (or Reciprocal -> Mul(d, .)) -> Mul(scale) [-> Add(bias)], reducing the
  // trailing axes with keepdims: LayerNormalization as exporters before opset 17 write it out
  // (nine passes over the tensor), one ONNX LayerNormalization (opset 17) node.
  void TryLayerNorm(const Node& mean) {
    if (mean.inputs.empty() || mean.inputs[0] < 0) return;
    const int x = mean.inputs[0];
    const TypeInfo& xt = g_.value(x).type;
    if (xt.elem_type != NX_TYPE_FLOAT || !xt.has_shape) return;
    const int64_t rank = static_cast<int64_t>(xt.dims.size());
    auto axes = MeanAxes(mean, rank);
    if (!axes || axes->back() != rank - 1 ||
        axes->front() != rank - static_cast<int64_t>(axes->size()))
      return;  // not the trailing axes
    const int64_t axis = axes->front();
    std::vector<int64_t> normalized(xt.dims.begin() + axis, xt.dims.end());
    for (int64_t d : normalized)
      if (d <= 0) return;
    auto next = [&](int v, const char* op) -> const Node* {
      const Node* n = SoleConsumer(g_, v, dead_);
      return n && IsOnnx(*n, op) && SameEp(mean, *n) && n->outputs.size() == 1 ? n : nullptr;
    };
    const Node* sub = next(mean.outputs[0], "Sub");
    if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0])
      return;
    const int d = sub->outputs[0];
    const ValueDef& d_def = g_.value(d);
    std::vector<int> users = d_def.consumers;  // one entry per use: Mul(d, d) is there twice
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    if (d_def.is_graph_output || users.size() != 2) return;
    const Node* square = nullptr;
    const Node* divide = nullptr;
    for (int c : users) {
      const Node* n = &g_.nodes[static_cast<size_t>(c)];
      if (dead_[static_cast<size_t>(c)] || !SameEp(mean, *n) || n->inputs.size() != 2) return;
      if (IsOnnx(*n, "Pow") && n->inputs[0] == d) {
        auto two = ScalarConstant(g_, n->inputs[1]);
        if (two && *two == 2.0f) square = n;
      } else if (IsOnnx(*n, "Mul") && n->inputs[0] == d && n->inputs[1] == d) {
        square = n;
      } else if ((IsOnnx(*n, "Div") && n->inputs[0] == d) || IsOnnx(*n, "Mul")) {
        divide = n;
      }
    }
    if (!square || !divide) return;
    const Node* var = next(square->outputs[0], "ReduceMean");
    if (!var || MeanAxes(*var, rank) != axes) return;
    const Node* add_eps = next(var->outputs[0], "Add");
    if (!add_eps || add_eps->inputs.size() != 2) return;
    const bool var_first = add_eps->inputs[0] == var->outputs[0];
    auto eps = ScalarConstant(g_, add_eps->inputs[var_first ? 1 : 0]);
    if (!eps) return;
    const Node* sqrt = next(add_eps->outputs[0], "Sqrt");
    if (!sqrt) return;
    std::vector<const Node*> chain{&mean, sub, square, var, add_eps, sqrt};
    if (IsOnnx(*divide, "Div")) {
      if (divide->inputs[1] != sqrt->outputs[0]) return;
    } else {
      const Node* recip = next(sqrt->outputs[0], "Reciprocal");
      if (!recip || SoleConsumer(g_, recip->outputs[0], dead_) != divide) return;
      const int other = divide->inputs[0] == d ? divide->inputs[1] : divide->inputs[0];
      if (other != recip->outputs[0]) return;
      chain.push_back(recip);
    }
    chain.push_back(divide);
    const Node* scale = next(divide->outputs[0], "Mul");
    if (!scale || scale->inputs.size() != 2) return;
    const int gamma = scale->inputs[0] == divide->outputs[0] ? scale->inputs[1] : scale->inputs[0];
    if (!IsNormalizedConstant(gamma, normalized, rank)) return;
    chain.push_back(scale);
    int beta = -1;
    if (const Node* shift = next(scale->outputs[0], "Add"); shift && shift->inputs.size() == 2) {
      const int b = shift->inputs[0] == scale->outputs[0] ? shift->inputs[1] : shift->inputs[0];
      if (IsNormalizedConstant(b, normalized, rank)) {
        beta = b;
        chain.push_back(shift);
      }
    }
    Node fused;
    fused.name = mean.name.empty() ? "layer_norm" : mean.name + "_layer_norm";
    fused.op_type = "LayerNormalization";
    fused.inputs = {x, gamma};
    if (beta >= 0) fused.inputs.push_back(beta);
    Attribute axis_attr;
    axis_attr.name = "axis";
    axis_attr.type = NX_ATTR_INT;
    axis_attr.i = axis;
    fused.attributes.push_back(axis_attr);
    fused.attributes.push_back(FloatAttr("epsilon", *eps));
    fused.outputs = {chain.back()->outputs[0]};
    Commit(std::move(fused), chain, 17);
  }

  // A float tensor of known rank >= 2 (a MatMul operand that is a matrix or a stack of them).
  bool IsFloatMatrix(int v) const {
    if (v < 0) return false;
    const TypeInfo& t = g_.value(v).type;
    return t.elem_type == NX_TYPE_FLOAT && t.has_shape && t.dims.size() >= 2;
  }

  // The factor a Mul or Div by a scalar float constant applies to `x` (its first operand for a
  // Div, either for a Mul), if `n` is one.
  std::optional<float> ScaleOf(const Node& n, int x) const {
    if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
    if (IsOnnx(n, "Div") && n.inputs[0] == x) {
      auto c = ScalarConstant(g_, n.inputs[1]);
      if (c && *c != 0.0f) return 1.0f / *c;
    } else if (IsOnnx(n, "Mul") && (n.inputs[0] == x || n.inputs[1] == x)) {
      return ScalarConstant(g_, n.inputs[0] == x ? n.inputs[1] : n.inputs[0]);
    }
    return std::nullopt;
  }

  // [Q -> Mul/Div(scalar) ->] MatMul(Q, Kt) [-> Mul/Div(scalar)] [-> Add(mask)] -> Softmax(last
  // axis) -> MatMul(., V), each value feeding only the next node: attention as exporters write it
  // out (torch's MultiheadAttention scales Q first, BERT exports the scores), one com.nxrt
  // FusedAttention(Q, Kt, V[, mask]) with the product of both factors as `scale`.
  void TryAttention(const Node& softmax) {
    if (softmax.inputs.size() != 1 || softmax.outputs.size() != 1 || softmax.inputs[0] < 0) return;
    const TypeInfo& st = g_.value(softmax.inputs[0]).type;
    if (st.elem_type != NX_TYPE_FLOAT || !st.has_shape || st.dims.size() < 2) return;
    const int rank = static_cast<int>(st.dims.size());
    const Attribute* axis_attr = softmax.FindAttribute("axis");
    int64_t axis = axis_attr ? axis_attr->i : (softmax.opset >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return;
    const Node* pv = SoleConsumer(g_, softmax.outputs[0], dead_);
    if (!pv || !IsOnnx(*pv, "MatMul") || pv->inputs.size() != 2 ||
        pv->inputs[0] != softmax.outputs[0] || !SameEp(softmax, *pv) ||
        !IsFloatMatrix(pv->inputs[1]))
      return;
    std::vector<const Node*> chain{&softmax, pv};
    auto producer = [&](int v) -> const Node* {
      const int p = v < 0 ? -1 : g_.value(v).producer;
      if (p < 0 || dead_[static_cast<size_t>(p)]) return nullptr;
      const Node* n = &g_.nodes[static_cast<size_t>(p)];
      if (!SameEp(softmax, *n) || SoleConsumer(g_, v, dead_) == nullptr) return nullptr;
      return n;
    };
    // Backwards from the softmax: [the mask's Add,] [the scale,] the product, [Q's scale].
    struct Product {
      std::vector<const Node*> nodes;  // in graph order
      const Node* qk = nullptr;
      int q = -1;
      float scale = 1.0f;
    };
    auto match_product = [&](int x, Product* p) {
      const Node* n = producer(x);
      if (n && (IsOnnx(*n, "Mul") || IsOnnx(*n, "Div"))) {
        const bool const_second = ScalarConstant(g_, n->inputs[1]).has_value();
        const int in = const_second ? n->inputs[0] : n->inputs[1];
        auto f = ScaleOf(*n, in);
        if (!f) return false;
        p->scale *= *f;
        p->nodes.insert(p->nodes.begin(), n);
        n = producer(in);
      }
      if (!n || !IsOnnx(*n, "MatMul") || n->inputs.size() != 2 || !IsFloatMatrix(n->inputs[0]) ||
          !IsFloatMatrix(n->inputs[1]))
        return false;
      p->qk = n;
      p->q = n->inputs[0];
      p->nodes.insert(p->nodes.begin(), n);
      if (const Node* pre = producer(p->q); pre && (IsOnnx(*pre, "Mul") || IsOnnx(*pre, "Div"))) {
        const bool const_second = ScalarConstant(g_, pre->inputs[1]).has_value();
        const int qx = const_second ? pre->inputs[0] : pre->inputs[1];
        auto f = ScaleOf(*pre, qx);
        if (f && IsFloatMatrix(qx)) {
          p->scale *= *f;
          p->q = qx;
          p->nodes.insert(p->nodes.begin(), pre);
        }
      }
      return true;
    };
    Product product;
    int mask = -1;
    const Node* add = producer(softmax.inputs[0]);
    if (add && IsOnnx(*add, "Add") && add->inputs.size() == 2) {
      for (int side = 0; side < 2 && mask < 0; ++side) {
        product = Product{};
        if (match_product(add->inputs[static_cast<size_t>(side)], &product))
          mask = add->inputs[static_cast<size_t>(1 - side)];
      }
      if (mask < 0) return;
      const TypeInfo& mt = g_.value(mask).type;
      if (mt.elem_type != NX_TYPE_FLOAT || !mt.has_shape || mt.dims.size() > st.dims.size()) return;
      // The mask must not widen the scores' last two dimensions (FusedAttention keeps Q's rows
      // and Kt's columns): sizes 1, equal ones, or any mask size against scores known wider
      // than 1 (which only an equal size can then broadcast with).
      for (size_t k = 1; k <= std::min<size_t>(2, mt.dims.size()); ++k) {
        const int64_t md = mt.dims[mt.dims.size() - k], sd = st.dims[st.dims.size() - k];
        if (!(md == 1 || sd > 1 || (md >= 0 && md == sd))) return;
      }
      chain.insert(chain.begin(), add);
    } else if (!match_product(softmax.inputs[0], &product)) {
      return;
    }
    chain.insert(chain.begin(), product.nodes.begin(), product.nodes.end());
    const Node* qk = product.qk;
    const int q = product.q;
    const float scale = product.scale;
    Node fused;
    fused.name = softmax.name.empty() ? "fused_attention" : softmax.name + "_attention";
    fused.domain = kNxrtDomain;
    fused.op_type = "FusedAttention";
    fused.inputs = {q, qk->inputs[1], pv->inputs[1]};
    if (mask >= 0) fused.inputs.push_back(mask);
    fused.attributes.push_back(FloatAttr("scale", scale));
    fused.outputs = {pv->outputs[0]};
    Commit(std::move(fused), chain);
  }

  // Gelu with the exact erf form: nxrt's own (pass 1), onnxruntime's com.microsoft one (what its
  // optimiser writes into saved models) or ONNX's (opset 20, approximate none).
  static bool IsErfGelu(const Node& n) {
    if (n.inputs.size() != 1) return false;
    if ((n.domain == kNxrtDomain || n.domain == "com.microsoft") && n.op_type == "Gelu")
      return true;
    if (!IsOnnx(n, "Gelu")) return false;
    const Attribute* approximate = n.FindAttribute("approximate");
    return approximate == nullptr || approximate->s == "none";
  }

  Graph& g_;
  const std::vector<std::shared_ptr<EpInstance>>& eps_;
  std::vector<bool> dead_;
  std::vector<std::unique_ptr<Node>> replacement_;
  int fusions_ = 0;
};

}  // namespace

int FuseNodes(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps,
              const Logger& logger) {
  int fused = Fuser(graph, eps).Run(1);
  fused += Fuser(graph, eps).Run(2);
  if (fused > 0)
    logger.Log(NX_LOG_INFO, "graph fusion: " + std::to_string(fused) + " node chains fused");
  return fused;
}

}  // namespace nxrt
