// ConvInteger (opset 10) and QLinearConv (opset 10) for int8/uint8 data: the input as rows of
// taps (im2col) times the weights packed for the blocked 8-bit GEMM (int8_gemm_core.h), zero
// points (the weight's per tensor or per output channel) removed exactly in int32; QLinearConv
// requantizes.
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
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/qconv_dnnl.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::linalg {
namespace {

// The weights of one node as B operands of the blocked 8-bit GEMM (kernels/quantized/
// int8_gemm_core.h), one per group: group g's [ocg, C/group * k...] block is B = W_g^T
// ([kdim, ocg], stored transposed), with the zero point of each output channel. Packed at kernel
// creation when the weights and their zero point are constants, else per run.
std::vector<quantized::PackedInt8B> PackConvWeights(quantized::Int8GemmPath path, int64_t group,
                                                    const ep::ConstTensor& w,
                                                    const std::vector<int32_t>& w_zp) {
  const int64_t m = w.rank() > 0 ? w.dim(0) : 0;
  const int64_t ocg = group > 0 ? m / group : 0;
  const int64_t kdim = m > 0 ? static_cast<int64_t>(w.size()) / m : 0;
  std::vector<quantized::PackedInt8B> groups;
  for (int64_t grp = 0; grp < group; ++grp) {
    std::vector<int32_t> zp = w_zp;
    if (w_zp.size() > 1) zp.assign(w_zp.begin() + grp * ocg, w_zp.begin() + (grp + 1) * ocg);
    groups.push_back(quantized::PackInt8B(path,
                                          static_cast<const uint8_t*>(w.raw()) + grp * ocg * kdim,
                                          w.type(), kdim, ocg, zp, {}, /*transposed=*/true));
  }
  return groups;
}

// rows[(o - begin) * kdim + c * kernel_size + tap] = x[c][the input position of output o and
// tap], or `pad` (the zero point: centred, a zero) outside the input, for output positions
// [begin, end): one row per output position, the A operand of the GEMM. Per position and tap,
// one tight loop over the channels (measured faster than runs of taps per channel: 3 x 3 and
// 1 x 1 windows make runs too short to pay for their loop).
template <class T>
void Im2Rows(const ConvGeometry& g, const T* x, int64_t channels, T pad, T* rows, int64_t begin,
             int64_t end) {
  // Locals, not g's fields: stores through an 8-bit pointer may alias anything, so the compiler
  // would reload every field after each byte written.
  const int64_t in_size = g.in_size(), ks = g.kernel_size(), kdim = channels * ks;
  const int64_t in0 = g.in[0], in1 = g.in[1], in2 = g.in[2];
  const int64_t out1 = g.out[1], out2 = g.out[2];
  const int64_t kh0 = g.kernel[0], kh1 = g.kernel[1], kw = g.kernel[2];
  const int64_t d0 = g.dilation[0], d1 = g.dilation[1], d2 = g.dilation[2];
  const int64_t s0 = g.stride[0], s1 = g.stride[1], s2 = g.stride[2];
  const int64_t p0 = g.pad_begin[0], p1 = g.pad_begin[1], p2 = g.pad_begin[2];
  for (int64_t o = begin; o < end; ++o) {
    const int64_t o2 = o % out2, o1 = (o / out2) % out1, o0 = o / (out2 * out1);
    T* row = rows + (o - begin) * kdim;
    int64_t tap = 0;
    for (int64_t k0 = 0; k0 < kh0; ++k0) {
      const int64_t i0 = o0 * s0 - p0 + k0 * d0;
      for (int64_t k1 = 0; k1 < kh1; ++k1) {
        const int64_t i1 = o1 * s1 - p1 + k1 * d1;
        for (int64_t k2 = 0; k2 < kw; ++k2, ++tap) {
          const int64_t i2 = o2 * s2 - p2 + k2 * d2;
          T* dst = row + tap;
          if (i0 < 0 || i0 >= in0 || i1 < 0 || i1 >= in1 || i2 < 0 || i2 >= in2) {
            for (int64_t c = 0; c < channels; ++c) dst[c * ks] = pad;
            continue;
          }
          const T* src = x + (i0 * in1 + i1) * in2 + i2;
          for (int64_t c = 0; c < channels; ++c) dst[c * ks] = src[c * in_size];
        }
      }
    }
  }
}

// int32 convolution of (x - x_zp) and (w - w_zp) (+ bias) into `acc` (NCHW, the output's
// size). Per image and group: the 8-bit input as one row of taps per output position, times the
// packed weights, exactly in int32 on the blocked 8-bit GEMM (the AVX2, VNNI or AMX micro-kernel
// the CPU has), then transposed into the channel planes. The rows are made and converted for the
// GEMM in parallel chunks of output positions (each chunk's rows still in cache when converted),
// and the transposition runs in parallel blocks of positions.
void IntegerConv(const ConvGeometry& g, const ep::ConstTensor& x,
                 const std::vector<quantized::PackedInt8B>& weights, int32_t x_zp,
                 const int32_t* bias, int32_t* acc, ep::KernelContext& ctx) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t kdim = icg * g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  NXRT_EP_ENFORCE(static_cast<int64_t>(weights.size()) == g.group,
                  "ConvInteger: packed weights do not match the groups");
  const int threads = ctx.threads();
  thread_local std::vector<uint8_t> rows;  // reused across runs
  thread_local std::vector<int32_t> product;
  thread_local quantized::PreparedInt8A prepared;
  rows.resize(static_cast<size_t>(out_size * kdim));
  product.resize(static_cast<size_t>(out_size * ocg));
  // The chunks below run on pool threads: they must reach this thread's buffers through these
  // (a thread_local named inside a lambda is the running thread's own).
  uint8_t* rows_data = rows.data();
  int32_t* product_data = product.data();
  quantized::PreparedInt8A& a = prepared;
  const bool is_int8 = x.type() == NX_TYPE_INT8;
  // About 16 KiB of rows per chunk; about 4 K outputs per transposition block.
  const int64_t rows_grain = std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, kdim));
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (out_size + kBlock - 1) / kBlock;
  const int64_t block_grain = std::max<int64_t>(1, 4096 / (kBlock * std::max<int64_t>(1, ocg)));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const int64_t first = (n * g.in_channels + grp * icg) * in_size;
      const quantized::PackedInt8B& w = weights[grp];
      quantized::ShapeInt8A(x.type(), out_size, x_zp, w, a);
      ParallelFor(threads, out_size, rows_grain, [&](int64_t begin, int64_t end) {
        uint8_t* chunk = rows_data + begin * kdim;
        if (is_int8) {
          Im2Rows(g, x.data<int8_t>() + first, icg, static_cast<int8_t>(x_zp),
                  reinterpret_cast<int8_t*>(chunk), begin, end);
        } else {
          Im2Rows(g, x.data<uint8_t>() + first, icg, static_cast<uint8_t>(x_zp), chunk, begin, end);
        }
        quantized::PrepareInt8ARows(chunk, x.type(), begin, end, kdim, w, a);
      });
      quantized::Int8GemmOutput out;
      out.y32 = product_data;
      out.ldy = ocg;
      quantized::Int8Gemm(a, w, out, threads);
      int32_t* yg = acc + (n * g.out_channels + grp * ocg) * out_size;
      const int32_t* group_bias = bias != nullptr ? bias + grp * ocg : nullptr;
      ParallelFor(threads, blocks, block_grain, [&](int64_t b0, int64_t b1) {
        const int64_t o_begin = b0 * kBlock, o_end = std::min(out_size, b1 * kBlock);
        for (int64_t c = 0; c < ocg; ++c) {
          const int32_t b = group_bias != nullptr ? group_bias[c] : 0;
          int32_t* plane = yg + c * out_size;
          for (int64_t o = o_begin; o < o_end; ++o) plane[o] = product_data[o * ocg + c] + b;
        }
      });
    }
  }
}

