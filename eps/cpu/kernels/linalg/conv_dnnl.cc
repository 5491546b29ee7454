#include "kernels/linalg/conv_dnnl.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/parallel.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/linalg/conv_depthwise.h"
#include "kernels/linalg/conv_plan.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/pointwise_conv.h"
#include "kernels/linalg/small_depth_conv.h"
#include "kernels/linalg/winograd_conv.h"
#include "kernels/tensor/strided_copy.h"

namespace nxrt::cpu::linalg {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;

// One oneDNN primitive per slice of output channels. With more than one, the slices run in
// parallel on the session's pool, each single-threaded, all reading the same reordered input
// (oneDNN's own threading is OpenMP, whose sleeping workers cost ~50 us per region and compete
// with the pool's spinning workers for the same cores).
struct DnnlConv::PlanPart {
  int64_t oc_begin = 0, oc_end = 0;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  memory::desc w_plain, w_conv, bias_md, dst_conv, scratch_md;
  memory::desc dst_view;  // this slice's channels of the plain output (all of it for one part)
  bool reorder_w = false, reorder_dst = false;
  // The output reorder is a transpose from channels-last to the plain layout (see
  // Plan::transpose_src): nxrt's tiled transpose instead of dst_reorder.
  bool transpose_dst = false;
  dnnl::reorder w_reorder, dst_reorder, sum_reorder;
  size_t dst_bytes = 0, w_bytes = 0, scratch_bytes = 0;
  std::shared_ptr<memory> packed_w;  // constant weights of this slice in w_conv layout
};

struct DnnlConv::Plan {
  bool gemm = false;  // pointwise GEMM strategy: nothing below is used
  // For a 1x1 stride-1 ungrouped convolution with constant weights: the weights packed for the
  // pointwise tiles (pointwise_conv.h) of isa_; empty otherwise.
  std::vector<float> pointwise_w;
  bool depthwise = false;  // direct depthwise loop: nothing below is used
  // Direct convolution over few input channels (small_depth_conv.h), with pointwise_w holding
  // its packed constant weights: nothing below is used.
  bool small_depth = false;
  memory::desc src_plain, src_conv;
  bool reorder_src = false;
  // The input reorder is a transpose from the plain layout to channels-last (what oneDNN's
  // brgemm convolutions take on AVX-512): done by nxrt's tiled transpose
  // (kernels/tensor/strided_copy.h), several times faster than oneDNN's generic reorder kernel for
  // these (0.14 against 0.9 ms for 256 x 3199 floats).
  bool transpose_src = false;
  dnnl::reorder src_reorder;
  size_t src_bytes = 0;
  std::vector<PlanPart> parts;                          // see PlanPart
  std::vector<dnnl::reorder::primitive_desc> reorders;  // of the input, outputs, weights
  // nxrt's Winograd kernel instead of a oneDNN convolution, reading src_conv (the input
  // reordered by src_reorder) and writing winograd_dst, reordered to the plain output by
  // winograd_out; the addend of a fused sum is reordered in by winograd_sum.
  std::shared_ptr<const WinogradConv3x3> winograd;
  memory::desc winograd_dst, winograd_dst_plain;
  dnnl::reorder winograd_out, winograd_sum;
  std::vector<float> trimmed_w;  // constant weights over the live taps only (when some are dead)
  bool HasReference() const {
    for (const PlanPart& p : parts)
      if (IsReference(p.pd)) return true;
    for (const auto& r : reorders)
      if (IsReference(r)) return true;
    return false;
  }
  // Fused activations applied after the primitive, from the first one oneDNN does not compute
  // as ONNX does on: its clip turns NaN into a bound, ONNX's Clip keeps NaN.
  std::vector<ConvFusion::Eltwise> after_primitive;
};

namespace {

Tag ActivationTag(int spatial, bool channels_last) {
  if (channels_last) return spatial == 1 ? Tag::nwc : spatial == 2 ? Tag::nhwc : Tag::ndhwc;
  return spatial == 1 ? Tag::ncw : spatial == 2 ? Tag::nchw : Tag::ncdhw;
}

Tag WeightTag(int spatial, bool grouped) {
  if (grouped) return spatial == 1 ? Tag::goiw : spatial == 2 ? Tag::goihw : Tag::goidhw;
  return spatial == 1 ? Tag::oiw : spatial == 2 ? Tag::oihw : Tag::oidhw;
}

memory::dims Real(const ConvGeometry& g, const Dims3& d, int64_t minus = 0) {
  memory::dims out;
  for (int64_t v : g.real(d)) out.push_back(v - minus);
  return out;
}

// A convolution along one row: 1-D, or 2-D / 3-D over planes of one row with kernels of one row.
bool IsRowConvolution(const ConvGeometry& g) {
  return g.out[0] == 1 && g.out[1] == 1 && g.kernel[0] == 1 && g.kernel[1] == 1;
}

// For a convolution along one row: oneDNN's direct jit kernel rather than its brgemm convolution,
// when it has one for the problem. The brgemm convolution costs time in proportion to the output
// width to create (55 ms at 16000 columns, 220 ms at 64000: a TCN's first run took 0.8 s at one
// thread, 1.0 s at two), and it runs no faster on these shapes (Zen 4, 64 channels, k = 3: 4.6 ms
// direct against 6.4 brgemm at 16000 columns; wav2vec2's feature encoder the same within noise).
dnnl::convolution_forward::primitive_desc PreferDirectKernel(
    const dnnl::convolution_forward::desc& desc, const dnnl::primitive_attr& attr,
    const dnnl::convolution_forward::primitive_desc& chosen) {
  const std::string name = chosen.impl_info_str();
  if (name.find("brg") == std::string::npos) return chosen;
  // A fresh iterator: next_impl() moves the one it is called on (and every copy of it).
  dnnl::convolution_forward::primitive_desc it(desc, attr, DnnlEngine());
  do {
    const std::string impl = it.impl_info_str();
    if (impl.rfind("jit:", 0) == 0 && impl.find("brg") == std::string::npos && !IsReference(it))
      return it;
  } while (it.next_impl());
  return chosen;
}

SmallVector<int64_t, 32> PlanKey(const ConvGeometry& g, int threads, bool has_bias) {
  SmallVector<int64_t, 32> key = {threads,       has_bias,       g.spatial, g.batch,
                                  g.in_channels, g.out_channels, g.group};
  for (const Dims3* d :
       {&g.in, &g.out, &g.kernel, &g.stride, &g.dilation, &g.pad_begin, &g.pad_end}) {
    for (int64_t v : *d) key.push_back(v);
  }
  return key;
}

// [batch, channels, spatial] <-> [batch, spatial, channels]: to channels-last when `to_last`,
// back to channels-first otherwise.
void TransposeChannels(const float* from, float* to, int64_t batch, int64_t channels,
                       int64_t spatial, bool to_last, int threads) {
  // Walked in the destination's order (its rows contiguous): StridedCopy's tiled transpose,
  // whose SIMD blocks move 32-bit words (uint32_t; a float instantiation would be scalar).
  const int64_t image = channels * spatial;
  const auto* src = reinterpret_cast<const uint32_t*>(from);
  auto* dst = reinterpret_cast<uint32_t*>(to);
  if (to_last) {
    tensor::StridedCopy<uint32_t>(src, dst, {batch, spatial, channels}, {image, 1, spatial},
                                  {image, channels, 1}, threads);
  } else {
    tensor::StridedCopy<uint32_t>(src, dst, {batch, channels, spatial}, {image, 1, channels},
                                  {image, spatial, 1}, threads);
  }
}

// Output channels per slice are a multiple of this (a whole AVX-512 register block).
constexpr int64_t kChannelSliceAlign = 16;

float Eltwise1(const ConvFusion::Eltwise& e, float v) {
  switch (e.alg) {
    case dnnl::algorithm::eltwise_relu:
      return v >= 0.0f ? v : v * e.alpha;
    case dnnl::algorithm::eltwise_clip:
      return std::min(std::max(v, e.alpha), e.beta);
    case dnnl::algorithm::eltwise_linear:
      return e.alpha * v + e.beta;
    case dnnl::algorithm::eltwise_logistic:
      return 1.0f / (1.0f + std::exp(-v));
    case dnnl::algorithm::eltwise_tanh:
      return std::tanh(v);
    case dnnl::algorithm::eltwise_hardswish:
      return v * std::min(std::max(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
    case dnnl::algorithm::eltwise_swish:
      return v / (1.0f + std::exp(-e.alpha * v));
    case dnnl::algorithm::eltwise_gelu_erf:
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678f));
    default:
      throw std::runtime_error("Conv: unsupported fused activation");
  }
}

}  // namespace

bool IsPointwiseConv(const ConvGeometry& g) {
  return g.kernel == Dims3{1, 1, 1} && g.pad_begin == Dims3{0, 0, 0} && g.pad_end == Dims3{0, 0, 0};
}

namespace {

// One fused activation on m floats in place. The choice outside the loops: these bodies
// vectorise (a per-element switch did not, and cost more than the pointwise convolution it
// followed).
void ApplyOneEltwise(const ConvFusion::Eltwise& e, float* p, int64_t m) {
  const float alpha = e.alpha, beta = e.beta;
  switch (e.alg) {
    case dnnl::algorithm::eltwise_relu:
      // Branch-free (max + alpha * min): a select on the sign mispredicted on every other
      // element of real activations and did not vectorise.
      for (int64_t i = 0; i < m; ++i) p[i] = std::max(p[i], 0.0f) + alpha * std::min(p[i], 0.0f);
      break;
    case dnnl::algorithm::eltwise_clip: {
      // max_ps(a, x) is (a > x ? a : x): a NaN x passes through, as in the scalar tail.
      const __m256 lo = _mm256_set1_ps(alpha), hi = _mm256_set1_ps(beta);
      int64_t i = 0;
      for (; i + 8 <= m; i += 8)
        _mm256_storeu_ps(p + i, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_loadu_ps(p + i))));
      for (; i < m; ++i) {
        float t = p[i] < alpha ? alpha : p[i];
        p[i] = t > beta ? beta : t;
      }
      break;
    }
    case dnnl::algorithm::eltwise_linear:
      for (int64_t i = 0; i < m; ++i) p[i] = alpha * p[i] + beta;
      break;
    case dnnl::algorithm::eltwise_hardswish: {
      // Written out: GCC left the selects as compare-and-branch, which mispredicted and took
      // a fifth of MobileNetV3-small. NaN passes through max_ps / min_ps as in the tail.
      const __m256 sixth = _mm256_set1_ps(1.0f / 6.0f), half = _mm256_set1_ps(0.5f);
      const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
      int64_t i = 0;
      for (; i + 8 <= m; i += 8) {
        const __m256 v = _mm256_loadu_ps(p + i);
        const __m256 t = _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(v, sixth, half)));
        _mm256_storeu_ps(p + i, _mm256_mul_ps(v, t));
      }
      for (; i < m; ++i) {
        float t = p[i] * (1.0f / 6.0f) + 0.5f;
        t = t < 0.0f ? 0.0f : t;
        t = t > 1.0f ? 1.0f : t;
        p[i] *= t;
      }
      break;
    }
    case dnnl::algorithm::eltwise_swish:
      elementwise::SwishArray(p, p, m, alpha);
      break;
    case dnnl::algorithm::eltwise_logistic:
      elementwise::SigmoidArray(p, p, m);
      break;
    case dnnl::algorithm::eltwise_tanh:
      elementwise::TanhArray(p, p, m);
      break;
    case dnnl::algorithm::eltwise_gelu_erf:
      elementwise::GeluArray(p, p, m);
      break;
    default:
      for (int64_t i = 0; i < m; ++i) p[i] = Eltwise1(e, p[i]);
  }
}

}  // namespace

