#include "kernels/linalg/qconv_dnnl.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct DnnlQConv::Plan {
  dnnl::convolution_forward conv;
  dnnl::memory::desc src_plain, dst_plain, src_md, dst_md;
  dnnl::memory weights;  // reordered once
  dnnl::memory bias;     // s32, borrowed from params_.bias
  dnnl::memory src_zp, dst_zp;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder to_src, from_dst;
};

DnnlQConv::DnnlQConv(QConvParams params, const int8_t* w, std::vector<int64_t> w_dims)
    : params_(std::move(params)), w_dims_(std::move(w_dims)) {
  size_t n = 1;
  for (int64_t d : w_dims_) n *= static_cast<size_t>(d);
  w_.assign(w, w + n);
  if (params_.x_signed && !HasVnni()) {
    float_w_.assign(w_.begin(), w_.end());
    float_bias_.assign(params_.bias.begin(), params_.bias.end());
    float_conv_ =
        std::make_unique<DnnlConv>(ConvFusion{}, ConvStrategy::kAuto, params_.channels_last);
    float_conv_->SetConstantWeights(float_w_.data(), float_w_.size());
    // Exact only as a direct convolution: Winograd's transforms round.
    float_conv_->SetWinograd(false);
  }
}

// AVX-512 VNNI only: oneDNN 2.6's AVX2 int8 kernels may not use AVX-VNNI, and the exact path is
// right on any CPU.
bool DnnlQConv::HasVnni() {
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni;
}

bool DnnlQConv::Supports(const ConvGeometry& g, int threads) {
  return float_conv_ ? g.spatial == 2 : GetPlan(g, threads) != nullptr;
}

// OpenMP wakes its sleeping workers in ~50 us: small convolutions stay on one thread.
int DnnlQConv::OmpThreads(const ConvGeometry& g, int threads) {
  const double macs = static_cast<double>(g.batch) * g.out_channels * g.out_size() *
                      g.in_channels_per_group() * g.kernel_size();
  return macs < kMinOmpParallelMacs ? 1 : threads;
}

// Rounds half to even (the default rounding mode) for |v| < 2^22: adding and subtracting
// 1.5 * 2^23 leaves no fraction bits.
static inline float RoundEven(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

template <class T>
static void Requantize(const float* acc, size_t n, int64_t channels, int64_t plane,
                       bool channels_last, const std::vector<float>& scale, int32_t zero_point,
                       bool relu, T* y) {
  constexpr float kLo = std::is_signed_v<T> ? -128.0f : 0.0f,
                  kHi = std::is_signed_v<T> ? 127.0f : 255.0f;
  const float z = static_cast<float>(zero_point);
  const float lo = relu ? std::max(kLo, z) : kLo;
  const bool per_channel = scale.size() > 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t c = channels_last ? int64_t(i) % channels : (int64_t(i) / plane) % channels;
    float v = acc[i] * scale[per_channel ? c : 0];
    v = std::min(std::max(v, -1.0e6f), 1.0e6f);
    v = RoundEven(v) + z;
    y[i] = static_cast<T>(std::min(std::max(v, lo), kHi));
  }
}

void DnnlQConv::RunFloat(const ConvGeometry& g, const void* x, void* y, int threads) {
  thread_local std::vector<float> xf, yf;
  const size_t nx = static_cast<size_t>(g.batch * g.in_channels * g.in_size());
  const size_t ny = static_cast<size_t>(g.batch * g.out_channels * g.out_size());
  xf.resize(nx);
  yf.resize(ny);
  const float zp = static_cast<float>(params_.x_zero_point);
  if (params_.x_signed) {
    const auto* p = static_cast<const int8_t*>(x);
    for (size_t i = 0; i < nx; ++i) xf[i] = static_cast<float>(p[i]) - zp;
  } else {
    const auto* p = static_cast<const uint8_t*>(x);
    for (size_t i = 0; i < nx; ++i) xf[i] = static_cast<float>(p[i]) - zp;
  }
  float_conv_->Run(g, xf.data(), nullptr, float_bias_.empty() ? nullptr : float_bias_.data(),
                   nullptr, yf.data(), threads);
  if (params_.y_signed)
    Requantize(yf.data(), ny, g.out_channels, g.out_size(), params_.channels_last, params_.scale,
               params_.y_zero_point, params_.relu, static_cast<int8_t*>(y));
  else
    Requantize(yf.data(), ny, g.out_channels, g.out_size(), params_.channels_last, params_.scale,
               params_.y_zero_point, params_.relu, static_cast<uint8_t*>(y));
}

