#include "graph/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/element_type.h"
#include "graph/known_integers.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

// ---- Dimensions and shapes -----------------------------------------------------------------

// One dimension: a value >= 0, or unknown (-1) with an optional symbolic name.
struct Dim {
  int64_t value = -1;
  std::string param;
  bool known() const { return value >= 0; }
};
using Shape = std::vector<Dim>;

Dim Known(int64_t v) { return Dim{v, ""}; }
Dim Unknown() { return Dim{}; }

// Lists longer than this (ranks, axes, shape tensors) are not real models: infer nothing.
constexpr size_t kMaxListSize = 1 << 16;

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of dims [begin, end): -1 when a dim is unknown, nullopt on overflow.
std::optional<int64_t> Product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  bool unknown = false;
  for (size_t i = begin; i < end && i < s.size(); ++i) {
    if (!s[i].known()) {
      unknown = true;
      continue;
    }
    auto m = CheckedMul(p, s[i].value);
    if (!m) return std::nullopt;
    p = *m;
  }
  return unknown ? -1 : p;
}

// Axis `a` of a rank-`rank` tensor normalised to [0, rank), or nullopt when out of range.
std::optional<size_t> NormalizeAxis(int64_t a, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) return std::nullopt;
  return static_cast<size_t>(a < 0 ? a + r : a);
}

// ---- Attributes ----------------------------------------------------------------------------
// Each returns `fallback` when the attribute is absent and nullopt when it is present with the
// wrong type, so a malformed attribute stops inference instead of being read as the default.

std::optional<int64_t> IntAttr(const Node& n, const char* name, int64_t fallback) {
  const Attribute* a = n.FindAttribute(name);
  if (a == nullptr) return fallback;
  if (a->type != NX_ATTR_INT) return std::nullopt;
  return a->i;
}

std::optional<std::vector<int64_t>> IntsAttr(const Node& n, const char* name,
                                             std::vector<int64_t> fallback) {
  const Attribute* a = n.FindAttribute(name);
  if (a == nullptr) return fallback;
  if (a->type != NX_ATTR_INTS || a->ints.size() > kMaxListSize) return std::nullopt;
  return a->ints;
}

std::optional<std::string> StringAttr(const Node& n, const char* name, const char* fallback) {
  const Attribute* a = n.FindAttribute(name);
  if (a == nullptr) return std::string(fallback);
  if (a->type != NX_ATTR_STRING) return std::nullopt;
  return a->s;
}

// A usable tensor element type from an attribute value (Cast's `to`, ...).
NxElementType ElementTypeFrom(int64_t v) {
  if (v <= 0 || v > INT32_MAX || !IsKnownElementType(static_cast<int32_t>(v)))
    return NX_TYPE_UNDEFINED;
  return static_cast<NxElementType>(v);
}

// ---- What one node's inference sees and produces ---------------------------------------------

struct Inferred {
  NxValueKind kind = NX_VALUE_TENSOR;
  NxElementType type = NX_TYPE_UNDEFINED;
  std::optional<Shape> shape;
};

class Ctx {
 public:
  Ctx(const Graph& g, const Node& n, const KnownIntegerTable& known)
      : g_(g), n_(n), known_(known), out(n.outputs.size()) {}

  const Node& node() const { return n_; }
  int opset() const { return n_.opset; }
  size_t num_inputs() const { return n_.inputs.size(); }
  size_t num_outputs() const { return n_.outputs.size(); }

  const ValueDef* Def(size_t i) const {
    if (i >= n_.inputs.size() || n_.inputs[i] < 0) return nullptr;
    return &g_.value(n_.inputs[i]);
  }
  bool Has(size_t i) const { return Def(i) != nullptr; }

  // Element type of tensor input i (UNDEFINED when absent, unknown or not a tensor).
  NxElementType Type(size_t i) const {
    const ValueDef* d = Def(i);
    if (d == nullptr || d->type.kind != NX_VALUE_TENSOR) return NX_TYPE_UNDEFINED;
    return d->type.elem_type;
  }

  // Shape of tensor input i when its rank is known.
  std::optional<Shape> ShapeOf(size_t i) const {
    const ValueDef* d = Def(i);
    if (d == nullptr || d->type.kind != NX_VALUE_TENSOR || !d->type.has_shape) return std::nullopt;
    const TypeInfo& t = d->type;
    if (t.dims.size() > kMaxListSize) return std::nullopt;
    Shape s(t.dims.size());
    for (size_t k = 0; k < t.dims.size(); ++k) {
      if (t.dims[k] >= 0) {
        s[k].value = t.dims[k];
      } else if (k < t.dim_params.size()) {
        s[k].param = t.dim_params[k];
      }
    }
    return s;
  }

  // Constant data of input i (an initializer held in host memory).
  const Value* Const(size_t i) const {
    const ValueDef* d = Def(i);
    if (d == nullptr || !d->initializer) return nullptr;
    const Value* v = d->initializer.get();
    if (v->kind != NX_VALUE_TENSOR || !IsHostReadable(*v)) return nullptr;
    if (v->count > 0 && v->data == nullptr) return nullptr;
    return v;
  }

  // Integer constant input i (int64 or int32, rank <= 1) as int64 values: an initializer, or a
  // value computed from static shapes (known_integers.h).
  std::optional<std::vector<int64_t>> ConstInts(size_t i) const {
    const Value* v = Const(i);
    if (v == nullptr && i < n_.inputs.size() && n_.inputs[i] >= 0 &&
        static_cast<size_t>(n_.inputs[i]) < known_.size()) {
      const auto& k = known_[static_cast<size_t>(n_.inputs[i])];
      if (k) return k->values;
    }
    if (v == nullptr || v->dims.size() > 1 || v->count > kMaxListSize) return std::nullopt;
    std::vector<int64_t> out(v->count);
    if (v->type == NX_TYPE_INT64) {
      const auto* p = static_cast<const int64_t*>(v->data);
      std::copy(p, p + v->count, out.begin());
    } else if (v->type == NX_TYPE_INT32) {
      const auto* p = static_cast<const int32_t*>(v->data);
      std::copy(p, p + v->count, out.begin());
    } else {
      return std::nullopt;
    }
    return out;
  }

  // The rank of an input ConstInts reads (-1 when it reads nothing there).
  int ConstRank(size_t i) const {
    if (const Value* v = Const(i)) return static_cast<int>(v->dims.size());
    if (i < n_.inputs.size() && n_.inputs[i] >= 0 &&
        static_cast<size_t>(n_.inputs[i]) < known_.size()) {
      const auto& k = known_[static_cast<size_t>(n_.inputs[i])];
      if (k) return static_cast<int>(k->dims.size());
    }
    return -1;
  }

  // The one element type inputs [first, last) agree on (ignoring unknown ones), UNDEFINED when
  // none is known or two disagree (the model is invalid; the kernel lookup reports it).
  NxElementType CommonType(size_t first, size_t last) const {
    NxElementType t = NX_TYPE_UNDEFINED;
    for (size_t i = first; i < last && i < num_inputs(); ++i) {
      NxElementType u = Type(i);
      if (u == NX_TYPE_UNDEFINED) continue;
      if (t != NX_TYPE_UNDEFINED && u != t) return NX_TYPE_UNDEFINED;
      t = u;
    }
    return t;
  }

  void Set(size_t o, NxElementType type, std::optional<Shape> shape = std::nullopt) {
    if (o >= out.size() || type == NX_TYPE_UNDEFINED) return;
    out[o].kind = NX_VALUE_TENSOR;
    out[o].type = type;
    out[o].shape = std::move(shape);
  }

 private:
  const Graph& g_;
  const Node& n_;
  const KnownIntegerTable& known_;

 public:
  std::vector<Inferred> out;  // one per node output
};

using InferFn = void (*)(Ctx&);

// ---- Elementwise ---------------------------------------------------------------------------

void SameAsInput0(Ctx& c) { c.Set(0, c.Type(0), c.ShapeOf(0)); }

void BoolLikeInput0(Ctx& c) {
  if (c.Has(0)) c.Set(0, NX_TYPE_BOOL, c.ShapeOf(0));
}