void ApplyEltwiseRange(const std::vector<ConvFusion::Eltwise>& ops, float* p, int64_t m) {
  for (const auto& e : ops) ApplyOneEltwise(e, p, m);
}

void ApplyEltwiseRows(const std::vector<ConvFusion::Eltwise>& ops, float* p, int64_t ld,
                      int64_t rows, int64_t cols) {
  for (const auto& e : ops) {
    if (e.alg == dnnl::algorithm::eltwise_gelu_erf) {
      elementwise::GeluRows(p, ld, rows, cols);
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) ApplyOneEltwise(e, p + r * ld, cols);
  }
}

void ApplyEltwise(const std::vector<ConvFusion::Eltwise>& ops, float* y, int64_t n, int threads) {
  if (ops.empty()) return;
  ParallelFor(threads, n, 16384,
              [&](int64_t begin, int64_t end) { ApplyEltwiseRange(ops, y + begin, end - begin); });
}

void DnnlConv::SetConstantWeights(const float* w, size_t num_weights) {
  const_w_ = w;
  const_w_count_ = num_weights;
}

std::shared_ptr<DnnlConv::Plan> DnnlConv::BuildPlan(const ConvGeometry& full, bool has_bias,
                                                    int parts, bool plain) {
  auto plan = std::make_shared<Plan>();
  const ConvGeometry& g = full;  // (the hand-written paths below see every tap)
  const bool pointwise = IsPointwiseConv(g);
  const bool nchw_auto = strategy_ == ConvStrategy::kAuto && !channels_last_;
  if ((nchw_auto || strategy_ == ConvStrategy::kGemm) && pointwise && !channels_last_) {
    plan->gemm = true;
    if (const_w_ != nullptr && UsePointwiseTiles(g)) {
      if (const_w_count_ != static_cast<size_t>(g.out_channels * g.in_channels)) {
        throw std::runtime_error("Conv: constant weight size does not match the geometry");
      }
      plan->pointwise_w.resize(
          static_cast<size_t>(PointwisePackedSize(isa_, g.out_channels, g.in_channels)));
      PackPointwiseWeights(isa_, const_w_, g.out_channels, g.in_channels, plan->pointwise_w.data());
    }
    return plan;
  }
  if ((nchw_auto || strategy_ == ConvStrategy::kDirect) && IsDepthwiseConv(g) && !channels_last_) {
    plan->depthwise = true;
    return plan;
  }
  if (nchw_auto && UseSmallDepthConv(g)) {
    plan->small_depth = true;
    const int64_t depth = g.in_channels * g.kernel_size();
    if (const_w_ != nullptr) {
      if (const_w_count_ != static_cast<size_t>(g.out_channels * depth)) {
        throw std::runtime_error("Conv: constant weight size does not match the geometry");
      }
      plan->pointwise_w.resize(
          static_cast<size_t>(PointwisePackedSize(isa_, g.out_channels, depth)));
      PackPointwiseWeights(isa_, const_w_, g.out_channels, depth, plan->pointwise_w.data());
    }
    return plan;
  }
  // nxrt's Winograd kernel (an AVX2 kernel on nChw8c, as in blocked groups) for the 3x3
  // stride-1 convolutions it serves, between two reorders: RAFT's recurrent 3x3 convolutions,
  // which stay nodes because their shapes are known only after constant folding. On AVX-512
  // too, as in blocked groups: on Zen 4 RAFT-small's 242 -> 96 over 16x16 took 0.95 ms per call
  // with oneDNN's AVX-512 direct kernel (at its peak rate), 0.64 ms here.
  if (nchw_auto && winograd_ && const_w_ != nullptr && g.spatial == 2 && !plain &&
      WinogradConv3x3::Serves(g.in_channels, g.out_channels, g.kernel[1], g.kernel[2], g.stride[1],
                              g.stride[2], g.dilation[1], g.dilation[2], g.group, g.out[1],
                              g.out[2])) {
    BuildWinogradPlan(*plan, g);
    return plan;
  }
  return BuildDnnlPlan(std::move(plan), full, has_bias, parts, plain);
}

