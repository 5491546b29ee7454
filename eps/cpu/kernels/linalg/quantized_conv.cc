// ConvInteger (opset 10) and QLinearConv (opset 10) for int8/uint8 data: the weights times the
// input's columns of taps straight into the output planes on the 8-bit GEMM's micro-kernels
// (integer_conv_planes.h), zero points (the weight's per tensor or per output channel) removed
// exactly in int32, QLinearConv requantizing each tile as it is summed; depthwise convolutions
// on their own path (depthwise_integer_conv.h). com.nxrt ConvIntegerToFloat: ConvInteger with
// quantize_dynamic's float scaling, bias and activation fused (graph_fusion.cc).
// com.nxrt QLinearConv (what session/qdq_folding.h makes of quantize_static's QDQ convolutions)
// is the same op with an optional fused activation="Relu" (a clamp at y_zero_point); with
// constant int8 weights of zero point 0, constant scales and zero points it runs on oneDNN's int8
// primitives (qconv_dnnl.h), weights reordered once at kernel creation.
#include <algorithm>
#include <limits>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/depthwise_integer_conv.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/integer_conv_planes.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/qconv_dnnl.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::linalg {
namespace {

// `w` [M, C / group, k...] packed for PlaneIntegerConv.
PlaneConvWeights PackWeights(quantized::Int8GemmPath path, int64_t group, const ep::ConstTensor& w,
                             const std::vector<int32_t>& w_zp) {
  const int64_t m = w.rank() > 0 ? w.dim(0) : 0;
  const int64_t kdim = m > 0 ? static_cast<int64_t>(w.size()) / m : 0;
  return PackPlaneConvWeights(path, w.raw(), w.type() == NX_TYPE_INT8, m, kdim, group, w_zp);
}

// The packed weights of a node whose weight (input `w_index`) and weight zero point (input
// `zp_index`, or none) are constants of valid types and shapes; none otherwise (packed per run,
// where the run also reports any error in them).
std::optional<PlaneConvWeights> ConstantWeights(const ep::KernelInfo& info,
                                                const ConvAttributes& attrs,
                                                quantized::Int8GemmPath path, size_t w_index,
                                                size_t zp_index) {
  const std::optional<ep::ConstTensor> w = info.constant_input(w_index);
  if (!w || !IsInt8Type(w->type()) || w->rank() < 3 || attrs.group < 1 ||
      w->dim(0) % attrs.group != 0)
    return std::nullopt;
  if (attrs.group > 1 && w->dim(1) == 1) return std::nullopt;  // depthwise: DepthwiseIntegerConv
  std::optional<ep::ConstTensor> zp;
  if (info.has_input(zp_index)) {
    zp = info.constant_input(zp_index);
    if (!zp) return std::nullopt;
  }
  try {
    const std::vector<int32_t> w_zp = ReadZeroPoint(zp, w->type(), w->dim(0), "w_zero_point");
    return PackWeights(path, attrs.group, *w, w_zp);
  } catch (const std::exception&) {
    return std::nullopt;  // the run reports it, with the node's name
  }
}

// The sums of x and w into `out`: depthwise convolutions on their own path, others on the
// constant `packed` weights or `w` packed for this run.
void Convolve(const ConvGeometry& g, const ep::ConstTensor& x, const ep::ConstTensor& w,
              int32_t x_zp, const std::vector<int32_t>& w_zp,
              const std::optional<PlaneConvWeights>& packed, quantized::Int8GemmPath path, Isa isa,
              const IntegerConvOutput& out, int threads) {
  const bool x_signed = x.type() == NX_TYPE_INT8;
  if (SuitsDepthwiseIntegerConv(g)) {
    DepthwiseIntegerConv(g, x.raw(), x_signed, w.raw(), w.type() == NX_TYPE_INT8, x_zp, w_zp, out,
                         threads, isa);
  } else if (packed) {
    PlaneIntegerConv(g, x.raw(), x_signed, x_zp, *packed, out, threads);
  } else {
    PlaneIntegerConv(g, x.raw(), x_signed, x_zp, PackWeights(path, g.group, w, w_zp), out, threads);
  }
}

// What ConvInteger and ConvIntegerToFloat share: x, w and their zero points (inputs 0-3), the
// weights packed once when constant, and the convolution into an output.
class IntegerConvKernel : public ep::Kernel {
 protected:
  explicit IntegerConvKernel(const ep::KernelInfo& info)
      : attrs_(info), path_(quantized::KernelInt8GemmPath(info)), isa_(KernelIsa(info)) {
    weights_ = ConstantWeights(info, attrs_, path_, 1, 3);
  }

