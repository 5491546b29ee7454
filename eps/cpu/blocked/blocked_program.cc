#include "blocked/blocked_program.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "blocked/blocked_group.h"
#include "blocked/blocked_ops.h"
#include "blocked/blocked_steps.h"
#include "common/broadcast.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_plan.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/nn/pool_geometry.h"
#include "kernels/nn/resize_plan.h"

namespace nxrt::cpu::blocked {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using linalg::DnnlEngine;
using linalg::DnnlStream;
constexpr auto kF32 = memory::data_type::f32;

// Bytes a memory-bound step (pooling, eltwise, binary, reorder) moves per image below which it
// runs as one slice.
constexpr int64_t kMinSliceBytes = int64_t{1} << 16;

struct Value {
  std::string name;
  std::vector<int64_t> dims;    // [N, C, H, W] when blockable
  int producer = -1;            // node (index in the group) or -1
  std::vector<int> readers;     // nodes
  int input = -1, output = -1;  // kernel input / output index
  std::shared_ptr<GroupConstant> constant;
  bool plain = false;           // a kernel input read in place (plain NCHW)
  int buffer = -1;              // arena buffer while blocked
  int64_t base = 0;             // the value's first channel within the buffer's images
  int64_t buffer_channels = 0;  // channels of one image in the buffer (a multiple of the block)
  int concat = -1;              // written straight into this Concat output at `concat_base`
  int64_t concat_base = 0;
  bool entered = false;  // kernel input already reordered into the arena
};

// What a Conv node turned into after fusion.
struct Fused {
  bool sum = false;  // the Add; otherwise the activation `eltwise`
  Eltwise eltwise;
};
struct ConvFusion {
  std::vector<Fused> chain;  // in order
  int sum = -1;              // the Add's other operand (value), or -1
  int sum_node = -1;         // the Add fused in
  int final = -1;            // the value the fused chain produces
  // BatchNormalizations and Add / Sub / Mul of per-channel constants right after the Conv, in
  // order: folded into its weights and bias.
  std::vector<int> affine;
};

class Compiler {
 public:
  Compiler(const GroupDesc& group, const std::vector<std::vector<int64_t>>& input_dims,
           const BlockedOptions& options)
      : desc_(group),
        input_dims_(input_dims),
        opt_(options),
        tag_(options.block == 16 ? Tag::nChw16c : Tag::nChw8c) {}

  Program Compile() {
    ReadGraph();
    InferShapes();
    MarkPlainInputs();
    PlanFusions();
    PlanWrittenGelus();
    PlanConcats();
    for (size_t i = 0; i < desc_.nodes.size(); ++i) {
      if (fused_[i] || ops_[i] == BlockedOp::kConstantAlias) continue;
      EmitNode(static_cast<int>(i));
    }
    PlanArena();
    program_.threads = opt_.threads;
    MakePrimitives();
    return std::move(program_);
  }

 private:
  // ---- the group -----------------------------------------------------------------------------

  const GroupNode& Node(int node) const { return desc_.nodes[static_cast<size_t>(node)]; }

  void ReadGraph() {
    values_.resize(desc_.values.size());
    program_.inputs.resize(desc_.num_inputs);
    program_.output_dims.resize(desc_.num_outputs);
    for (size_t v = 0; v < desc_.values.size(); ++v) {
      const GroupValue& g = desc_.values[v];
      Value& value = values_[v];
      value.name = g.name;
      value.constant = g.constant;
      value.input = g.input;
      value.output = g.output;
      if (g.input >= 0 && !g.constant) {
        value.dims = input_dims_.at(static_cast<size_t>(g.input));
        program_.inputs[static_cast<size_t>(g.input)].dims = value.dims;
      }
    }
    const size_t n = desc_.nodes.size();
    for (size_t i = 0; i < n; ++i) {
      const GroupNode& node = desc_.nodes[i];
      for (int v : node.inputs)
        if (v >= 0) values_[static_cast<size_t>(v)].readers.push_back(static_cast<int>(i));
      for (int v : node.outputs) values_[static_cast<size_t>(v)].producer = static_cast<int>(i);
      ops_.push_back(node.op);
      in_.push_back(node.inputs);
      out_.push_back(node.outputs);
    }
    fused_.assign(n, false);
    gelu_of_.assign(n, -1);
    conv_.resize(n);
  }

  // The shapes of every value for this run's input shapes; they must agree with the shapes the
  // model declares where it declares them.
  void InferShapes() {
    for (size_t i = 0; i < desc_.nodes.size(); ++i) {
      const GroupNode& node = desc_.nodes[i];
      if (node.op == BlockedOp::kConstantAlias) continue;
      const std::vector<int64_t>& x = V(ActInput(static_cast<int>(i))).dims;
      NXRT_EP_ENFORCE(x.size() == 4,
                      "blocked group: " + node.Describe() + " reads a value of unknown shape");
      std::vector<int64_t> y = x;
      if (node.op == BlockedOp::kSplit) {
        SplitShapes(static_cast<int>(i), x);
        continue;
      }
      switch (node.op) {
        case BlockedOp::kConv:
          y = ConvGeometryOf(static_cast<int>(i)).output_dims().to_vector();
          break;
        case BlockedOp::kMaxPool:
        case BlockedOp::kAveragePool:
          y = nn::ResolvePool(PoolAttributesOf(node), x).out_shape.to_vector();
          break;
        case BlockedOp::kGlobalPool:
          y = {x[0], x[1], 1, 1};
          break;
        case BlockedOp::kAdd:
        case BlockedOp::kMul: {
          if (const int c = ChannelConstantOperand(static_cast<int>(i)); c >= 0) {
            NXRT_EP_ENFORCE(static_cast<int64_t>(V(c).constant->data.size()) == x[1],
                            "blocked group: " + node.Describe() + " has " +
                                std::to_string(V(c).constant->data.size()) +
                                " per-channel values for " + std::to_string(x[1]) + " channels");
            break;
          }
          const std::vector<int64_t>& b = V(node.inputs[1]).dims;
          auto per_channel = [](const std::vector<int64_t>& s, const std::vector<int64_t>& big) {
            return s[0] == big[0] && s[1] == big[1] && s[2] == 1 && s[3] == 1;
          };
          if (b == x || per_channel(b, x)) {
            y = x;
          } else if (per_channel(x, b)) {
            y = b;
          } else {
            ep::Fail(NX_INVALID_ARGUMENT, "blocked group: " + node.Describe() +
                                              " cannot broadcast " + ShapeToString(x) + " with " +
                                              ShapeToString(b));
          }
          break;
        }
        case BlockedOp::kResize:
          y = ResizedDims(static_cast<int>(i), x).first;
          break;
        case BlockedOp::kConcat:
          y[1] = 0;
          for (int v : node.inputs) {
            const std::vector<int64_t>& d = V(v).dims;
            NXRT_EP_ENFORCE(d.size() == 4 && d[0] == x[0] && d[2] == x[2] && d[3] == x[3],
                            "blocked group: " + node.Describe() + " joins " + ShapeToString(x) +
                                " and " + ShapeToString(d));
            y[1] += d[1];
          }
          break;
        default:
          break;
      }
      Value& out = V(node.outputs[0]);
      const std::vector<int64_t>& declared =
          desc_.values[static_cast<size_t>(node.outputs[0])].dims;
      for (size_t d = 0; d < declared.size() && d < y.size(); ++d) {
        NXRT_EP_ENFORCE(declared[d] < 0 || declared[d] == y[d],
                        "blocked group: " + node.Describe() + " makes " + ShapeToString(y) +
                            " where the model declares " + ShapeToString(declared));
      }
      for (int64_t d : y)
        NXRT_EP_ENFORCE(
            d > 0, "blocked group: " + node.Describe() + " makes an empty " + ShapeToString(y));
      out.dims = y;
      if (out.output >= 0) program_.output_dims[static_cast<size_t>(out.output)] = y;
    }
  }

  // A channel Split's outputs: the channel counts the model declares (ClassifyNode required
  // them), the rest of `x`'s shape.
  void SplitShapes(int node, const std::vector<int64_t>& x) {
    const GroupNode& n = Node(node);
    int64_t channels = 0;
    for (int o : n.outputs) {
      const std::vector<int64_t>& declared = desc_.values[static_cast<size_t>(o)].dims;
      NXRT_EP_ENFORCE(declared.size() == 4 && declared[1] > 0,
                      "blocked group: " + n.Describe() + " has an output of unknown channels");
      std::vector<int64_t> y = {x[0], declared[1], x[2], x[3]};
      for (size_t d = 0; d < 4; ++d)
        NXRT_EP_ENFORCE(declared[d] < 0 || declared[d] == y[d],
                        "blocked group: " + n.Describe() + " makes " + ShapeToString(y) +
                            " where the model declares " + ShapeToString(declared));
      channels += y[1];
      V(o).dims = y;
      if (V(o).output >= 0) program_.output_dims[static_cast<size_t>(V(o).output)] = y;
    }
    NXRT_EP_ENFORCE(channels == x[1], "blocked group: " + n.Describe() + " splits " +
                                          std::to_string(x[1]) + " channels into " +
                                          std::to_string(channels));
  }

  // A nearest Resize's output shape for input shape `x`, and its height and width scales: from
  // the constant `sizes` (the scale is out / in) or `scales` (the output is floor(in * scale)).
  std::pair<std::vector<int64_t>, std::array<double, 2>> ResizedDims(
      int node, const std::vector<int64_t>& x) {
    const GroupNode& n = Node(node);
    std::vector<int64_t> y = x;
    std::array<double, 2> scale{};
    const int sizes = n.Input(3), scales = n.Input(2);
    if (sizes >= 0 && V(sizes).constant && !V(sizes).constant->ints.empty()) {
      const std::vector<int64_t>& s = V(sizes).constant->ints;
      NXRT_EP_ENFORCE(s.size() == 4, "blocked group: " + n.Describe() + " needs 4 sizes");
      y = s;
      for (int d = 0; d < 2; ++d)
        scale[d] = static_cast<double>(y[d + 2]) / static_cast<double>(x[d + 2]);
    } else {
      NXRT_EP_ENFORCE(scales >= 0 && V(scales).constant && V(scales).constant->data.size() == 4,
                      "blocked group: " + n.Describe() + " needs 4 constant scales or sizes");
      for (int d = 0; d < 2; ++d) {
        scale[d] = V(scales).constant->data[static_cast<size_t>(d + 2)];
        const double out = std::floor(scale[d] * static_cast<double>(x[d + 2]));
        NXRT_EP_ENFORCE(out >= 1.0 && out < 1e9,
                        "blocked group: " + n.Describe() + " makes an empty or huge output");
        y[d + 2] = static_cast<int64_t>(out);
      }
    }
    NXRT_EP_ENFORCE(y[0] == x[0] && y[1] == x[1],
                    "blocked group: " + n.Describe() + " resizes the batch or the channels");
    return {y, scale};
  }