void DnnlConv::BuildWinogradPlan(Plan& plan, const ConvGeometry& g) {
  if (const_w_count_ != static_cast<size_t>(g.out_channels * g.in_channels * 9)) {
    throw std::runtime_error("Conv: constant weight size does not match the geometry");
  }
  std::vector<WinogradConv3x3::Step> steps;
  if (fusion_.sum) steps.push_back({true, {}});
  for (const auto& e : fusion_.eltwise) steps.push_back({false, e});
  WinogradConv3x3::Shape shape;
  shape.in_channels = g.in_channels;
  shape.out_channels = g.out_channels;
  shape.height = g.in[1];
  shape.width = g.in[2];
  shape.out_height = g.out[1];
  shape.out_width = g.out[2];
  shape.pad_top = g.pad_begin[1];
  shape.pad_left = g.pad_begin[2];
  // The bias comes with each run (Run pads it to whole blocks).
  plan.winograd = WinogradConv3x3::Shared(shape, const_w_, steps);
  auto& eng = DnnlEngine();
  const auto f32 = memory::data_type::f32;
  auto descs = [&](int64_t channels, int64_t h, int64_t w) {
    return std::pair{memory::desc({g.batch, channels, h, w}, f32, Tag::nchw),
                     memory::desc({g.batch, channels, h, w}, f32, Tag::nChw8c)};
  };
  auto reorder = [&](const memory::desc& from, const memory::desc& to) {
    const dnnl::reorder::primitive_desc rpd(eng, from, eng, to);
    plan.reorders.push_back(rpd);
    return dnnl::reorder(rpd);
  };
  auto [src_plain, src_blocked] = descs(g.in_channels, g.in[1], g.in[2]);
  auto [dst_plain, dst_blocked] = descs(g.out_channels, g.out[1], g.out[2]);
  plan.src_plain = src_plain;
  plan.src_conv = src_blocked;
  plan.src_bytes = src_blocked.get_size();
  plan.src_reorder = reorder(src_plain, src_blocked);
  plan.winograd_dst = dst_blocked;
  plan.winograd_dst_plain = dst_plain;
  plan.winograd_out = reorder(dst_blocked, dst_plain);
  if (fusion_.sum) plan.winograd_sum = reorder(dst_plain, dst_blocked);
}

