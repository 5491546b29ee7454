#include "graph/known_integers.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <string>

#include "base/value.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

using Ints = std::vector<int64_t>;

bool IntegerType(NxElementType t) { return t == NX_TYPE_INT64 || t == NX_TYPE_INT32; }

bool Fits(NxElementType t, int64_t v) {
  return t == NX_TYPE_INT64 ||
         (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max());
}

// The static shape of value `v`, when every dimension is known.
std::optional<Ints> StaticShape(const Graph& g, int v) {
  if (v < 0) return std::nullopt;
  const TypeInfo& t = g.value(v).type;
  if (t.kind != NX_VALUE_TENSOR || !t.has_shape) return std::nullopt;
  for (int64_t d : t.dims)
    if (d < 0) return std::nullopt;
  return t.dims;
}

// Stores output `o` of `n` when it is an integer tensor of rank <= 1 whose values fit its type
// (and its declared or inferred type agrees).
void Put(const Graph& g, const Node& n, size_t o, KnownIntegerTable& known, NxElementType type,
         Ints dims, Ints values) {
  if (o >= n.outputs.size() || n.outputs[o] < 0 || !IntegerType(type) || dims.size() > 1 ||
      values.size() > kMaxKnownIntegers)
    return;
  if (dims.size() == 1 ? dims[0] != static_cast<int64_t>(values.size()) : values.size() != 1)
    return;
  for (int64_t v : values)
    if (!Fits(type, v)) return;
  const int out = n.outputs[o];
  const TypeInfo& t = g.value(out).type;
  if (t.elem_type != type || t.kind != NX_VALUE_TENSOR) return;
  if (t.has_shape && t.dims.size() != dims.size()) return;
  if (t.has_shape && !dims.empty() && t.dims[0] >= 0 && t.dims[0] != dims[0]) return;
  known[static_cast<size_t>(out)] = KnownIntegers{type, std::move(dims), std::move(values)};
}

std::optional<int64_t> IntAttr(const Node& n, const char* name) {
  const Attribute* a = n.FindAttribute(name);
  if (a == nullptr || a->type != NX_ATTR_INT) return std::nullopt;
  return a->i;
}

std::optional<Ints> IntsAttr(const Node& n, const char* name) {
  const Attribute* a = n.FindAttribute(name);
  if (a == nullptr || a->type != NX_ATTR_INTS) return std::nullopt;
  return a->ints;
}

// One axis only, 0 (or -1) of a rank-1 tensor.
bool FirstAxis(std::optional<int64_t> axis) { return !axis || *axis == 0 || *axis == -1; }

void PropagateShape(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto shape = StaticShape(g, n.inputs.empty() ? -1 : n.inputs[0]);
  if (!shape) return;
  const auto rank = static_cast<int64_t>(shape->size());
  int64_t begin = 0, end = rank;
  if (n.opset >= 15) {
    begin = IntAttr(n, "start").value_or(0);
    end = IntAttr(n, "end").value_or(rank);
    begin = begin < 0 ? std::max<int64_t>(0, begin + rank) : std::min(begin, rank);
    end = end < 0 ? std::max<int64_t>(0, end + rank) : std::min(end, rank);
  }
  Ints values;
  for (int64_t i = begin; i < end; ++i) values.push_back((*shape)[static_cast<size_t>(i)]);
  Put(g, n, 0, known, NX_TYPE_INT64, {static_cast<int64_t>(values.size())}, values);
}

void PropagateSize(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto shape = StaticShape(g, n.inputs.empty() ? -1 : n.inputs[0]);
  if (!shape) return;
  int64_t count = 1;
  for (int64_t d : *shape)
    if (__builtin_mul_overflow(count, d, &count)) return;
  Put(g, n, 0, known, NX_TYPE_INT64, {}, {count});
}