// Identity also passes sequences and optionals: copy the whole type.
void InferIdentity(Ctx& c) {
  const ValueDef* d = c.Def(0);
  if (d == nullptr || d->type.elem_type == NX_TYPE_UNDEFINED || c.out.empty()) return;
  c.out[0].kind = d->type.kind;
  c.out[0].type = d->type.elem_type;
  if (d->type.kind == NX_VALUE_TENSOR) c.out[0].shape = c.ShapeOf(0);
}

// Multidirectional (numpy) broadcasting; nullopt when a shape is unknown or two dims conflict.
std::optional<Shape> Broadcast(const std::vector<std::optional<Shape>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) {
    if (!s) return std::nullopt;
    rank = std::max(rank, s->size());
  }
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {  // k counts from the last dimension
    int64_t fixed = -1;                // the one known value other than 1
    std::vector<const Dim*> unknown;
    for (const auto& s : shapes) {
      if (k >= s->size()) continue;  // a missing leading dim broadcasts like 1
      const Dim& d = (*s)[s->size() - 1 - k];
      if (!d.known()) {
        unknown.push_back(&d);
      } else if (d.value == 1) {
        continue;
      } else if (fixed >= 0 && fixed != d.value) {
        return std::nullopt;
      } else {
        fixed = d.value;
      }
    }
    Dim& r = out[rank - 1 - k];
    if (fixed >= 0) {
      r = Known(fixed);  // unknown dims must be 1 or equal to it
    } else if (unknown.empty()) {
      r = Known(1);
    } else {
      // Unknown dims broadcast to themselves only when they are the same symbol (or just one).
      bool same = unknown.size() == 1 || !unknown[0]->param.empty();
      for (const Dim* d : unknown) same = same && d->param == unknown[0]->param;
      r = same ? *unknown[0] : Unknown();
    }
  }
  return out;
}

std::optional<Shape> BroadcastInputs(const Ctx& c, size_t first, size_t last) {
  std::vector<std::optional<Shape>> shapes;
  for (size_t i = first; i < last && i < c.num_inputs(); ++i) {
    if (!c.Has(i)) return std::nullopt;
    shapes.push_back(c.ShapeOf(i));
  }
  if (shapes.empty()) return std::nullopt;
  return Broadcast(shapes);
}

// Before opset 7, broadcasting was limited and attribute-driven: give the type only.
std::optional<Shape> BroadcastShape(const Ctx& c, size_t first, size_t last) {
  if (c.opset() < 7) return std::nullopt;
  return BroadcastInputs(c, first, last);
}

void SameTypeBroadcast(Ctx& c) {
  c.Set(0, c.CommonType(0, c.num_inputs()), BroadcastShape(c, 0, c.num_inputs()));
}

void InferPow(Ctx& c) { c.Set(0, c.Type(0), BroadcastShape(c, 0, 2)); }

void BoolBroadcast(Ctx& c) {
  if (c.num_inputs() < 2 || !c.Has(0) || !c.Has(1)) return;
  c.Set(0, NX_TYPE_BOOL, BroadcastShape(c, 0, 2));
}

void InferWhere(Ctx& c) { c.Set(0, c.CommonType(1, 3), BroadcastInputs(c, 0, 3)); }

// PRelu broadcasts the slope to X (unidirectionally): the output has X's shape.
void InferPRelu(Ctx& c) { c.Set(0, c.CommonType(0, 2), c.ShapeOf(0)); }

void InferCast(Ctx& c) {
  auto to = IntAttr(c.node(), "to", 0);
  if (!to) return;
  c.Set(0, ElementTypeFrom(*to), c.ShapeOf(0));
}

void InferCastLike(Ctx& c) { c.Set(0, c.Type(1), c.ShapeOf(0)); }

// ---- Shape queries -------------------------------------------------------------------------

void InferShape(Ctx& c) {
  if (!c.Has(0)) return;
  auto s = c.ShapeOf(0);
  if (!s) {
    c.Set(0, NX_TYPE_INT64, Shape{Unknown()});
    return;
  }
  const auto rank = static_cast<int64_t>(s->size());
  int64_t begin = 0, end = rank;
  if (c.opset() >= 15) {
    auto b = IntAttr(c.node(), "start", 0);
    auto e = IntAttr(c.node(), "end", rank);
    if (!b || !e) return;
    begin = *b < 0 ? std::max<int64_t>(0, *b + rank) : std::min(*b, rank);
    end = *e < 0 ? std::max<int64_t>(0, *e + rank) : std::min(*e, rank);
  }
  c.Set(0, NX_TYPE_INT64, Shape{Known(std::max<int64_t>(0, end - begin))});
}

void InferSize(Ctx& c) {
  if (c.Has(0)) c.Set(0, NX_TYPE_INT64, Shape{});
}

// ---- Convolution and pooling ---------------------------------------------------------------

// Window attributes of Conv/ConvTranspose/pools for `k` spatial axes, validated.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
  bool ceil_mode = false;
};

bool AllAtLeast(const std::vector<int64_t>& v, int64_t lo) {
  return std::all_of(v.begin(), v.end(), [lo](int64_t x) { return x >= lo; });
}

std::optional<Window> ReadWindow(const Node& n, size_t k, bool kernel_required) {
  Window w;
  auto kernel = IntsAttr(n, "kernel_shape", {});
  auto strides = IntsAttr(n, "strides", std::vector<int64_t>(k, 1));
  auto dilations = IntsAttr(n, "dilations", std::vector<int64_t>(k, 1));
  auto pads = IntsAttr(n, "pads", std::vector<int64_t>(2 * k, 0));
  auto auto_pad = StringAttr(n, "auto_pad", "NOTSET");
  auto ceil_mode = IntAttr(n, "ceil_mode", 0);
  if (!kernel || !strides || !dilations || !pads || !auto_pad || !ceil_mode) return std::nullopt;
  if (kernel_required && kernel->empty()) return std::nullopt;
  if (!kernel->empty() && (kernel->size() != k || !AllAtLeast(*kernel, 1))) return std::nullopt;
  if (strides->size() != k || !AllAtLeast(*strides, 1)) return std::nullopt;
  if (dilations->size() != k || !AllAtLeast(*dilations, 1)) return std::nullopt;
  if (pads->size() != 2 * k || !AllAtLeast(*pads, 0)) return std::nullopt;
  if (*auto_pad != "NOTSET" && *auto_pad != "VALID" && *auto_pad != "SAME_UPPER" &&
      *auto_pad != "SAME_LOWER")
    return std::nullopt;
  if (*ceil_mode != 0 && *ceil_mode != 1) return std::nullopt;
  w.kernel = std::move(*kernel);
  w.strides = std::move(*strides);
  w.dilations = std::move(*dilations);
  w.pads = std::move(*pads);
  w.auto_pad = std::move(*auto_pad);
  w.ceil_mode = *ceil_mode == 1;
  return w;
}

// Output length of a sliding window along one axis (-1 when the input length is unknown), or
// nullopt when the numbers are invalid or overflow.
std::optional<int64_t> WindowOutput(int64_t in, size_t axis, const Window& w) {
  if (in < 0) return -1;
  const size_t k = w.strides.size();
  const int64_t s = w.strides[axis];
  auto span = CheckedMul(w.kernel[axis] - 1, w.dilations[axis]);  // effective kernel - 1
  if (!span) return std::nullopt;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return in / s + (in % s != 0);
  int64_t pb = w.pads[axis], pe = w.pads[axis + k];
  if (w.auto_pad == "VALID") pb = pe = 0;
  auto padded = CheckedAdd(in, pb);
  if (padded) padded = CheckedAdd(*padded, pe);
  if (!padded) return std::nullopt;
  auto extent = CheckedAdd(*span, 1);
  auto room = extent ? CheckedSub(*padded, *extent) : std::nullopt;
  if (!room || *room < 0) return std::nullopt;  // window larger than the input
  if (!w.ceil_mode) return *room / s + 1;
  int64_t out = *room / s + (*room % s != 0) + 1;
  // The last window must start inside the input or its begin padding.
  if ((out - 1) * s >= in + pb) --out;
  return out;
}