// The packed weights of a node whose weight (input `w_index`) and weight zero point (input
// `zp_index`, or none) are constants of valid types and shapes; empty otherwise (packed per run,
// where the run also reports any error in them).
std::vector<quantized::PackedInt8B> ConstantWeights(const ep::KernelInfo& info,
                                                    const ConvAttributes& attrs,
                                                    quantized::Int8GemmPath path, size_t w_index,
                                                    size_t zp_index) {
  const std::optional<ep::ConstTensor> w = info.constant_input(w_index);
  if (!w || !IsInt8Type(w->type()) || w->rank() < 3 || attrs.group < 1 ||
      w->dim(0) % attrs.group != 0)
    return {};
  if (attrs.group > 1 && w->dim(1) == 1) return {};  // depthwise: DepthwiseIntegerConv
  std::optional<ep::ConstTensor> zp;
  if (info.has_input(zp_index)) {
    zp = info.constant_input(zp_index);
    if (!zp) return {};
  }
  try {
    const std::vector<int32_t> w_zp = ReadZeroPoint(zp, w->type(), w->dim(0), "w_zero_point");
    return PackConvWeights(path, attrs.group, *w, w_zp);
  } catch (const std::exception&) {
    return {};  // the run reports it, with the node's name
  }
}

class ConvInteger : public ep::Kernel {
 public:
  explicit ConvInteger(const ep::KernelInfo& info)
      : attrs_(info), path_(quantized::KernelInt8GemmPath(info)), isa_(KernelIsa(info)) {
    weights_ = ConstantWeights(info, attrs_, path_, 1, 3);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor w = ctx.input(1);
    NXRT_EP_ENFORCE(IsInt8Type(x.type()) && IsInt8Type(w.type()),
                    attrs_.op + ": x and w must be int8 or uint8");
    ConvGeometry g = ComputeConvGeometry(attrs_, x.shape(), w.shape());
    std::vector<int32_t> x_zp =
        ReadZeroPoint(ctx.optional_input(2), x.type(), 1, attrs_.op + ": x_zero_point");
    std::vector<int32_t> w_zp = ReadZeroPoint(ctx.optional_input(3), w.type(), g.out_channels,
                                              attrs_.op + ": w_zero_point");
    std::vector<int64_t> y_dims = g.output_dims();
    ep::Tensor y = ctx.output(0, y_dims, NX_TYPE_INT32);
    if (ShapeSize(y_dims) == 0) return;
    if (SuitsDepthwiseIntegerConv(g)) {
      DepthwiseIntegerConv(g, x.raw(), x.type() == NX_TYPE_INT8, w.raw(), w.type() == NX_TYPE_INT8,
                           x_zp[0], w_zp, nullptr, y.data<int32_t>(), ctx.threads(), isa_);
    } else if (weights_.empty()) {
      IntegerConv(g, x, PackConvWeights(path_, g.group, w, w_zp), x_zp[0], nullptr,
                  y.data<int32_t>(), ctx);
    } else {
      IntegerConv(g, x, weights_, x_zp[0], nullptr, y.data<int32_t>(), ctx);
    }
  }