  linalg::ConvGeometry ConvGeometryOf(int node) {
    const GroupNode& n = Node(node);
    linalg::ConvAttributes a;
    a.op = n.Describe();
    a.auto_pad = n.String("auto_pad", "NOTSET");
    if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
    a.kernel_shape = n.Ints("kernel_shape");
    a.strides = n.Ints("strides");
    a.dilations = n.Ints("dilations");
    a.pads = n.Ints("pads");
    a.group = n.Int("group", 1);
    return linalg::ComputeConvGeometry(a, V(n.inputs[0]).dims, V(n.inputs[1]).constant->dims);
  }

  static nn::PoolAttributes PoolAttributesOf(const GroupNode& n) {
    nn::PoolAttributes a;
    a.op = n.op_type;
    a.kernel = n.Ints("kernel_shape");
    const size_t k = a.kernel.size();
    a.strides = n.Ints("strides", std::vector<int64_t>(k, 1));
    a.pads = n.Ints("pads", std::vector<int64_t>(2 * k, 0));
    a.dilations = n.Ints("dilations", std::vector<int64_t>(k, 1));
    a.auto_pad = n.String("auto_pad", "NOTSET");
    if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
    a.ceil_mode = n.Int("ceil_mode", 0) != 0;
    a.Validate();
    return a;
  }

  Value& V(int v) { return values_[static_cast<size_t>(v)]; }

  // Kernel inputs read in place: fewer channels than a block and read only as the source of
  // group-1 convolutions (a first layer on an RGB image), which oneDNN's direct kernels take in
  // plain NCHW.
  void MarkPlainInputs() {
    for (size_t v = 0; v < values_.size(); ++v) {
      Value& value = values_[v];
      if (value.input < 0 || value.constant || value.dims.size() != 4 || value.dims[1] >= Block())
        continue;
      bool only_convs = !value.readers.empty();
      for (int r : value.readers) {
        const size_t ri = static_cast<size_t>(r);
        if (ops_[ri] != BlockedOp::kConv || in_[ri][0] != static_cast<int>(v) ||
            desc_.nodes[ri].Int("group", 1) != 1) {
          only_convs = false;
        }
      }
      if (!only_convs) continue;
      value.plain = true;
      program_.inputs[static_cast<size_t>(value.input)].used = true;
    }
  }
  bool IsOutput(int v) { return V(v).output >= 0; }

  // The input a one-input member works on (kLinear, or kAdd / kMul with a constant: the
  // operand that is not the constant).
  int ActInput(int node) const {
    const GroupNode& n = Node(node);
    if (n.op == BlockedOp::kLinear || n.op == BlockedOp::kAdd || n.op == BlockedOp::kMul) {
      if (values_[static_cast<size_t>(n.inputs[0])].constant) return n.inputs[1];
    }
    return n.inputs[0];
  }

  // The constant of an Add, Sub or Mul with one value per channel (ClassifyNode), or -1.
  int ChannelConstantOperand(int node) const {
    const GroupNode& n = Node(node);
    if (n.op != BlockedOp::kAdd && n.op != BlockedOp::kMul) return -1;
    for (int v : n.inputs)
      if (values_[static_cast<size_t>(v)].constant) return v;
    return -1;
  }

  // Its values, one per channel: negated for Sub (x - c is x + (-c), exactly).
  std::vector<float> ChannelValues(int node) {
    const int v = ChannelConstantOperand(node);
    std::span<const float> data = V(v).constant->data;
    std::vector<float> out(data.begin(), data.end());
    if (OpType(node) == "Sub")
      for (float& x : out) x = -x;
    return out;
  }

  bool IsActivationLike(int node) const {
    return ops_[static_cast<size_t>(node)] == BlockedOp::kActivation ||
           ops_[static_cast<size_t>(node)] == BlockedOp::kLinear;
  }

  // The activation of a kActivation or kLinear node as oneDNN eltwise steps; Clip bounds come
  // from constant inputs (opset 11 on) or attributes (before).
  std::vector<Eltwise> Activation(int node) {
    const GroupNode& n = Node(node);
    using A = dnnl::algorithm;
    auto step = [](A alg, float alpha, float beta) {
      return Eltwise{static_cast<int>(alg), alpha, beta};
    };
    const std::string& op = n.op_type;
    if (n.op == BlockedOp::kLinear) {  // x * a + b
      const bool c_first = ActInput(node) == n.inputs[1];
      const float c = V(n.inputs[c_first ? 0 : 1]).constant->At(0);
      if (op == "Add") return {step(A::eltwise_linear, 1.0f, c)};
      if (op == "Sub") return {step(A::eltwise_linear, c_first ? -1.0f : 1.0f, c_first ? c : -c)};
      if (op == "Mul") return {step(A::eltwise_linear, c, 0.0f)};
      return {step(A::eltwise_linear, 1.0f / c, 0.0f)};  // Div: x / c
    }
    if (op == "Relu") return {step(A::eltwise_relu, 0.0f, 0.0f)};
    if (op == "LeakyRelu") return {step(A::eltwise_relu, n.Float("alpha", 0.01f), 0.0f)};
    if (op == "Sigmoid") return {step(A::eltwise_logistic, 0.0f, 0.0f)};
    if (op == "Tanh") return {step(A::eltwise_tanh, 0.0f, 0.0f)};
    if (op == "HardSwish") return {step(A::eltwise_hardswish, 0.0f, 0.0f)};
    if (op == "Gelu") return {step(A::eltwise_gelu_erf, 0.0f, 0.0f)};  // the erf form only
    if (op == "HardSigmoid") {
      return {step(A::eltwise_linear, n.Float("alpha", 0.2f), n.Float("beta", 0.5f)),
              step(A::eltwise_clip, 0.0f, 1.0f)};
    }
    NXRT_EP_ENFORCE(op == "Clip", "blocked group: " + n.Describe() + " is not an activation");
    float lo = -3.4028235e38f, hi = 3.4028235e38f;
    if (n.opset < 11) {
      lo = n.Float("min", lo);
      hi = n.Float("max", hi);
    } else {
      const int lo_v = n.Input(1), hi_v = n.Input(2);
      if (lo_v >= 0) lo = V(lo_v).constant->At(0);
      if (hi_v >= 0) hi = V(hi_v).constant->At(0);
    }
    return {step(A::eltwise_clip, lo, hi)};
  }

  // ---- fusion ------------------------------------------------------------------------------

  // oneDNN 2.6's post-op chains apply the first of two eltwise steps of one algorithm twice
  // (conv + linear(0.75) + linear(1, -0.4) computed 0.75 * 0.75 * x): adjacent linear steps are
  // composed into one, and a chain never holds an algorithm twice (fusion stops there).
  static bool IsLinear(const Eltwise& e) {
    return e.algorithm == static_cast<int>(dnnl::algorithm::eltwise_linear);
  }
  static bool CanAppend(const ConvFusion& f, const std::vector<Eltwise>& steps) {
    std::vector<Fused> chain = f.chain;
    return AppendTo(chain, steps);
  }
  static bool Append(ConvFusion& f, const std::vector<Eltwise>& steps) {
    std::vector<Fused> chain = f.chain;
    if (!AppendTo(chain, steps)) return false;
    f.chain = std::move(chain);
    return true;
  }
  static bool AppendTo(std::vector<Fused>& chain, const std::vector<Eltwise>& steps) {
    for (const Eltwise& e : steps) {
      if (IsLinear(e) && !chain.empty() && !chain.back().sum && IsLinear(chain.back().eltwise)) {
        Eltwise& last = chain.back().eltwise;  // e(last(x)) = e.a * (last.a * x + last.b) + e.b
        last = {last.algorithm, e.alpha * last.alpha, e.alpha * last.beta + e.beta};
        continue;
      }
      for (const Fused& f : chain)
        if (!f.sum && f.eltwise.algorithm == e.algorithm) return false;
      chain.push_back({false, e});
    }
    return true;
  }

  // PaddlePaddle's HardSwish written out: y * Clip(y + 3, 0, 6) / 6 (or * 1/6). When y's readers
  // are exactly that pattern, marks its nodes fused and returns the value it ends in, else -1.
  int WrittenHardSwish(int y) {
    const Value& yv = V(y);
    if (yv.readers.size() != 2) return -1;
    auto linear = [&](int node, float a, float b) {
      if (node < 0 || ops_[static_cast<size_t>(node)] != BlockedOp::kLinear) return false;
      const Eltwise e = Activation(node)[0];
      return std::fabs(e.alpha - a) <= 1e-6f * std::fabs(a) && e.beta == b;
    };
    for (int add : yv.readers) {
      if (!linear(add, 1.0f, 3.0f)) continue;
      const int clip = SoleReader(out_[static_cast<size_t>(add)][0]);
      if (clip < 0 || OpType(clip) != "Clip") continue;
      const Eltwise c = Activation(clip)[0];
      if (c.alpha != 0.0f || c.beta != 6.0f) continue;
      const int mul = SoleReader(out_[static_cast<size_t>(clip)][0]);
      if (mul < 0 || ops_[static_cast<size_t>(mul)] != BlockedOp::kMul) continue;
      const std::vector<int>& m = in_[static_cast<size_t>(mul)];
      const int clipped = out_[static_cast<size_t>(clip)][0];
      if (!((m[0] == y && m[1] == clipped) || (m[0] == clipped && m[1] == y))) continue;
      if (std::count(yv.readers.begin(), yv.readers.end(), mul) != 1) continue;
      const int div = SoleReader(out_[static_cast<size_t>(mul)][0]);
      if (!linear(div, 1.0f / 6.0f, 0.0f)) continue;
      for (int node : {add, clip, mul, div}) fused_[static_cast<size_t>(node)] = true;
      return out_[static_cast<size_t>(div)][0];
    }
    return -1;
  }