  // The run's operands, checked.
  struct Operands {
    ep::ConstTensor x, w;
    ConvGeometry g;
    std::vector<int32_t> x_zp, w_zp;
  };
  Operands Read(ep::KernelContext& ctx) const {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor w = ctx.input(1);
    NXRT_EP_ENFORCE(IsInt8Type(x.type()) && IsInt8Type(w.type()),
                    attrs_.op + ": x and w must be int8 or uint8");
    ConvGeometry g = ComputeConvGeometry(attrs_, x.shape(), w.shape());
    std::vector<int32_t> x_zp =
        ReadZeroPoint(ctx.optional_input(2), x.type(), 1, attrs_.op + ": x_zero_point");
    std::vector<int32_t> w_zp = ReadZeroPoint(ctx.optional_input(3), w.type(), g.out_channels,
                                              attrs_.op + ": w_zero_point");
    return Operands{x, w, g, std::move(x_zp), std::move(w_zp)};
  }

  void Run(const Operands& o, IntegerConvOutput out, int threads) const {
    out.isa = isa_;
    Convolve(o.g, o.x, o.w, o.x_zp[0], o.w_zp, weights_, path_, isa_, out, threads);
  }

  ConvAttributes attrs_;
  quantized::Int8GemmPath path_;
  Isa isa_;  // of the depthwise path's float kernels and the output stores
  std::optional<PlaneConvWeights> weights_;  // when constant (ConstantWeights)
};

class ConvInteger : public IntegerConvKernel {
 public:
  explicit ConvInteger(const ep::KernelInfo& info) : IntegerConvKernel(info) {}

