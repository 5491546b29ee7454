// BatchNormalization. Inference folds the four per-channel parameters into one multiply-add per
// element, y = x * a[c] + b[c]; training mode (opset 14 training_mode=1, or older opsets asked for
// the statistics outputs) normalises with the batch statistics and updates the running ones.
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

// y = x * a[c] + b[c] over [batch, channels, plane] with `channels` parameters per batch item.
template <class T>
void ApplyAffine(const T* x, T* y, int64_t batch, int64_t channels, int64_t plane,
                 const std::vector<AccOf<T>>& a, const std::vector<AccOf<T>>& b, int threads) {
  using A = AccOf<T>;
  int64_t planes = batch * channels;
  if (plane == 1) {
    // [N, C] input: rows of channels.
    ParallelFor(threads, batch, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, channels)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t n = begin; n < end; ++n) {
                    const T* xr = x + n * channels;
                    T* yr = y + n * channels;
                    for (int64_t c = 0; c < channels; ++c) {
                      yr[c] = static_cast<T>(static_cast<A>(xr[c]) * a[c] + b[c]);
                    }
                  }
                });
    return;
  }
  int64_t grain = std::max<int64_t>(1, 16384 / plane);
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % channels;
      const A ac = a[c], bc = b[c];
      const T* xp = x + p * plane;
      T* yp = y + p * plane;
      for (int64_t i = 0; i < plane; ++i) yp[i] = static_cast<T>(static_cast<A>(xp[i]) * ac + bc);
    }
  });
}

class BatchNormalization : public ep::Kernel {
 public:
  explicit BatchNormalization(const ep::KernelInfo& info) {
    opset_ = info.opset();
    epsilon_ = info.attr_float("epsilon", 1e-5f);
    momentum_ = info.attr_float("momentum", 0.9f);
    spatial_ = info.attr_int("spatial", 1) != 0;
    for (size_t i = 0; i < info.output_count(); ++i)
      has_output_.push_back(info.output(i).present());
    bool stats_wanted = false;
    for (size_t i = 1; i < has_output_.size(); ++i) stats_wanted |= has_output_[i];
    if (opset_ >= 14) {
      training_ = info.attr_int("training_mode", 0) != 0;
    } else if (opset_ < 7 && info.has_attr("is_test")) {
      training_ = info.attr_int("is_test", 0) == 0 && stats_wanted;
    } else {
      training_ = stats_wanted;
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() >= 2,
                    "BatchNormalization: X must have rank >= 2, got " + DimsToString(shape));
    int64_t batch = shape[0], channels = shape[1], plane = 1;
    for (size_t i = 2; i < shape.size(); ++i) plane *= shape[i];
    // spatial=0 (before opset 9): one parameter per element of an item, not per channel.
    int64_t groups = channels, group_plane = plane;
    if (!spatial_) {
      groups = channels * plane;
      group_plane = 1;
    }
    std::vector<double> scale = ReadParam(ctx, 1, groups, "scale");
    std::vector<double> bias = ReadParam(ctx, 2, groups, "B");
    std::vector<double> mean = ReadParam(ctx, 3, groups, "input_mean");
    std::vector<double> var = ReadParam(ctx, 4, groups, "input_var");
    ep::Tensor y = ctx.output(0, shape, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      std::vector<double> use_mean = mean, use_var = var;
      if (training_) {
        std::vector<double> bmean(groups, 0.0), bvar(groups, 0.0);
        BatchStatistics(xd, batch, groups, group_plane, bmean, bvar, ctx.threads());
        use_mean = bmean;
        use_var = bvar;
        std::vector<double> run_mean(groups), run_var(groups);
        for (int64_t c = 0; c < groups; ++c) {
          run_mean[c] = mean[c] * momentum_ + bmean[c] * (1.0 - momentum_);
          run_var[c] = var[c] * momentum_ + bvar[c] * (1.0 - momentum_);
        }
        std::vector<int64_t> pshape = {groups};
        if (!spatial_) pshape.assign(shape.begin() + 1, shape.end());
        WriteStat(ctx, 1, pshape, run_mean, ctx.input(3).type());
        WriteStat(ctx, 2, pshape, run_var, ctx.input(4).type());
        WriteStat(ctx, 3, pshape, bmean, x.type());
        WriteStat(ctx, 4, pshape, bvar, x.type());
      }
      std::vector<A> a(groups), b(groups);
      for (int64_t c = 0; c < groups; ++c) {
        double ac = scale[c] / std::sqrt(use_var[c] + static_cast<double>(epsilon_));
        a[c] = static_cast<A>(ac);
        b[c] = static_cast<A>(bias[c] - use_mean[c] * ac);
      }
      ApplyAffine<T>(xd, y.data<T>(), batch, groups, group_plane, a, b, ctx.threads());
    });
  }

 private:
  std::vector<double> ReadParam(ep::KernelContext& ctx, size_t i, int64_t expected,
                                const char* name) const {
    ep::ConstTensor t = ctx.input(i);
    NXRT_EP_ENFORCE(static_cast<int64_t>(t.size()) == expected,
                    std::string("BatchNormalization: ") + name + " has " +
                        std::to_string(t.size()) + " elements, expected " +
                        std::to_string(expected));
    return ReadDoubles(t, name);
  }

  // Per-channel mean and (population) variance over the batch and spatial axes.
  template <class T>
  static void BatchStatistics(const T* x, int64_t batch, int64_t channels, int64_t plane,
                              std::vector<double>& mean, std::vector<double>& var, int threads) {
    double count = static_cast<double>(batch * plane);
    ParallelFor(threads, channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double s = 0, s2 = 0;
        for (int64_t n = 0; n < batch; ++n) {
          const T* xp = x + (n * channels + c) * plane;
          for (int64_t i = 0; i < plane; ++i)
            s += static_cast<double>(static_cast<AccOf<T>>(xp[i]));
        }
        double m = count > 0 ? s / count : 0.0;
        for (int64_t n = 0; n < batch; ++n) {
          const T* xp = x + (n * channels + c) * plane;
          for (int64_t i = 0; i < plane; ++i) {
            double d = static_cast<double>(static_cast<AccOf<T>>(xp[i])) - m;
            s2 += d * d;
          }
        }
        mean[c] = m;
        var[c] = count > 0 ? s2 / count : 0.0;
      }
    });
  }

  // Writes a statistics output when the node has it.
  void WriteStat(ep::KernelContext& ctx, size_t index, const std::vector<int64_t>& shape,
                 const std::vector<double>& values, NxElementType type) const {
    if (index >= has_output_.size() || !has_output_[index]) return;
    ep::Tensor t = ctx.output(index, shape, type);
    DispatchFloat(type, [&]<class U>() {
      U* p = t.data<U>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<U>(values[i]);
    });
  }

  int opset_ = 15;
  float epsilon_ = 1e-5f, momentum_ = 0.9f;
  bool spatial_ = true, training_ = false;
  std::vector<bool> has_output_;
};

}  // namespace

void RegisterBatchNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("BatchNormalization").Versions(1).Build<BatchNormalization>(registry);
}

}  // namespace nxrt::cpu::nn