  // A written-out Gelu of y (PaddlePaddle's, torch's): y / sqrt(2) (or * 1/sqrt(2)) -> Erf
  // -> + 1 -> * y -> * 0.5, each step read only by the next. When y's readers hold that
  // pattern, marks its nodes fused and returns the value it ends in, else -1.
  int WrittenGelu(int y) {
    auto linear = [&](int node, float a, float b) {
      if (node < 0 || ops_[static_cast<size_t>(node)] != BlockedOp::kLinear) return false;
      const Eltwise e = Activation(node)[0];
      return std::fabs(e.alpha - a) <= 1e-3f * std::fabs(a) && e.beta == b;
    };
    for (int scale : V(y).readers) {
      if (!linear(scale, 0.70710678f, 0.0f)) continue;
      const int erf = SoleReader(out_[static_cast<size_t>(scale)][0]);
      if (erf < 0 || ops_[static_cast<size_t>(erf)] != BlockedOp::kGeluErf) continue;
      const int add = SoleReader(out_[static_cast<size_t>(erf)][0]);
      if (!linear(add, 1.0f, 1.0f)) continue;
      const int mul = SoleReader(out_[static_cast<size_t>(add)][0]);
      if (mul < 0 || ops_[static_cast<size_t>(mul)] != BlockedOp::kMul) continue;
      const std::vector<int>& m = in_[static_cast<size_t>(mul)];
      const int plus_one = out_[static_cast<size_t>(add)][0];
      if (!((m[0] == y && m[1] == plus_one) || (m[0] == plus_one && m[1] == y))) continue;
      const int half = SoleReader(out_[static_cast<size_t>(mul)][0]);
      if (!linear(half, 0.5f, 0.0f)) continue;
      for (int node : {scale, erf, add, mul, half}) fused_[static_cast<size_t>(node)] = true;
      return out_[static_cast<size_t>(half)][0];
    }
    return -1;
  }

  // Written-out Gelus that no convolution took: each runs as one Gelu step, emitted where its
  // last node was (`gelu_of_` names the value it reads there).
  void PlanWrittenGelus() {
    for (size_t e = 0; e < desc_.nodes.size(); ++e) {
      if (ops_[e] != BlockedOp::kGeluErf || fused_[e]) continue;
      const int scale = V(in_[e][0]).producer;
      NXRT_EP_ENFORCE(scale >= 0 && !fused_[static_cast<size_t>(scale)],
                      "blocked group: " + Node(static_cast<int>(e)).Describe() +
                          " is not part of a whole written-out Gelu");
      const int x = ActInput(scale);
      const int end = WrittenGelu(x);
      NXRT_EP_ENFORCE(end >= 0, "blocked group: " + Node(static_cast<int>(e)).Describe() +
                                    " is not part of a whole written-out Gelu");
      const int half = V(end).producer;
      fused_[static_cast<size_t>(half)] = false;  // the node that emits the Gelu
      gelu_of_[static_cast<size_t>(half)] = x;
    }
  }

  static size_t FirstClip(const std::vector<Fused>& chain) {
    for (size_t i = 0; i < chain.size(); ++i)
      if (!chain[i].sum &&
          chain[i].eltwise.algorithm == static_cast<int>(dnnl::algorithm::eltwise_clip))
        return i;
    return chain.size();
  }

  // Records a primitive the program keeps (the session's audit counts reference ones).
  // A call that runs the primitive of `pd`, made by MakePrimitives.
  static void Defer(Call& call, const dnnl::primitive_desc_base& pd) {
    call.has_primitive = true;
    call.pending = pd;
  }

  // oneDNN generates a primitive's code when the primitive is made: most of a program's compile
  // time (75 primitives, about 6 of PP-OCRv6 rec's 12 ms per new input width). Made last, in
  // parallel on the session's pool when the program is compiled inside a run (shapes known only
  // then); inline at session creation.
  void MakePrimitives() {
    std::vector<Call*> calls;
    for (Step& step : program_.steps)
      for (Part& part : step.parts)
        for (Call& call : part)
          if (call.pending) calls.push_back(&call);
    ParallelFor(opt_.threads, static_cast<int64_t>(calls.size()), 1,
                [&](int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) {
                    Call& call = *calls[static_cast<size_t>(i)];
                    call.primitive = dnnl::primitive(call.pending->get());
                    call.pending.reset();
                  }
                });
  }

  void Keep(const dnnl::primitive_desc_base& pd, int node, const char* what) {
    if (opt_.audit) opt_.audit->Record(pd, Node(node).name, what);
  }

  // The only reader of v, when v has exactly one and does not leave the group.
  int SoleReader(int v) {
    const Value& value = V(v);
    if (IsOutput(v) || value.readers.size() != 1) return -1;
    return value.readers[0];
  }

  const std::string& OpType(int node) const { return Node(node).op_type; }

  void PlanFusions() {
    for (size_t c = 0; c < desc_.nodes.size(); ++c) {
      if (ops_[c] != BlockedOp::kConv) continue;
      ConvFusion& f = conv_[c];
      int y = out_[c][0];
      for (;;) {
        const Value& yv = V(y);
        if (IsOutput(y)) break;
        const int r = SoleReader(y);
        if (r >= 0 && f.chain.empty() &&
            (ops_[static_cast<size_t>(r)] == BlockedOp::kBatchNorm ||
             ChannelConstantOperand(r) >= 0)) {  // folded into the weights and bias
          f.affine.push_back(r);
          fused_[static_cast<size_t>(r)] = true;
          y = out_[static_cast<size_t>(r)][0];
          continue;
        }
        if (CanAppend(f, {{static_cast<int>(dnnl::algorithm::eltwise_hardswish), 0.0f, 0.0f}})) {
          if (int end = WrittenHardSwish(y); end >= 0) {
            Append(f, {{static_cast<int>(dnnl::algorithm::eltwise_hardswish), 0.0f, 0.0f}});
            y = end;
            continue;
          }
        }
        if (CanAppend(f, {{static_cast<int>(dnnl::algorithm::eltwise_gelu_erf), 0.0f, 0.0f}})) {
          if (int end = WrittenGelu(y); end >= 0) {
            Append(f, {{static_cast<int>(dnnl::algorithm::eltwise_gelu_erf), 0.0f, 0.0f}});
            y = end;
            continue;
          }
        }
        if (r >= 0 && IsActivationLike(r) && Append(f, Activation(r))) {
          fused_[static_cast<size_t>(r)] = true;
          y = out_[static_cast<size_t>(r)][0];
          continue;
        }
        // (Not after a Clip: activations from the first Clip on run outside the primitive.)
        if (r >= 0 && ops_[static_cast<size_t>(r)] == BlockedOp::kAdd && f.sum < 0 &&
            FirstClip(f.chain) == f.chain.size()) {
          const std::vector<int>& ins = in_[static_cast<size_t>(r)];
          const int z = ins[0] == y ? ins[1] : ins[0];
          const Value& zv = V(z);
          const bool earlier = zv.producer < 0 || zv.producer < static_cast<int>(c);
          if (z != y && zv.dims == yv.dims && earlier) {
            f.sum = z;
            f.sum_node = r;
            f.chain.push_back({true, {}});
            fused_[static_cast<size_t>(r)] = true;
            y = out_[static_cast<size_t>(r)][0];
            continue;
          }
        }
        // y * Sigmoid(y): the Swish of EfficientNet.
        if (yv.readers.size() == 2) {
          int sig = -1, mul = -1;
          for (int reader : yv.readers) {
            if (OpType(reader) == "Sigmoid") sig = reader;
            if (ops_[static_cast<size_t>(reader)] == BlockedOp::kMul) mul = reader;
          }
          if (sig >= 0 && mul >= 0 && SoleReader(out_[static_cast<size_t>(sig)][0]) == mul) {
            const std::vector<int>& ins = in_[static_cast<size_t>(mul)];
            const int s = out_[static_cast<size_t>(sig)][0];
            if (((ins[0] == y && ins[1] == s) || (ins[0] == s && ins[1] == y)) &&
                Append(f, {{static_cast<int>(dnnl::algorithm::eltwise_swish), 1.0f, 0.0f}})) {
              fused_[static_cast<size_t>(sig)] = fused_[static_cast<size_t>(mul)] = true;
              y = out_[static_cast<size_t>(mul)][0];
              continue;
            }
          }
        }
        break;
      }
      f.final = y;
    }
  }

  // ---- layouts, slices and locations ------------------------------------------------------

  int64_t Block() const { return opt_.block; }
  int64_t Padded(int64_t c) const { return (c + Block() - 1) / Block() * Block(); }
  int64_t Plane(int v) { return V(v).dims[2] * V(v).dims[3]; }

  memory::desc BlockedDesc(int64_t c, int64_t h, int64_t w) const {
    return memory::desc({1, c, h, w}, kF32, tag_);
  }
  memory::desc PlainDesc(int64_t c, int64_t h, int64_t w) const {
    return memory::desc({1, c, h, w}, kF32, Tag::nchw);
  }

  // Channel ranges [begin, end) of whole blocks, `count` of them as even as blocks allow.
  std::vector<std::pair<int64_t, int64_t>> Slices(int64_t channels, int count) const {
    return linalg::ChannelBlockSlices(channels, Block(), count);
  }
  int SliceCount(bool large_enough) const {
    return opt_.threads > 1 && large_enough ? opt_.threads : 1;
  }

  // Where value v's channels from `c0` start, in the arena (blocked) or, for a plain kernel
  // input, in the caller's tensor.
  Location At(int v, int64_t c0) {
    Value& value = V(v);
    Location at;
    const int64_t plane = Plane(v);
    if (value.plain) {
      at.where = Where::kInput;
      at.index = value.input;
      at.image_stride = static_cast<size_t>(value.dims[1] * plane) * sizeof(float);
    } else {
      NXRT_EP_ENFORCE(value.buffer >= 0, "blocked group: value '" + value.name + "' has no buffer");
      at.where = Where::kArena;
      at.index = value.buffer;
      at.image_stride = static_cast<size_t>(value.buffer_channels * plane) * sizeof(float);
      c0 += value.base;
    }
    at.offset = static_cast<size_t>(c0 * plane) * sizeof(float);
    return at;
  }

  int NewBuffer(int64_t bytes) {
    buffer_bytes_.push_back(static_cast<size_t>(bytes));
    return static_cast<int>(buffer_bytes_.size() - 1);
  }
  // The arena bytes of a blocked value: its own buffer, or its channels of the Concat output
  // it is written into.
  void Allocate(int v) {
    Value& value = V(v);
    if (value.buffer >= 0) return;
    if (value.concat >= 0) {
      Allocate(value.concat);
      const Value& host = V(value.concat);
      value.buffer = host.buffer;
      value.base = host.base + value.concat_base;
      value.buffer_channels = host.buffer_channels;
      return;
    }
    value.buffer_channels = Padded(value.dims[1]);
    value.buffer = NewBuffer(value.dims[0] * value.buffer_channels * Plane(v) *
                             static_cast<int64_t>(sizeof(float)));
  }