  void Compute(ep::KernelContext& ctx) override {
    const Operands o = Read(ctx);
    std::vector<int64_t> y_dims = o.g.output_dims();
    ep::Tensor y = ctx.output(0, y_dims, NX_TYPE_INT32);
    if (ShapeSize(y_dims) == 0) return;
    IntegerConvOutput out;
    out.y32 = y.data<int32_t>();
    Run(o, out, ctx.threads());
  }
};

// com.nxrt ConvIntegerToFloat: what graph fusion (src/session/graph_fusion.cc) makes of
// quantize_dynamic's ConvInteger -> Cast(float) -> Mul(x_scale * w_scale) [-> Add(bias)]
// [-> Relu | Clip]. Inputs x, w, x_zero_point, w_zero_point (optional), x_scale (one float),
// w_scale (one float) and B (optional, one float per output channel); attribute activation ""
// (none), "Relu" or "Clip" (activation_params: min, max). Y = act(float(sum) * (x_scale *
// w_scale) + B[m]), rounded step by step as the unfused ops (integer_conv_output.h): the tiles
// go to float planes once, where the chain made an int32 and three float passes.
class ConvIntegerToFloat : public IntegerConvKernel {
 public:
  explicit ConvIntegerToFloat(const ep::KernelInfo& info) : IntegerConvKernel(info) {
    const std::string act = info.attr_string("activation", "");
    if (act == "Relu") {
      act_lo_ = 0.0f;
    } else if (act == "Clip") {
      const std::vector<float> bounds = info.attr_floats("activation_params");
      NXRT_EP_ENFORCE(bounds.size() == 2,
                      attrs_.op + ": a Clip activation needs activation_params (min, max)");
      act_lo_ = bounds[0];
      act_hi_ = bounds[1];
    } else {
      NXRT_EP_ENFORCE(act.empty(), attrs_.op + ": unsupported activation '" + act + "'");
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    const Operands o = Read(ctx);
    const std::vector<float> x_scale = ReadScale(ctx.input(4), 1, attrs_.op + ": x_scale");
    const std::vector<float> w_scale = ReadScale(ctx.input(5), 1, attrs_.op + ": w_scale");
    const float scale = x_scale[0] * w_scale[0];  // as the chain's Mul of the two
    std::optional<ep::ConstTensor> bias = ctx.optional_input(6);
    if (bias) {
      NXRT_EP_ENFORCE(
          bias->type() == NX_TYPE_FLOAT && static_cast<int64_t>(bias->size()) == o.g.out_channels,
          attrs_.op + ": B must hold one float per output channel (" +
              std::to_string(o.g.out_channels) + "), got " + ShapeToString(bias->shape()));
    }
    std::vector<int64_t> y_dims = o.g.output_dims();
    ep::Tensor y = ctx.output(0, y_dims, NX_TYPE_FLOAT);
    if (ShapeSize(y_dims) == 0) return;
    IntegerConvOutput out;
    out.yf = y.data<float>();
    out.fscale = &scale;
    out.per_tensor_fscale = true;
    out.fbias = bias ? bias->data<float>() : nullptr;
    out.act_lo = act_lo_;
    out.act_hi = act_hi_;
    Run(o, out, ctx.threads());
  }

 private:
  float act_lo_ = -std::numeric_limits<float>::infinity();
  float act_hi_ = std::numeric_limits<float>::infinity();
};

// The oneDNN path for a node whose weights, scales, zero points and bias are constants with
// int8 weights of zero point 0; nullptr otherwise.
std::unique_ptr<DnnlQConv> MakeDnnlQConv(const ep::KernelInfo& info, bool relu) {
  auto c = [&](size_t i) { return info.has_input(i) ? info.constant_input(i) : std::nullopt; };
  auto xs = c(1), xz = c(2), w = c(3), ws = c(4), wz = c(5), ys = c(6), yz = c(7);
  if (!xs || !xz || !w || !ws || !wz || !ys || !yz) return nullptr;
  if (w->type() != NX_TYPE_INT8 || w->rank() != 4 || !IsInt8Type(xz->type()) ||
      !IsInt8Type(yz->type()) || xs->type() != NX_TYPE_FLOAT || ws->type() != NX_TYPE_FLOAT ||
      ys->type() != NX_TYPE_FLOAT || xs->size() != 1 || ys->size() != 1 || xz->size() != 1 ||
      yz->size() != 1)
    return nullptr;
  const int64_t m = w->dim(0);
  if (ws->size() != 1 && static_cast<int64_t>(ws->size()) != m) return nullptr;
  for (size_t i = 0; i < wz->size(); ++i)
    if (wz->type() != NX_TYPE_INT8 || wz->data<int8_t>()[i] != 0) return nullptr;
  QConvParams p;
  p.x_signed = xz->type() == NX_TYPE_INT8;
  p.y_signed = yz->type() == NX_TYPE_INT8;
  p.x_zero_point = ReadZeroPoint(xz, xz->type(), 1, "x_zero_point")[0];
  p.y_zero_point = ReadZeroPoint(yz, yz->type(), 1, "y_zero_point")[0];
  const float x_scale = xs->data<float>()[0], y_scale = ys->data<float>()[0];
  for (size_t i = 0; i < ws->size(); ++i)
    p.scale.push_back(static_cast<float>(double(x_scale * ws->data<float>()[i]) / y_scale));
  if (info.has_input(8)) {
    auto b = c(8);
    if (!b || b->type() != NX_TYPE_INT32 || static_cast<int64_t>(b->size()) != m) return nullptr;
    p.bias.assign(b->data<int32_t>(), b->data<int32_t>() + m);
  }
  p.relu = relu;
  p.channels_last = info.attr_int("channels_last", 0) != 0;
  return std::make_unique<DnnlQConv>(std::move(p), w->data<int8_t>(),
                                     std::vector<int64_t>(w->shape().begin(), w->shape().end()));
}

class QLinearConv : public ep::Kernel {
 public:
  explicit QLinearConv(const ep::KernelInfo& info)
      : attrs_(info),
        relu_(info.attr_string("activation", "") == "Relu"),
        channels_last_(info.attr_int("channels_last", 0) != 0) {
    const std::string act = info.attr_string("activation", "");
    NXRT_EP_ENFORCE(act.empty() || relu_, attrs_.op + ": unsupported activation '" + act + "'");
    // oneDNN's int8 convolution when the weights are constant int8 with zero point 0 (what
    // quantize_static writes, in QDQ or QOperator form): its arithmetic matches onnxruntime's
    // on every CPU (qconv_dnnl.h: exact with VNNI; without it uint8 activations saturate where
    // onnxruntime's do and int8 ones take an exact float path). The im2col path below was 45x
    // slower than onnxruntime on a QOperator MobileNetV2.
    dnnl_ = MakeDnnlQConv(info, relu_);
    if (dnnl_) dnnl_->SetAudit(KernelAudit(info));
    path_ = quantized::KernelInt8GemmPath(info);
    isa_ = KernelIsa(info);
    // With oneDNN's primitive the weights are its own; a run it declines packs them per run.
    if (!dnnl_) weights_ = ConstantWeights(info, attrs_, path_, 3, 5);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    NXRT_EP_ENFORCE(
        !channels_last_ || x.rank() == 4,
        attrs_.op + ": channels_last needs a 4-D input, got " + ShapeToString(x.shape()));
    if (dnnl_ && x.rank() == 4 && IsInt8Type(x.type())) {
      const Dims x_nchw =
          channels_last_ ? ToNchw(x.shape()) : Dims(x.shape().begin(), x.shape().end());
      ConvGeometry g = ComputeConvGeometry(attrs_, x_nchw, dnnl_weight_dims());
      if (dnnl_->Supports(g, ctx.threads())) {
        std::optional<ep::ConstTensor> yz = ctx.optional_input(7);
        const Dims y_dims = channels_last_ ? ToNhwc(g.output_dims()) : g.output_dims();
        ep::Tensor y = ctx.output(0, y_dims, yz->type());
        if (ShapeSize(y_dims) == 0) return;
        dnnl_->Run(g, x.raw(), y.mutable_raw(), ctx.threads());
        return;
      }
    }
    NXRT_EP_ENFORCE(!channels_last_, attrs_.op +
                                         ": channels_last runs only on oneDNN's int8 "
                                         "convolution, which declined this one");
    ep::ConstTensor w = ctx.input(3);
    NXRT_EP_ENFORCE(IsInt8Type(x.type()) && IsInt8Type(w.type()),
                    attrs_.op + ": x and w must be int8 or uint8");
    ConvGeometry g = ComputeConvGeometry(attrs_, x.shape(), w.shape());
    const int64_t m = g.out_channels;
    std::vector<float> x_scale = ReadScale(ctx.input(1), 1, attrs_.op + ": x_scale");
    std::vector<float> w_scale = ReadScale(ctx.input(4), m, attrs_.op + ": w_scale");
    std::vector<float> y_scale = ReadScale(ctx.input(6), 1, attrs_.op + ": y_scale");
    std::vector<int32_t> x_zp =
        ReadZeroPoint(ctx.optional_input(2), x.type(), 1, attrs_.op + ": x_zero_point");
    std::vector<int32_t> w_zp =
        ReadZeroPoint(ctx.optional_input(5), w.type(), m, attrs_.op + ": w_zero_point");
    std::optional<ep::ConstTensor> y_zp_t = ctx.optional_input(7);
    const NxElementType y_type = y_zp_t ? y_zp_t->type() : x.type();
    NXRT_EP_ENFORCE(IsInt8Type(y_type), attrs_.op + ": y_zero_point must be int8 or uint8");
    std::vector<int32_t> y_zp = ReadZeroPoint(y_zp_t, y_type, 1, attrs_.op + ": y_zero_point");
    std::optional<ep::ConstTensor> bias = ctx.optional_input(8);
    if (bias) {
      NXRT_EP_ENFORCE(bias->type() == NX_TYPE_INT32 && bias->rank() == 1 && bias->dim(0) == m,
                      attrs_.op + ": B must be a 1-D int32 tensor of " + std::to_string(m) +
                          " elements, got " + ShapeToString(bias->shape()));
    }

    std::vector<int64_t> y_dims = g.output_dims();
    ep::Tensor y = ctx.output(0, y_dims, y_type);
    if (ShapeSize(y_dims) == 0) return;
    // x_scale * w_scale / y_scale in float32 (as the scales are), applied in double.
    std::vector<double> scale(w_scale.size());
    for (size_t c = 0; c < w_scale.size(); ++c) scale[c] = (x_scale[0] * w_scale[c]) / y_scale[0];
    IntegerConvOutput out;
    out.y8 = y.mutable_raw();
    out.y8_signed = y_type == NX_TYPE_INT8;
    out.scale = scale.data();
    out.per_tensor_scale = scale.size() == 1;
    out.zero_point = y_zp[0];
    out.floor = relu_ ? y_zp[0] : std::numeric_limits<int32_t>::min();
    out.bias = bias ? bias->data<int32_t>() : nullptr;
    out.isa = isa_;
    Convolve(g, x, w, x_zp[0], w_zp, weights_, path_, isa_, out, ctx.threads());
  }