// Rank of X for an N-D window op: N, C and at least one spatial axis.
std::optional<Shape> WindowInput(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x || x->size() < 3) return std::nullopt;
  return x;
}

std::optional<Shape> ConvShape(const Ctx& c) {
  auto x = WindowInput(c);
  auto wt = c.ShapeOf(1);
  if (!x || !wt || wt->size() != x->size()) return std::nullopt;
  const size_t k = x->size() - 2;
  auto w = ReadWindow(c.node(), k, false);
  auto group = IntAttr(c.node(), "group", 1);
  if (!w || !group || *group < 1 || w->ceil_mode) return std::nullopt;
  // Input channels must be the weight's per-group channels times the group count.
  if ((*x)[1].known() && (*wt)[1].known() &&
      CheckedMul((*wt)[1].value, *group) != std::optional<int64_t>((*x)[1].value))
    return std::nullopt;
  if (w->kernel.empty()) {
    for (size_t i = 0; i < k; ++i) {
      if (!(*wt)[2 + i].known() || (*wt)[2 + i].value < 1) return std::nullopt;
      w->kernel.push_back((*wt)[2 + i].value);
    }
  }
  Shape out{(*x)[0], (*wt)[0]};
  for (size_t i = 0; i < k; ++i) {
    auto o = WindowOutput((*x)[2 + i].value, i, *w);
    if (!o) return std::nullopt;
    out.push_back(*o >= 0 ? Known(*o) : Unknown());
  }
  return out;
}

void InferConv(Ctx& c) { c.Set(0, c.CommonType(0, 2), ConvShape(c)); }

std::optional<Shape> ConvTransposeShape(const Ctx& c) {
  auto x = WindowInput(c);
  auto wt = c.ShapeOf(1);
  if (!x || !wt || wt->size() != x->size()) return std::nullopt;
  const size_t k = x->size() - 2;
  const Node& n = c.node();
  auto w = ReadWindow(n, k, false);
  auto group = IntAttr(n, "group", 1);
  auto output_padding = IntsAttr(n, "output_padding", std::vector<int64_t>(k, 0));
  auto output_shape = IntsAttr(n, "output_shape", {});
  if (!w || !group || *group < 1 || w->ceil_mode || !output_padding || !output_shape)
    return std::nullopt;
  if (output_padding->size() != k || !AllAtLeast(*output_padding, 0)) return std::nullopt;
  if ((*x)[1].known() && (*wt)[0].known() && (*x)[1].value != (*wt)[0].value) return std::nullopt;
  if (!output_shape->empty() && (output_shape->size() != k || !AllAtLeast(*output_shape, 0)))
    return std::nullopt;
  if (w->kernel.empty()) {
    for (size_t i = 0; i < k; ++i) {
      if (!(*wt)[2 + i].known() || (*wt)[2 + i].value < 1) return std::nullopt;
      w->kernel.push_back((*wt)[2 + i].value);
    }
  }
  Dim channels = Unknown();
  if ((*wt)[1].known()) {
    auto m = CheckedMul((*wt)[1].value, *group);
    if (!m) return std::nullopt;
    channels = Known(*m);
  }
  Shape out{(*x)[0], channels};
  for (size_t i = 0; i < k; ++i) {
    if (!output_shape->empty()) {
      out.push_back(Known((*output_shape)[i]));
      continue;
    }
    const int64_t in = (*x)[2 + i].value;
    if (in < 0) {
      out.push_back(Unknown());
      continue;
    }
    const int64_t s = w->strides[i];
    std::optional<int64_t> o;
    if (w->auto_pad == "SAME_UPPER" || w->auto_pad == "SAME_LOWER") {
      o = CheckedMul(in, s);
    } else {
      // s * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads
      const bool valid = w->auto_pad == "VALID";
      auto span = CheckedMul(w->kernel[i] - 1, w->dilations[i]);
      auto extent = span ? CheckedAdd(*span, 1) : std::nullopt;
      o = CheckedMul(s, in - 1);
      if (o) o = CheckedAdd(*o, (*output_padding)[i]);
      o = o && extent ? CheckedAdd(*o, *extent) : std::nullopt;
      if (o && !valid) o = CheckedSub(*o, w->pads[i]);
      if (o && !valid) o = CheckedSub(*o, w->pads[i + k]);
    }
    if (!o || *o < 0) return std::nullopt;
    out.push_back(Known(*o));
  }
  return out;
}

void InferConvTranspose(Ctx& c) { c.Set(0, c.CommonType(0, 2), ConvTransposeShape(c)); }

std::optional<Shape> PoolShape(const Ctx& c) {
  auto x = WindowInput(c);
  if (!x) return std::nullopt;
  const size_t k = x->size() - 2;
  auto w = ReadWindow(c.node(), k, true);
  if (!w) return std::nullopt;
  Shape out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < k; ++i) {
    auto o = WindowOutput((*x)[2 + i].value, i, *w);
    if (!o) return std::nullopt;
    out.push_back(*o >= 0 ? Known(*o) : Unknown());
  }
  return out;
}

void InferPool(Ctx& c) {
  auto shape = PoolShape(c);
  c.Set(0, c.Type(0), shape);
  if (c.node().op_type == "MaxPool" && c.Has(0)) c.Set(1, NX_TYPE_INT64, shape);  // Indices
}

void InferGlobalPool(Ctx& c) {
  std::optional<Shape> out;
  if (auto x = WindowInput(c)) {
    out = Shape{(*x)[0], (*x)[1]};
    out->resize(x->size(), Known(1));
  }
  c.Set(0, c.Type(0), out);
}

// ---- Normalisation -------------------------------------------------------------------------

void InferBatchNorm(Ctx& c) { c.Set(0, c.Type(0), c.ShapeOf(0)); }

void InferLayerNorm(Ctx& c) {
  auto axis = IntAttr(c.node(), "axis", -1);
  if (!axis) return;
  auto x = c.ShapeOf(0);
  if (x && !NormalizeAxis(*axis, x->size())) return;  // invalid axis: the model is broken
  c.Set(0, c.Type(0), x);
}

// ---- Linear algebra ------------------------------------------------------------------------

// Two dims that must be equal: the known one, or nullopt when both are known and differ.
std::optional<Dim> MergeDims(const Dim& a, const Dim& b) {
  if (a.known() && b.known()) {
    if (a.value != b.value) return std::nullopt;
    return a;
  }
  if (a.known()) return a;
  if (b.known()) return b;
  return a.param == b.param ? a : Unknown();
}

std::optional<Shape> GemmShape(const Ctx& c) {
  auto a = c.ShapeOf(0);
  auto b = c.ShapeOf(1);
  auto ta = IntAttr(c.node(), "transA", 0);
  auto tb = IntAttr(c.node(), "transB", 0);
  if (!a || !b || !ta || !tb || a->size() != 2 || b->size() != 2) return std::nullopt;
  const Dim& m = (*a)[*ta ? 1 : 0];
  const Dim& ka = (*a)[*ta ? 0 : 1];
  const Dim& kb = (*b)[*tb ? 1 : 0];
  const Dim& n = (*b)[*tb ? 0 : 1];
  if (!MergeDims(ka, kb)) return std::nullopt;
  return Shape{m, n};
}

void InferGemm(Ctx& c) { c.Set(0, c.CommonType(0, 2), GemmShape(c)); }

std::optional<Shape> MatMulShape(const Ctx& c) {
  auto a = c.ShapeOf(0);
  auto b = c.ShapeOf(1);
  if (!a || !b || a->empty() || b->empty()) return std::nullopt;
  const bool a_vec = a->size() == 1, b_vec = b->size() == 1;
  if (a_vec) a->insert(a->begin(), Known(1));
  if (b_vec) b->push_back(Known(1));
  if (!MergeDims((*a)[a->size() - 1], (*b)[b->size() - 2])) return std::nullopt;
  Shape batch_a(a->begin(), a->end() - 2), batch_b(b->begin(), b->end() - 2);
  auto out = Broadcast({batch_a, batch_b});
  if (!out) return std::nullopt;
  if (!a_vec) out->push_back((*a)[a->size() - 2]);
  if (!b_vec) out->push_back((*b)[b->size() - 1]);
  return out;
}