  // Concat inputs computed in the group for the Concat alone, at block-aligned channels, are
  // written by their producers straight into the output: the Concat then costs nothing.
  void PlanConcats() {
    for (size_t k = 0; k < desc_.nodes.size(); ++k) {
      if (ops_[k] != BlockedOp::kConcat) continue;
      const std::vector<int>& ins = in_[k];
      bool direct = true;
      int64_t offset = 0;
      for (size_t i = 0; i < ins.size() && direct; ++i) {
        const Value& v = V(ins[i]);
        const bool last = i + 1 == ins.size();
        direct = v.producer >= 0 && !IsOutput(ins[i]) && v.readers.size() == 1 &&
                 offset % Block() == 0 && (last || v.dims[1] % Block() == 0) &&
                 std::count(ins.begin(), ins.end(), ins[i]) == 1 &&
                 ops_[static_cast<size_t>(v.producer)] != BlockedOp::kConstantAlias;
        offset += v.dims[1];
      }
      if (!direct) continue;
      concat_direct_.insert(static_cast<int>(k));
      offset = 0;
      for (int v : ins) {
        V(v).concat = out_[k][0];
        V(v).concat_base = offset;
        offset += V(v).dims[1];
      }
    }
  }

  // ---- steps ------------------------------------------------------------------------------

  // The activations `call` runs itself over channels [c0, c1) of v (pixels per channel plane).
  void SetAfter(Call& call, std::vector<linalg::ConvFusion::Eltwise> after, int v, int64_t c0,
                int64_t c1, int64_t pixels) {
    call.after = std::move(after);
    call.after_at = At(v, c0);
    call.after_blocks = (c1 - c0 + Block() - 1) / Block();
    call.after_pixels = pixels;
    call.block = static_cast<int>(Block());
    call.real_lanes = static_cast<int>(c1 % Block());
  }

  Step NewStep(int node, const std::string& op) {
    Step s;
    s.name = Node(node).name;
    s.op = op;
    return s;
  }

  void Push(Step step, const std::vector<int>& reads, const std::vector<int>& writes) {
    for (Part& part : step.parts)
      for (Call& call : part) call.id = program_.calls++;
    program_.images = std::max(program_.images, step.images);
    for (int v : reads)
      if (V(v).buffer >= 0 && !V(v).plain) step.reads.push_back(V(v).buffer);
    for (int v : writes)
      if (V(v).buffer >= 0) step.writes.push_back(V(v).buffer);
    program_.steps.push_back(std::move(step));
  }

  static size_t Scratch(const dnnl::primitive_desc_base& pd) {
    return pd.scratchpad_desc().get_size();
  }

