#include "kernels/linalg/conv_plan.h"

#include <algorithm>

#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

dnnl::post_ops ChainPostOps(const std::vector<ChainStep>& chain, size_t count,
                            const dnnl::memory::desc& dst) {
  dnnl::post_ops ops;
  for (size_t i = 0; i < count && i < chain.size(); ++i) {
    const ChainStep& e = chain[i];
    if (e.sum && i == 0)
      ops.append_sum(1.0f);
    else if (e.sum)
      ops.append_binary(dnnl::algorithm::binary_add, dst);
    else
      ops.append_eltwise(1.0f, e.eltwise.alg, e.eltwise.alpha, e.eltwise.beta);
  }
  return ops;
}

int SumStep(const std::vector<ChainStep>& chain) {
  for (size_t i = 0; i < chain.size(); ++i)
    if (chain[i].sum) return static_cast<int>(i);
  return -1;
}

size_t FirstClip(const std::vector<ChainStep>& chain) {
  for (size_t i = 0; i < chain.size(); ++i)
    if (!chain[i].sum && chain[i].eltwise.alg == dnnl::algorithm::eltwise_clip) return i;
  return chain.size();
}

size_t FirstSlowPostOp(const std::vector<ChainStep>& chain) {
  for (size_t i = 0; i < chain.size(); ++i)
    if (!chain[i].sum && FasterAfterThePrimitive(chain[i].eltwise)) return i;
  return chain.size();
}

size_t FirstNonZeroStep(const std::vector<ChainStep>& chain) {
  using A = dnnl::algorithm;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i].sum) continue;
    const DnnlEltwise& e = chain[i].eltwise;
    const bool keeps_zero = e.alg == A::eltwise_relu || e.alg == A::eltwise_tanh ||
                            e.alg == A::eltwise_hardswish || e.alg == A::eltwise_swish ||
                            e.alg == A::eltwise_gelu_erf || e.alg == A::eltwise_gelu_tanh ||
                            e.alg == A::eltwise_elu ||
                            (e.alg == A::eltwise_linear && e.beta == 0.0f) ||
                            (e.alg == A::eltwise_clip && e.alpha <= 0.0f && e.beta >= 0.0f);
    if (!keeps_zero) return i;
  }
  return chain.size();
}

size_t PrimitiveChainLength(size_t limit, const std::function<bool(size_t count)>& is_reference) {
  for (size_t k = limit; k > 0; --k)
    if (!is_reference(k)) return k;
  return 0;
}

ConvThreads PlanConvThreads(const ConvWork& w) {
  ConvThreads t;
  if (w.threads <= 1) return t;
  if (PreferOmpTeam(w.macs_per_image, w.out_channel_blocks, w.kernel_size, w.depthwise,
                    w.threads)) {
    t.kind = ConvThreads::kOmpTeam;
    t.slices = w.threads;
    return t;
  }
  if (!WorthSlicing(w.macs_per_image, w.weight_bytes)) return t;
  if (w.row_slices && w.out_channel_blocks == 1 && w.out_rows >= 2 * w.threads &&
      w.macs_per_image >= static_cast<double>(kMinConvSliceMacs)) {
    t.kind = ConvThreads::kRows;
    t.slices = w.threads;
    return t;
  }
  if (!w.channel_slices) return t;
  t.slices = static_cast<int>(std::min<int64_t>(w.threads, w.out_channel_blocks));
  t.kind = t.slices > 1 ? ConvThreads::kChannels : ConvThreads::kOne;
  return t;
}

std::vector<std::pair<int64_t, int64_t>> ChannelBlockSlices(int64_t channels, int64_t block,
                                                            int count) {
  const int64_t blocks = (channels + block - 1) / block;
  count = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(count, blocks)));
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int s = 0; s < count; ++s) {
    const int64_t b0 = blocks * s / count, b1 = blocks * (s + 1) / count;
    out.push_back({b0 * block, std::min(channels, b1 * block)});
  }
  return out;
}

dnnl::convolution_forward::primitive_desc MakeConvPrimitive(const ConvPrimitiveShape& shape,
                                                            const dnnl::post_ops& ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(ops);
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, shape.src,
      shape.weights, shape.bias, shape.dst, shape.strides, shape.dilates, shape.pad_l, shape.pad_r);
  return dnnl::convolution_forward::primitive_desc(d, attr, DnnlEngine());
}

}  // namespace nxrt::cpu::linalg