 private:
  std::span<const int64_t> dnnl_weight_dims() const { return dnnl_->weight_dims(); }

  static Dims ToNchw(std::span<const int64_t> d) { return Dims{d[0], d[3], d[1], d[2]}; }
  static Dims ToNhwc(std::span<const int64_t> d) { return Dims{d[0], d[2], d[3], d[1]}; }

  ConvAttributes attrs_;
  bool relu_;
  bool channels_last_;
  std::unique_ptr<DnnlQConv> dnnl_;
  quantized::Int8GemmPath path_ = quantized::Int8GemmPath::kAvx2;
  Isa isa_ = Isa::kAvx2;  // of the depthwise path's float kernels and the output stores
  std::optional<PlaneConvWeights> weights_;  // when constant (ConstantWeights)
};

}  // namespace

void RegisterQuantizedConvKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ConvInteger").Versions(10).Build<ConvInteger>(r);
  ep::KernelDefBuilder("ConvIntegerToFloat", "com.nxrt").Versions(1).Build<ConvIntegerToFloat>(r);
  ep::KernelDefBuilder("QLinearConv").Versions(10).Build<QLinearConv>(r);
  ep::KernelDefBuilder("QLinearConv", "com.nxrt").Versions(1).Build<QLinearConv>(r);
}

}  // namespace nxrt::cpu::linalg