std::shared_ptr<DnnlConv::Plan> DnnlConv::BuildDnnlPlan(std::shared_ptr<Plan> plan,
                                                        const ConvGeometry& full, bool has_bias,
                                                        int parts, bool plain) {
  // Taps that only ever read padding are dropped (DeepLabV3's atrous 3x3 at rate 24 over a 20x20
  // map is a 1x1 convolution); with constant weights only, whose trimmed copy the plan keeps.
  const LiveTaps live = const_w_ != nullptr ? FindLiveTaps(full) : LiveTaps();
  const ConvGeometry g = live.trims ? TrimmedGeometry(full, live) : full;
  const float* weights = const_w_;
  if (live.trims) {
    if (const_w_count_ != static_cast<size_t>(full.out_channels * full.in_channels_per_group() *
                                              full.kernel_size())) {
      throw std::runtime_error("Conv: constant weight size does not match the geometry");
    }
    plan->trimmed_w = TrimmedWeights(full, live, const_w_);
    weights = plan->trimmed_w.data();
  }
  const bool grouped = g.group > 1;
  memory::dims src_dims = {g.batch, g.in_channels};
  memory::dims dst_dims = {g.batch, g.out_channels};
  memory::dims w_dims;
  if (grouped)
    w_dims = {g.group, g.out_channels_per_group(), g.in_channels_per_group()};
  else
    w_dims = {g.out_channels, g.in_channels};
  for (int64_t v : g.real(g.in)) src_dims.push_back(v);
  for (int64_t v : g.real(g.out)) dst_dims.push_back(v);
  for (int64_t v : g.real(g.kernel)) w_dims.push_back(v);

  const auto f32 = memory::data_type::f32;
  plan->src_plain = memory::desc(src_dims, f32, ActivationTag(g.spatial, channels_last_));
  const memory::desc dst_plain(dst_dims, f32, ActivationTag(g.spatial, channels_last_));
  const memory::desc w_plain(w_dims, f32, WeightTag(g.spatial, grouped));

  const bool blocked = strategy_ != ConvStrategy::kPlain && !channels_last_ && !plain;
  memory::desc src_any = blocked ? memory::desc(src_dims, f32, Tag::any) : plan->src_plain;

  // The fused chain (conv_plan.h): the sum first, so oneDNN's jit kernels take it as a post-op
  // (it always stays inside: nothing here adds it later), then the activations; those from the
  // first Clip or the first Swish / Sigmoid / Gelu on, and any oneDNN would only run in its
  // reference convolution, run after it.
  std::vector<ChainStep> chain;
  if (fusion_.sum) chain.push_back({true, {}});
  for (const auto& e : fusion_.eltwise) chain.push_back({false, e});
  const size_t least = fusion_.sum ? 1 : 0;
  size_t in_primitive = std::min(FirstClip(chain), FirstSlowPostOp(chain));
  auto attr_with = [&](size_t steps) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (steps > 0) attr.set_post_ops(ChainPostOps(chain, steps, memory::desc()));
    return attr;
  };
  dnnl::primitive_attr attr = attr_with(in_primitive);
  auto& eng = DnnlEngine();
  const int64_t w_per_channel = static_cast<int64_t>(w_plain.get_size() / sizeof(float)) /
                                std::max<int64_t>(g.out_channels, 1);
  const std::vector<std::pair<int64_t, int64_t>> ranges =
      parts > 1 ? ChannelBlockSlices(g.out_channels, kChannelSliceAlign, parts)
                : std::vector<std::pair<int64_t, int64_t>>{{0, g.out_channels}};
  for (const auto& [oc_begin, oc_end] : ranges) {
    PlanPart part;
    part.oc_begin = oc_begin;
    part.oc_end = oc_end;
    const int64_t count = oc_end - oc_begin;
    const bool whole = ranges.size() == 1;
    memory::dims part_dst_dims = dst_dims, part_w_dims = w_dims, offsets(dst_dims.size(), 0);
    part_dst_dims[1] = count;
    offsets[1] = oc_begin;
    if (!whole) part_w_dims[0] = count;  // slices are only made of ungrouped convolutions
    part.dst_view = whole ? dst_plain : dst_plain.submemory_desc(part_dst_dims, offsets);
    part.w_plain = whole ? w_plain : memory::desc(part_w_dims, f32, WeightTag(g.spatial, false));
    if (has_bias) part.bias_md = memory::desc({count}, f32, Tag::x);
    // Every slice reads the input in the layout the first one chose.
    const memory::desc src_in = part.oc_begin == 0 ? src_any : plan->src_conv;
    const memory::desc dst_any =
        blocked ? memory::desc(part_dst_dims, f32, Tag::any) : part.dst_view;
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_in,
        memory::desc(part_w_dims, f32, Tag::any), part.bias_md, dst_any, Real(g, g.stride),
        Real(g, g.dilation, 1), Real(g, g.pad_begin), Real(g, g.pad_end));
    dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
    if (IsReference(pd) && part.oc_begin == 0 && in_primitive > least) {
      // A fused activation oneDNN's optimised kernels do not take: fewer of them inside, the
      // rest after the primitive (on this slice, in cache), decided once for all slices.
      in_primitive = std::max(
          least, PrimitiveChainLength(in_primitive, [&](size_t k) {
            return IsReference(dnnl::convolution_forward::primitive_desc(desc, attr_with(k), eng));
          }));
      attr = attr_with(in_primitive);
      pd = dnnl::convolution_forward::primitive_desc(desc, attr, eng);
    }
    if (IsRowConvolution(g)) pd = PreferDirectKernel(desc, attr, pd);
    part.pd = pd;
    if (part.oc_begin == 0) {
      plan->src_conv = pd.src_desc();
      plan->src_bytes = plan->src_conv.get_size();
      plan->reorder_src = plan->src_conv != plan->src_plain;
      plan->transpose_src =
          plan->reorder_src && !channels_last_ &&
          plan->src_conv == memory::desc(src_dims, f32, ActivationTag(g.spatial, true));
      if (plan->reorder_src) {
        const dnnl::reorder::primitive_desc rpd(eng, plan->src_plain, eng, plan->src_conv);
        plan->reorders.push_back(rpd);
        plan->src_reorder = dnnl::reorder(rpd);
      }
    } else if (pd.src_desc() != plan->src_conv) {
      throw std::runtime_error("the output-channel slices want different input layouts");
    }
    part.conv = dnnl::convolution_forward(pd);
    part.dst_conv = pd.dst_desc();
    part.w_conv = pd.weights_desc();
    part.scratch_md = pd.scratchpad_desc();
    part.scratch_bytes = part.scratch_md.get_size();
    part.dst_bytes = part.dst_conv.get_size();
    part.w_bytes = part.w_conv.get_size();
    part.reorder_dst = part.dst_conv != part.dst_view;
    part.reorder_w = part.w_conv != part.w_plain;
    // (Every reorder is recorded: a reference reorder of a large output is as slow a cliff.)
    auto reorder = [&](const memory::desc& from, const memory::desc& to) {
      const dnnl::reorder::primitive_desc rpd(eng, from, eng, to);
      plan->reorders.push_back(rpd);
      return dnnl::reorder(rpd);
    };
    if (part.reorder_dst) part.dst_reorder = reorder(part.dst_conv, part.dst_view);
    part.transpose_dst =
        part.reorder_dst && whole && !channels_last_ &&
        part.dst_conv == memory::desc(part_dst_dims, f32, ActivationTag(g.spatial, true));
    if (fusion_.sum) {  // the summand into the primitive's destination (a copy if the same)
      part.sum_reorder = reorder(part.dst_view, part.dst_conv);
    }
    if (part.reorder_w) part.w_reorder = reorder(part.w_plain, part.w_conv);
    if (const_w_ != nullptr) {
      if (!live.trims && w_plain.get_size() != const_w_count_ * sizeof(float)) {
        throw std::runtime_error("Conv: constant weight size does not match the geometry");
      }
      // (Trimmed weights belong to this geometry: not shared with other plans.)
      part.packed_w = PackedWeights(part, weights + oc_begin * w_per_channel, !live.trims);
    }
    plan->parts.push_back(std::move(part));
  }
  plan->after_primitive.assign(
      fusion_.eltwise.begin() + static_cast<ptrdiff_t>(in_primitive - least),
      fusion_.eltwise.end());
  return plan;
}

