// InstanceNormalization and GroupNormalization: statistics per (batch item, group of channels)
// over the group's channels and all spatial positions, then a per-channel scale and bias.
// Instance normalisation is the case of one channel per group.
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

// x, y: [batch, channels, plane]; channels split into `groups` equal groups.
template <class T>
void NormalizeGroups(const T* x, T* y, int64_t batch, int64_t channels, int64_t plane,
                     int64_t groups, const std::vector<double>& scale,
                     const std::vector<double>& bias, double epsilon, int threads) {
  using A = AccOf<T>;
  int64_t per_group = channels / groups;
  int64_t span = per_group * plane;
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, span));
  ParallelFor(threads, batch * groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t bg = begin; bg < end; ++bg) {
      const T* xg = x + bg * span;
      T* yg = y + bg * span;
      A s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < span; ++i) s += static_cast<A>(xg[i]);
      A mean = span > 0 ? s / static_cast<A>(span) : A(0);
      A ss = 0;
#pragma omp simd reduction(+ : ss)
      for (int64_t i = 0; i < span; ++i) {
        A d = static_cast<A>(xg[i]) - mean;
        ss += d * d;
      }
      A var = span > 0 ? ss / static_cast<A>(span) : A(0);
      A inv = A(1) / std::sqrt(var + static_cast<A>(epsilon));
      int64_t c0 = (bg % groups) * per_group;
      for (int64_t k = 0; k < per_group; ++k) {
        A a = static_cast<A>(scale[c0 + k]) * inv;
        A b = static_cast<A>(bias[c0 + k]) - mean * a;
        const T* xc = xg + k * plane;
        T* yc = yg + k * plane;
        for (int64_t i = 0; i < plane; ++i) yc[i] = static_cast<T>(static_cast<A>(xc[i]) * a + b);
      }
    }
  });
}

class GroupNorm : public ep::Kernel {
 public:
  explicit GroupNorm(const ep::KernelInfo& info) {
    op_ = info.op_type();
    instance_ = op_ == "InstanceNormalization";
    epsilon_ = info.attr_float("epsilon", 1e-5f);
    if (!instance_) {
      num_groups_ = info.attr_int("num_groups");
      NXRT_EP_ENFORCE(num_groups_ > 0, "GroupNormalization: num_groups must be positive");
      // Opset 18 took one scale/bias per group; opset 21 one per channel.
      per_group_params_ = info.opset() < 21;
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() >= 2,
                    op_ + ": X must have rank >= 2, got shape " + DimsToString(shape));
    int64_t batch = shape[0], channels = shape[1], plane = 1;
    for (size_t i = 2; i < shape.size(); ++i) plane *= shape[i];
    int64_t groups = instance_ ? channels : num_groups_;
    NXRT_EP_ENFORCE(groups > 0 && channels % groups == 0, op_ + ": " + std::to_string(channels) +
                                                              " channels cannot be split into " +
                                                              std::to_string(groups) + " groups");
    int64_t nparams = per_group_params_ ? groups : channels;
    std::vector<double> scale = ReadDoubles(ctx.input(1), "scale");
    std::vector<double> bias = ReadDoubles(ctx.input(2), "bias");
    NXRT_EP_ENFORCE(static_cast<int64_t>(scale.size()) == nparams &&
                        static_cast<int64_t>(bias.size()) == nparams,
                    op_ + ": scale and bias must have " + std::to_string(nparams) + " elements");
    if (per_group_params_) {
      std::vector<double> s(channels), b(channels);
      for (int64_t c = 0; c < channels; ++c) {
        s[c] = scale[c / (channels / groups)];
        b[c] = bias[c / (channels / groups)];
      }
      scale.swap(s);
      bias.swap(b);
    }
    ep::Tensor y = ctx.output(0, shape, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      NormalizeGroups<T>(x.data<T>(), y.data<T>(), batch, channels, plane, groups, scale, bias,
                         epsilon_, ctx.threads());
    });
  }

 private:
  std::string op_;
  bool instance_ = true, per_group_params_ = false;
  float epsilon_ = 1e-5f;
  int64_t num_groups_ = 1;
};

}  // namespace

void RegisterGroupNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("InstanceNormalization").Versions(1).Build<GroupNorm>(registry);
  ep::KernelDefBuilder("GroupNormalization").Versions(18).Build<GroupNorm>(registry);
}

}  // namespace nxrt::cpu::nn