void InferMatMul(Ctx& c) { c.Set(0, c.CommonType(0, 2), MatMulShape(c)); }

void InferMatMulInteger(Ctx& c) {
  if (c.Has(0) && c.Has(1)) c.Set(0, NX_TYPE_INT32, MatMulShape(c));
}

// Output type given by input `i` (QLinear ops' zero point, Einsum's operands, ...).
template <size_t I>
void TypeOfInput(Ctx& c) {
  c.Set(0, c.Type(I));
}

void InferEinsum(Ctx& c) { c.Set(0, c.CommonType(0, c.num_inputs())); }

// ---- Shape manipulation --------------------------------------------------------------------

void InferFlatten(Ctx& c) {
  auto x = c.ShapeOf(0);
  auto axis = IntAttr(c.node(), "axis", 1);
  if (!axis) return;
  std::optional<Shape> out;
  if (x) {
    const auto r = static_cast<int64_t>(x->size());
    int64_t a = *axis < 0 ? *axis + r : *axis;  // axis may equal the rank
    if (a < 0 || a > r) return;
    auto outer = Product(*x, 0, static_cast<size_t>(a));
    auto inner = Product(*x, static_cast<size_t>(a), x->size());
    if (outer && inner) {
      out = Shape{*outer >= 0 ? Known(*outer) : Unknown(), *inner >= 0 ? Known(*inner) : Unknown()};
    }
  }
  c.Set(0, c.Type(0), out);
}

std::optional<Shape> ReshapeShape(const Ctx& c) {
  if (c.opset() < 5) return std::nullopt;  // the shape was an attribute then
  auto target = c.ConstInts(1);
  auto allowzero = IntAttr(c.node(), "allowzero", 0);
  if (!target || !allowzero || c.ConstRank(1) != 1) return std::nullopt;
  auto x = c.ShapeOf(0);
  const bool copy_zero = c.opset() < 14 || *allowzero == 0;
  Shape out;
  int infer_at = -1;
  int64_t known_product = 1;
  bool all_known = true;
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t t = (*target)[i];
    Dim d;
    if (t == -1) {
      if (infer_at >= 0) return std::nullopt;  // two -1s
      infer_at = static_cast<int>(i);
    } else if (t == 0 && copy_zero) {
      if (x && i >= x->size()) return std::nullopt;
      if (x) d = (*x)[i];
    } else if (t < 0) {
      return std::nullopt;
    } else {
      d = Known(t);
    }
    if (infer_at != static_cast<int>(i)) {
      if (d.known()) {
        auto p = CheckedMul(known_product, d.value);
        if (!p) return std::nullopt;
        known_product = *p;
      } else {
        all_known = false;
      }
    }
    out.push_back(d);
  }
  if (!copy_zero && infer_at >= 0 && std::find(target->begin(), target->end(), 0) != target->end())
    return std::nullopt;  // allowzero with both 0 and -1 is invalid
  auto total = x ? Product(*x, 0, x->size()) : std::optional<int64_t>(-1);
  if (!total) return std::nullopt;
  if (infer_at >= 0) {
    if (*total >= 0 && all_known) {
      if (known_product == 0 || *total % known_product != 0) return std::nullopt;
      out[static_cast<size_t>(infer_at)] = Known(*total / known_product);
    }
  } else if (*total >= 0 && all_known && *total != known_product) {
    return std::nullopt;  // element counts differ
  }
  return out;
}

void InferReshape(Ctx& c) { c.Set(0, c.Type(0), ReshapeShape(c)); }

std::optional<Shape> TransposeShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x) return std::nullopt;
  std::vector<int64_t> reverse(x->size());
  for (size_t i = 0; i < x->size(); ++i) reverse[i] = static_cast<int64_t>(x->size() - 1 - i);
  auto perm = IntsAttr(c.node(), "perm", reverse);
  if (!perm || perm->size() != x->size()) return std::nullopt;
  std::vector<bool> seen(x->size(), false);
  Shape out;
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(x->size()) || seen[static_cast<size_t>(p)])
      return std::nullopt;
    seen[static_cast<size_t>(p)] = true;
    out.push_back((*x)[static_cast<size_t>(p)]);
  }
  return out;
}

void InferTranspose(Ctx& c) { c.Set(0, c.Type(0), TransposeShape(c)); }

// Axes from the attribute (before `input_since`) or the constant input 1; nullopt when unknown
// or malformed. `present` tells whether any axes were given.
std::optional<std::vector<int64_t>> AxesOf(const Ctx& c, int input_since, bool* present) {
  if (c.opset() < input_since) {
    *present = c.node().FindAttribute("axes") != nullptr;
    return IntsAttr(c.node(), "axes", {});
  }
  *present = c.Has(1);
  if (!*present) return std::vector<int64_t>{};
  return c.ConstInts(1);
}

// Normalised, distinct axes for rank `rank`.
std::optional<std::vector<size_t>> NormalizeAxes(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<size_t> out;
  for (int64_t a : axes) {
    auto n = NormalizeAxis(a, rank);
    if (!n || std::find(out.begin(), out.end(), *n) != out.end()) return std::nullopt;
    out.push_back(*n);
  }
  return out;
}

std::optional<Shape> SqueezeShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  bool present = false;
  auto axes = AxesOf(c, 13, &present);
  if (!x || !axes) return std::nullopt;
  std::vector<size_t> drop;
  if (!present || axes->empty()) {
    for (size_t i = 0; i < x->size(); ++i) {
      if (!(*x)[i].known()) return std::nullopt;  // might or might not be 1
      if ((*x)[i].value == 1) drop.push_back(i);
    }
  } else {
    auto n = NormalizeAxes(*axes, x->size());
    if (!n) return std::nullopt;
    for (size_t a : *n)
      if ((*x)[a].known() && (*x)[a].value != 1) return std::nullopt;
    drop = *n;
  }
  Shape out;
  for (size_t i = 0; i < x->size(); ++i)
    if (std::find(drop.begin(), drop.end(), i) == drop.end()) out.push_back((*x)[i]);
  return out;
}

void InferSqueeze(Ctx& c) { c.Set(0, c.Type(0), SqueezeShape(c)); }

std::optional<Shape> UnsqueezeShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  bool present = false;
  auto axes = AxesOf(c, 13, &present);
  if (!x || !axes || axes->empty()) return std::nullopt;
  auto n = NormalizeAxes(*axes, x->size() + axes->size());
  if (!n) return std::nullopt;
  Shape out(x->size() + axes->size());
  std::vector<bool> inserted(out.size(), false);
  for (size_t a : *n) {
    inserted[a] = true;
    out[a] = Known(1);
  }
  size_t next = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!inserted[i]) out[i] = (*x)[next++];
  return out;
}

void InferUnsqueeze(Ctx& c) { c.Set(0, c.Type(0), UnsqueezeShape(c)); }

std::optional<Shape> ConcatShape(const Ctx& c) {
  auto axis_attr = c.node().FindAttribute("axis");
  auto axis = IntAttr(c.node(), "axis", 1);  // opset 1 defaulted to 1
  if (!axis || (axis_attr == nullptr && c.opset() >= 4)) return std::nullopt;
  std::optional<Shape> out;
  size_t a = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    auto s = c.ShapeOf(i);
    if (!s) return std::nullopt;
    if (!out) {
      auto n = NormalizeAxis(*axis, s->size());
      if (!n) return std::nullopt;
      a = *n;
      out = s;
      continue;
    }
    if (s->size() != out->size()) return std::nullopt;
    for (size_t d = 0; d < s->size(); ++d) {
      if (d == a) {
        Dim& o = (*out)[d];
        auto sum = o.known() && (*s)[d].known() ? CheckedAdd(o.value, (*s)[d].value)
                                                : std::optional<int64_t>(-1);
        if (!sum) return std::nullopt;
        o = *sum >= 0 ? Known(*sum) : Unknown();
      } else {
        auto m = MergeDims((*out)[d], (*s)[d]);
        if (!m) return std::nullopt;
        (*out)[d] = *m;
      }
    }
  }
  return out;
}

