#include "blocked/blocked_program.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "blocked/blocked_ops.h"
#include "blocked/blocked_steps.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/nn/pool_geometry.h"

namespace nxrt::cpu::blocked {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using linalg::DnnlEngine;
using linalg::DnnlStream;
constexpr auto kF32 = memory::data_type::f32;

// Multiply-adds of a convolution (per image) below which it runs as one slice: about 20 us.
constexpr int64_t kMinSliceMacs = int64_t{1} << 17;
// Bytes a memory-bound step (pooling, eltwise, binary, reorder) moves per image below which it
// runs as one slice.
constexpr int64_t kMinSliceBytes = int64_t{1} << 16;

struct Value {
  std::string name;
  std::vector<int64_t> dims;    // [N, C, H, W] when blockable
  int producer = -1;            // node (index in the group) or -1
  std::vector<int> readers;     // nodes
  int input = -1, output = -1;  // kernel input / output index
  std::optional<ep::ConstTensor> constant;
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
};

class Compiler {
 public:
  Compiler(const NxGraph* group, const BlockedOptions& options)
      : graph_(group), opt_(options), tag_(options.block == 16 ? Tag::nChw16c : Tag::nChw8c) {}

  Program Compile() {
    ReadGraph();
    MarkPlainInputs();
    PlanFusions();
    PlanConcats();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (fused_[i] || ops_[i] == BlockedOp::kConstantAlias) continue;
      EmitNode(static_cast<int>(i));
    }
    PlanArena();
    program_.threads = opt_.threads;
    return std::move(program_);
  }

 private:
  // ---- the graph view ----------------------------------------------------------------------

  int ValueOf(const ep::ValueInfoView& v) {
    auto it = index_.find(v.name());
    if (it != index_.end()) return it->second;
    Value value;
    value.name = v.name();
    if (IsBlockable(v)) value.dims = StaticDims(v);
    values_.push_back(std::move(value));
    return index_[values_.back().name] = static_cast<int>(values_.size() - 1);
  }

