#include "session/parallel_conv_merge.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/value.h"
#include "graph/batch_norm_affine.h"
#include "graph/float_initializer.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

bool IsOnnx(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// Read by `user` alone, once, and not a graph output.
bool OnlyReadBy(const Graph& g, int v, const Node& user) {
  if (v < 0) return false;
  const ValueDef& d = g.value(v);
  return !d.is_graph_output && d.consumers.size() == 1 && d.consumers[0] == user.index;
}

const float* FloatInitializer(const Graph& g, int v, ValuePtr* keep) {
  if (v < 0) return nullptr;
  // (An initializer that is also a graph input may be fed another value: not a constant.)
  const ValuePtr& t = g.value(v).initializer;
  if (!t || g.value(v).is_graph_input || t->type != NX_TYPE_FLOAT || !IsHostReadable(*t))
    return nullptr;
  *keep = t;
  return static_cast<const float*>(t->data);
}

// A float convolution with constant weights, its geometry explicit per spatial axis.
struct ConvBranch {
  int x = -1;
  int64_t out_channels = 0, group_in = 0, group = 1;
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  std::vector<float> weights;  // [out_channels, group_in, kernel...]
  std::vector<float> bias;     // out_channels

  int64_t Taps() const {
    int64_t t = 1;
    for (int64_t k : kernel) t *= k;
    return t;
  }
  bool SameSampling(const ConvBranch& o) const {
    return x == o.x && out_channels == o.out_channels && group_in == o.group_in &&
           group == o.group && strides == o.strides && dilations == o.dilations;
  }
};

std::optional<ConvBranch> ReadConv(const Graph& g, const Node& n) {
  if (!IsOnnx(n, "Conv") || n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1 ||
      n.inputs[0] < 0)
    return std::nullopt;
  ValuePtr w;
  const float* wd = FloatInitializer(g, n.inputs[1], &w);
  if (!wd || w->dims.size() < 3) return std::nullopt;
  ConvBranch c;
  c.x = n.inputs[0];
  c.out_channels = w->dims[0];
  c.group_in = w->dims[1];
  c.kernel.assign(w->dims.begin() + 2, w->dims.end());
  const size_t spatial = c.kernel.size();
  if (c.out_channels <= 0 || c.group_in <= 0) return std::nullopt;
  for (int64_t k : c.kernel)
    if (k <= 0) return std::nullopt;
  c.strides.assign(spatial, 1);
  c.dilations.assign(spatial, 1);
  std::vector<int64_t> pads(2 * spatial, 0);
  for (const Attribute& a : n.attributes) {
    if (a.name == "auto_pad") {
      if (!a.s.empty() && a.s != "NOTSET" && a.s != "VALID") return std::nullopt;  // SAME_*
    } else if (a.name == "group") {
      c.group = a.i;
    } else if (a.name == "strides") {
      c.strides = a.ints;
    } else if (a.name == "dilations") {
      c.dilations = a.ints;
    } else if (a.name == "pads") {
      pads = a.ints;
    } else if (a.name == "kernel_shape") {
      if (a.ints != c.kernel) return std::nullopt;
    } else {
      return std::nullopt;  // an attribute this rewrite would not carry over
    }
  }
  if (c.strides.size() != spatial || c.dilations.size() != spatial || pads.size() != 2 * spatial ||
      c.group <= 0 || c.out_channels % c.group != 0)
    return std::nullopt;
  for (size_t i = 0; i < spatial; ++i) {
    if (c.strides[i] <= 0 || c.dilations[i] <= 0 || pads[i] < 0 || pads[i + spatial] < 0)
      return std::nullopt;
  }
  c.pad_begin.assign(pads.begin(), pads.begin() + static_cast<ptrdiff_t>(spatial));
  c.pad_end.assign(pads.begin() + static_cast<ptrdiff_t>(spatial), pads.end());
  c.weights.assign(wd, wd + w->count);
  c.bias.assign(static_cast<size_t>(c.out_channels), 0.0f);
  if (n.inputs.size() == 3 && n.inputs[2] >= 0) {
    ValuePtr b;
    const float* bd = FloatInitializer(g, n.inputs[2], &b);
    if (!bd || b->count != static_cast<size_t>(c.out_channels)) return std::nullopt;
    c.bias.assign(bd, bd + b->count);
  }
  return c;
}

// `c` on the grid of `kernel` taps starting `pad_begin` before the input (per axis): its taps
// shifted by the difference in padding, the new taps zero. False when its taps do not fall on
// that grid.
bool Relay(ConvBranch& c, const std::vector<int64_t>& kernel, const std::vector<int64_t>& pad_begin,
           const std::vector<int64_t>& pad_end) {
  const size_t spatial = kernel.size();
  std::vector<int64_t> shift(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t before = pad_begin[i] - c.pad_begin[i], after = pad_end[i] - c.pad_end[i];
    const int64_t d = c.dilations[i];
    if (before < 0 || after < 0 || before % d != 0 || after % d != 0 ||
        c.kernel[i] + before / d + after / d != kernel[i])
      return false;
    shift[i] = before / d;
  }
  if (kernel == c.kernel) {
    c.pad_begin = pad_begin;
    c.pad_end = pad_end;
    return true;
  }
  int64_t new_taps = 1;
  for (int64_t k : kernel) new_taps *= k;
  const int64_t old_taps = c.Taps(), planes = c.out_channels * c.group_in;
  std::vector<float> w(static_cast<size_t>(planes * new_taps), 0.0f);
  std::vector<int64_t> at(spatial, 0);  // a tap of the old kernel
  for (int64_t t = 0; t < old_taps; ++t) {
    int64_t to = 0;
    for (size_t i = 0; i < spatial; ++i) to = to * kernel[i] + at[i] + shift[i];
    for (int64_t p = 0; p < planes; ++p)
      w[static_cast<size_t>(p * new_taps + to)] = c.weights[static_cast<size_t>(p * old_taps + t)];
    for (size_t i = spatial; i-- > 0;) {  // next tap, last axis fastest
      if (++at[i] < c.kernel[i]) break;
      at[i] = 0;
    }
  }
  c.weights = std::move(w);
  c.kernel = kernel;
  c.pad_begin = pad_begin;
  c.pad_end = pad_end;
  return true;
}

// a += sign * b, both convolutions of one input with the same sampling: on the grid both fit.
bool AddBranch(ConvBranch& a, ConvBranch b, float sign) {
  if (!a.SameSampling(b) || a.kernel.size() != b.kernel.size()) return false;
  const size_t spatial = a.kernel.size();
  std::vector<int64_t> pb(spatial), pe(spatial), k(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    pb[i] = std::max(a.pad_begin[i], b.pad_begin[i]);
    pe[i] = std::max(a.pad_end[i], b.pad_end[i]);
    const int64_t d = a.dilations[i];
    const int64_t ka = a.kernel[i] + (pb[i] - a.pad_begin[i]) / d + (pe[i] - a.pad_end[i]) / d;
    k[i] = ka;
  }
  ConvBranch merged = a;
  if (!Relay(merged, k, pb, pe) || !Relay(b, k, pb, pe)) return false;
  for (size_t i = 0; i < merged.weights.size(); ++i) merged.weights[i] += sign * b.weights[i];
  for (size_t o = 0; o < merged.bias.size(); ++o) merged.bias[o] += sign * b.bias[o];
  a = std::move(merged);
  return true;
}

// a += sign * (scale * x + shift) per channel (x the convolution's own input): the scale on the tap
// that reads the output position's own pixel, of each output channel's own input channel. Needs an
// output of the input's shape: stride 1, as many output as input channels, a size-keeping
// padding.
bool AddIdentity(ConvBranch& a, const std::vector<float>& scale, const std::vector<float>& shift,
                 float sign) {
  if (a.out_channels != a.group_in * a.group) return false;
  const size_t spatial = a.kernel.size();
  int64_t centre = 0;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t d = a.dilations[i];
    if (a.strides[i] != 1 || a.pad_begin[i] + a.pad_end[i] != (a.kernel[i] - 1) * d ||
        a.pad_begin[i] % d != 0)
      return false;
    centre = centre * a.kernel[i] + a.pad_begin[i] / d;
  }
  const int64_t taps = a.Taps();
  for (int64_t o = 0; o < a.out_channels; ++o) {
    const int64_t plane = o * a.group_in + o % a.group_in;
    a.weights[static_cast<size_t>(plane * taps + centre)] += sign * scale[static_cast<size_t>(o)];
    a.bias[static_cast<size_t>(o)] += sign * shift[static_cast<size_t>(o)];
  }
  return true;
}