void InferConcat(Ctx& c) { c.Set(0, c.CommonType(0, c.num_inputs()), ConcatShape(c)); }

std::optional<Shape> GatherShape(const Ctx& c) {
  auto data = c.ShapeOf(0);
  auto indices = c.ShapeOf(1);
  auto axis = IntAttr(c.node(), "axis", 0);
  if (!data || !indices || !axis) return std::nullopt;
  auto a = NormalizeAxis(*axis, data->size());
  if (!a) return std::nullopt;
  Shape out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(*a));
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(*a) + 1, data->end());
  return out;
}

void InferGather(Ctx& c) { c.Set(0, c.Type(0), GatherShape(c)); }

void InferGatherElements(Ctx& c) { c.Set(0, c.Type(0), c.ShapeOf(1)); }

// Length of one sliced axis of length `dim` (ONNX Slice rules: negative indices count from the
// end, then clamping; the step's sign picks the bounds).
std::optional<int64_t> SlicedLength(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0) return std::nullopt;
  if (dim == 0) return 0;
  if (start < 0) start = start < -dim ? 0 : start + dim;  // no overflow: dim >= 0 > start
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end <= start) return 0;
    return (end - start - 1) / step + 1;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end) return 0;
  // -step cannot overflow: step == INT64_MIN still divides correctly as unsigned below.
  const auto span = static_cast<uint64_t>(start - end - 1);
  const uint64_t stride = step == INT64_MIN ? (uint64_t{1} << 63) : static_cast<uint64_t>(-step);
  return static_cast<int64_t>(span / stride + 1);
}

// Slice keeps the rank whatever the bounds: with computed starts/ends (transformers slice by a
// Shape-derived length) the sliced axes are unknown, the others unchanged.
std::optional<Shape> SliceRankOnly(const Ctx& c, const Shape& x) {
  Shape out = x;
  std::optional<std::vector<size_t>> axes;
  if (c.Has(3)) {
    if (auto a = c.ConstInts(3)) axes = NormalizeAxes(*a, x.size());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!axes || std::find(axes->begin(), axes->end(), i) != axes->end()) out[i] = Unknown();
  }
  return out;
}

std::optional<Shape> SliceShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x) return std::nullopt;
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (c.opset() < 10) {
    if (!c.node().FindAttribute("starts") || !c.node().FindAttribute("ends")) return std::nullopt;
    starts = IntsAttr(c.node(), "starts", {});
    ends = IntsAttr(c.node(), "ends", {});
    axes = IntsAttr(c.node(), "axes", {});
    steps = std::vector<int64_t>{};
  } else {
    starts = c.ConstInts(1);
    ends = c.ConstInts(2);
    axes = c.Has(3) ? c.ConstInts(3) : std::vector<int64_t>{};
    steps = c.Has(4) ? c.ConstInts(4) : std::vector<int64_t>{};
    if ((!starts || !ends) && c.Has(1) && c.Has(2)) return SliceRankOnly(c, *x);
  }
  if (!starts || !ends || !axes || !steps || starts->size() != ends->size()) return std::nullopt;
  if (axes->empty()) {
    if (starts->size() > x->size()) return std::nullopt;
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (steps->empty()) steps->assign(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size()) return std::nullopt;
  auto norm = NormalizeAxes(*axes, x->size());
  if (!norm) return std::nullopt;
  Shape out = *x;
  for (size_t i = 0; i < norm->size(); ++i) {
    Dim& d = out[(*norm)[i]];
    if ((*steps)[i] == 0) return std::nullopt;
    if (!d.known()) {
      d = Unknown();
      continue;
    }
    auto len = SlicedLength(d.value, (*starts)[i], (*ends)[i], (*steps)[i]);
    if (!len) return std::nullopt;
    d = Known(*len);
  }
  return out;
}

void InferSlice(Ctx& c) { c.Set(0, c.Type(0), SliceShape(c)); }

// Lengths of Split's outputs along the axis; nullopt when they cannot be known.
std::optional<std::vector<int64_t>> SplitLengths(const Ctx& c, const Dim& dim) {
  const size_t n = c.num_outputs();
  std::optional<std::vector<int64_t>> split;
  if (c.opset() < 13) {
    split = IntsAttr(c.node(), "split", {});
    if (c.opset() < 2 && c.Has(1)) split = c.ConstInts(1);  // Split-1 took it as an input
  } else {
    split = c.Has(1) ? c.ConstInts(1) : std::vector<int64_t>{};
  }
  if (!split) return std::nullopt;
  if (!split->empty()) {
    if (split->size() != n || !AllAtLeast(*split, 0)) return std::nullopt;
    int64_t sum = 0;
    for (int64_t s : *split) {
      auto t = CheckedAdd(sum, s);
      if (!t) return std::nullopt;
      sum = *t;
    }
    if (dim.known() && sum != dim.value) return std::nullopt;
    return split;
  }
  if (!dim.known() || n == 0) return std::nullopt;
  const auto parts = static_cast<int64_t>(n);
  // num_outputs, when given, must match the node's outputs.
  if (auto given = IntAttr(c.node(), "num_outputs", parts); !given || *given != parts)
    return std::nullopt;
  if (dim.value % parts == 0) return std::vector<int64_t>(n, dim.value / parts);
  // Opset 18's num_outputs allows an uneven split: equal chunks, the last one smaller.
  if (c.opset() < 18 || c.node().FindAttribute("num_outputs") == nullptr) return std::nullopt;
  const int64_t chunk = dim.value / parts + 1;
  auto before_last = CheckedMul(chunk, parts - 1);
  if (!before_last || *before_last >= dim.value) return std::nullopt;
  std::vector<int64_t> out(n, chunk);
  out.back() = dim.value - *before_last;
  return out;
}

void InferSplit(Ctx& c) {
  const NxElementType t = c.Type(0);
  auto x = c.ShapeOf(0);
  auto axis = IntAttr(c.node(), "axis", 0);
  std::optional<std::vector<int64_t>> lengths;
  std::optional<size_t> a;
  if (x && axis) a = NormalizeAxis(*axis, x->size());
  if (a) lengths = SplitLengths(c, (*x)[*a]);
  for (size_t o = 0; o < c.num_outputs(); ++o) {
    std::optional<Shape> s;
    if (lengths) {
      s = *x;
      (*s)[*a] = Known((*lengths)[o]);
    }
    c.Set(o, t, s);
  }
}

// Pad: each dim grows by its begin and end pads (negative pads crop). Only for constant pads
// over every axis; the rank is kept in any case.
std::optional<Shape> PadShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x) return std::nullopt;
  auto pads = c.opset() < 11 ? IntsAttr(c.node(), "pads", {}) : c.ConstInts(1);
  const bool has_axes = c.opset() >= 18 && c.Has(3);
  Shape out = *x;
  if (!pads || has_axes || pads->size() != 2 * x->size()) {
    for (Dim& d : out) d = Unknown();
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].known()) continue;
    auto grown = CheckedAdd(out[i].value, (*pads)[i]);
    if (grown) grown = CheckedAdd(*grown, (*pads)[i + out.size()]);
    if (!grown || *grown < 0) return std::nullopt;
    out[i] = Known(*grown);
  }
  return out;
}

void InferPad(Ctx& c) { c.Set(0, c.Type(0), PadShape(c)); }