std::shared_ptr<memory> DnnlConv::PackedWeights(const PlanPart& part, const float* w, bool share) {
  for (const auto& packed : packed_weights_) {
    if (share && packed.oc_begin == part.oc_begin && packed.md == part.w_conv) return packed.mem;
  }
  auto& eng = DnnlEngine();
  std::shared_ptr<memory> mem;
  if (part.reorder_w) {
    mem = std::make_shared<memory>(part.w_conv, eng);
    memory src(part.w_plain, eng, const_cast<float*>(w));
    part.w_reorder.execute(DnnlStream(), src, *mem);
    DnnlStream().wait();
  } else {
    // The primitive reads the plain layout: use the borrowed weights, no second copy.
    mem = std::make_shared<memory>(part.w_conv, eng, const_cast<float*>(w));
  }
  if (share) packed_weights_.push_back({part.w_conv, part.oc_begin, mem});
  return mem;
}

std::shared_ptr<DnnlConv::Plan> DnnlConv::GetPlan(const ConvGeometry& g, int omp_threads, int parts,
                                                  bool has_bias) {
  SmallVector<int64_t, 32> key = PlanKey(g, omp_threads, has_bias);
  key.push_back(parts);
  std::lock_guard<std::mutex> lock(mu_);
  if (std::shared_ptr<Plan> hit = plans_.Find(key)) return hit;
  std::shared_ptr<Plan> plan;
  auto build = [&](bool plain) {
    try {
      return BuildPlan(g, has_bias, parts, plain);
    } catch (const std::exception&) {
      if (parts <= 1) throw;
      // oneDNN declined the slices (or they disagree on the input layout): one primitive,
      // as without the pool.
      return BuildPlan(g, has_bias, 1, plain);
    }
  };
  try {
    plan = build(false);
    // oneDNN's jit kernels on its blocked layouts refuse some geometries (padding of more than a
    // few taps: 3x3 at dilation 4 with "same" padding) and it would take its reference
    // convolution; on plain NCHW it has a GEMM-based one for them.
    if (plan->HasReference() && !channels_last_ && strategy_ != ConvStrategy::kPlain) {
      std::shared_ptr<Plan> plain = build(true);
      if (!plain->HasReference()) plan = plain;
    }
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("Conv: oneDNN could not build the convolution: ") +
                             e.what());
  }
  for (const PlanPart& part : plan->parts) audit_.Record(part.pd, "convolution");
  for (const auto& rpd : plan->reorders) audit_.Record(rpd, "reorder");
  plans_.Insert(key, plan);
  return plan;
}

