#include "kernels/linalg/conv_dnnl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/parallel.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/linalg/conv_depthwise.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;

struct DnnlConv::Plan {
  bool gemm = false;       // pointwise GEMM strategy: nothing below is used
  bool depthwise = false;  // direct depthwise loop: nothing below is used
  dnnl::convolution_forward conv;
  memory::desc src_plain, dst_plain, w_plain, bias_md;
  memory::desc src_conv, dst_conv, w_conv, scratch_md;
  bool reorder_src = false, reorder_dst = false, reorder_w = false, has_bias = false;
  dnnl::reorder src_reorder, dst_reorder, sum_reorder, w_reorder;
  size_t src_bytes = 0, dst_bytes = 0, w_bytes = 0, scratch_bytes = 0;
  std::shared_ptr<memory> packed_w;  // constant weights in w_conv layout
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

std::vector<int64_t> PlanKey(const ConvGeometry& g, int threads, bool has_bias) {
  std::vector<int64_t> key = {threads,       has_bias,       g.spatial, g.batch,
                              g.in_channels, g.out_channels, g.group};
  for (const Dims3* d :
       {&g.in, &g.out, &g.kernel, &g.stride, &g.dilation, &g.pad_begin, &g.pad_end}) {
    key.insert(key.end(), d->begin(), d->end());
  }
  return key;
}

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
    default:
      throw std::runtime_error("Conv: unsupported fused activation");
  }
}

}  // namespace

bool IsPointwiseConv(const ConvGeometry& g) {
  return g.kernel == Dims3{1, 1, 1} && g.pad_begin == Dims3{0, 0, 0} && g.pad_end == Dims3{0, 0, 0};
}