// Resize/Upsample keep the rank. Dims are known from a constant (or statically computed) `sizes`
// over every axis with the default aspect-ratio policy, or from constant scales over every axis:
// floor(in * scale) in double, as the kernel computes them.
std::optional<Shape> ScaledShape(const Ctx& c, const Shape& x, size_t i) {
  const Value* v = c.Const(i);
  if (v == nullptr || v->type != NX_TYPE_FLOAT || v->dims.size() != 1 || v->count != x.size())
    return std::nullopt;
  Shape out(x.size(), Unknown());
  for (size_t k = 0; k < x.size(); ++k) {
    const double scale = static_cast<const float*>(v->data)[k];
    if (!(scale > 0.0) || !std::isfinite(scale)) return std::nullopt;
    if (!x[k].known()) continue;
    const double d = std::floor(scale * static_cast<double>(x[k].value));
    if (d >= 9.0e15) return std::nullopt;
    out[k] = Known(static_cast<int64_t>(d));
  }
  return out;
}

std::optional<Shape> ResizeShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x) return std::nullopt;
  Shape out(x->size(), Unknown());
  if (c.node().op_type == "Upsample" || c.opset() < 11) {  // scales as input 1 (or attribute)
    if (!c.Has(1)) return out;
    auto scaled = ScaledShape(c, *x, 1);
    return scaled ? scaled : out;
  }
  if (c.node().FindAttribute("axes") != nullptr) return out;
  if (!c.Has(3) || (c.Const(3) != nullptr && c.Const(3)->count == 0)) {  // by scales
    auto scaled = c.Has(2) ? ScaledShape(c, *x, 2) : std::nullopt;
    return scaled ? scaled : out;
  }
  auto policy = StringAttr(c.node(), "keep_aspect_ratio_policy", "stretch");
  auto sizes = c.ConstInts(3);
  if (!policy || *policy != "stretch" || !sizes || sizes->size() != x->size() ||
      !AllAtLeast(*sizes, 0))
    return out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = Known((*sizes)[i]);
  return out;
}

void InferResize(Ctx& c) { c.Set(0, c.Type(0), ResizeShape(c)); }

std::optional<Shape> ExpandShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  auto target = c.ConstInts(1);
  if (!x || !target || !AllAtLeast(*target, 0)) return std::nullopt;
  Shape t;
  for (int64_t v : *target) t.push_back(Known(v));
  return Broadcast({*x, t});
}

void InferExpand(Ctx& c) { c.Set(0, c.Type(0), ExpandShape(c)); }

std::optional<Shape> TileShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  if (!x) return std::nullopt;
  auto repeats = c.ConstInts(1);
  if (!repeats) return std::nullopt;
  if (repeats->size() != x->size() || !AllAtLeast(*repeats, 0)) return std::nullopt;
  Shape out = *x;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].known()) continue;
    auto m = CheckedMul(out[i].value, (*repeats)[i]);
    if (!m) return std::nullopt;
    out[i] = Known(*m);
  }
  return out;
}

void InferTile(Ctx& c) { c.Set(0, c.Type(0), TileShape(c)); }

void InferConstantOfShape(Ctx& c) {
  NxElementType t = NX_TYPE_FLOAT;
  if (const Attribute* v = c.node().FindAttribute("value")) {
    if (v->type != NX_ATTR_TENSOR || !v->tensor) return;
    t = v->tensor->type;
  }
  std::optional<Shape> out;
  if (auto dims = c.ConstInts(0)) {
    if (!AllAtLeast(*dims, 0)) return;
    out.emplace();
    for (int64_t d : *dims) out->push_back(Known(d));
  } else if (auto s = c.ShapeOf(0); s && s->size() == 1 && (*s)[0].known() &&
                                    static_cast<size_t>((*s)[0].value) <= kMaxListSize) {
    out = Shape(static_cast<size_t>((*s)[0].value), Unknown());
  }
  c.Set(0, ElementTypeFrom(t), out);
}

// Range's length when start/limit/delta are integer constants; only the rank otherwise (float
// arithmetic could round differently from the kernel).
void InferRange(Ctx& c) {
  const NxElementType t = c.CommonType(0, 3);
  Dim len = Unknown();
  auto start = c.ConstInts(0), limit = c.ConstInts(1), delta = c.ConstInts(2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1 &&
      (*delta)[0] != 0) {
    auto span = CheckedSub((*limit)[0], (*start)[0]);
    const int64_t d = (*delta)[0];
    if (span && d != -1) {  // INT64_MIN / -1 overflows; skip that corner
      int64_t n = *span / d + (*span % d != 0 && ((*span < 0) == (d < 0)));
      len = Known(std::max<int64_t>(n, 0));
    }
  }
  c.Set(0, t, Shape{len});
}

void InferTopK(Ctx& c) {
  const NxElementType t = c.Type(0);
  if (t == NX_TYPE_UNDEFINED && !c.Has(0)) return;
  std::optional<Shape> out;
  auto x = c.ShapeOf(0);
  auto axis = IntAttr(c.node(), "axis", -1);
  std::optional<int64_t> k;
  if (c.opset() < 10) {
    if (auto ka = IntAttr(c.node(), "k", -1); ka && *ka >= 0) k = *ka;
  } else if (auto kc = c.ConstInts(1); kc && kc->size() == 1 && (*kc)[0] >= 0) {
    k = (*kc)[0];
  }
  if (x && axis) {
    if (auto a = NormalizeAxis(*axis, x->size())) {
      out = *x;
      (*out)[*a] = k ? Known(*k) : Unknown();
    }
  }
  c.Set(0, t, out);
  c.Set(1, NX_TYPE_INT64, out);
}

void InferArgMinMax(Ctx& c) {
  if (!c.Has(0)) return;
  auto x = c.ShapeOf(0);
  auto axis = IntAttr(c.node(), "axis", 0);
  auto keepdims = IntAttr(c.node(), "keepdims", 1);
  std::optional<Shape> out;
  if (x && axis && keepdims) {
    if (auto a = NormalizeAxis(*axis, x->size())) {
      out = *x;
      if (*keepdims)
        (*out)[*a] = Known(1);
      else
        out->erase(out->begin() + static_cast<std::ptrdiff_t>(*a));
    }
  }
  c.Set(0, NX_TYPE_INT64, out);
}

void InferNonZero(Ctx& c) {
  if (!c.Has(0)) return;
  auto x = c.ShapeOf(0);
  c.Set(0, NX_TYPE_INT64,
        x ? std::optional<Shape>(Shape{Known(static_cast<int64_t>(x->size())), Unknown()})
          : std::nullopt);
}

// ---- Reductions ----------------------------------------------------------------------------

std::optional<Shape> ReduceShape(const Ctx& c) {
  auto x = c.ShapeOf(0);
  auto keepdims = IntAttr(c.node(), "keepdims", 1);
  auto noop = IntAttr(c.node(), "noop_with_empty_axes", 0);
  if (!x || !keepdims || !noop) return std::nullopt;
  const int input_since = c.node().op_type == "ReduceSum" ? 13 : 18;
  // An axes attribute at an opset where axes is an input makes the node malformed.
  if (c.opset() >= input_since && c.node().FindAttribute("axes") != nullptr) return std::nullopt;
  bool present = false;
  auto axes = AxesOf(c, input_since, &present);
  if (!axes) return std::nullopt;
  std::vector<size_t> reduce;
  if (axes->empty()) {
    if (*noop && c.opset() >= input_since) return x;  // no reduction at all
    for (size_t i = 0; i < x->size(); ++i) reduce.push_back(i);
  } else {
    auto n = NormalizeAxes(*axes, x->size());
    if (!n) return std::nullopt;
    reduce = *n;
  }
  Shape out;
  for (size_t i = 0; i < x->size(); ++i) {
    if (std::find(reduce.begin(), reduce.end(), i) == reduce.end())
      out.push_back((*x)[i]);
    else if (*keepdims)
      out.push_back(Known(1));
  }
  return out;
}

void InferReduce(Ctx& c) { c.Set(0, c.Type(0), ReduceShape(c)); }

// ---- Quantization --------------------------------------------------------------------------

void InferQuantizeLinear(Ctx& c) {
  if (!c.Has(0)) return;
  NxElementType t = NX_TYPE_UINT8;
  if (c.Has(2)) {
    t = c.Type(2);  // the zero point's type is the output's
  } else if (c.opset() >= 21) {
    auto dtype = IntAttr(c.node(), "output_dtype", 0);
    if (!dtype) return;
    if (*dtype != 0) t = ElementTypeFrom(*dtype);
  }
  c.Set(0, t, c.ShapeOf(0));
}