  void ReadGraph() {
    const NxHostApi& host = ep::Host();
    const size_t inputs = host.Graph_GetInputCount(graph_);
    program_.inputs.resize(inputs);
    for (size_t i = 0; i < inputs; ++i) {
      ep::ValueInfoView v(host.Graph_GetInput(graph_, i));
      Value& value = values_[static_cast<size_t>(ValueOf(v))];
      value.input = static_cast<int>(i);
      value.constant = v.constant();
      if (!value.constant) program_.inputs[i].dims = value.dims;
    }
    const size_t outputs = host.Graph_GetOutputCount(graph_);
    for (size_t i = 0; i < outputs; ++i) {
      ep::ValueInfoView v(host.Graph_GetOutput(graph_, i));
      Value& value = values_[static_cast<size_t>(ValueOf(v))];
      NXRT_EP_ENFORCE(value.dims.size() == 4, "blocked group: output '" + value.name +
                                                  "' is not a 4-D float tensor of static shape");
      value.output = static_cast<int>(i);
      program_.output_dims.push_back(value.dims);
    }
    const size_t n = host.Graph_GetNodeCount(graph_);
    for (size_t i = 0; i < n; ++i) {
      ep::NodeView node(host.Graph_GetNode(graph_, i));
      nodes_.push_back(node);
      std::vector<int> ins, outs;
      for (size_t k = 0; k < node.input_count(); ++k) {
        ep::ValueInfoView v = node.input(k);
        ins.push_back(v.present() ? ValueOf(v) : -1);
      }
      for (size_t k = 0; k < node.output_count(); ++k) outs.push_back(ValueOf(node.output(k)));
      auto is_constant = [&](const ep::ValueInfoView& v) {
        return values_[static_cast<size_t>(ValueOf(v))].constant.has_value();
      };
      const BlockedOp op = ClassifyNode(node, is_constant);
      NXRT_EP_ENFORCE(op != BlockedOp::kNone,
                      "blocked group: " + node.describe() + " cannot run in the blocked layout");
      for (int v : ins)
        if (v >= 0) values_[static_cast<size_t>(v)].readers.push_back(static_cast<int>(i));
      for (int v : outs) values_[static_cast<size_t>(v)].producer = static_cast<int>(i);
      if (op == BlockedOp::kConstantAlias)
        values_[static_cast<size_t>(outs[0])].constant =
            values_[static_cast<size_t>(ins[0])].constant;
      ops_.push_back(op);
      in_.push_back(std::move(ins));
      out_.push_back(std::move(outs));
    }
    fused_.assign(n, false);
    conv_.resize(n);
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
            nodes_[ri].attr_int("group", 1) != 1) {
          only_convs = false;
        }
      }
      if (!only_convs) continue;
      value.plain = true;
      program_.inputs[static_cast<size_t>(value.input)].used = true;
    }
  }
  bool IsOutput(int v) { return V(v).output >= 0; }

  // Clip bounds from constant inputs (opset 11 on) or attributes (before).
  std::vector<Eltwise> Activation(int node) {
    const ep::NodeView& n = nodes_[static_cast<size_t>(node)];
    float lo = -3.4028235e38f, hi = 3.4028235e38f;
    if (n.op_type() == "Clip") {
      if (n.opset() < 11) {
        lo = n.attr_float("min", lo);
        hi = n.attr_float("max", hi);
      } else {
        const std::vector<int>& ins = in_[static_cast<size_t>(node)];
        if (ins.size() > 1 && ins[1] >= 0) lo = *V(ins[1]).constant->data<float>();
        if (ins.size() > 2 && ins[2] >= 0) hi = *V(ins[2]).constant->data<float>();
      }
    }
    return ActivationSteps(n, lo, hi);
  }

  // ---- fusion ------------------------------------------------------------------------------

  static size_t FirstClip(const std::vector<Fused>& chain) {
    for (size_t i = 0; i < chain.size(); ++i)
      if (!chain[i].sum &&
          chain[i].eltwise.algorithm == static_cast<int>(dnnl::algorithm::eltwise_clip))
        return i;
    return chain.size();
  }

  // The only reader of v, when v has exactly one and does not leave the group.
  int SoleReader(int v) {
    const Value& value = V(v);
    if (IsOutput(v) || value.readers.size() != 1) return -1;
    return value.readers[0];
  }

  const std::string& OpType(int node) {
    op_names_.resize(nodes_.size());
    std::string& s = op_names_[static_cast<size_t>(node)];
    if (s.empty()) s = nodes_[static_cast<size_t>(node)].op_type();
    return s;
  }

  void PlanFusions() {
    for (size_t c = 0; c < nodes_.size(); ++c) {
      if (ops_[c] != BlockedOp::kConv) continue;
      ConvFusion& f = conv_[c];
      int y = out_[c][0];
      for (;;) {
        const Value& yv = V(y);
        if (IsOutput(y)) break;
        const int r = SoleReader(y);
        if (r >= 0 && ops_[static_cast<size_t>(r)] == BlockedOp::kActivation) {
          for (const Eltwise& e : Activation(r)) f.chain.push_back({false, e});
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
            if ((ins[0] == y && ins[1] == s) || (ins[0] == s && ins[1] == y)) {
              f.chain.push_back(
                  {false, {static_cast<int>(dnnl::algorithm::eltwise_swish), 1.0f, 0.0f}});
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
    const int64_t blocks = (channels + Block() - 1) / Block();
    count = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(count, blocks)));
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int s = 0; s < count; ++s) {
      const int64_t b0 = blocks * s / count, b1 = blocks * (s + 1) / count;
      out.push_back({b0 * Block(), std::min(channels, b1 * Block())});
    }
    return out;
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
    for (size_t k = 0; k < nodes_.size(); ++k) {
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
    if (after.empty()) return;
    call.after = std::move(after);
    call.after_at = At(v, c0);
    call.after_blocks = (c1 - c0 + Block() - 1) / Block();
    call.after_pixels = pixels;
    call.block = static_cast<int>(Block());
    call.real_lanes = static_cast<int>(c1 % Block());
  }

  Step NewStep(int node, const std::string& op) {
    Step s;
    s.name = nodes_[static_cast<size_t>(node)].name();
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
      Call call;
      call.has_primitive = true;
      call.primitive =
          dnnl::reorder(dnnl::reorder::primitive_desc(DnnlEngine(), src, DnnlEngine(), dst));
      call.args = {{DNNL_ARG_FROM, src, into_group ? plain : At(v, c0)},
                   {DNNL_ARG_TO, dst, into_group ? At(v, c0) : plain}};
      step.parts.push_back({call});
    }
    return step;
  }

  void EmitNode(int node) {
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
        EmitActivation(node);
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
      default:
        ep::Fail(NX_FAIL, "blocked group: unexpected member " +
                              nodes_[static_cast<size_t>(node)].describe());
    }
    Leave(out_[static_cast<size_t>(node)][0], node);
  }

  void EmitConv(int node) {
    const ep::NodeView& n = nodes_[static_cast<size_t>(node)];
    const std::vector<int>& ins = in_[static_cast<size_t>(node)];
    const int x = ins[0];
    const ConvFusion& f = conv_[static_cast<size_t>(node)];
    const int y = f.final;
    const ep::ConstTensor& wt = *V(ins[1]).constant;
    const float* bias = ins.size() > 2 && ins[2] >= 0 ? V(ins[2]).constant->data<float>() : nullptr;
    linalg::ConvAttributes attrs(n);
    linalg::ConvGeometry g = linalg::ComputeConvGeometry(attrs, V(x).dims, wt.shape());
    const int64_t c = g.in_channels, m = g.out_channels;
    const int64_t h = g.in[1], w = g.in[2], oh = g.out[1], ow = g.out[2];
    const int64_t kh = g.kernel[1], kw = g.kernel[2];
    const bool depthwise = g.group > 1;
    NXRT_EP_ENFORCE(V(y).dims == std::vector<int64_t>({g.batch, m, oh, ow}),
                    "blocked group: " + n.describe() + " output shape does not match its inputs");

    // In place over the addend when nothing reads it later and it is not the source.
    bool in_place = false;
    if (f.sum >= 0) {
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

    dnnl::post_ops ops;
    const size_t clip = FirstClip(f.chain);
    std::vector<linalg::ConvFusion::Eltwise> after;
    for (size_t i = 0; i < f.chain.size(); ++i) {
      const Fused& e = f.chain[i];
      const auto alg = static_cast<dnnl::algorithm>(e.eltwise.algorithm);
      if (i >= clip)
        after.push_back({alg, e.eltwise.alpha, e.eltwise.beta});
      else if (e.sum)
        ops.append_sum(1.0f);
      else
        ops.append_eltwise(1.0f, alg, e.eltwise.alpha, e.eltwise.beta);
    }

    std::string op = depthwise ? "DepthwiseConv" : "Conv";
    if (!f.chain.empty()) op += "+fused";
    Step step = NewStep(node, op);
    step.images = g.batch;
    const int64_t macs = m * oh * ow * (c / g.group) * kh * kw;
    const memory::dims strides = {g.stride[1], g.stride[2]};
    const memory::dims dilates = {g.dilation[1] - 1, g.dilation[2] - 1};
    const memory::dims pad_l = {g.pad_begin[1], g.pad_begin[2]};
    const memory::dims pad_r = {g.pad_end[1], g.pad_end[2]};
    const float* wdata = wt.data<float>();
    for (auto [o0, o1] : Slices(m, SliceCount(macs >= kMinSliceMacs))) {
      const int64_t os = o1 - o0;
      memory::desc src = V(x).plain ? PlainDesc(c, h, w) : BlockedDesc(depthwise ? os : c, h, w);
      memory::desc dst = BlockedDesc(os, oh, ow);
      memory::desc w_plain, w_any;
      if (depthwise) {
        w_plain = memory::desc({os, 1, 1, kh, kw}, kF32, Tag::goihw);
        w_any = memory::desc({os, 1, 1, kh, kw}, kF32, Tag::any);
      } else {
        w_plain = memory::desc({os, c, kh, kw}, kF32, Tag::oihw);
        w_any = memory::desc({os, c, kh, kw}, kF32, Tag::any);
      }
      memory::desc b_md = bias ? memory::desc({os}, kF32, Tag::x) : memory::desc();
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src, w_any, b_md, dst,
                                        strides, dilates, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, Attr(ops), DnnlEngine());
      // Weights of this slice, reordered once into the primitive's layout.
      const float* w_slice = wdata + o0 * (depthwise ? 1 : c) * kh * kw;
      auto packed = std::make_shared<memory>(pd.weights_desc(), DnnlEngine());
      memory w_user(w_plain, DnnlEngine(), const_cast<float*>(w_slice));
      dnnl::reorder(w_user, *packed).execute(DnnlStream(), w_user, *packed);
      DnnlStream().wait();
      Call call;
      call.has_primitive = true;
      call.primitive = dnnl::convolution_forward(pd);
      call.scratch_bytes = Scratch(pd);
      Location w_at;
      w_at.where = Where::kFixed;
      w_at.fixed = packed;
      call.args = {{DNNL_ARG_SRC, src, At(x, depthwise ? o0 : 0)},
                   {DNNL_ARG_WEIGHTS, packed->get_desc(), w_at},
                   {DNNL_ARG_DST, dst, At(y, o0)}};
      if (bias) {
        auto b = std::make_shared<memory>(b_md, DnnlEngine());
        std::memcpy(b->get_data_handle(), bias + o0, static_cast<size_t>(os) * sizeof(float));
        Location b_at;
        b_at.where = Where::kFixed;
        b_at.fixed = b;
        call.args.push_back({DNNL_ARG_BIAS, b_md, b_at});
      }
      SetAfter(call, after, y, o0, o1, oh * ow);
      if (f.sum >= 0 && !in_place)
        call.copies.push_back(
            {At(f.sum, o0), At(y, o0), static_cast<size_t>(Padded(os) * oh * ow) * sizeof(float)});
      step.parts.push_back({call});
    }
    std::vector<int> reads = {x};
    if (f.sum >= 0) reads.push_back(f.sum);
    Push(std::move(step), reads, {y});
    Leave(y, node);
  }

  void EmitActivation(int node) {
    const int x = in_[static_cast<size_t>(node)][0], y = out_[static_cast<size_t>(node)][0];
    Allocate(y);
    const int64_t c = V(x).dims[1], h = V(x).dims[2], w = V(x).dims[3];
    Step step = NewStep(node, OpType(node));
    step.images = V(x).dims[0];
    const std::vector<Eltwise> acts = Activation(node);
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
      Part part;
      for (size_t k = 0; k < clip; ++k) {
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                      static_cast<dnnl::algorithm>(acts[k].algorithm), md,
                                      acts[k].alpha, acts[k].beta);
        dnnl::eltwise_forward::primitive_desc pd(d, Attr(), DnnlEngine());
        Call call;
        call.has_primitive = true;
        call.primitive = dnnl::eltwise_forward(pd);
        call.scratch_bytes = Scratch(pd);
        call.args = {{DNNL_ARG_SRC, md, At(k == 0 ? x : y, c0)}, {DNNL_ARG_DST, md, At(y, c0)}};
        part.push_back(std::move(call));
      }
      if (!after.empty()) {
        if (part.empty()) {  // nothing wrote y yet: start from a copy of x
          Call copy;
          copy.copies.push_back({At(x, c0), At(y, c0), md.get_size()});
          part.push_back(std::move(copy));
        }
        SetAfter(part.back(), after, y, c0, c1, h * w);
      }
      step.parts.push_back(std::move(part));
    }
    Push(std::move(step), {x}, {y});
  }

  void EmitBinary(int node) {
    const std::vector<int>& ins = in_[static_cast<size_t>(node)];
    const int y = out_[static_cast<size_t>(node)][0];
    // src1 is the one oneDNN broadcasts: the per-channel operand if there is one.
    int a = ins[0], b = ins[1];
    if (V(a).dims != V(y).dims) std::swap(a, b);
    Allocate(y);
    const bool per_channel = V(b).dims != V(y).dims;
    const int64_t c = V(y).dims[1], h = V(y).dims[2], w = V(y).dims[3];
    const auto alg = ops_[static_cast<size_t>(node)] == BlockedOp::kAdd
                         ? dnnl::algorithm::binary_add
                         : dnnl::algorithm::binary_mul;
    Step step = NewStep(node, OpType(node));
    step.images = V(y).dims[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc md = BlockedDesc(c1 - c0, h, w);
      memory::desc md1 = per_channel ? BlockedDesc(c1 - c0, 1, 1) : md;
      dnnl::binary::desc d(alg, md, md1, md);
      dnnl::binary::primitive_desc pd(d, Attr(), DnnlEngine());
      Call call;
      call.has_primitive = true;
      call.primitive = dnnl::binary(pd);
      call.scratch_bytes = Scratch(pd);
      call.args = {{DNNL_ARG_SRC_0, md, At(a, c0)},
                   {DNNL_ARG_SRC_1, md1, At(b, c0)},
                   {DNNL_ARG_DST, md, At(y, c0)}};
      step.parts.push_back({call});
    }
    Push(std::move(step), {a, b}, {y});
  }

  void EmitPool(int node) {
    const ep::NodeView& n = nodes_[static_cast<size_t>(node)];
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
      nn::PoolAttributes attrs(n);
      nn::PoolGeometry g = nn::ResolvePool(attrs, V(x).dims);
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
        alg = n.attr_int("count_include_pad", 0) ? dnnl::algorithm::pooling_avg_include_padding
                                                 : dnnl::algorithm::pooling_avg_exclude_padding;
      }
    }
    const int64_t oh = V(y).dims[2], ow = V(y).dims[3];
    Step step = NewStep(node, OpType(node));
    step.images = V(x).dims[0];
    for (auto [c0, c1] : Slices(c, SliceCount(c * h * w * 4 >= kMinSliceBytes))) {
      memory::desc src = BlockedDesc(c1 - c0, h, w), dst = BlockedDesc(c1 - c0, oh, ow);
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, strides,
                                       kernel, dilation, pad_l, pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(d, Attr(), DnnlEngine());
      Call call;
      call.has_primitive = true;
      call.primitive = dnnl::pooling_v2_forward(pd);
      call.scratch_bytes = Scratch(pd);
      call.args = {{DNNL_ARG_SRC, src, At(x, c0)}, {DNNL_ARG_DST, dst, At(y, c0)}};
      step.parts.push_back({call});
    }
    Push(std::move(step), {x}, {y});
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
      call.has_primitive = true;
      call.primitive = dnnl::concat(pd);
      call.scratch_bytes = Scratch(pd);
      for (size_t i = 0; i < ins.size(); ++i)
        call.args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i], At(ins[i], 0)});
      call.args.push_back({DNNL_ARG_DST, dst, At(y, 0)});
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

  const NxGraph* graph_;
  BlockedOptions opt_;
  Tag tag_;
  Program program_;
  std::vector<Value> values_;
  std::unordered_map<std::string, int> index_;
  std::vector<ep::NodeView> nodes_;
  std::vector<BlockedOp> ops_;
  std::vector<std::vector<int>> in_, out_;
  std::vector<bool> fused_;
  std::vector<ConvFusion> conv_;
  std::vector<std::string> op_names_;
  std::vector<size_t> buffer_bytes_;
  std::set<int> concat_direct_;  // Concat nodes whose inputs are written in place
};

}  // namespace

std::unique_ptr<ep::Kernel> CompileBlockedGroup(const NxGraph* group,
                                                const BlockedOptions& options) {
  // oneDNN sizes a primitive's OpenMP team when the primitive is created: one thread, since
  // every primitive runs on one thread of the session's pool.
  linalg::OmpThreadScope one_thread(1);
  try {
    return MakeBlockedKernel(Compiler(group, options).Compile());
  } catch (const dnnl::error& e) {
    ep::Fail(NX_NOT_IMPLEMENTED,
             std::string("blocked group: oneDNN refused a primitive: ") + e.what());
  }
}

}  // namespace nxrt::cpu::blocked