// The values of a float constant per output channel, when it broadcasts over the output
// [N, C, spatial...] along the channels only (one value per channel, or one in all).
std::optional<std::vector<float>> ChannelConstant(const Graph& g, const ConvBranch& a, int v) {
  ValuePtr t;
  const float* data = FloatInitializer(g, v, &t);
  const size_t rank = a.kernel.size() + 2;
  if (!data || t->dims.size() > rank || t->count == 0) return std::nullopt;
  const size_t lead = rank - t->dims.size();  // t's dims sit on the output's last axes
  for (size_t i = 0; i < t->dims.size(); ++i) {
    const bool channel_axis = lead + i == 1;
    if (t->dims[i] != 1 && !(channel_axis && t->dims[i] == a.out_channels)) return std::nullopt;
  }
  std::vector<float> out(static_cast<size_t>(a.out_channels));
  for (int64_t o = 0; o < a.out_channels; ++o)
    out[static_cast<size_t>(o)] = t->count == 1 ? data[0] : data[o];
  return out;
}

// a *= sign * c per output channel: its weights and bias.
void Scale(ConvBranch& a, const std::vector<float>& c, float sign) {
  const int64_t per_channel = static_cast<int64_t>(a.weights.size()) / a.out_channels;
  for (int64_t o = 0; o < a.out_channels; ++o) {
    const float k = sign * c[static_cast<size_t>(o)];
    for (int64_t i = 0; i < per_channel; ++i)
      a.weights[static_cast<size_t>(o * per_channel + i)] *= k;
    a.bias[static_cast<size_t>(o)] *= k;
  }
}