std::shared_ptr<DnnlQConv::PlanSet> DnnlQConv::GetPlan(const ConvGeometry& g, int threads) {
  std::vector<int64_t> key{g.batch, g.in_channels, g.in[1], g.in[2], threads};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  std::shared_ptr<PlanSet> set;
  try {
    set = std::make_shared<PlanSet>();
    const int64_t m = g.out_channels;
    const double macs =
        static_cast<double>(g.batch) * m * g.out_size() * g.in_channels * g.kernel_size();
    // Slices of whole 16-channel blocks, one per thread, each a single-threaded primitive on
    // the pool (docs/threading.md: OpenMP's barrier stalls on a busy machine, the pool does not).
    const int64_t parts =
        params_.channels_last && g.group == 1 && threads > 1 && macs >= kMinParallelMacs
            ? std::min<int64_t>(threads, m / 16)
            : 1;
    if (params_.channels_last && threads > 1 && macs >= kMinParallelMacs &&
        BuildRowParts(*set, g, threads)) {
      // one band of rows per thread
    } else if (parts > 1) {
      OmpThreadScope omp(1);
      const int64_t step = (m / parts + 15) / 16 * 16;
      for (int64_t b = 0; b < m; b += step) {
        set->parts.push_back(BuildPlan(g, b, std::min(step, m - b)));
        set->oc_begin.push_back(b);
        // A slice must read and write the plain layouts directly.
        const Plan* p = set->parts.back().get();
        if (!p || p->reorder_src || p->reorder_dst) {
          set->parts.clear();
          set->oc_begin.clear();
          break;
        }
      }
    }
    if (set->parts.empty()) {
      // oneDNN sizes a primitive's OpenMP team when it is created (docs/threading.md).
      OmpThreadScope omp(OmpThreads(g, threads));
      std::shared_ptr<Plan> whole = BuildPlan(g, 0, m);
      if (whole) {
        set->parts.push_back(whole);
        set->oc_begin.push_back(0);
      } else {
        set = nullptr;
      }
    }
  } catch (const dnnl::error&) {
    set = nullptr;  // oneDNN declined: the caller's own path runs
  }
  plans_.emplace(std::move(key), set);
  return set;
}