  dnnl::primitive_attr Attr(const dnnl::post_ops& ops = dnnl::post_ops()) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    return attr;
  }

  // A kernel input a member reads: reordered into the arena before its first reader (unless it
  // stays plain).
  void Enter(int v, int reader) {
    Value& value = V(v);
    if (value.input < 0 || value.plain || value.entered) return;
    value.entered = true;
    program_.inputs[static_cast<size_t>(value.input)].used = true;
    Allocate(v);
    Push(ReorderStep(v, reader, /*into_group=*/true), {}, {v});
  }

  // After value v is computed: if it leaves the group, reorder it into its kernel output.
  void Leave(int v, int node) {
    if (V(v).output < 0) return;
    Push(ReorderStep(v, node, /*into_group=*/false), {v}, {});
  }

  // Value v between its plain kernel input or output and its blocked arena buffer.
  Step ReorderStep(int v, int node, bool into_group) {
    const Value& value = V(v);
    const int64_t c = value.dims[1], h = value.dims[2], w = value.dims[3];
    Step step = NewStep(node, "Reorder");
    step.name = (into_group ? "reorder_in:" : "reorder_out:") + value.name;
    step.images = value.dims[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      Location plain;
      plain.where = into_group ? Where::kInput : Where::kOutput;
      plain.index = into_group ? value.input : value.output;
      plain.offset = static_cast<size_t>(c0 * h * w) * sizeof(float);
      plain.image_stride = static_cast<size_t>(c * h * w) * sizeof(float);
      const memory::desc plain_md = PlainDesc(c1 - c0, h, w),
                         blocked_md = BlockedDesc(c1 - c0, h, w);
      const memory::desc& src = into_group ? plain_md : blocked_md;
      const memory::desc& dst = into_group ? blocked_md : plain_md;
      const dnnl::reorder::primitive_desc pd(DnnlEngine(), src, DnnlEngine(), dst);
      Keep(pd, node, "reorder");
      Call call;
      Defer(call, pd);
      call.args = {{DNNL_ARG_FROM, src, into_group ? plain : At(v, c0)},
                   {DNNL_ARG_TO, dst, into_group ? At(v, c0) : plain}};
      step.parts.push_back({call});
    }
    return step;
  }

  void EmitNode(int node) {
    if (const int x = gelu_of_[static_cast<size_t>(node)]; x >= 0) {
      Enter(x, node);
      EmitActivation(node, x, {{static_cast<int>(dnnl::algorithm::eltwise_gelu_erf), 0.0f, 0.0f}});
      Leave(out_[static_cast<size_t>(node)][0], node);
      return;
    }
    std::vector<int> reads = in_[static_cast<size_t>(node)];
    if (ops_[static_cast<size_t>(node)] == BlockedOp::kConv)
      reads.push_back(conv_[static_cast<size_t>(node)].sum);  // the fused Add's other operand
    for (int v : reads)
      if (v >= 0 && !V(v).constant && V(v).dims.size() == 4) Enter(v, node);
    switch (ops_[static_cast<size_t>(node)]) {
      case BlockedOp::kConv:
        EmitConv(node);
        return;
      case BlockedOp::kActivation:
      case BlockedOp::kLinear:
        EmitActivation(node, ActInput(node), Activation(node));
        break;
      case BlockedOp::kBatchNorm:
        EmitBatchNorm(node);
        break;
      case BlockedOp::kAdd:
      case BlockedOp::kMul:
        EmitBinary(node);
        break;
      case BlockedOp::kMaxPool:
      case BlockedOp::kAveragePool:
      case BlockedOp::kGlobalPool:
        EmitPool(node);
        break;
      case BlockedOp::kConcat:
        EmitConcat(node);
        break;
      case BlockedOp::kResize:
        EmitResize(node);
        break;
      case BlockedOp::kSplit:
        EmitSplit(node);
        break;
      default:
        ep::Fail(NX_FAIL, "blocked group: unexpected member " + Node(node).Describe());
    }
    for (int y : out_[static_cast<size_t>(node)])
      if (y >= 0) Leave(y, node);
  }

  void EmitConv(int node) {
    const GroupNode& n = Node(node);
    const std::vector<int>& ins = in_[static_cast<size_t>(node)];
    const int x = ins[0];
    const ConvFusion& f = conv_[static_cast<size_t>(node)];
    const int y = f.final;
    const float* bias = n.Input(2) >= 0 ? V(n.Input(2)).constant->data.data() : nullptr;

    // Taps that only ever read padding are dropped (the weights with them, below).
    const linalg::ConvGeometry full = ConvGeometryOf(node);
    const linalg::LiveTaps live = linalg::FindLiveTaps(full);
    const linalg::ConvGeometry g = live.trims ? linalg::TrimmedGeometry(full, live) : full;
    const int64_t c = g.in_channels, m = g.out_channels;
    const int64_t h = g.in[1], w = g.in[2], oh = g.out[1], ow = g.out[2];
    const int64_t kh = g.kernel[1], kw = g.kernel[2];
    // Depthwise (one channel per group) or grouped with whole blocks per group (ClassifyNode).
    const bool depthwise = g.group > 1 && g.in_channels_per_group() == 1;
    const bool grouped = g.group > 1 && !depthwise;
    const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
    // Groups narrower than a block (NarrowGroups: ResNeXt's 4 channels, RegNet's 8 on 16-channel
    // blocks) run as one group per block, whose weights are zero outside the diagonal of the
    // real groups (narrow_w below): oneDNN's blocked kernels need whole blocks per group, and
    // the extra multiply-adds cost less than leaving the group (ResNeXt-50's 4-channel groups
    // took 2.7 ms per run at one thread as nodes on Zen 4). `picg` and `pocg` are the channels
    // per group the primitive sees.
    const bool narrow = grouped && icg % Block() != 0 && NarrowGroups(icg, ocg, Block());
    const int64_t picg = narrow ? Block() : icg, pocg = narrow ? Block() : ocg;
    // The channels the primitives read and write: with narrow groups the last block's padding
    // lanes too (zero weights and bias; activations that make zero nonzero run after the
    // primitive on the real lanes, FirstNonZeroStep). (Narrow groups have c == m.)
    const int64_t pm = narrow ? Padded(m) : m;
    NXRT_EP_ENFORCE(V(y).dims == std::vector<int64_t>({g.batch, m, oh, ow}),
                    "blocked group: " + n.Describe() + " output shape does not match its inputs");
    const memory::dims strides = {g.stride[1], g.stride[2]};
    const memory::dims dilates = {g.dilation[1] - 1, g.dilation[2] - 1};
    const memory::dims pad_l = {g.pad_begin[1], g.pad_begin[2]};
    const memory::dims pad_r = {g.pad_end[1], g.pad_end[2]};
    std::vector<linalg::ChainStep> chain;
    for (const Fused& e : f.chain)
      chain.push_back(
          {e.sum,
           {static_cast<dnnl::algorithm>(e.eltwise.algorithm), e.eltwise.alpha, e.eltwise.beta}});

    // nxrt's Winograd kernel (the whole chain inside) for the 3x3 stride-1 convolutions it
    // serves.
    const bool winograd =
        opt_.winograd && !V(x).plain &&
        linalg::WinogradConv3x3::Serves(c, m, kh, kw, g.stride[1], g.stride[2], g.dilation[1],
                                        g.dilation[2], g.group, oh, ow);

    // The convolution's primitive descriptor; `cw`: the input channels the primitive is told
    // about (see pad_channels below).
    auto desc_for = [&](const memory::desc& src, const memory::desc& dst, int64_t os,
                        const dnnl::post_ops& ops, const memory::dims& pads_l,
                        const memory::dims& pads_r, int64_t cw) {
      linalg::ConvPrimitiveShape shape;
      shape.src = src;
      shape.weights = depthwise ? memory::desc({os, 1, 1, kh, kw}, kF32, Tag::any)
                      : grouped ? memory::desc({os / pocg, pocg, picg, kh, kw}, kF32, Tag::any)
                                : memory::desc({os, cw, kh, kw}, kF32, Tag::any);
      if (bias) shape.bias = memory::desc({os}, kF32, Tag::x);
      shape.dst = dst;
      shape.strides = strides;
      shape.dilates = dilates;
      shape.pad_l = pads_l;
      shape.pad_r = pads_r;
      return linalg::MakeConvPrimitive(shape, ops);
    };
    // oneDNN's jit kernels refuse padding beyond a few taps (3x3 at dilation 4 with "same"
    // padding falls back to the reference convolution): such an input is copied into a
    // zero-bordered buffer first and the primitive runs without padding.
    auto src_desc = [&](int64_t ch, int64_t rows, int64_t cols) {
      return V(x).plain ? PlainDesc(ch, rows, cols) : BlockedDesc(ch, rows, cols);
    };
    // oneDNN's AVX2 kernels take a blocked source only from one full block of channels on (a
    // first layer's few channels only in plain NCHW): a source of fewer channels is described as
    // one whole block, its padding lanes (always zero) meeting zero weights.
    const bool pad_channels =
        !winograd && !V(x).plain && g.group == 1 && c < Block() &&
        linalg::IsReference(desc_for(src_desc(c, h, w), BlockedDesc(m, oh, ow), m, dnnl::post_ops(),
                                     pad_l, pad_r, c));
    // input channels as the primitive sees them
    const int64_t cw = pad_channels ? Block() : narrow ? pm : c;
    const bool explicit_pad =
        !winograd && (pad_l[0] || pad_l[1] || pad_r[0] || pad_r[1]) &&
        linalg::IsReference(desc_for(src_desc(cw, h, w), BlockedDesc(pm, oh, ow), pm,
                                     dnnl::post_ops(), pad_l, pad_r, cw)) &&
        !linalg::IsReference(
            desc_for(src_desc(cw, h + pad_l[0] + pad_r[0], w + pad_l[1] + pad_r[1]),
                     BlockedDesc(pm, oh, ow), pm, dnnl::post_ops(), {0, 0}, {0, 0}, cw));
    const int64_t ph = explicit_pad ? h + pad_l[0] + pad_r[0] : h;
    const int64_t pw = explicit_pad ? w + pad_l[1] + pad_r[1] : w;
    // Which steps of the fused chain run inside oneDNN's primitive (the rest run in nxrt after
    // it, Call::after): never a Clip, a Swish, a Sigmoid or a Gelu or what follows them
    // (conv_plan.h), and no step that would make oneDNN fall back to its reference convolution.
    const size_t in_primitive =
        winograd ? chain.size()
                 : linalg::PrimitiveChainLength(
                       std::min({linalg::FirstClip(chain), linalg::FirstSlowPostOp(chain),
                                 pm != m ? linalg::FirstNonZeroStep(chain) : chain.size()}),
                       [&](size_t k) {
                         const memory::desc dst = BlockedDesc(pm, oh, ow);
                         return linalg::IsReference(desc_for(
                             src_desc(cw, ph, pw), dst, pm, linalg::ChainPostOps(chain, k, dst),
                             explicit_pad ? memory::dims{0, 0} : pad_l,
                             explicit_pad ? memory::dims{0, 0} : pad_r, cw));
                       });
    // The sum runs as oneDNN's sum post-op (destination prefilled with the addend, or written
    // in place over it) only as the chain's first step; after an activation it is a binary add
    // reading the addend where it lives, or nxrt's own add after the primitive.
    const int sum_step = linalg::SumStep(chain);
    const bool sum_post_op = sum_step == 0 && in_primitive > 0;

    // In place over the addend when nothing reads it later and it is not the source.
    bool in_place = false;
    if (f.sum >= 0 && (winograd || sum_post_op)) {
      const Value& z = V(f.sum);
      in_place = !z.plain && z.buffer >= 0 && f.sum != x && V(y).concat < 0;
      for (int r : z.readers) {
        if (r >= node && r != f.sum_node) in_place = false;
      }
    }
    if (in_place) {
      V(y).buffer = V(f.sum).buffer;
      V(y).base = V(f.sum).base;
      V(y).buffer_channels = V(f.sum).buffer_channels;
    } else {
      Allocate(y);
    }

    std::string op = depthwise ? "DepthwiseConv" : "Conv";
    if (!f.chain.empty()) op += "+fused";
    Step step = NewStep(node, op);
    step.images = g.batch;
    const int64_t macs = m * oh * ow * picg * kh * kw;
    const float* wdata = V(ins[1]).constant->data.data();
    std::vector<float> trimmed_w, folded_w, folded_b;
    if (live.trims) {
      trimmed_w = linalg::TrimmedWeights(full, live, wdata);
      wdata = trimmed_w.data();
    }
    if (!f.affine.empty()) {  // per output channel, in order: w * s and b * s + t
      const int64_t per_channel = (c / g.group) * kh * kw;
      folded_w.assign(wdata, wdata + m * per_channel);
      folded_b.assign(static_cast<size_t>(m), 0.0f);
      if (bias) folded_b.assign(bias, bias + m);
      for (int a : f.affine) {
        std::vector<float> scale(static_cast<size_t>(m), 1.0f), shift(static_cast<size_t>(m), 0.0f);
        if (ops_[static_cast<size_t>(a)] == BlockedOp::kBatchNorm)
          BatchNormAffine(a, &scale, &shift);
        else if (ops_[static_cast<size_t>(a)] == BlockedOp::kMul)
          scale = ChannelValues(a);
        else
          shift = ChannelValues(a);
        for (int64_t o = 0; o < m; ++o) {
          const float so = scale[static_cast<size_t>(o)];
          if (so != 1.0f) {
            for (int64_t k = 0; k < per_channel; ++k)
              folded_w[static_cast<size_t>(o * per_channel + k)] *= so;
          }
          folded_b[static_cast<size_t>(o)] =
              folded_b[static_cast<size_t>(o)] * so + shift[static_cast<size_t>(o)];
        }
      }
      wdata = folded_w.data();
      bias = folded_b.data();
    }
    std::vector<float> padded_w;
    if (pad_channels) {  // [m, c, kh, kw] -> [m, cw, kh, kw], the added input channels zero
      padded_w.assign(static_cast<size_t>(m * cw * kh * kw), 0.0f);
      for (int64_t o = 0; o < m; ++o)
        std::copy(wdata + o * c * kh * kw, wdata + (o + 1) * c * kh * kw,
                  padded_w.begin() + o * cw * kh * kw);
      wdata = padded_w.data();
    }
    std::vector<float> narrow_w;
    if (narrow) {  // [m, icg, kh, kw] -> [m, Block(), kh, kw], each group at its place in a block
      const int64_t taps = kh * kw;
      narrow_w.assign(static_cast<size_t>(pm * Block() * taps), 0.0f);
      for (int64_t o = 0; o < m; ++o) {
        const int64_t at = o / ocg * icg % Block();  // the group's first input channel in the block
        std::copy(wdata + o * icg * taps, wdata + (o + 1) * icg * taps,
                  narrow_w.begin() + (o * Block() + at) * taps);
      }
      wdata = narrow_w.data();
    }
    std::vector<float> narrow_b;
    if (bias != nullptr && pm != m) {  // zero for the padding lanes the primitives write
      narrow_b.assign(static_cast<size_t>(pm), 0.0f);
      std::copy(bias, bias + m, narrow_b.begin());
      bias = narrow_b.data();
    }
    // One primitive over output channels [o0, o1) from `src` (at src_at) into `dst` (at dst_at)
    // with these paddings, its weights reordered once into the primitive's layout; `sum_at` is
    // where the addend of this part of the output lives. The chain's steps past `in_primitive`
    // run after it (SetAfter).
    auto make_call = [&](int64_t o0, int64_t o1, const memory::desc& src, const Location& src_at,
                         const memory::desc& dst, const Location& dst_at,
                         const memory::dims& pads_l, const memory::dims& pads_r,
                         const Location& sum_at) {
      const int64_t os = o1 - o0;
      dnnl::post_ops ops = linalg::ChainPostOps(chain, in_primitive, dst);
      const auto pd = desc_for(src, dst, os, ops, pads_l, pads_r, cw);
      Keep(pd, node, "convolution");
      const memory::desc w_plain =
          depthwise ? memory::desc({os, 1, 1, kh, kw}, kF32, Tag::goihw)
          : grouped ? memory::desc({os / pocg, pocg, picg, kh, kw}, kF32, Tag::goihw)
                    : memory::desc({os, cw, kh, kw}, kF32, Tag::oihw);
      const float* w_slice = wdata + o0 * (g.group > 1 ? picg : cw) * kh * kw;
      auto reorder = [&] {
        auto packed = std::make_shared<memory>(pd.weights_desc(), DnnlEngine());
        memory w_user(w_plain, DnnlEngine(), const_cast<float*>(w_slice));
        dnnl::reorder(w_user, *packed).execute(DnnlStream(), w_user, *packed);
        DnnlStream().wait();
        return packed;
      };
      // Trimmed taps depend on the input size, so only whole kernels are shared.
      const std::shared_ptr<memory> packed =
          opt_.weights && !live.trims ? opt_.weights->Get(node, o0, o1, pd.weights_desc(), reorder)
                                      : reorder();
      Call call;
      Defer(call, pd);
      call.scratch_bytes = Scratch(pd);
      Location w_at;
      w_at.where = Where::kFixed;
      w_at.fixed = packed;
      call.args = {{DNNL_ARG_SRC, src, src_at},
                   {DNNL_ARG_WEIGHTS, packed->get_desc(), w_at},
                   {DNNL_ARG_DST, dst, dst_at}};
      if (bias) {
        const memory::desc b_md({os}, kF32, Tag::x);
        auto b = std::make_shared<memory>(b_md, DnnlEngine());
        std::memcpy(b->get_data_handle(), bias + o0, static_cast<size_t>(os) * sizeof(float));
        Location b_at;
        b_at.where = Where::kFixed;
        b_at.fixed = b;
        call.args.push_back({DNNL_ARG_BIAS, b_md, b_at});
      }
      if (sum_step > 0 && static_cast<size_t>(sum_step) < in_primitive) {  // a binary add
        call.args.push_back(
            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(sum_step) | DNNL_ARG_SRC_1, dst, sum_at});
      }
      return call;
    };
    // The steps after the primitive, over output channels [o0, o1) of `pixels` pixels each.
    auto set_after = [&](Call& call, int64_t o0, int64_t o1, int64_t pixels, size_t row_offset,
                         const Location& sum_at) {
      std::vector<linalg::ConvFusion::Eltwise> before, after;
      bool sum_after = false;
      for (size_t i = in_primitive; i < f.chain.size(); ++i) {
        const Fused& e = f.chain[i];
        if (e.sum) {
          sum_after = true;
          continue;
        }
        (sum_after || sum_step < 0 ? after : before)
            .push_back({static_cast<dnnl::algorithm>(e.eltwise.algorithm), e.eltwise.alpha,
                        e.eltwise.beta});
      }
      if (!sum_after) {  // (no sum after the primitive: `before` is empty)
        after.insert(after.begin(), before.begin(), before.end());
        before.clear();
      }
      if (after.empty() && !sum_after) return;
      SetAfter(call, std::move(after), y, o0, o1, pixels);
      call.after_at.offset += row_offset;
      call.before_sum = std::move(before);
      call.after_sum = sum_after;
      call.after_sum_at = sum_at;
    };
    // With explicit padding the primitives read the zero-bordered copy (made by a step of its
    // own, PadStep) and pad nothing themselves.
    const int pad_buffer =
        explicit_pad
            ? NewBuffer(g.batch * (V(x).plain ? c : Padded(c)) * ph * pw * int64_t{sizeof(float)})
            : -1;
    auto src_at = [&](int64_t c0) {
      if (!explicit_pad) return At(x, c0);
      Location at;
      at.where = Where::kArena;
      at.index = pad_buffer;
      at.offset = static_cast<size_t>(c0 * ph * pw) * sizeof(float);
      at.image_stride = static_cast<size_t>((V(x).plain ? c : Padded(c)) * ph * pw) * sizeof(float);
      return at;
    };
    const memory::dims conv_pad_l = explicit_pad ? memory::dims{0, 0} : pad_l;
    const memory::dims conv_pad_r = explicit_pad ? memory::dims{0, 0} : pad_r;
    if (explicit_pad) Push(PadStep(node, x, src_at(0), c, h, w, pad_l, ph, pw), {x}, {});
    // `count` primitives, one per slice of output channels (whole blocks; whole groups of a
    // grouped convolution, which read only their groups' input channels).
    auto channel_slices = [&](int count) {
      for (auto [o0, o1] :
           grouped ? linalg::ChannelBlockSlices(pm, pocg, count) : Slices(m, count)) {
        const int64_t os = o1 - o0;
        const int64_t i0 = g.group > 1 ? o0 / pocg * picg : 0;
        const memory::desc src = src_desc(g.group > 1 ? os / pocg * picg : cw, ph, pw);
        const Location sum_at = f.sum >= 0 ? At(f.sum, o0) : Location();
        Call call = make_call(o0, o1, src, src_at(i0), BlockedDesc(os, oh, ow), At(y, o0),
                              conv_pad_l, conv_pad_r, sum_at);
        set_after(call, o0, std::min(o1, m), oh * ow, 0, sum_at);
        if (sum_post_op && !in_place)
          call.copies.push_back(
              {sum_at, At(y, o0), static_cast<size_t>(Padded(os) * oh * ow) * sizeof(float)});
        step.parts.push_back({call});
      }
    };
    const int64_t weight_bytes = m * picg * kh * kw * int64_t{sizeof(float)};
    // The threading rule both convolution paths share (conv_plan.h).
    linalg::ConvWork work;
    work.macs_per_image = static_cast<double>(macs);
    work.weight_bytes = weight_bytes;
    work.out_channel_blocks = grouped ? pm / pocg : (m + Block() - 1) / Block();
    work.kernel_size = kh * kw;
    work.out_rows = oh;
    work.depthwise = depthwise;
    work.row_slices = (c <= Block() || V(x).plain) && !explicit_pad;
    work.threads = opt_.threads;
    const linalg::ConvThreads threads = linalg::PlanConvThreads(work);
    const int slices = SliceCount(linalg::WorthSlicing(static_cast<double>(macs), weight_bytes));
    if (winograd) {
      // Threads take runs of output tiles.
      step.op = (depthwise ? "DepthwiseConv" : "Conv") + std::string("(winograd)") +
                (f.chain.empty() ? "" : "+fused");
      std::vector<linalg::WinogradConv3x3::Step> steps;
      for (const linalg::ChainStep& e : chain) {
        linalg::WinogradConv3x3::Step st;
        st.sum = e.sum;
        if (!e.sum) st.eltwise = e.eltwise;
        steps.push_back(st);
      }
      linalg::WinogradConv3x3::Shape shape;
      shape.in_channels = c;
      shape.out_channels = m;
      shape.height = h;
      shape.width = w;
      shape.out_height = oh;
      shape.out_width = ow;
      shape.pad_top = g.pad_begin[1];
      shape.pad_left = g.pad_begin[2];
      shape.block = Block();
      auto kernel =
          std::make_shared<const linalg::WinogradConv3x3>(shape, wdata, bias, std::move(steps));
      for (const linalg::WinogradConv3x3::Part& part : kernel->Parts(slices)) {
        Call call;
        call.winograd = kernel;
        call.winograd_src = At(x, 0);
        call.winograd_dst = At(y, 0);
        call.winograd_has_sum = f.sum >= 0;
        if (f.sum >= 0) call.winograd_sum = At(f.sum, 0);
        call.tile_begin = part.tile_begin;
        call.tile_end = part.tile_end;
        call.panel_begin = part.panel_begin;
        call.panel_end = part.panel_end;
        step.parts.push_back({call});
      }
    } else if (threads.kind == linalg::ConvThreads::kOmpTeam) {
      // One primitive over every channel, created (and later run) with the session's threads as
      // its OpenMP team: oneDNN sizes the team when the primitive is created.
      linalg::OmpThreadScope team(opt_.threads);
      channel_slices(1);
      step.omp_threads = opt_.threads;
      step.op += "(omp)";
    } else if (threads.kind == linalg::ConvThreads::kRows) {
      // One channel block out: slices of output rows instead (a run of rows of a one-block
      // tensor is contiguous). The input rows a slice reads, with its own top and bottom
      // padding, are contiguous too when the input is one block; a plain input is copied, per
      // channel, into the slice's part of an arena buffer.
      const int64_t row_bytes = ow * Block() * int64_t{sizeof(float)};
      const int64_t span = (kh - 1) * g.dilation[1] + 1;
      const int64_t most_rows = (oh + slices - 1) / slices;
      const int64_t copy_bytes =
          V(x).plain ? c * std::min(h, (most_rows - 1) * g.stride[1] + span) * w * 4 : 0;
      const int scratch = V(x).plain ? NewBuffer(g.batch * slices * copy_bytes) : -1;
      for (int s = 0; s < slices; ++s) {
        const int64_t r0 = oh * s / slices, r1 = oh * (s + 1) / slices;
        const int64_t top = r0 * g.stride[1] - g.pad_begin[1];
        const int64_t bottom = (r1 - 1) * g.stride[1] - g.pad_begin[1] + span - 1;
        const int64_t i0 = std::max<int64_t>(0, top), i1 = std::min(h - 1, bottom) + 1;
        const memory::dims rows_l = {i0 - top, g.pad_begin[2]};
        const memory::dims rows_r = {bottom - (i1 - 1), g.pad_end[2]};
        Location src_at = At(x, 0);
        memory::desc src = BlockedDesc(cw, i1 - i0, w);
        std::vector<Copy> copies;
        if (V(x).plain) {
          src = PlainDesc(c, i1 - i0, w);
          Location part;
          part.where = Where::kArena;
          part.index = scratch;
          part.offset = static_cast<size_t>(s * copy_bytes);
          part.image_stride = static_cast<size_t>(slices * copy_bytes);
          for (int64_t ch = 0; ch < c; ++ch) {
            Copy copy;
            copy.from = src_at;
            copy.from.offset += static_cast<size_t>((ch * h + i0) * w) * sizeof(float);
            copy.to = part;
            copy.to.offset += static_cast<size_t>(ch * (i1 - i0) * w) * sizeof(float);
            copy.bytes = static_cast<size_t>((i1 - i0) * w) * sizeof(float);
            copies.push_back(copy);
          }
          src_at = part;
        } else {
          src_at.offset += static_cast<size_t>(i0 * w * Block()) * sizeof(float);
        }
        const size_t row_offset = static_cast<size_t>(r0 * row_bytes);
        Location dst_at = At(y, 0);
        dst_at.offset += row_offset;
        Location sum_at;
        if (f.sum >= 0) {
          sum_at = At(f.sum, 0);
          sum_at.offset += row_offset;
        }
        Call call = make_call(0, m, src, src_at, BlockedDesc(m, r1 - r0, ow), dst_at, rows_l,
                              rows_r, sum_at);
        call.copies = std::move(copies);
        set_after(call, 0, m, (r1 - r0) * ow, row_offset, sum_at);
        if (sum_post_op && !in_place)
          call.copies.push_back({sum_at, dst_at, static_cast<size_t>((r1 - r0) * row_bytes)});
        step.parts.push_back({call});
      }
      if (scratch >= 0) step.writes.push_back(scratch);
    } else {
      channel_slices(slices);
    }
    std::vector<int> reads = {x};
    if (f.sum >= 0) reads.push_back(f.sum);
    if (explicit_pad) {
      program_.steps.back().writes.push_back(pad_buffer);  // the PadStep
      step.reads.push_back(pad_buffer);
    }
    Push(std::move(step), reads, {y});
    Leave(y, node);
  }

  // Value x (c channels of h x w, blocked or a plain kernel input) copied into the
  // zero-bordered buffer at `to` (ph x pw per channel, `pad` rows above and columns left), in
  // slices of channel blocks.
  Step PadStep(int node, int x, const Location& to, int64_t c, int64_t h, int64_t w,
               const memory::dims& pad, int64_t ph, int64_t pw) {
    Step step = NewStep(node, "Pad");
    step.name = "pad:" + Node(node).name;
    step.images = V(x).dims[0];
    const bool plain = V(x).plain;
    const int64_t lanes = plain ? 1 : Block();
    for (auto [c0, c1] : Slices(c, SliceCount(c * ph * pw * 4 >= kMinSliceBytes))) {
      PadCopy copy;
      copy.from = At(x, c0);
      copy.to = to;
      copy.to.offset += static_cast<size_t>(c0 * ph * pw) * sizeof(float);
      copy.planes = plain ? c1 - c0 : (c1 - c0 + lanes - 1) / lanes;
      copy.lanes = lanes;
      copy.height = h;
      copy.width = w;
      copy.top = pad[0];
      copy.left = pad[1];
      copy.padded_height = ph;
      copy.padded_width = pw;
      Call call;
      call.pad_copies.push_back(copy);
      step.parts.push_back({call});
    }
    return step;
  }

  // BatchNormalization as y = x * scale + shift per channel.
  void BatchNormAffine(int node, std::vector<float>* scale, std::vector<float>* shift) {
    const GroupNode& n = Node(node);
    const float eps = n.Float("epsilon", 1e-5f);
    std::span<const float> gamma = V(n.inputs[1]).constant->data;
    std::span<const float> beta = V(n.inputs[2]).constant->data;
    std::span<const float> mean = V(n.inputs[3]).constant->data;
    std::span<const float> var = V(n.inputs[4]).constant->data;
    scale->resize(gamma.size());
    shift->resize(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
      (*scale)[c] = gamma[c] / std::sqrt(var[c] + eps);
      (*shift)[c] = beta[c] - mean[c] * (*scale)[c];
    }
  }

  // A BatchNormalization not folded into a convolution: x * scale + shift per channel, as a
  // binary multiply by the scales with the shifts added as a post-op.
  void EmitBatchNorm(int node) {
    const int x = in_[static_cast<size_t>(node)][0], y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    std::vector<float> scale, shift;
    BatchNormAffine(node, &scale, &shift);
    const int64_t c = V(x).dims[1], h = V(x).dims[2], w = V(x).dims[3];
    Step step = NewStep(node, "BatchNormalization");
    step.images = V(x).dims[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc md = BlockedDesc(c1 - c0, h, w), md1 = BlockedDesc(c1 - c0, 1, 1);
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, md1);
      dnnl::binary::desc d(dnnl::algorithm::binary_mul, md, md1, md);
      dnnl::binary::primitive_desc pd(d, Attr(ops), DnnlEngine());
      Keep(pd, node, "batch normalization");
      Call call;
      Defer(call, pd);
      call.scratch_bytes = Scratch(pd);
      call.args = {{DNNL_ARG_SRC_0, md, At(x, c0)},
                   {DNNL_ARG_SRC_1, md1, ChannelConstant(md1, scale, c0, c1)},
                   {DNNL_ARG_DST, md, At(y, c0)},
                   {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, md1,
                    ChannelConstant(md1, shift, c0, c1)}};
      step.parts.push_back({call});
    }
    Push(std::move(step), {x}, {y});
  }

  // Channels [c0, c1) of a per-channel constant as a blocked [1, C, 1, 1] memory (padding zero).
  static Location ChannelConstant(const memory::desc& md, const std::vector<float>& values,
                                  int64_t c0, int64_t c1) {
    auto mem = std::make_shared<memory>(md, DnnlEngine());
    float* p = static_cast<float*>(mem->get_data_handle());
    std::fill(p, p + md.get_size() / sizeof(float), 0.0f);
    std::copy(values.begin() + c0, values.begin() + c1, p);
    Location at;
    at.where = Where::kFixed;
    at.fixed = std::move(mem);
    return at;
  }

  // y = acts(x), y the node's output (x its input, or a written-out Gelu's).
  void EmitActivation(int node, int x, const std::vector<Eltwise>& acts) {
    const int y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    const int64_t c = V(x).dims[1], h = V(x).dims[2], w = V(x).dims[3];
    Step step = NewStep(node, gelu_of_[static_cast<size_t>(node)] >= 0 ? "Gelu" : OpType(node));
    step.images = V(x).dims[0];
    // oneDNN runs the activations before the first Clip, nxrt the rest (see Call::after).
    size_t clip = 0;
    while (clip < acts.size() &&
           acts[clip].algorithm != static_cast<int>(dnnl::algorithm::eltwise_clip))
      ++clip;
    std::vector<linalg::ConvFusion::Eltwise> after;
    for (size_t k = clip; k < acts.size(); ++k)
      after.push_back(
          {static_cast<dnnl::algorithm>(acts[k].algorithm), acts[k].alpha, acts[k].beta});
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc md = BlockedDesc(c1 - c0, h, w);
      auto desc_of = [&](size_t k) {
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                      static_cast<dnnl::algorithm>(acts[k].algorithm), md,
                                      acts[k].alpha, acts[k].beta);
        return dnnl::eltwise_forward::primitive_desc(d, Attr(), DnnlEngine());
      };
      // oneDNN 2.6 has only its reference eltwise for some algorithms on a partly filled last
      // block (logistic, linear): nxrt's own loops run those steps (and the ones after them).
      size_t in_onednn = 0;
      while (in_onednn < clip && !linalg::IsReference(desc_of(in_onednn))) ++in_onednn;
      std::vector<linalg::ConvFusion::Eltwise> part_after;
      for (size_t k = in_onednn; k < clip; ++k)
        part_after.push_back(
            {static_cast<dnnl::algorithm>(acts[k].algorithm), acts[k].alpha, acts[k].beta});
      part_after.insert(part_after.end(), after.begin(), after.end());
      Part part;
      for (size_t k = 0; k < in_onednn; ++k) {
        const auto pd = desc_of(k);
        Keep(pd, node, "activation");
        Call call;
        Defer(call, pd);
        call.scratch_bytes = Scratch(pd);
        call.args = {{DNNL_ARG_SRC, md, At(k == 0 ? x : y, c0)}, {DNNL_ARG_DST, md, At(y, c0)}};
        part.push_back(std::move(call));
      }
      if (!part_after.empty()) {
        if (part.empty()) {  // nothing wrote y yet: start from a copy of x
          Call copy;
          copy.copies.push_back({At(x, c0), At(y, c0), md.get_size()});
          part.push_back(std::move(copy));
        }
        SetAfter(part.back(), std::move(part_after), y, c0, c1, h * w);
      }
      step.parts.push_back(std::move(part));
    }
    Push(std::move(step), {x}, {y});
  }

  // Add / Mul of two values, or of a value and a constant with one value per channel. src1 is
  // the one oneDNN broadcasts: the per-channel operand if there is one.
  void EmitBinary(int node) {
    const std::vector<int>& ins = in_[static_cast<size_t>(node)];
    const int y = out_[static_cast<size_t>(node)][0];
    const bool constant = ChannelConstantOperand(node) >= 0;
    int a = constant ? ActInput(node) : ins[0], b = constant ? -1 : ins[1];
    if (!constant && V(a).dims != V(y).dims) std::swap(a, b);
    Allocate(y);
    const bool per_channel = constant || V(b).dims != V(y).dims;
    const std::vector<float> values = constant ? ChannelValues(node) : std::vector<float>();
    const int64_t c = V(y).dims[1], h = V(y).dims[2], w = V(y).dims[3];
    const auto alg = ops_[static_cast<size_t>(node)] == BlockedOp::kAdd
                         ? dnnl::algorithm::binary_add
                         : dnnl::algorithm::binary_mul;
    Step step = NewStep(node, OpType(node));
    step.images = V(y).dims[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc md = BlockedDesc(c1 - c0, h, w);
      memory::desc md1 = per_channel ? BlockedDesc(c1 - c0, 1, 1) : md;
      dnnl::binary::primitive_desc pd(dnnl::binary::desc(alg, md, md1, md), Attr(), DnnlEngine());
      Keep(pd, node, "binary operation");
      Call call;
      Defer(call, pd);
      call.scratch_bytes = Scratch(pd);
      call.args = {
          {DNNL_ARG_SRC_0, md, At(a, c0)},
          {DNNL_ARG_SRC_1, md1, constant ? ChannelConstant(md1, values, c0, c1) : At(b, c0)},
          {DNNL_ARG_DST, md, At(y, c0)}};
      step.parts.push_back({call});
    }
    Push(std::move(step), constant ? std::vector<int>{a} : std::vector<int>{a, b}, {y});
  }

  void EmitPool(int node) {
    const GroupNode& n = Node(node);
    const int x = in_[static_cast<size_t>(node)][0], y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    const BlockedOp kind = ops_[static_cast<size_t>(node)];
    const int64_t c = V(x).dims[1], h = V(x).dims[2], w = V(x).dims[3];
    memory::dims kernel, strides, dilation, pad_l, pad_r;
    dnnl::algorithm alg;
    if (kind == BlockedOp::kGlobalPool) {
      kernel = {h, w};
      strides = {1, 1};
      dilation = {0, 0};
      pad_l = pad_r = {0, 0};
      alg = OpType(node) == "GlobalMaxPool" ? dnnl::algorithm::pooling_max
                                            : dnnl::algorithm::pooling_avg_exclude_padding;
    } else {
      nn::PoolGeometry g = nn::ResolvePool(PoolAttributesOf(n), V(x).dims);
      for (int d = 1; d < 3; ++d) {
        kernel.push_back(g.k[d]);
        strides.push_back(g.s[d]);
        dilation.push_back(g.d[d] - 1);
        pad_l.push_back(g.pb[d]);
        // oneDNN wants out = (in + pad_l + pad_r - span) / stride + 1 exactly: windows that
        // ceil_mode adds reach into extra right padding, which pooling ignores.
        const int64_t span = (g.k[d] - 1) * g.d[d] + 1;
        pad_r.push_back(std::max(g.pe[d], (g.out[d] - 1) * g.s[d] + span - g.in[d] - g.pb[d]));
      }
      if (kind == BlockedOp::kMaxPool) {
        alg = dnnl::algorithm::pooling_max;
      } else {
        alg = n.Int("count_include_pad", 0) ? dnnl::algorithm::pooling_avg_include_padding
                                            : dnnl::algorithm::pooling_avg_exclude_padding;
      }
    }
    const int64_t oh = V(y).dims[2], ow = V(y).dims[3];
    Step step = NewStep(node, OpType(node));
    step.images = V(x).dims[0];
    if (kind == BlockedOp::kGlobalPool && alg != dnnl::algorithm::pooling_max) {
      // nxrt's mean, summed in double (MeanCall), not oneDNN's float running sum.
      for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
        Call call;
        call.means.push_back({At(x, c0), At(y, c0), (c1 - c0 + Block() - 1) / Block(), h * w,
                              static_cast<int>(Block())});
        step.parts.push_back({call});
      }
      Push(std::move(step), {x}, {y});
      return;
    }
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc src = BlockedDesc(c1 - c0, h, w), dst = BlockedDesc(c1 - c0, oh, ow);
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, strides,
                                       kernel, dilation, pad_l, pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(d, Attr(), DnnlEngine());
      Keep(pd, node, "pooling");
      Call call;
      Defer(call, pd);
      call.scratch_bytes = Scratch(pd);
      call.args = {{DNNL_ARG_SRC, src, At(x, c0)}, {DNNL_ARG_DST, dst, At(y, c0)}};
      step.parts.push_back({call});
    }
    Push(std::move(step), {x}, {y});
  }

  // nxrt's gather of whole pixels (a block of lanes each) by per-axis index tables, the
  // tables from the plain Resize kernel's planner (the same rounding rules).
  void EmitResize(int node) {
    const GroupNode& n = Node(node);
    const int x = in_[static_cast<size_t>(node)][0], y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    const std::vector<int64_t>& xd = V(x).dims;
    // (Not a structured binding: clang 14 cannot capture those in the lambda below.)
    const std::pair<std::vector<int64_t>, std::array<double, 2>> resized = ResizedDims(node, xd);
    const std::vector<int64_t>& yd = resized.first;
    const std::array<double, 2>& scale = resized.second;
    nn::ResizeOptions opt;
    opt.mode = nn::ResizeMode::kNearest;
    opt.coord = *nn::CoordModeNamed(n.String("coordinate_transformation_mode", "half_pixel"));
    opt.nearest = *nn::NearestModeNamed(n.String("nearest_mode", "round_prefer_floor"));
    auto table = [&](int d) {
      return std::make_shared<const std::vector<int64_t>>(
          nn::MakeAxisPlan(opt, static_cast<size_t>(d + 2), xd[static_cast<size_t>(d + 2)],
                           yd[static_cast<size_t>(d + 2)], scale[static_cast<size_t>(d)], 0.0, 1.0)
              .index);
    };
    auto rows = table(0), cols = table(1);
    const int64_t c = xd[1];
    Step step = NewStep(node, OpType(node));
    step.images = xd[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * yd[2] * yd[3] * 4 >= kMinSliceBytes))) {
      Call call;
      call.resizes.push_back({At(x, c0), At(y, c0), (c1 - c0 + Block() - 1) / Block(), xd[2], xd[3],
                              yd[2], yd[3], static_cast<int>(Block()), rows, cols});
      step.parts.push_back({call});
    }
    Push(std::move(step), {x}, {y});
  }

  // Each output's channels copied out of the input: whole blocks as bytes where both ends sit
  // on block boundaries, lane by lane otherwise (the output's padding lanes zeroed).
  void EmitSplit(int node) {
    const int x = in_[static_cast<size_t>(node)][0];
    const int64_t h = V(x).dims[2], w = V(x).dims[3];
    Call call;
    std::vector<int> outputs;
    int64_t offset = 0;
    for (int y : out_[static_cast<size_t>(node)]) {
      Allocate(y);
      outputs.push_back(y);
      const int64_t c = V(y).dims[1];
      if (offset % Block() == 0 && c % Block() == 0) {
        call.copies.push_back(
            {At(x, offset), At(y, 0), static_cast<size_t>(c * h * w) * sizeof(float)});
      } else {
        LaneCopy copy;
        copy.from = At(x, 0);
        copy.to = At(y, 0);
        copy.channels = c;
        copy.from_channel = offset;
        copy.pixels = h * w;
        copy.block = static_cast<int>(Block());
        copy.zero_tail = true;
        call.lane_copies.push_back(copy);
      }
      offset += c;
    }
    Step step = NewStep(node, "Split");
    step.images = V(x).dims[0];
    step.parts.push_back({call});
    Push(std::move(step), {x}, outputs);
  }

  void EmitConcat(int node) {
    const std::vector<int>& ins = in_[static_cast<size_t>(node)];
    const int y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    if (concat_direct_.count(node)) return;  // the producers wrote the output
    const int64_t h = V(y).dims[2], w = V(y).dims[3];
    Call call;
    bool aligned = true;
    for (size_t i = 0; i + 1 < ins.size(); ++i) aligned &= V(ins[i]).dims[1] % Block() == 0;
    if (aligned) {  // whole blocks: one copy per input and image
      int64_t offset = 0;
      for (int v : ins) {
        const int64_t c = V(v).dims[1];
        call.copies.push_back(
            {At(v, 0), At(y, offset), static_cast<size_t>(Padded(c) * h * w) * sizeof(float)});
        offset += c;
      }
    } else {
      std::vector<memory::desc> srcs;
      for (int v : ins) srcs.push_back(BlockedDesc(V(v).dims[1], h, w));
      memory::desc dst = BlockedDesc(V(y).dims[1], h, w);
      dnnl::concat::primitive_desc pd(dst, 1, srcs, DnnlEngine(), Attr());
      if (!linalg::IsReference(pd)) {
        Keep(pd, node, "concatenation");
        Defer(call, pd);
        call.scratch_bytes = Scratch(pd);
        for (size_t i = 0; i < ins.size(); ++i)
          call.args.push_back(
              {DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i], At(ins[i], 0)});
        call.args.push_back({DNNL_ARG_DST, dst, At(y, 0)});
      } else {
        // oneDNN has only its reference concat when an input starts inside a block: inputs at a
        // block boundary are copied as whole blocks (their padding lanes are overwritten by the
        // next input), the others lane by lane; the output's padding lanes end up zero.
        int64_t offset = 0;
        for (size_t i = 0; i < ins.size(); ++i) {
          const int64_t c = V(ins[i]).dims[1];
          if (offset % Block() == 0) {
            call.copies.push_back({At(ins[i], 0), At(y, offset),
                                   static_cast<size_t>(Padded(c) * h * w) * sizeof(float)});
          } else {
            LaneCopy copy;
            copy.from = At(ins[i], 0);
            copy.to = At(y, 0);
            copy.channels = c;
            copy.to_channel = offset;
            copy.pixels = h * w;
            copy.block = static_cast<int>(Block());
            copy.zero_tail = i + 1 == ins.size();
            call.lane_copies.push_back(copy);
          }
          offset += c;
        }
      }
    }
    Step step = NewStep(node, "Concat");
    step.images = V(y).dims[0];
    step.parts.push_back({call});
    Push(std::move(step), ins, {y});
  }

  // ---- the arena ----------------------------------------------------------------------------

  // Each buffer lives from the first step that touches it to the last; buffers whose lifetimes
  // overlap get disjoint bytes (largest first, each at the lowest offset that fits).
  void PlanArena() {
    const size_t nb = buffer_bytes_.size();
    std::vector<int> first(nb, INT32_MAX), last(nb, -1);
    for (size_t s = 0; s < program_.steps.size(); ++s) {
      const Step& step = program_.steps[s];
      for (const std::vector<int>* list : {&step.reads, &step.writes}) {
        for (int b : *list) {
          first[static_cast<size_t>(b)] =
              std::min(first[static_cast<size_t>(b)], static_cast<int>(s));
          last[static_cast<size_t>(b)] =
              std::max(last[static_cast<size_t>(b)], static_cast<int>(s));
        }
      }
    }
    std::vector<size_t> order(nb);
    for (size_t i = 0; i < nb; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return buffer_bytes_[a] > buffer_bytes_[b]; });
    program_.buffer_offsets.assign(nb, 0);
    std::vector<size_t> placed;
    for (size_t b : order) {
      const size_t bytes = (buffer_bytes_[b] + 63) / 64 * 64;
      std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of overlapping lifetimes
      for (size_t o : placed) {
        if (first[o] > last[b] || first[b] > last[o]) continue;
        taken.push_back({program_.buffer_offsets[o],
                         program_.buffer_offsets[o] + (buffer_bytes_[o] + 63) / 64 * 64});
      }
      std::sort(taken.begin(), taken.end());
      size_t offset = 0;
      for (auto [begin, end] : taken) {
        if (offset + bytes <= begin) break;
        offset = std::max(offset, end);
      }
      program_.buffer_offsets[b] = offset;
      program_.arena_bytes = std::max(program_.arena_bytes, offset + bytes);
      placed.push_back(b);
    }
  }

  const GroupDesc& desc_;
  std::vector<std::vector<int64_t>> input_dims_;
  BlockedOptions opt_;
  Tag tag_;
  Program program_;
  std::vector<Value> values_;
  std::vector<BlockedOp> ops_;
  std::vector<std::vector<int>> in_, out_;
  std::vector<bool> fused_;
  std::vector<int> gelu_of_;  // per node: the x of the written-out Gelu it emits, or -1
  std::vector<ConvFusion> conv_;
  std::vector<size_t> buffer_bytes_;
  std::set<int> concat_direct_;  // Concat nodes whose inputs are written in place
};

}  // namespace