 private:
  ConvAttributes attrs_;
  quantized::Int8GemmPath path_;
  Isa isa_;                                      // of the depthwise path's float kernels
  std::vector<quantized::PackedInt8B> weights_;  // when constant (ConstantWeights)
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
    const int32_t* b = bias ? bias->data<int32_t>() : nullptr;
    const size_t out_count = static_cast<size_t>(ShapeSize(y_dims));
    int32_t* acc = static_cast<int32_t*>(ThreadScratch(kScratchC, out_count * sizeof(int32_t)));
    if (SuitsDepthwiseIntegerConv(g)) {
      DepthwiseIntegerConv(g, x.raw(), x.type() == NX_TYPE_INT8, w.raw(), w.type() == NX_TYPE_INT8,
                           x_zp[0], w_zp, b, acc, ctx.threads(), isa_);
    } else if (weights_.empty()) {
      IntegerConv(g, x, PackConvWeights(path_, g.group, w, w_zp), x_zp[0], b, acc, ctx);
    } else {
      IntegerConv(g, x, weights_, x_zp[0], b, acc, ctx);
    }
    // x_scale * w_scale / y_scale in float32 (as the scales are), applied in double; planes in
    // parallel.
    std::vector<double> scale(w_scale.size());
    for (size_t c = 0; c < w_scale.size(); ++c) scale[c] = (x_scale[0] * w_scale[c]) / y_scale[0];
    const int64_t plane = g.out_size(), planes = g.batch * m;
    const int32_t floor = relu_ ? y_zp[0] : std::numeric_limits<int32_t>::min();
    void* out = y.mutable_raw();
    ParallelFor(
        ctx.threads(), planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)),
        [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            const double s = scale[w_scale.size() > 1 ? static_cast<size_t>(p % m) : 0];
            const int32_t* sums = acc + p * plane;
            if (y_type == NX_TYPE_INT8) {
              RequantizeRun(sums, plane, s, y_zp[0], floor, static_cast<int8_t*>(out) + p * plane);
            } else {
              RequantizeRun(sums, plane, s, y_zp[0], floor, static_cast<uint8_t*>(out) + p * plane);
            }
          }
        });
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
  Isa isa_ = Isa::kAvx2;                         // of the depthwise path's float kernels
  std::vector<quantized::PackedInt8B> weights_;  // when constant (ConstantWeights)
};

}  // namespace

void RegisterQuantizedConvKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ConvInteger").Versions(10).Build<ConvInteger>(r);
  ep::KernelDefBuilder("QLinearConv").Versions(10).Build<QLinearConv>(r);
  ep::KernelDefBuilder("QLinearConv", "com.nxrt").Versions(1).Build<QLinearConv>(r);
}

}  // namespace nxrt::cpu::linalg