std::shared_ptr<DnnlQConv::Plan> DnnlQConv::BuildPlan(const ConvGeometry& g, int64_t oc_begin,
                                                      int64_t oc_count) {
  if (g.spatial != 2 || w_dims_.size() != 4) return nullptr;
  auto plan = std::make_shared<Plan>();
  dnnl::engine& engine = DnnlEngine();
  const dt src_t = params_.x_signed ? dt::s8 : dt::u8;
  const dt dst_t = params_.y_signed ? dt::s8 : dt::u8;
  const int64_t m = oc_count, grp = g.group;
  const dnnl::memory::dims src_dims{g.batch, g.in_channels, g.in[1], g.in[2]};
  const dnnl::memory::dims dst_dims{g.batch, m, g.out[1], g.out[2]};
  const dnnl::memory::dims w_dims =
      grp == 1 ? dnnl::memory::dims{m, g.in_channels, g.kernel[1], g.kernel[2]}
               : dnnl::memory::dims{grp, m / grp, g.in_channels / grp, g.kernel[1], g.kernel[2]};
  const dnnl::memory::dims strides{g.stride[1], g.stride[2]};
  const dnnl::memory::dims dilates{g.dilation[1] - 1, g.dilation[2] - 1};
  const dnnl::memory::dims pad_l{g.pad_begin[1], g.pad_begin[2]}, pad_r{g.pad_end[1], g.pad_end[2]};
  const tag layout = params_.channels_last ? tag::nhwc : tag::nchw;
  plan->src_plain = dnnl::memory::desc(src_dims, src_t, layout);
  plan->dst_plain = dnnl::memory::desc(dst_dims, dst_t, layout);
  const dnnl::memory::desc src_any(src_dims, src_t, tag::any), dst_any(dst_dims, dst_t, tag::any);
  const dnnl::memory::desc w_any(w_dims, dt::s8, tag::any);
  const bool has_bias = !params_.bias.empty();
  const dnnl::memory::desc b_md({m}, dt::s32, tag::x);

  dnnl::primitive_attr attr;
  const bool per_channel = params_.scale.size() > 1;
  const std::vector<float> scale =
      per_channel ? std::vector<float>(params_.scale.begin() + oc_begin,
                                       params_.scale.begin() + oc_begin + oc_count)
                  : params_.scale;
  attr.set_output_scales(per_channel ? 1 << 1 : 0, scale);
  // Zero points at run time: the int8 jit kernels take them in that form.
  if (params_.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (params_.y_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  if (params_.relu) {
    // Applied to the scaled value before the output zero point is added: max(v, 0) + y_zp.
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::library);
  const auto desc =
      has_bias ? dnnl::convolution_forward::desc(
                     dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                     src_any, w_any, b_md, dst_any, strides, dilates, pad_l, pad_r)
               : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, src_any,
                                                 w_any, dst_any, strides, dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  // The reference implementation is orders of magnitude slower than our own integer path.
  if (IsReference(pd)) return nullptr;
  audit_.Record(pd, "int8 convolution");
  plan->conv = dnnl::convolution_forward(pd);
  plan->src_md = pd.src_desc();
  plan->dst_md = pd.dst_desc();
  plan->reorder_src = plan->src_md != plan->src_plain;
  plan->reorder_dst = plan->dst_md != plan->dst_plain;
  if (plan->reorder_src)
    plan->to_src =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->src_plain, engine, plan->src_md));
  if (plan->reorder_dst)
    plan->from_dst =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine, plan->dst_md, engine, plan->dst_plain));
  // Weights: plain [M, C/g, kH, kW] (goihw for groups) into the primitive's layout, once.
  const dnnl::memory::desc w_plain(w_dims, dt::s8, grp == 1 ? tag::oihw : tag::goihw);
  const int64_t per_oc = g.in_channels / grp * g.kernel[1] * g.kernel[2];
  dnnl::memory w_src(w_plain, engine, w_.data() + oc_begin * per_oc);
  plan->weights = dnnl::memory(pd.weights_desc(), engine);
  dnnl::stream& stream = DnnlStream();
  {
    OmpThreadScope omp(1);
    dnnl::reorder(w_src, plan->weights).execute(stream, w_src, plan->weights);
    stream.wait();
  }
  if (has_bias) plan->bias = dnnl::memory(b_md, engine, params_.bias.data() + oc_begin);
  const dnnl::memory::desc zp_md({1}, dt::s32, tag::x);
  plan->src_zp = dnnl::memory(zp_md, engine, &params_.x_zero_point);
  plan->dst_zp = dnnl::memory(zp_md, engine, &params_.y_zero_point);
  return plan;
}

// The primitive of `plan` from src to dst, with the node's bias and zero points.
void DnnlQConv::Execute(const Plan& plan, const dnnl::memory& src, const dnnl::memory& dst,
                        dnnl::stream& stream) const {
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, plan.weights}, {DNNL_ARG_DST, dst}};
  if (!params_.bias.empty()) args.emplace(DNNL_ARG_BIAS, plan.bias);
  if (params_.x_zero_point != 0)
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, plan.src_zp);
  if (params_.y_zero_point != 0)
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, plan.dst_zp);
  plan.conv.execute(stream, args);
}

void DnnlQConv::Run(const ConvGeometry& g, const void* x, void* y, int threads) {
  if (float_conv_) {
    RunFloat(g, x, y, threads);
    return;
  }
  std::shared_ptr<PlanSet> set = GetPlan(g, threads);
  if (set->rows) {
    RunRows(*set, g, x, y, threads);
    return;
  }
  if (set->parts.size() > 1) {
    RunSlices(*set, g, x, y, threads);
    return;
  }
  const Plan* plan = set->parts[0].get();
  dnnl::engine& engine = DnnlEngine();
  dnnl::stream& stream = DnnlStream();
  OmpThreadScope omp(OmpThreads(g, threads));
  dnnl::memory src_user(plan->src_plain, engine, const_cast<void*>(x));
  dnnl::memory dst_user(plan->dst_plain, engine, y);
  dnnl::memory src = src_user, dst = dst_user;
  if (plan->reorder_src) {
    src = dnnl::memory(plan->src_md, engine, ThreadScratch(kScratchSrc, plan->src_md.get_size()));
    plan->to_src.execute(stream, src_user, src);
  }
  if (plan->reorder_dst)
    dst = dnnl::memory(plan->dst_md, engine, ThreadScratch(kScratchDst, plan->dst_md.get_size()));
  Execute(*plan, src, dst, stream);
  if (plan->reorder_dst) plan->from_dst.execute(stream, dst, dst_user);
  stream.wait();
}

}  // namespace nxrt::cpu::linalg