void InferDequantizeLinear(Ctx& c) {
  if (!c.Has(0)) return;
  NxElementType t = NX_TYPE_FLOAT;
  if (c.opset() >= 19) {
    if (c.node().FindAttribute("output_dtype") != nullptr) return;  // newer form: not handled
    t = c.Type(1);                                                  // the scale's type
  }
  c.Set(0, t, c.ShapeOf(0));
}

void InferDynamicQuantizeLinear(Ctx& c) {
  if (!c.Has(0)) return;
  c.Set(0, NX_TYPE_UINT8, c.ShapeOf(0));
  c.Set(1, NX_TYPE_FLOAT, Shape{});
  c.Set(2, NX_TYPE_UINT8, Shape{});
}

// ---- Recurrent -----------------------------------------------------------------------------

// Every output of RNN/GRU/LSTM has X's type; the shapes depend on layout and attributes that
// malformed models get wrong, and no optimisation needs them.
void InferRecurrent(Ctx& c) {
  const NxElementType t = c.CommonType(0, 3);
  for (size_t o = 0; o < c.num_outputs(); ++o) c.Set(o, t);
}

// ---- Constant (the forms the loader did not fold) ------------------------------------------

void InferConstant(Ctx& c) {
  const Node& n = c.node();
  if (n.attributes.size() != 1) return;
  const Attribute& a = n.attributes[0];
  if (a.name == "value" && a.type == NX_ATTR_TENSOR && a.tensor &&
      a.tensor->kind == NX_VALUE_TENSOR) {
    Shape s;
    for (int64_t d : a.tensor->dims) s.push_back(d >= 0 ? Known(d) : Unknown());
    c.Set(0, ElementTypeFrom(a.tensor->type), s);
  } else if (a.name == "value_float" && a.type == NX_ATTR_FLOAT) {
    c.Set(0, NX_TYPE_FLOAT, Shape{});
  } else if (a.name == "value_int" && a.type == NX_ATTR_INT) {
    c.Set(0, NX_TYPE_INT64, Shape{});
  } else if (a.name == "value_floats" && a.type == NX_ATTR_FLOATS) {
    c.Set(0, NX_TYPE_FLOAT, Shape{Known(static_cast<int64_t>(a.floats.size()))});
  } else if (a.name == "value_ints" && a.type == NX_ATTR_INTS) {
    c.Set(0, NX_TYPE_INT64, Shape{Known(static_cast<int64_t>(a.ints.size()))});
  }
}

// ---- Misc ----------------------------------------------------------------------------------

void InferDropout(Ctx& c) { c.Set(0, c.Type(0), c.ShapeOf(0)); }

void InferOneHot(Ctx& c) { c.Set(0, c.Type(2)); }

void InferUnique(Ctx& c) {
  c.Set(0, c.Type(0));
  if (!c.Has(0)) return;
  for (size_t o = 1; o < 4; ++o) c.Set(o, NX_TYPE_INT64);
}

// Ops whose output 0 has the type and shape of input 0.
// clang-format off
constexpr const char* kSameTypeAndShapeOps[] = {
    "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Clip", "LeakyRelu",
    "HardSigmoid", "HardSwish", "Gelu", "Softplus", "Softsign", "Reciprocal", "Floor", "Ceil",
    "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
    "Acosh", "Atanh", "Elu", "Selu", "Celu", "ThresholdedRelu", "Mish", "Shrink", "BitwiseNot",
    "Softmax", "LogSoftmax", "Hardmax", "LRN", "LpNormalization", "CumSum", "Trilu",
    "MeanVarianceNormalization", "InstanceNormalization", "ReverseSequence", "ScatterND",
    "ScatterElements", "Scatter", "Not"};
// clang-format on