// Identity, Squeeze, Unsqueeze, Reshape: the same values under the output's static shape.
void PropagateSameValues(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto x = KnownInput(g, n, 0, known);
  if (!x || n.outputs.empty()) return;
  Ints dims = x->dims;
  if (n.op_type != "Identity") {
    auto shape = StaticShape(g, n.outputs[0]);
    if (!shape) return;
    dims = *shape;
  }
  Put(g, n, 0, known, x->type, dims, x->values);
}

void PropagateCast(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto x = KnownInput(g, n, 0, known);
  auto to = IntAttr(n, "to");
  if (!x || !to) return;
  const auto type = static_cast<NxElementType>(*to);
  Put(g, n, 0, known, type, x->dims, x->values);  // Put drops what does not fit
}

void PropagateConcat(const Graph& g, const Node& n, KnownIntegerTable& known) {
  if (!FirstAxis(IntAttr(n, "axis")) || n.inputs.empty()) return;
  Ints values;
  NxElementType type = NX_TYPE_UNDEFINED;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    auto x = KnownInput(g, n, i, known);
    if (!x || x->dims.size() != 1 || (type != NX_TYPE_UNDEFINED && x->type != type)) return;
    type = x->type;
    values.insert(values.end(), x->values.begin(), x->values.end());
    if (values.size() > kMaxKnownIntegers) return;
  }
  Put(g, n, 0, known, type, {static_cast<int64_t>(values.size())}, values);
}

// ONNX's Slice on one axis of length `dim`: start and end made non-negative and clamped (to
// [0, dim] stepping forward, [-1, dim - 1] stepping back).
Ints SliceIndices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clamp = [&](int64_t v) {
    if (v < 0) v = v < -dim ? -dim - 1 : v + dim;  // avoids overflow at INT64_MIN
    return step > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
  };
  Ints out;
  const int64_t s = clamp(start), e = clamp(end);
  for (int64_t i = s; step > 0 ? i < e : i > e;) {
    out.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;  // a huge step: one element
  }
  return out;
}

void PropagateSlice(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto x = KnownInput(g, n, 0, known);
  if (!x || x->dims.size() != 1) return;
  Ints starts, ends, axes, steps;
  if (n.opset < 10) {
    auto s = IntsAttr(n, "starts"), e = IntsAttr(n, "ends"), a = IntsAttr(n, "axes");
    if (!s || !e) return;
    starts = *s;
    ends = *e;
    if (a) axes = *a;
  } else {
    auto s = KnownInput(g, n, 1, known), e = KnownInput(g, n, 2, known);
    if (!s || !e) return;
    starts = s->values;
    ends = e->values;
    for (size_t i : {size_t{3}, size_t{4}}) {
      if (i >= n.inputs.size() || n.inputs[i] < 0) continue;
      auto v = KnownInput(g, n, i, known);
      if (!v) return;
      (i == 3 ? axes : steps) = v->values;
    }
  }
  if (starts.size() != 1 || ends.size() != 1 || axes.size() > 1 || steps.size() > 1) return;
  if (!axes.empty() && axes[0] != 0 && axes[0] != -1) return;
  const int64_t step = steps.empty() ? 1 : steps[0];
  if (step == 0) return;
  Ints values;
  for (int64_t i : SliceIndices(static_cast<int64_t>(x->values.size()), starts[0], ends[0], step))
    values.push_back(x->values[static_cast<size_t>(i)]);
  Put(g, n, 0, known, x->type, {static_cast<int64_t>(values.size())}, values);
}

void PropagateGather(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto x = KnownInput(g, n, 0, known), idx = KnownInput(g, n, 1, known);
  if (!x || !idx || x->dims.size() != 1 || !FirstAxis(IntAttr(n, "axis"))) return;
  const auto size = static_cast<int64_t>(x->values.size());
  Ints values;
  for (int64_t i : idx->values) {
    if (i < -size || i >= size) return;  // the kernel reports it
    values.push_back(x->values[static_cast<size_t>(i < 0 ? i + size : i)]);
  }
  Put(g, n, 0, known, x->type, idx->dims, values);
}