namespace nxrt::cpu::linalg {

// Each slice writes its channels densely into one scratch block, then copies them into its
// channel range of every NHWC pixel of y (disjoint writes, so no synchronisation).
void DnnlQConv::RunSlices(const PlanSet& set, const ConvGeometry& g, const void* x, void* y,
                          int threads) {
  const int64_t m = g.out_channels;
  const int64_t pixels = g.batch * g.out_size();
  auto* scratch = static_cast<uint8_t*>(ThreadScratch(kScratchDst, size_t(pixels * m)));
  auto* out = static_cast<uint8_t*>(y);
  ParallelFor(threads, static_cast<int64_t>(set.parts.size()), 1, [&](int64_t b, int64_t e) {
    dnnl::engine& engine = DnnlEngine();
    dnnl::stream& stream = DnnlStream();
    for (int64_t p = b; p < e; ++p) {
      const Plan& plan = *set.parts[static_cast<size_t>(p)];
      const int64_t oc0 = set.oc_begin[static_cast<size_t>(p)];
      const int64_t count = plan.dst_plain.dims()[1];
      uint8_t* dense = scratch + oc0 * pixels;
      dnnl::memory src(plan.src_plain, engine, const_cast<void*>(x));
      dnnl::memory dst(plan.dst_plain, engine, dense);
      Execute(plan, src, dst, stream);
      stream.wait();
      for (int64_t q = 0; q < pixels; ++q)
        std::memcpy(out + q * m + oc0, dense + q * count, static_cast<size_t>(count));
    }
  });
}

}  // namespace nxrt::cpu::linalg

namespace nxrt::cpu::linalg {

bool DnnlQConv::BuildRowParts(PlanSet& set, const ConvGeometry& g, int threads) {
  const int64_t out_rows = g.out[1];
  if (g.batch != 1 || g.spatial != 2 || out_rows < 2 * threads) return false;
  OmpThreadScope omp(1);
  const int64_t span = (g.kernel[1] - 1) * g.dilation[1] + 1;  // input rows one output row reads
  for (int64_t p = 0; p < threads; ++p) {
    const int64_t o0 = out_rows * p / threads, o1 = out_rows * (p + 1) / threads;
    const int64_t first = o0 * g.stride[1] - g.pad_begin[1];  // may lie in the padding
    const int64_t end = (o1 - 1) * g.stride[1] - g.pad_begin[1] + span;
    const int64_t r0 = std::max<int64_t>(0, first), r1 = std::min<int64_t>(g.in[1], end);
    if (r1 <= r0) return false;
    ConvGeometry band = g;
    band.in[1] = r1 - r0;
    band.out[1] = o1 - o0;
    band.pad_begin[1] = r0 - first;
    band.pad_end[1] = end - r1;
    std::shared_ptr<Plan> plan = BuildPlan(band, 0, g.out_channels);
    // A band must read and write the plain layouts in place.
    if (!plan || plan->reorder_src || plan->reorder_dst) {
      set.parts.clear();
      set.in_row.clear();
      set.out_row.clear();
      return false;
    }
    set.parts.push_back(plan);
    set.oc_begin.push_back(0);
    set.in_row.push_back(r0);
    set.out_row.push_back(o0);
  }
  set.rows = true;
  return true;
}

void DnnlQConv::RunRows(const PlanSet& set, const ConvGeometry& g, const void* x, void* y,
                        int threads) {
  const int64_t in_row_bytes = g.in[2] * g.in_channels;  // one 8-bit NHWC row
  const int64_t out_row_bytes = g.out[2] * g.out_channels;
  ParallelFor(threads, static_cast<int64_t>(set.parts.size()), 1, [&](int64_t b, int64_t e) {
    dnnl::engine& engine = DnnlEngine();
    dnnl::stream& stream = DnnlStream();
    for (int64_t p = b; p < e; ++p) {
      const size_t i = static_cast<size_t>(p);
      const Plan& plan = *set.parts[i];
      dnnl::memory src(
          plan.src_plain, engine,
          const_cast<uint8_t*>(static_cast<const uint8_t*>(x)) + set.in_row[i] * in_row_bytes);
      dnnl::memory dst(plan.dst_plain, engine,
                       static_cast<uint8_t*>(y) + set.out_row[i] * out_row_bytes);
      Execute(plan, src, dst, stream);
      stream.wait();
    }
  });
}

}  // namespace nxrt::cpu::linalg