void SetInts(Node& n, const char* name, std::vector<int64_t> ints) {
  for (Attribute& a : n.attributes) {
    if (a.name == name) {
      a.ints = std::move(ints);
      return;
    }
  }
  Attribute a;
  a.name = name;
  a.type = NX_ATTR_INTS;
  a.ints = std::move(ints);
  n.attributes.push_back(std::move(a));
}

// `conv` becomes the merged convolution `c`, writing `out`.
void Rewrite(Graph& g, Node& conv, const ConvBranch& c, int out) {
  std::vector<int64_t> w_dims = {c.out_channels, c.group_in};
  w_dims.insert(w_dims.end(), c.kernel.begin(), c.kernel.end());
  const std::string base = conv.name.empty() ? std::string("merged_conv") : conv.name;
  const int w = AddFloatInitializer(g, base + "_merged_W", w_dims, c.weights);
  const int b = AddFloatInitializer(g, base + "_merged_B", {c.out_channels}, c.bias);
  conv.inputs = {c.x, w, b};
  conv.outputs = {out};
  std::vector<int64_t> pads = c.pad_begin;
  pads.insert(pads.end(), c.pad_end.begin(), c.pad_end.end());
  conv.attributes.erase(std::remove_if(conv.attributes.begin(), conv.attributes.end(),
                                       [](const Attribute& a) { return a.name == "auto_pad"; }),
                        conv.attributes.end());
  SetInts(conv, "pads", std::move(pads));
  SetInts(conv, "kernel_shape", c.kernel);
}