// Two-input integer arithmetic, one side broadcast when it has one element.
void PropagateArithmetic(const Graph& g, const Node& n, KnownIntegerTable& known) {
  auto a = KnownInput(g, n, 0, known), b = KnownInput(g, n, 1, known);
  if (n.inputs.size() != 2 || !a || !b || a->type != b->type) return;
  const size_t na = a->values.size(), nb = b->values.size();
  if (na != nb && na != 1 && nb != 1) return;
  const std::string& op = n.op_type;
  Ints values;
  for (size_t i = 0; i < std::max(na, nb); ++i) {
    const int64_t x = a->values[na == 1 ? 0 : i], y = b->values[nb == 1 ? 0 : i];
    int64_t r = 0;
    if (op == "Add") {
      if (__builtin_add_overflow(x, y, &r)) return;
    } else if (op == "Sub") {
      if (__builtin_sub_overflow(x, y, &r)) return;
    } else if (op == "Mul") {
      if (__builtin_mul_overflow(x, y, &r)) return;
    } else if (op == "Div") {
      if (x < 0 || y <= 0) return;  // truncating and flooring division agree only here
      r = x / y;
    } else if (op == "Max") {
      r = std::max(x, y);
    } else {
      r = std::min(x, y);
    }
    values.push_back(r);
  }
  Ints dims = a->dims.size() >= b->dims.size() ? a->dims : b->dims;
  if (!dims.empty()) dims[0] = static_cast<int64_t>(values.size());
  Put(g, n, 0, known, a->type, dims, values);
}

}  // namespace

std::optional<KnownIntegers> KnownInput(const Graph& graph, const Node& node, size_t i,
                                        const KnownIntegerTable& known) {
  if (i >= node.inputs.size() || node.inputs[i] < 0) return std::nullopt;
  const auto v = static_cast<size_t>(node.inputs[i]);
  if (v < known.size() && known[v]) return known[v];
  const ValueDef& def = graph.value(node.inputs[i]);
  if (!def.initializer || def.is_graph_input) return std::nullopt;
  const Value& t = *def.initializer;
  if (t.kind != NX_VALUE_TENSOR || !IntegerType(t.type) || t.dims.size() > 1 ||
      t.count > kMaxKnownIntegers || !IsHostReadable(t) || (t.count > 0 && t.data == nullptr))
    return std::nullopt;
  KnownIntegers out{t.type, t.dims, Ints(t.count)};
  for (size_t k = 0; k < t.count; ++k)
    out.values[k] = t.type == NX_TYPE_INT64 ? static_cast<const int64_t*>(t.data)[k]
                                            : static_cast<const int32_t*>(t.data)[k];
  return out;
}

void PropagateKnownIntegers(const Graph& graph, const Node& node, KnownIntegerTable& known) {
  if (!node.domain.empty() || node.outputs.empty()) return;
  if (known.size() < graph.values.size()) known.resize(graph.values.size());
  const std::string& op = node.op_type;
  try {
    if (op == "Shape") {
      PropagateShape(graph, node, known);
    } else if (op == "Size") {
      PropagateSize(graph, node, known);
    } else if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" || op == "Reshape") {
      PropagateSameValues(graph, node, known);
    } else if (op == "Cast") {
      PropagateCast(graph, node, known);
    } else if (op == "Concat") {
      PropagateConcat(graph, node, known);
    } else if (op == "Slice") {
      PropagateSlice(graph, node, known);
    } else if (op == "Gather") {
      PropagateGather(graph, node, known);
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" ||
               op == "Min") {
      PropagateArithmetic(graph, node, known);
    }
  } catch (const std::exception&) {
    // Only allocation failure gets here; an unknown value costs an optimisation, no more.
  }
}

KnownIntegerTable KnownIntegerValues(const Graph& graph) {
  KnownIntegerTable known(graph.values.size());
  for (const Node& n : graph.nodes) PropagateKnownIntegers(graph, n, known);
  return known;
}

}  // namespace nxrt