const std::unordered_map<std::string, InferFn>& OnnxRules() {
  static const auto* rules = [] {
    auto* m = new std::unordered_map<std::string, InferFn>;
    for (const char* op : kSameTypeAndShapeOps) (*m)[op] = SameAsInput0;
    for (const char* op : {"IsNaN", "IsInf"}) (*m)[op] = BoolLikeInput0;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Mod",
                           "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
      (*m)[op] = SameTypeBroadcast;
    for (const char* op :
         {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
      (*m)[op] = BoolBroadcast;
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) (*m)[op] = InferPool;
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
      (*m)[op] = InferGlobalPool;
    for (const char* op :
         {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      (*m)[op] = InferReduce;
    for (const char* op : {"RNN", "GRU", "LSTM"}) (*m)[op] = InferRecurrent;
    for (const char* op : {"ArgMax", "ArgMin"}) (*m)[op] = InferArgMinMax;
    for (const char* op : {"GatherND", "Compress", "DepthToSpace", "SpaceToDepth"})
      (*m)[op] = TypeOfInput<0>;
    (*m)["Pad"] = InferPad;
    (*m)["Resize"] = InferResize;
    (*m)["Upsample"] = InferResize;
    (*m)["Identity"] = InferIdentity;
    (*m)["Dropout"] = InferDropout;
    (*m)["Pow"] = InferPow;
    (*m)["Where"] = InferWhere;
    (*m)["PRelu"] = InferPRelu;
    (*m)["Cast"] = InferCast;
    (*m)["CastLike"] = InferCastLike;
    (*m)["Shape"] = InferShape;
    (*m)["Size"] = InferSize;
    (*m)["Conv"] = InferConv;
    (*m)["ConvTranspose"] = InferConvTranspose;
    (*m)["BatchNormalization"] = InferBatchNorm;
    (*m)["LayerNormalization"] = InferLayerNorm;
    (*m)["Gemm"] = InferGemm;
    (*m)["MatMul"] = InferMatMul;
    (*m)["MatMulInteger"] = InferMatMulInteger;
    (*m)["Einsum"] = InferEinsum;
    (*m)["Flatten"] = InferFlatten;
    (*m)["Reshape"] = InferReshape;
    (*m)["Transpose"] = InferTranspose;
    (*m)["Squeeze"] = InferSqueeze;
    (*m)["Unsqueeze"] = InferUnsqueeze;
    (*m)["Concat"] = InferConcat;
    (*m)["Gather"] = InferGather;
    (*m)["GatherElements"] = InferGatherElements;
    (*m)["Slice"] = InferSlice;
    (*m)["Split"] = InferSplit;
    (*m)["Expand"] = InferExpand;
    (*m)["Tile"] = InferTile;
    (*m)["ConstantOfShape"] = InferConstantOfShape;
    (*m)["Range"] = InferRange;
    (*m)["TopK"] = InferTopK;
    (*m)["NonZero"] = InferNonZero;
    (*m)["QuantizeLinear"] = InferQuantizeLinear;
    (*m)["DequantizeLinear"] = InferDequantizeLinear;
    (*m)["DynamicQuantizeLinear"] = InferDynamicQuantizeLinear;
    (*m)["QLinearConv"] = TypeOfInput<7>;  // y_zero_point
    (*m)["QLinearMatMul"] = TypeOfInput<7>;
    (*m)["Constant"] = InferConstant;
    (*m)["OneHot"] = InferOneHot;
    (*m)["Unique"] = InferUnique;
    return m;
  }();
  return *rules;
}

// ---- Applying results ----------------------------------------------------------------------

// Records what was inferred for `def` without overriding what the model declares: a declared
// element type is kept (and a conflicting inference dropped whole), a declared shape is kept.
void MergeType(TypeInfo& t, const Inferred& inf) {
  if (inf.type == NX_TYPE_UNDEFINED) return;
  if (t.elem_type == NX_TYPE_UNDEFINED) {
    // The default kind is tensor: another kind, or a shape, was declared by the model.
    if (t.kind != NX_VALUE_TENSOR && t.kind != inf.kind) return;
    if (t.has_shape && inf.kind != NX_VALUE_TENSOR) return;
    t.kind = inf.kind;
    t.elem_type = inf.type;
  } else if (t.elem_type != inf.type || t.kind != inf.kind) {
    return;
  }
  if (t.has_shape || !inf.shape || t.kind != NX_VALUE_TENSOR) return;
  t.has_shape = true;
  t.dims.clear();
  t.dim_params.clear();
  for (const Dim& d : *inf.shape) {
    t.dims.push_back(d.known() ? d.value : -1);
    t.dim_params.push_back(d.known() ? std::string() : d.param);
  }
}

void Merge(ValueDef& def, const Inferred& inf) {
  if (def.initializer || def.is_graph_input) return;  // declared by definition
  MergeType(def.type, inf);
}

// ---- Control flow and subgraphs ------------------------------------------------------------

// A body's outer-scope values take the type now known where they are defined: the body was
// finalized before its parent's types were inferred.
void RefreshOuterScope(Graph& body) {
  for (ValueDef& v : body.values) {
    if (!v.is_outer_scope || v.type.elem_type != NX_TYPE_UNDEFINED) continue;
    for (const Graph* g = body.parent; g != nullptr; g = g->parent) {
      const int i = g->FindValue(v.name);
      if (i < 0) continue;
      v.type = g->value(i).type;
      break;
    }
  }
}

void InferGraph(Graph& graph, int depth);

// Fills undeclared Loop body inputs: iteration number, condition and loop-carried values, whose
// types the spec fixes (the carried values' shapes may change between iterations: not copied).
void TypeLoopBodyInputs(const Graph& g, const Node& n, Graph& body) {
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    Inferred inf;
    if (i == 0) {
      inf.type = NX_TYPE_INT64;
      inf.shape = Shape{};
    } else if (i == 1) {
      inf.type = NX_TYPE_BOOL;
      inf.shape = Shape{};
    } else if (i < n.inputs.size() && n.inputs[i] >= 0) {
      const TypeInfo& t = g.value(n.inputs[i]).type;
      inf.kind = t.kind;
      inf.type = t.elem_type;
    }
    MergeType(body.value(body.inputs[i]).type, inf);
  }
}

// The kind and element type of body output `i` (its shape may vary between iterations).
Inferred BodyOutputType(const Graph& body, size_t i) {
  Inferred inf;
  if (i >= body.outputs.size()) return inf;
  const TypeInfo& t = body.value(body.outputs[i]).type;
  inf.kind = t.kind;
  inf.type = t.elem_type;
  return inf;
}

// Loop: final carried values have the body's carried output types; scan outputs stack the
// body's per-iteration outputs along a new leading axis.
void InferLoopOutputs(const Node& n, const Graph& body, std::vector<Inferred>& out) {
  if (n.inputs.size() < 2) return;
  const size_t carried = n.inputs.size() - 2;
  if (body.outputs.size() != 1 + out.size() || carried > out.size()) return;
  for (size_t o = 0; o < out.size(); ++o) {
    Inferred inf = BodyOutputType(body, 1 + o);
    if (o >= carried) {
      if (inf.kind != NX_VALUE_TENSOR) continue;
      const TypeInfo& t = body.value(body.outputs[1 + o]).type;
      if (t.has_shape) {
        Shape s{Unknown()};
        for (int64_t d : t.dims) s.push_back(d >= 0 ? Known(d) : Unknown());
        inf.shape = s;
      }
    }
    out[o] = inf;
  }
}

// If: an output's type when both branches agree on it (and its shape when they agree on that).
void InferIfOutputs(const Graph& then_g, const Graph& else_g, std::vector<Inferred>& out) {
  if (then_g.outputs.size() != out.size() || else_g.outputs.size() != out.size()) return;
  for (size_t o = 0; o < out.size(); ++o) {
    const TypeInfo& a = then_g.value(then_g.outputs[o]).type;
    const TypeInfo& b = else_g.value(else_g.outputs[o]).type;
    if (a.kind != b.kind || a.elem_type != b.elem_type) continue;
    out[o].kind = a.kind;
    out[o].type = a.elem_type;
    // As onnx merges the branches: the same rank keeps the rank, and each dimension both
    // branches agree on.
    if (a.kind == NX_VALUE_TENSOR && a.has_shape && b.has_shape && a.dims.size() == b.dims.size()) {
      Shape s;
      for (size_t i = 0; i < a.dims.size(); ++i)
        s.push_back(a.dims[i] >= 0 && a.dims[i] == b.dims[i] ? Known(a.dims[i]) : Unknown());
      out[o].shape = s;
    }
  }
}

// Scan (opset 9+): final states have the body's state output types; scan outputs get the
// element types only (their axis and direction attributes place the new dimension).
void InferScanOutputs(const Node& n, const Graph& body, std::vector<Inferred>& out) {
  if (n.opset < 9 || body.outputs.size() != out.size()) return;
  auto m = IntAttr(n, "num_scan_inputs", -1);
  if (!m || *m < 1 || static_cast<size_t>(*m) > n.inputs.size()) return;
  const size_t states = n.inputs.size() - static_cast<size_t>(*m);
  for (size_t o = 0; o < out.size(); ++o) {
    Inferred inf = BodyOutputType(body, o);
    if (inf.kind != NX_VALUE_TENSOR) continue;
    if (o < states) {
      const TypeInfo& t = body.value(body.outputs[o]).type;
      if (t.has_shape) {
        Shape s;
        for (int64_t d : t.dims) s.push_back(d >= 0 ? Known(d) : Unknown());
        inf.shape = s;
      }
    }
    out[o] = inf;
  }
}

// Infers the node's bodies (parents first, so outer values are typed) and, for the ONNX
// control-flow ops, the node's outputs from the bodies' outputs.
void InferSubgraphs(Graph& g, const Node& n, std::vector<Inferred>& out, int depth) {
  const Attribute* then_a = nullptr;
  const Attribute* else_a = nullptr;
  for (const Attribute& a : n.attributes) {
    std::vector<Graph*> bodies;
    if (a.graph) bodies.push_back(a.graph.get());
    for (const auto& sub : a.graphs)
      if (sub) bodies.push_back(sub.get());
    for (Graph* body : bodies) {
      RefreshOuterScope(*body);
      if (n.domain.empty() && n.op_type == "Loop" && a.name == "body")
        TypeLoopBodyInputs(g, n, *body);
      InferGraph(*body, depth + 1);
    }
    if (a.name == "then_branch" && a.graph) then_a = &a;
    if (a.name == "else_branch" && a.graph) else_a = &a;
  }
  if (!n.domain.empty()) return;
  const Attribute* body = n.FindAttribute("body");
  if (n.op_type == "If" && then_a && else_a) InferIfOutputs(*then_a->graph, *else_a->graph, out);
  if (n.op_type == "Loop" && body && body->graph) InferLoopOutputs(n, *body->graph, out);
  if (n.op_type == "Scan" && body && body->graph) InferScanOutputs(n, *body->graph, out);
}

bool HasSubgraphs(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.graph || !a.graphs.empty()) return true;
  return false;
}

void InferNode(Graph& g, const Node& n, int depth, KnownIntegerTable& known) {
  Ctx c(g, n, known);
  if (HasSubgraphs(n)) InferSubgraphs(g, n, c.out, depth);
  if (n.domain.empty()) {
    const auto& rules = OnnxRules();
    auto it = rules.find(n.op_type);
    if (it != rules.end()) it->second(c);
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) Merge(g.value(n.outputs[o]), c.out[o]);
  PropagateKnownIntegers(g, n, known);  // after the merge: the rules read the output types
}

// Nesting deeper than this is not a real model; stop rather than exhaust the stack.
constexpr int kMaxDepth = 64;

void InferGraph(Graph& graph, int depth) {
  if (depth > kMaxDepth) return;
  KnownIntegerTable known(graph.values.size());
  for (const Node& n : graph.nodes) {
    try {
      InferNode(graph, n, depth, known);
    } catch (const std::exception&) {
      // Only allocation failure can get here; a missing type costs an optimisation, no more.
    }
  }
}

}  // namespace

void InferTypesAndShapes(Graph& graph) { InferGraph(graph, 0); }

}  // namespace nxrt