int DnnlConv::PrimitiveThreads(const ConvGeometry& g, int threads) {
  // oneDNN's primitives run on OpenMP, whose sleeping workers take about 50 us to wake
  // (docs/threading.md): a small convolution is cheaper on one thread.
  const double macs = static_cast<double>(g.batch) * g.out_channels * g.out_size() *
                      g.in_channels_per_group() * g.kernel_size();
  return macs < kMinOmpParallelMacs ? 1 : threads;
}

int DnnlConv::PrimitiveParts(const ConvGeometry& g, int threads) const {
  if (strategy_ == ConvStrategy::kPlain) return 1;
  // The blocked groups' rule (conv_plan.h), over 16-channel slices; only ungrouped convolutions
  // are cut (the others run on oneDNN's OpenMP team when large: PrimitiveThreads).
  ConvWork work;
  work.macs_per_image = static_cast<double>(g.out_channels) * g.out_size() *
                        g.in_channels_per_group() * g.kernel_size();
  work.weight_bytes =
      g.out_channels * g.in_channels_per_group() * g.kernel_size() * int64_t{sizeof(float)};
  work.out_channel_blocks = (g.out_channels + kChannelSliceAlign - 1) / kChannelSliceAlign;
  work.kernel_size = g.kernel_size();
  work.channel_slices = g.group == 1;
  work.threads = threads;
  const ConvThreads plan = PlanConvThreads(work);
  return plan.kind == ConvThreads::kChannels ? plan.slices : 1;
}

void DnnlConv::Prepare(const ConvGeometry& g, int threads, bool has_bias) {
  const int parts = PrimitiveParts(g, threads);
  const int omp_threads = parts > 1 ? 1 : PrimitiveThreads(g, threads);
  OmpThreadScope scope(omp_threads);
  GetPlan(g, omp_threads, parts, has_bias);
}

void DnnlConv::Run(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                   const float* z, float* y, int threads) {
  if (g.batch == 0 || g.out_size() == 0 || g.out_channels == 0) return;
  if (const_w_ != nullptr) w = const_w_;
  // Output-channel slices on the pool where they pay (each slice one single-threaded
  // primitive); otherwise one primitive on OpenMP threads, for large convolutions only.
  const int parts = PrimitiveParts(g, threads);
  const int omp_threads = parts > 1 ? 1 : PrimitiveThreads(g, threads);
  // A oneDNN primitive keeps the OpenMP thread count it was created with: build (GetPlan) and
  // run it under the same count.
  OmpThreadScope primitive_scope(omp_threads);
  std::shared_ptr<Plan> plan = GetPlan(g, omp_threads, parts, bias != nullptr);
  // The GEMM and depthwise paths split on the session's pool, which costs well under a
  // microsecond per region: they get every thread and split from kMinParallelMacs on.
  if (plan->gemm && UsePointwiseTiles(g)) {
    RunPointwiseTiles(*plan, g, x, w, bias, fusion_.sum ? z : nullptr, y, threads);
  } else if (plan->gemm) {
    OmpThreadScope scope(threads);  // Sgemm reads the thread count from OpenMP
    RunGemm(g, x, w, bias, fusion_.sum ? z : nullptr, y);
    ApplyEltwise(fusion_.eltwise, y, g.batch * g.out_channels * g.out_size(), threads);
  } else if (plan->small_depth) {
    PointwiseJob job = TileJob(*plan, w, bias, g.out_channels, g.in_channels * g.kernel_size());
    RunSmallDepthConv(isa_, g, std::move(job), x, fusion_.sum ? z : nullptr, y, threads);
  } else if (plan->depthwise) {
    // Activations as a pass over each plane while it is in cache: in the depthwise tiles they
    // cost more than that pass (docs/performance.md).
    if (fusion_.eltwise.empty()) {
      DepthwiseConvNchw(g, x, w, bias, fusion_.sum ? z : nullptr, y, threads, isa_);
    } else {
      DepthwiseConvNchw(
          g, x, w, bias, fusion_.sum ? z : nullptr, y, threads, isa_,
          [this](float* plane, int64_t n) { ApplyEltwiseRange(fusion_.eltwise, plane, n); });
    }
  } else if (plan->winograd) {
    RunWinograd(*plan, g, x, bias, fusion_.sum ? z : nullptr, y, threads);
  } else {
    RunDnnl(*plan, g, x, w, bias, z, y, threads);
  }
}