// Folds what `op` (an Add, Sub or Mul) does with the convolution on input `side` into it: true
// with `c` updated and `other` set to the node that leaves with the op (or null).
bool FoldOp(Graph& g, const Node& op, int side, ConvBranch& c, const std::vector<bool>& touched,
            Node** other) {
  const int v = op.inputs[static_cast<size_t>(1 - side)];
  *other = nullptr;
  if (IsOnnx(op, "Mul")) {  // conv * per-channel constant
    std::optional<std::vector<float>> k = ChannelConstant(g, c, v);
    if (!k) return false;
    Scale(c, *k, 1.0f);
    return true;
  }
  // conv + other, conv - other or other - conv.
  const bool sub = IsOnnx(op, "Sub");
  if (sub && side == 1)
    Scale(c, std::vector<float>(static_cast<size_t>(c.out_channels), 1.0f), -1.0f);
  const float sign = sub && side == 0 ? -1.0f : 1.0f;
  const int q = g.value(v).producer;
  Node* node = q >= 0 && !touched[static_cast<size_t>(q)] && OnlyReadBy(g, v, op)
                   ? &g.nodes[static_cast<size_t>(q)]
                   : nullptr;
  if (node && IsOnnx(*node, "Conv") &&
      node->index != g.value(op.inputs[static_cast<size_t>(side)]).producer) {
    std::optional<ConvBranch> d = ReadConv(g, *node);
    *other = node;
    return d && AddBranch(c, std::move(*d), sign);
  }
  if (node && IsOnnx(*node, "BatchNormalization") && !node->inputs.empty() &&
      node->inputs[0] == c.x) {
    std::vector<float> scale, shift;
    *other = node;
    return InferenceBatchNormAffine(g, *node, c.out_channels, scale, shift) &&
           AddIdentity(c, scale, shift, sign);
  }
  const std::vector<float> ones(static_cast<size_t>(c.out_channels), 1.0f);
  if (v == c.x) return AddIdentity(c, ones, std::vector<float>(ones.size(), 0.0f), sign);
  if (std::optional<std::vector<float>> k = ChannelConstant(g, c, v)) {
    for (size_t o = 0; o < k->size(); ++o) c.bias[o] += sign * (*k)[o];
    return true;
  }
  return false;
}

// One pass over the Adds, Subs and Muls in order; a node changed in this pass is not looked at
// again until the graph is relinked. Marks the nodes that leave in `dead`.
int MergePass(Graph& g, std::vector<bool>& dead) {
  std::vector<bool> touched(g.nodes.size(), false);
  int merged = 0;
  for (Node& op : g.nodes) {
    if (!(IsOnnx(op, "Add") || IsOnnx(op, "Sub") || IsOnnx(op, "Mul")) || op.inputs.size() != 2 ||
        op.outputs.size() != 1 || op.outputs[0] < 0 || touched[static_cast<size_t>(op.index)])
      continue;
    for (int side = 0; side < 2; ++side) {
      const int u = op.inputs[static_cast<size_t>(side)];
      if (u < 0 || op.inputs[static_cast<size_t>(1 - side)] < 0 || !OnlyReadBy(g, u, op)) continue;
      const int p = g.value(u).producer;
      if (p < 0 || touched[static_cast<size_t>(p)]) continue;
      Node& conv = g.nodes[static_cast<size_t>(p)];
      std::optional<ConvBranch> c = ReadConv(g, conv);
      Node* other = nullptr;
      if (!c || !FoldOp(g, op, side, *c, touched, &other)) continue;
      Rewrite(g, conv, *c, op.outputs[0]);
      touched[static_cast<size_t>(p)] = true;
      touched[static_cast<size_t>(op.index)] = true;
      dead[static_cast<size_t>(op.index)] = true;
      if (other) {
        touched[static_cast<size_t>(other->index)] = true;
        dead[static_cast<size_t>(other->index)] = true;
      }
      ++merged;
      break;
    }
  }
  return merged;
}

}  // namespace

int MergeParallelConvs(Graph& graph) {
  int total = 0;
  for (;;) {
    std::vector<bool> dead(graph.nodes.size(), false);
    const int merged = MergePass(graph, dead);
    if (merged == 0) break;
    total += merged;
    std::vector<Node> kept;
    kept.reserve(graph.nodes.size());
    for (Node& n : graph.nodes)
      if (!dead[static_cast<size_t>(n.index)]) kept.push_back(std::move(n));
    graph.nodes = std::move(kept);
    graph.Finalize();
  }
  if (total == 0) return 0;
  // The branches' own weights and biases, now read by nothing.
  for (ValueDef& def : graph.values)
    if (def.initializer && def.consumers.empty() && !def.is_graph_output && !def.is_graph_input)
      def.initializer.reset();
  return total;
}

}  // namespace nxrt
