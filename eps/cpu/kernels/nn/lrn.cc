// LRN: local response normalisation across channels,
// y = x / (bias + alpha / size * sum of x^2 over the neighbouring channels)^beta.
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class Lrn : public ep::Kernel {
 public:
  explicit Lrn(const ep::KernelInfo& info) {
    size_ = info.attr_int("size");
    alpha_ = info.attr_float("alpha", 1e-4f);
    beta_ = info.attr_float("beta", 0.75f);
    bias_ = info.attr_float("bias", 1.0f);
    NXRT_EP_ENFORCE(size_ > 0, "LRN: size must be positive");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() >= 3, "LRN: X must have rank >= 3, got " + DimsToString(shape));
    int64_t batch = shape[0], channels = shape[1], plane = 1;
    for (size_t i = 2; i < shape.size(); ++i) plane *= shape[i];
    ep::Tensor y = ctx.output(0, shape, x.type());
    // The window covers channels [c - before, c + after].
    int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      const A scale = static_cast<A>(alpha_) / static_cast<A>(size_);
      const A bias = static_cast<A>(bias_), beta = static_cast<A>(beta_);
      ParallelFor(ctx.threads(), batch * channels, 1, [&](int64_t begin, int64_t end) {
        std::vector<A> acc(plane);
        for (int64_t bc = begin; bc < end; ++bc) {
          int64_t n = bc / channels, c = bc % channels;
          std::fill(acc.begin(), acc.end(), A(0));
          int64_t lo = std::max<int64_t>(0, c - before);
          int64_t hi = std::min<int64_t>(channels - 1, c + after);
          for (int64_t k = lo; k <= hi; ++k) {
            const T* xk = xd + (n * channels + k) * plane;
            for (int64_t i = 0; i < plane; ++i) {
              A v = static_cast<A>(xk[i]);
              acc[i] += v * v;
            }
          }
          const T* xc = xd + bc * plane;
          T* yc = yd + bc * plane;
          for (int64_t i = 0; i < plane; ++i) {
            yc[i] = static_cast<T>(static_cast<A>(xc[i]) / std::pow(bias + scale * acc[i], beta));
          }
        }
      });
    });
  }

 private:
  int64_t size_ = 1;
  float alpha_, beta_, bias_;
};

}  // namespace

void RegisterLrnKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("LRN").Versions(1).Build<Lrn>(registry);
}

}  // namespace nxrt::cpu::nn