void ApplyEltwiseRange(const std::vector<ConvFusion::Eltwise>& ops, float* p, int64_t m) {
  // The choice outside the loops: these bodies vectorise (a per-element switch did not, and
  // cost more than the pointwise convolution it followed).
  for (const auto& e : ops) {
    const float alpha = e.alpha, beta = e.beta;
    switch (e.alg) {
      case dnnl::algorithm::eltwise_relu:
        // Branch-free (max + alpha * min): a select on the sign mispredicted on every other
        // element of real activations and did not vectorise.
        for (int64_t i = 0; i < m; ++i) p[i] = std::max(p[i], 0.0f) + alpha * std::min(p[i], 0.0f);
        break;
      case dnnl::algorithm::eltwise_clip:
        for (int64_t i = 0; i < m; ++i) {
          float t = p[i] < alpha ? alpha : p[i];
          p[i] = t > beta ? beta : t;
        }
        break;
      case dnnl::algorithm::eltwise_linear:
        for (int64_t i = 0; i < m; ++i) p[i] = alpha * p[i] + beta;
        break;
      case dnnl::algorithm::eltwise_hardswish:
        for (int64_t i = 0; i < m; ++i) {  // selects, not std::min/max: these vectorise
          float t = p[i] * (1.0f / 6.0f) + 0.5f;
          t = t < 0.0f ? 0.0f : t;
          t = t > 1.0f ? 1.0f : t;
          p[i] *= t;
        }
        break;
      case dnnl::algorithm::eltwise_swish:
        elementwise::SwishArray(p, p, m, alpha);
        break;
      default:
        for (int64_t i = 0; i < m; ++i) p[i] = Eltwise1(e, p[i]);
    }
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

std::shared_ptr<DnnlConv::Plan> DnnlConv::BuildPlan(const ConvGeometry& g, bool has_bias) {
  auto plan = std::make_shared<Plan>();
  plan->has_bias = has_bias;
  const bool pointwise = IsPointwiseConv(g);
  const bool nchw_auto = strategy_ == ConvStrategy::kAuto && !channels_last_;
  if ((nchw_auto || strategy_ == ConvStrategy::kGemm) && pointwise && !channels_last_) {
    plan->gemm = true;
    return plan;
  }
  if ((nchw_auto || strategy_ == ConvStrategy::kDirect) && IsDepthwiseConv(g) && !channels_last_) {
    plan->depthwise = true;
    return plan;
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
  plan->dst_plain = memory::desc(dst_dims, f32, ActivationTag(g.spatial, channels_last_));
  plan->w_plain = memory::desc(w_dims, f32, WeightTag(g.spatial, grouped));
  if (plan->has_bias) plan->bias_md = memory::desc({g.out_channels}, f32, Tag::x);

  const bool blocked = strategy_ != ConvStrategy::kPlain && !channels_last_;
  memory::desc src_any = blocked ? memory::desc(src_dims, f32, Tag::any) : plan->src_plain;
  memory::desc dst_any = blocked ? memory::desc(dst_dims, f32, Tag::any) : plan->dst_plain;
  memory::desc w_any(w_dims, f32, Tag::any);

  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any, w_any,
      plan->bias_md, dst_any, Real(g, g.stride), Real(g, g.dilation, 1), Real(g, g.pad_begin),
      Real(g, g.pad_end));
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (fusion_.sum || !fusion_.eltwise.empty()) {
    dnnl::post_ops ops;
    if (fusion_.sum) ops.append_sum(1.0f);
    for (const auto& e : fusion_.eltwise) ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    attr.set_post_ops(ops);
  }
  auto& eng = DnnlEngine();
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  plan->conv = dnnl::convolution_forward(pd);
  plan->src_conv = pd.src_desc();
  plan->dst_conv = pd.dst_desc();
  plan->w_conv = pd.weights_desc();
  plan->scratch_md = pd.scratchpad_desc();
  plan->scratch_bytes = plan->scratch_md.get_size();
  plan->src_bytes = plan->src_conv.get_size();
  plan->dst_bytes = plan->dst_conv.get_size();
  plan->w_bytes = plan->w_conv.get_size();

  plan->reorder_src = plan->src_conv != plan->src_plain;
  plan->reorder_dst = plan->dst_conv != plan->dst_plain;
  plan->reorder_w = plan->w_conv != plan->w_plain;
  if (plan->reorder_src) {
    plan->src_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->src_plain, eng, plan->src_conv));
  }
  if (plan->reorder_dst) {
    plan->dst_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->dst_conv, eng, plan->dst_plain));
    if (fusion_.sum) {
      plan->sum_reorder =
          dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->dst_plain, eng, plan->dst_conv));
    }
  }
  if (plan->reorder_w) {
    plan->w_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->w_plain, eng, plan->w_conv));
  }

  if (const_w_ != nullptr) {
    if (plan->w_plain.get_size() != const_w_count_ * sizeof(float)) {
      throw std::runtime_error("Conv: constant weight size does not match the geometry");
    }
    for (const auto& [md, mem] : packed_weights_) {
      if (md == plan->w_conv) plan->packed_w = mem;
    }
    if (!plan->packed_w) {
      std::shared_ptr<memory> mem;
      if (plan->reorder_w) {
        mem = std::make_shared<memory>(plan->w_conv, eng);
        memory src(plan->w_plain, eng, const_cast<float*>(const_w_));
        plan->w_reorder.execute(DnnlStream(), src, *mem);
        DnnlStream().wait();
      } else {
        // The primitive reads the plain layout: use the borrowed weights, no second copy.
        mem = std::make_shared<memory>(plan->w_conv, eng, const_cast<float*>(const_w_));
      }
      packed_weights_.emplace_back(plan->w_conv, mem);
      plan->packed_w = mem;
    }
  }
  return plan;
}

std::shared_ptr<DnnlConv::Plan> DnnlConv::GetPlan(const ConvGeometry& g, int threads,
                                                  bool has_bias) {
  std::vector<int64_t> key = PlanKey(g, threads, has_bias);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  std::shared_ptr<Plan> plan;
  try {
    plan = BuildPlan(g, has_bias);
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("Conv: oneDNN could not build the convolution: ") +
                             e.what());
  }
  plans_.emplace(std::move(key), plan);
  return plan;
}

int DnnlConv::PrimitiveThreads(const ConvGeometry& g, int threads) {
  // oneDNN's primitives run on OpenMP, whose sleeping workers take about 50 us to wake
  // (docs/threading.md): a small convolution is cheaper on one thread.
  const double macs = static_cast<double>(g.batch) * g.out_channels * g.out_size() *
                      g.in_channels_per_group() * g.kernel_size();
  return macs < kMinOmpParallelMacs ? 1 : threads;
}

