#include "blocked/blocked_ops.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/nn/resize_plan.h"

namespace nxrt::cpu::blocked {

bool IsBlockable(const ep::ValueInfoView& v) {
  if (!v.present() || v.kind() != NX_VALUE_TENSOR || v.type() != NX_TYPE_FLOAT) return false;
  auto shape = v.shape();
  if (!shape || shape->size() != 4 || (*shape)[1] <= 0) return false;
  for (int64_t d : *shape)
    if (d == 0 || d < -1) return false;
  return true;
}

std::vector<int64_t> StaticDims(const ep::ValueInfoView& v) { return *v.shape(); }

// Two declared shapes that may be the same: equal where both are known. (Unknown dimensions
// are checked when the group is compiled for real shapes.)
static bool MayMatch(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

bool IsActivationOp(const std::string& op) {
  return op == "Relu" || op == "LeakyRelu" || op == "Sigmoid" || op == "Tanh" ||
         op == "HardSwish" || op == "HardSigmoid" || op == "Clip";
}

namespace {

bool SameDims(const ep::ValueInfoView& a, const ep::ValueInfoView& b) {
  std::vector<int64_t> x = StaticDims(a), y = StaticDims(b);
  for (size_t i = 0; i < 4; ++i)
    if (!MayMatch(x[i], y[i])) return false;
  return x[1] == y[1];
}

// [N, C, 1, 1] against [N, C, H, W]: one scale or offset per channel.
bool PerChannelOf(const ep::ValueInfoView& small, const ep::ValueInfoView& big) {
  std::vector<int64_t> s = StaticDims(small), b = StaticDims(big);
  return MayMatch(s[0], b[0]) && s[1] == b[1] && s[2] == 1 && s[3] == 1;
}

// A float constant of shape [C, 1, 1] or [1, C, 1, 1]: one value per channel of a 4-D tensor.
bool PerChannelConstant(const ep::ValueInfoView& c, int64_t channels) {
  auto s = c.shape();
  if (!s || c.type() != NX_TYPE_FLOAT || s->size() < 3 || s->size() > 4) return false;
  const size_t channel_axis = s->size() - 3;
  for (size_t i = 0; i < s->size(); ++i)
    if ((*s)[i] != (i == channel_axis ? channels : 1)) return false;
  return true;
}

bool TwoDimensional(const std::vector<int64_t>& v, size_t n) { return v.empty() || v.size() == n; }

bool ConvSupported(const ep::NodeView& node, int64_t block, const std::vector<bool>& constant) {
  const size_t inputs = node.input_count();
  if (inputs < 2 || inputs > 3 || node.output_count() != 1) return false;
  if (!constant[1] || (inputs == 3 && node.has_input(2) && !constant[2])) return false;
  ep::ValueInfoView x = node.input(0), w = node.input(1), y = node.output(0);
  if (!IsBlockable(x) || !IsBlockable(y) || w.type() != NX_TYPE_FLOAT) return false;
  auto w_shape = w.shape();
  if (!w_shape || w_shape->size() != 4) return false;
  const std::vector<int64_t> xd = StaticDims(x), yd = StaticDims(y);
  const int64_t group = node.attr_int("group", 1);
  const int64_t c = xd[1], m = (*w_shape)[0];
  if (m != yd[1] || !MayMatch(yd[0], xd[0])) return false;
  const bool depthwise = group == c && m == c && (*w_shape)[1] == 1;
  // Grouped convolutions take whole blocks per group, which oneDNN's kernels need on a blocked
  // layout: RegNet's groups of 8 channels on 8-channel blocks as they are; narrower ones
  // (ResNeXt's 4 or 8 channels on 16-channel blocks) as a convolution of one group per block
  // whose weights are zero outside the groups' diagonal (NarrowGroups).
  const bool grouped = group > 1 && !depthwise && c % group == 0 && m % group == 0 &&
                       (*w_shape)[1] == c / group &&
                       (((c / group) % block == 0 && (m / group) % block == 0) ||
                        NarrowGroups(c / group, m / group, block));
  if (group != 1 && !depthwise && !grouped) return false;
  if (group == 1 && (*w_shape)[1] != c) return false;
  if (!TwoDimensional(node.attr_ints("kernel_shape"), 2) ||
      !TwoDimensional(node.attr_ints("strides"), 2) ||
      !TwoDimensional(node.attr_ints("dilations"), 2) ||
      !TwoDimensional(node.attr_ints("pads"), 4)) {
    return false;
  }
  if (node.has_input(2)) {
    auto b_shape = node.input(2).shape();
    if (node.input(2).type() != NX_TYPE_FLOAT || !b_shape || b_shape->size() != 1 ||
        (*b_shape)[0] != m) {
      return false;
    }
  }
  return true;
}

bool PoolSupported(const ep::NodeView& node, bool max) {
  if (node.input_count() != 1 || node.output_count() != 1) return false;  // no Indices
  if (!IsBlockable(node.input(0)) || !IsBlockable(node.output(0))) return false;
  if (node.attr_ints("kernel_shape").size() != 2) return false;
  if (max && node.attr_int("storage_order", 0) != 0) return false;
  if (!TwoDimensional(node.attr_ints("strides"), 2) ||
      !TwoDimensional(node.attr_ints("dilations"), 2) ||
      !TwoDimensional(node.attr_ints("pads"), 4)) {
    return false;
  }
  // An average over windows that ceil_mode lets run past the padding counts differently in
  // ONNX and oneDNN; keep those on the plain kernel.
  if (!max && node.attr_int("ceil_mode", 0) != 0) return false;
  // So do windows that lie wholly in the padding (oneDNN: the lowest float or 0; nxrt's
  // kernels: -inf or NaN, as the window's empty max or mean).
  const std::vector<int64_t> k = node.attr_ints("kernel_shape"), pads = node.attr_ints("pads");
  const std::vector<int64_t> d = node.attr_ints("dilations", {1, 1});
  for (size_t i = 0; i < pads.size(); ++i)
    if (pads[i] >= (k[i % 2] - 1) * d[i % 2] + 1) return false;
  // oneDNN 2.6 pools dilated windows only with its reference implementation (hundreds of times
  // slower); nxrt's own plain-layout pooling handles them.
  for (int64_t v : d)
    if (v != 1) return false;
  return StaticDims(node.input(0))[1] == StaticDims(node.output(0))[1];
}

// A one-input, one-output float node whose output has its input's 4-D shape.
bool ElementwiseOnBlockable(const ep::NodeView& node, const std::vector<bool>& constant) {
  return node.input_count() == 1 && node.output_count() == 1 && !constant[0] &&
         IsBlockable(node.input(0)) && IsBlockable(node.output(0)) &&
         SameDims(node.input(0), node.output(0));
}

// ReduceMean over both spatial axes, dimensions kept: a GlobalAveragePool (PP-LCNet's
// squeeze-and-excitation blocks). The axes come from the attribute (before opset 18) or a
// constant input.
bool SpatialMean(const ep::NodeView& node, const std::vector<bool>& constant) {
  if (node.output_count() != 1 || node.attr_int("keepdims", 1) != 1 ||
      !IsBlockable(node.input(0)) || !IsBlockable(node.output(0)))
    return false;
  std::vector<int64_t> axes;
  if (node.opset() < 18) {
    if (node.input_count() != 1) return false;
    axes = node.attr_ints("axes");
  } else {
    if (node.input_count() != 2 || !node.input(1).present() || !constant[1]) return false;
    std::optional<ep::ConstTensor> a = node.input(1).constant();
    if (!a || a->type() != NX_TYPE_INT64) return false;
    axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->size());
  }
  for (int64_t& axis : axes) axis = axis < 0 ? axis + 4 : axis;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

// A nearest Resize of the spatial axes by constant sizes or scales: its rules ONNX's (not
// tf_crop_and_resize, which reads roi), every axis, N and C unchanged.
bool NearestResize(const ep::NodeView& node, const std::vector<bool>& constant) {
  const size_t inputs = node.input_count();
  if (node.opset() < 11 || inputs < 2 || inputs > 4 || node.output_count() != 1 || constant[0])
    return false;
  if (node.attr_string("mode", "nearest") != "nearest" || !node.attr_ints("axes").empty() ||
      node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return false;
  auto coord = nn::CoordModeNamed(node.attr_string("coordinate_transformation_mode", "half_pixel"));
  if (!coord || *coord == nn::CoordMode::kTfCropAndResize ||
      !nn::NearestModeNamed(node.attr_string("nearest_mode", "round_prefer_floor")))
    return false;
  ep::ValueInfoView x = node.input(0), y = node.output(0);
  if (!IsBlockable(x) || !IsBlockable(y)) return false;
  for (size_t i = 1; i < inputs; ++i)
    if (node.input(i).present() && !constant[i]) return false;
  auto given = [&](size_t i) -> std::optional<ep::ConstTensor> {
    if (i >= inputs || !node.input(i).present()) return std::nullopt;
    std::optional<ep::ConstTensor> t = node.input(i).constant();
    if (t && t->size() == 0) return std::nullopt;  // an empty placeholder
    return t;
  };
  std::optional<ep::ConstTensor> scales = given(2), sizes = given(3);
  if (scales.has_value() == sizes.has_value()) return false;
  const std::vector<int64_t> xd = StaticDims(x);
  if (scales) {
    if (scales->type() != NX_TYPE_FLOAT || scales->size() != 4) return false;
    const float* s = scales->data<float>();
    if (s[0] != 1.0f || s[1] != 1.0f) return false;
    // Upscales only: floor(in * scale) is then never 0 whatever the run-time size.
    for (int d = 2; d < 4; ++d)
      if (!(s[d] >= 1.0f) || !std::isfinite(s[d])) return false;
    return true;
  }
  if (sizes->type() != NX_TYPE_INT64 || sizes->size() != 4) return false;
  const int64_t* s = sizes->data<int64_t>();
  // The batch must be known to be unchanged: a Resize of N is no blocked step.
  return xd[0] > 0 && s[0] == xd[0] && s[1] == xd[1] && s[2] > 0 && s[3] > 0;
}

// A Split along channels whose every output has a known channel count (shape inference read
// the split sizes): the counts add up to the input's, the rest of the shape is the input's.
bool ChannelSplit(const ep::NodeView& node, const std::vector<bool>& constant) {
  const int64_t axis = node.attr_int("axis", 0);
  if ((axis != 1 && axis != -3) || node.input_count() < 1 || node.input_count() > 2 ||
      node.output_count() < 1 || constant[0] || !IsBlockable(node.input(0)))
    return false;
  if (node.input_count() == 2 && node.input(1).present() && !constant[1]) return false;
  const std::vector<int64_t> x = StaticDims(node.input(0));
  int64_t channels = 0;
  for (size_t o = 0; o < node.output_count(); ++o) {
    ep::ValueInfoView y = node.output(o);
    if (!IsBlockable(y)) return false;
    const std::vector<int64_t> d = StaticDims(y);
    if (!MayMatch(d[0], x[0]) || !MayMatch(d[2], x[2]) || !MayMatch(d[3], x[3])) return false;
    channels += d[1];
  }
  return channels == x[1];
}

// Gelu in its exact erf form: ONNX's (opset 20) without the tanh approximation, or
// com.microsoft's.
bool IsErfGelu(const ep::NodeView& node) {
  if (node.op_type() != "Gelu") return false;
  if (node.domain() == "com.microsoft") return true;
  return node.domain().empty() && node.attr_string("approximate", "none") == "none";
}

}  // namespace

BlockedOp ClassifyWithConstants(const ep::NodeView& node, int64_t block,
                                const std::vector<bool>& constant) {
  if (IsErfGelu(node))
    return ElementwiseOnBlockable(node, constant) ? BlockedOp::kActivation : BlockedOp::kNone;
  if (!node.domain().empty()) return BlockedOp::kNone;
  const std::string op = node.op_type();
  const size_t inputs = node.input_count();
  if (op == "Erf")
    return ElementwiseOnBlockable(node, constant) ? BlockedOp::kGeluErf : BlockedOp::kNone;
  // Ops that only rename or reshape a constant (the data stays as it is): torch shares weights
  // through Identity, PaddlePaddle reshapes each bias of a squeeze-and-excitation block to
  // [1, C, 1, 1] before its Add. With constant inputs they are views of that constant.
  if (op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Flatten") {
    bool all_constant = inputs >= 1 && node.output_count() == 1;
    for (size_t i = 0; i < inputs && all_constant; ++i)
      all_constant = !node.input(i).present() || constant[i];
    return all_constant && node.input(0).type() == NX_TYPE_FLOAT ? BlockedOp::kConstantAlias
                                                                 : BlockedOp::kNone;
  }
  if (op == "Conv")
    return ConvSupported(node, block, constant) ? BlockedOp::kConv : BlockedOp::kNone;
  if (IsActivationOp(op)) {
    if (inputs < 1 || node.output_count() != 1 || constant[0]) return BlockedOp::kNone;
    if (!IsBlockable(node.input(0)) || !IsBlockable(node.output(0))) return BlockedOp::kNone;
    if (!SameDims(node.input(0), node.output(0))) return BlockedOp::kNone;
    if (op == "Clip") {
      for (size_t i = 1; i < inputs; ++i) {
        ep::ValueInfoView bound = node.input(i);
        if (!bound.present()) continue;
        auto s = bound.shape();
        if (!constant[i] || bound.type() != NX_TYPE_FLOAT || !s || !s->empty())
          return BlockedOp::kNone;
      }
    } else if (inputs != 1) {
      return BlockedOp::kNone;
    }
    return BlockedOp::kActivation;
  }
  if (op == "BatchNormalization") {
    if (inputs != 5 || node.output_count() != 1 || node.attr_int("training_mode", 0) != 0)
      return BlockedOp::kNone;
    if (!IsBlockable(node.input(0)) || !IsBlockable(node.output(0))) return BlockedOp::kNone;
    const int64_t c = StaticDims(node.input(0))[1];
    for (size_t i = 1; i < 5; ++i) {
      auto s = node.input(i).shape();
      if (!constant[i] || node.input(i).type() != NX_TYPE_FLOAT || !s || s->size() != 1 ||
          (*s)[0] != c)
        return BlockedOp::kNone;
    }
    return BlockedOp::kBatchNorm;
  }
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && inputs == 2 &&
      constant[0] != constant[1]) {
    // x op c (or c op x for Add, Sub and Mul) with a one-element constant c.
    const size_t k = constant[0] ? 0 : 1;
    ep::ValueInfoView c = node.input(k), x = node.input(1 - k);
    auto s = c.shape();
    bool one = s && s->size() <= 4 && c.type() == NX_TYPE_FLOAT;
    if (one)
      for (int64_t d : *s) one &= d == 1;
    if (node.output_count() != 1 || !IsBlockable(x) || !IsBlockable(node.output(0)) ||
        !SameDims(x, node.output(0)))
      return BlockedOp::kNone;
    if (one) return op == "Div" && k == 0 ? BlockedOp::kNone : BlockedOp::kLinear;
    // One value per channel ([C, 1, 1] or [1, C, 1, 1]): x + c, x - c, c + x, x * c, c * x.
    if (op == "Div" || (op == "Sub" && k == 0) || !PerChannelConstant(c, StaticDims(x)[1]))
      return BlockedOp::kNone;
    return op == "Mul" ? BlockedOp::kMul : BlockedOp::kAdd;
  }
  if (op == "Add" || op == "Mul") {
    if (inputs != 2 || node.output_count() != 1 || constant[0] || constant[1])
      return BlockedOp::kNone;
    ep::ValueInfoView a = node.input(0), b = node.input(1), y = node.output(0);
    if (!IsBlockable(a) || !IsBlockable(b) || !IsBlockable(y)) return BlockedOp::kNone;
    const bool ok = (SameDims(a, y) && (SameDims(b, y) || PerChannelOf(b, y))) ||
                    (SameDims(b, y) && PerChannelOf(a, y));
    if (!ok) return BlockedOp::kNone;
    return op == "Add" ? BlockedOp::kAdd : BlockedOp::kMul;
  }
  if (op == "MaxPool") return PoolSupported(node, true) ? BlockedOp::kMaxPool : BlockedOp::kNone;
  if (op == "AveragePool")
    return PoolSupported(node, false) ? BlockedOp::kAveragePool : BlockedOp::kNone;
  if (op == "ReduceMean")
    return SpatialMean(node, constant) ? BlockedOp::kGlobalPool : BlockedOp::kNone;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    if (inputs != 1 || node.output_count() != 1) return BlockedOp::kNone;
    if (!IsBlockable(node.input(0)) || !IsBlockable(node.output(0))) return BlockedOp::kNone;
    return BlockedOp::kGlobalPool;
  }
  if (op == "Resize") return NearestResize(node, constant) ? BlockedOp::kResize : BlockedOp::kNone;
  if (op == "Split") return ChannelSplit(node, constant) ? BlockedOp::kSplit : BlockedOp::kNone;
  if (op == "Concat") {
    const int64_t axis = node.attr_int("axis", 0);
    if ((axis != 1 && axis != -3) || inputs < 1 || node.output_count() != 1)
      return BlockedOp::kNone;
    for (size_t i = 0; i < inputs; ++i)
      if (constant[i] || !IsBlockable(node.input(i))) return BlockedOp::kNone;
    return IsBlockable(node.output(0)) ? BlockedOp::kConcat : BlockedOp::kNone;
  }
  return BlockedOp::kNone;
}

}  // namespace nxrt::cpu::blocked