std::shared_ptr<dnnl::memory> WeightCache::Get(
    int node, int64_t o0, int64_t o1, const dnnl::memory::desc& desc,
    const std::function<std::shared_ptr<dnnl::memory>()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_)
    if (e.node == node && e.o0 == o0 && e.o1 == o1 && e.desc == desc) return e.weights;
  entries_.push_back({node, o0, o1, desc, make()});
  return entries_.back().weights;
}

Program CompileProgram(const GroupDesc& group, const std::vector<std::vector<int64_t>>& input_dims,
                       const BlockedOptions& options) {
  // oneDNN sizes a primitive's OpenMP team when the primitive is created: one thread, since
  // every primitive runs on one thread of the session's pool.
  linalg::OmpThreadScope one_thread(1);
  try {
    return Compiler(group, input_dims, options).Compile();
  } catch (const dnnl::error& e) {
    ep::Fail(NX_NOT_IMPLEMENTED,
             std::string("blocked group: oneDNN refused a primitive: ") + e.what());
  }
}

std::unique_ptr<ep::Kernel> CompileBlockedGroup(const NxGraph* group,
                                                const BlockedOptions& options) {
  GroupDesc desc = ReadGroup(group, options.block);
  if (desc.static_shapes) {  // compiled now, so a failure lets the nodes run one by one
    std::vector<std::vector<int64_t>> dims(desc.num_inputs);
    for (const GroupValue& v : desc.values)
      if (v.input >= 0 && !v.constant) dims[static_cast<size_t>(v.input)] = v.dims;
    // The constants were borrowed from the view: the kernel keeps only the program.
    return MakeBlockedKernel(GroupDesc{}, options, CompileProgram(desc, dims, options));
  }
  return MakeBlockedKernel(std::move(desc), options, std::nullopt);
}

}  // namespace nxrt::cpu::blocked