void DnnlConv::Prepare(const ConvGeometry& g, int threads, bool has_bias) {
  const int omp_threads = PrimitiveThreads(g, threads);
  OmpThreadScope scope(omp_threads);
  GetPlan(g, omp_threads, has_bias);
}

void DnnlConv::Run(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                   const float* z, float* y, int threads) {
  if (g.batch == 0 || g.out_size() == 0 || g.out_channels == 0) return;
  if (const_w_ != nullptr) w = const_w_;
  const int omp_threads = PrimitiveThreads(g, threads);
  // A oneDNN primitive keeps the OpenMP thread count it was created with: build (GetPlan) and
  // run it under the same count.
  OmpThreadScope primitive_scope(omp_threads);
  std::shared_ptr<Plan> plan = GetPlan(g, omp_threads, bias != nullptr);
  // The GEMM and depthwise paths split on the session's pool, which costs well under a
  // microsecond per region: they get every thread and split from kMinParallelMacs on.
  if (plan->gemm) {
    OmpThreadScope scope(threads);  // Sgemm reads the thread count from OpenMP
    RunGemm(g, x, w, bias, fusion_.sum ? z : nullptr, y);
    ApplyEltwise(fusion_.eltwise, y, g.batch * g.out_channels * g.out_size(), threads);
  } else if (plan->depthwise) {
    if (fusion_.eltwise.empty()) {
      DepthwiseConvNchw(g, x, w, bias, fusion_.sum ? z : nullptr, y, threads);
    } else {
      DepthwiseConvNchw(
          g, x, w, bias, fusion_.sum ? z : nullptr, y, threads,
          [this](float* plane, int64_t n) { ApplyEltwiseRange(fusion_.eltwise, plane, n); });
    }
  } else {
    RunDnnl(*plan, x, w, bias, z, y);
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

void DnnlConv::RunDnnl(const Plan& plan, const float* x, const float* w, const float* b,
                       const float* z, float* y) {
  const bool const_w = const_w_ != nullptr;
  auto& eng = DnnlEngine();
  auto& strm = DnnlStream();
  memory src_user(plan.src_plain, eng, const_cast<float*>(x));
  memory src_mem = src_user;
  if (plan.reorder_src) {
    src_mem = memory(plan.src_conv, eng, ThreadScratch(kScratchSrc, plan.src_bytes));
    plan.src_reorder.execute(strm, src_user, src_mem);
  }
  memory dst_user(plan.dst_plain, eng, y);
  memory dst_mem = dst_user;
  if (plan.reorder_dst) {
    dst_mem = memory(plan.dst_conv, eng, ThreadScratch(kScratchDst, plan.dst_bytes));
  }
  if (fusion_.sum) {
    if (plan.reorder_dst) {
      memory z_user(plan.dst_plain, eng, const_cast<float*>(z));
      plan.sum_reorder.execute(strm, z_user, dst_mem);
    } else if (z != y) {
      std::memcpy(y, z, plan.dst_plain.get_size());
    }
  }
  memory w_mem;
  if (const_w) {
    w_mem = *plan.packed_w;
  } else {
    memory w_user(plan.w_plain, eng, const_cast<float*>(w));
    w_mem = w_user;
    if (plan.reorder_w) {
      w_mem = memory(plan.w_conv, eng, ThreadScratch(kScratchWeights, plan.w_bytes));
      plan.w_reorder.execute(strm, w_user, w_mem);
    }
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src_mem},
      {DNNL_ARG_WEIGHTS, w_mem},
      {DNNL_ARG_DST, dst_mem},
      {DNNL_ARG_SCRATCHPAD,
       memory(plan.scratch_md, eng, ThreadScratch(kScratchPad, plan.scratch_bytes))},
  };
  if (b != nullptr) args[DNNL_ARG_BIAS] = memory(plan.bias_md, eng, const_cast<float*>(b));
  plan.conv.execute(strm, args);
  if (plan.reorder_dst) plan.dst_reorder.execute(strm, dst_mem, dst_user);
  strm.wait();
}

}  // namespace nxrt::cpu::linalg