void DnnlConv::RunWinograd(const Plan& plan, const ConvGeometry& g, const float* x,
                           const float* bias, const float* z, float* y, int threads) {
  auto& eng = DnnlEngine();
  auto& strm = DnnlStream();
  const WinogradConv3x3& kernel = *plan.winograd;
  const size_t dst_bytes = plan.winograd_dst.get_size();
  float* src = static_cast<float*>(ThreadScratch(kScratchSrc, plan.src_bytes));
  float* dst = static_cast<float*>(ThreadScratch(kScratchDst, dst_bytes));
  float* sum = nullptr;
  {
    memory from(plan.src_plain, eng, const_cast<float*>(x)), to(plan.src_conv, eng, src);
    plan.src_reorder.execute(strm, from, to);
  }
  if (z != nullptr) {
    sum = static_cast<float*>(ThreadScratch(kScratchPad, dst_bytes));
    memory from(plan.winograd_dst_plain, eng, const_cast<float*>(z)),
        to(plan.winograd_dst, eng, sum);
    plan.winograd_sum.execute(strm, from, to);
  }
  strm.wait();
  // The bias in whole blocks of 8, the padding zero (the kernel loads 8 lanes at a time).
  float* padded_bias = nullptr;
  if (bias != nullptr) {
    const int64_t padded = (g.out_channels + 7) / 8 * 8;
    padded_bias = static_cast<float*>(ThreadScratch(kScratchPlaneOut, padded * sizeof(float)));
    std::copy(bias, bias + g.out_channels, padded_bias);
    std::fill(padded_bias + g.out_channels, padded_bias + padded, 0.0f);
  }
  const int64_t in_image = static_cast<int64_t>(plan.src_bytes / sizeof(float)) / g.batch;
  const int64_t out_image = static_cast<int64_t>(dst_bytes / sizeof(float)) / g.batch;
  const std::vector<WinogradConv3x3::Part> parts = kernel.Parts(threads);
  const int64_t jobs = g.batch * static_cast<int64_t>(parts.size());
  ParallelFor(threads, jobs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t n = j / static_cast<int64_t>(parts.size());
      const WinogradConv3x3::Part& p = parts[static_cast<size_t>(j) % parts.size()];
      kernel.Run(src + n * in_image, dst + n * out_image, sum ? sum + n * out_image : nullptr,
                 p.tile_begin, p.tile_end, p.panel_begin, p.panel_end, padded_bias);
    }
  });
  memory from(plan.winograd_dst, eng, dst), to(plan.winograd_dst_plain, eng, y);
  plan.winograd_out.execute(strm, from, to);
  strm.wait();
}

DnnlConv::DnnlConv(ConvFusion fusion, ConvStrategy strategy, bool channels_last)
    : fusion_(std::move(fusion)), strategy_(strategy), channels_last_(channels_last) {
  // The activations the tiles (pointwise, small-depth) apply in registers, in order, up to the
  // first they cannot; that one and the rest run on each stored row segment.
  size_t in_tile = 0;
  for (; in_tile < fusion_.eltwise.size() && in_tile < kMaxTileActivations; ++in_tile) {
    const auto& e = fusion_.eltwise[in_tile];
    FusedActivation& a = tile_acts_[in_tile];
    a.alpha = e.alpha;
    a.beta = e.beta;
    if (e.alg == dnnl::algorithm::eltwise_relu) {
      a.kind = FusedActivation::kRelu;
    } else if (e.alg == dnnl::algorithm::eltwise_clip) {
      a.kind = FusedActivation::kClip;
    } else if (e.alg == dnnl::algorithm::eltwise_hardswish) {
      a.kind = FusedActivation::kHardSwish;
    } else if (e.alg == dnnl::algorithm::eltwise_linear) {
      a.kind = FusedActivation::kLinear;
    } else if (e.alg == dnnl::algorithm::eltwise_logistic) {
      a.kind = FusedActivation::kSigmoid;
    } else if (e.alg == dnnl::algorithm::eltwise_swish) {
      a.kind = FusedActivation::kSwish;
    } else {
      break;
    }
  }
  tile_act_count_ = static_cast<int>(in_tile);
  tile_rest_.assign(fusion_.eltwise.begin() + static_cast<ptrdiff_t>(in_tile),
                    fusion_.eltwise.end());
}

bool DnnlConv::UsePointwiseTiles(const ConvGeometry& g) const {
  // Ungrouped and unstrided (a strided 1x1 subsamples first: the GEMM route). The explicit
  // kGemm strategy keeps oneDNN's sgemm, for comparisons (docs/performance.md).
  return g.group == 1 && g.in == g.out && strategy_ != ConvStrategy::kGemm;
}

PointwiseJob DnnlConv::TileJob(const Plan& plan, const float* w, const float* bias,
                               int64_t out_channels, int64_t depth) const {
  PointwiseJob job;
  job.out_channels = out_channels;
  job.in_channels = depth;
  job.bias = bias;
  job.acts = tile_acts_;
  job.act_count = tile_act_count_;
  if (!tile_rest_.empty()) {
    job.rest = [this](float* row, int64_t n) { ApplyEltwiseRange(tile_rest_, row, n); };
  }
  const float* packed = plan.pointwise_w.empty() ? nullptr : plan.pointwise_w.data();
  if (packed == nullptr) {  // weights that are an input: packed per run
    const size_t floats = static_cast<size_t>(PointwisePackedSize(isa_, out_channels, depth));
    float* buf = static_cast<float*>(ThreadScratch(kScratchWeights, floats * sizeof(float)));
    PackPointwiseWeights(isa_, w, out_channels, depth, buf);
    packed = buf;
  }
  job.packed_w = packed;
  return job;
}

void DnnlConv::RunPointwiseTiles(const Plan& plan, const ConvGeometry& g, const float* x,
                                 const float* w, const float* bias, const float* z, float* y,
                                 int threads) {
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  PointwiseJob job = TileJob(plan, w, bias, g.out_channels, g.in_channels);
  job.pixels = out_size;
  for (int64_t n = 0; n < g.batch; ++n) {
    job.x = x + n * g.in_channels * in_size;
    job.y = y + n * g.out_channels * out_size;
    job.z = z != nullptr ? z + n * g.out_channels * out_size : nullptr;
    RunPointwise(isa_, job, threads);
  }
}

void DnnlConv::RunGemm(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                       const float* z, float* y) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const bool strided = g.in != g.out;  // a 1x1 kernel without padding: only strides shrink it
  float* sub = strided ? static_cast<float*>(
                             ThreadScratch(kScratchSrc, sizeof(float) * g.in_channels * out_size))
                       : nullptr;
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * g.in_channels * in_size;
    float* yn = y + n * g.out_channels * out_size;
    if (strided) {
      // Subsample every input plane to the output grid so the product reads contiguous rows.
      float* d = sub;
      for (int64_t c = 0; c < g.in_channels; ++c) {
        const float* plane = xn + c * in_size;
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            const float* row = plane + (o0 * g.stride[0] * g.in[1] + o1 * g.stride[1]) * g.in[2];
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) *d++ = row[o2 * g.stride[2]];
          }
      }
      xn = sub;
    }
    // Seed Y with the bias (and the fused summand) so the GEMM accumulates onto it.
    const bool seeded = bias != nullptr || z != nullptr;
    if (seeded) {
      const float* zn = z ? z + n * g.out_channels * out_size : nullptr;
      for (int64_t c = 0; c < g.out_channels; ++c) {
        float* row = yn + c * out_size;
        const float bv = bias ? bias[c] : 0.0f;
        if (zn) {
          const float* zr = zn + c * out_size;
          for (int64_t i = 0; i < out_size; ++i) row[i] = zr[i] + bv;
        } else {
          std::fill(row, row + out_size, bv);
        }
      }
    }
    for (int64_t grp = 0; grp < g.group; ++grp) {
      Sgemm(false, false, ocg, out_size, icg, 1.0f, w + grp * ocg * icg, icg,
            xn + grp * icg * out_size, out_size, seeded ? 1.0f : 0.0f, yn + grp * ocg * out_size,
            out_size);
    }
  }
}

void DnnlConv::RunDnnl(const Plan& plan, const ConvGeometry& g, const float* x, const float* w,
                       const float* b, const float* z, float* y, int threads) {
  auto& eng = DnnlEngine();
  const float* src = x;
  if (plan.transpose_src) {
    float* channels_last = static_cast<float*>(ThreadScratch(kScratchSrc, plan.src_bytes));
    TransposeChannels(x, channels_last, g.batch, g.in_channels, g.in_size(), true, threads);
    src = channels_last;
  } else if (plan.reorder_src) {
    void* blocked = ThreadScratch(kScratchSrc, plan.src_bytes);
    memory src_user(plan.src_plain, eng, const_cast<float*>(x));
    memory src_mem(plan.src_conv, eng, blocked);
    plan.src_reorder.execute(DnnlStream(), src_user, src_mem);
    DnnlStream().wait();
    src = static_cast<const float*>(blocked);
  }
  const int64_t w_per_channel =
      g.in_channels_per_group() * g.kernel_size();  // floats of one output channel's weights
  auto run_part = [&](const PlanPart& part) {
    auto& strm = DnnlStream();  // this thread's
    memory dst_user(part.dst_view, eng, y);
    memory dst_mem = dst_user;
    if (part.reorder_dst) {
      dst_mem = memory(part.dst_conv, eng, ThreadScratch(kScratchDst, part.dst_bytes));
    }
    if (fusion_.sum && (part.reorder_dst || z != y)) {
      memory z_user(part.dst_view, eng, const_cast<float*>(z));
      part.sum_reorder.execute(strm, z_user, dst_mem);
    }
    memory w_mem;
    if (const_w_ != nullptr) {
      w_mem = *part.packed_w;
    } else {
      memory w_user(part.w_plain, eng, const_cast<float*>(w + part.oc_begin * w_per_channel));
      w_mem = w_user;
      if (part.reorder_w) {
        w_mem = memory(part.w_conv, eng, ThreadScratch(kScratchWeights, part.w_bytes));
        part.w_reorder.execute(strm, w_user, w_mem);
      }
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(plan.src_conv, eng, const_cast<float*>(src))},
        {DNNL_ARG_WEIGHTS, w_mem},
        {DNNL_ARG_DST, dst_mem},
        {DNNL_ARG_SCRATCHPAD,
         memory(part.scratch_md, eng, ThreadScratch(kScratchPad, part.scratch_bytes))},
    };
    if (b != nullptr)
      args[DNNL_ARG_BIAS] = memory(part.bias_md, eng, const_cast<float*>(b + part.oc_begin));
    part.conv.execute(strm, args);
    if (part.transpose_dst) {  // the only part: the pool's threads are free
      strm.wait();
      TransposeChannels(static_cast<const float*>(dst_mem.get_data_handle()), y, g.batch,
                        g.out_channels, g.out_size(), false, threads);
    } else if (part.reorder_dst) {
      part.dst_reorder.execute(strm, dst_mem, dst_user);
    }
    strm.wait();
    if (!plan.after_primitive.empty() && !channels_last_) {  // this slice's channels, in cache
      const int64_t per_image = (part.oc_end - part.oc_begin) * g.out_size();
      for (int64_t n = 0; n < g.batch; ++n) {
        ApplyEltwiseRange(plan.after_primitive,
                          y + (n * g.out_channels + part.oc_begin) * g.out_size(), per_image);
      }
    }
  };
  if (plan.parts.size() == 1) {
    run_part(plan.parts[0]);
  } else {
    ParallelFor(threads, static_cast<int64_t>(plan.parts.size()), 1,
                [&](int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i)
                    run_part(plan.parts[static_cast<size_t>(i)]);
                });
  }
  if (!plan.after_primitive.empty() && channels_last_)  // channels interleave: the whole output
    ApplyEltwise(plan.after_primitive, y, g.batch * g.out_channels * g.out_size(), threads);
}

}  // namespace nxrt::cpu::linalg
