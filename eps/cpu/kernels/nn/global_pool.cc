// Global pooling: GlobalAveragePool, GlobalMaxPool and GlobalLpPool reduce every spatial axis of
// an [N, C, ...] tensor to size 1. Each (batch, channel) plane is one contiguous reduction.
#include <cmath>
#include <limits>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

enum class GlobalKind { kAverage, kMax, kLp };

template <class T>
void GlobalPoolPlanes(GlobalKind kind, double p_norm, const T* x, T* y, int64_t planes,
                      int64_t plane, int threads) {
  using A = AccOf<T>;
  int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, plane));
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * plane;
      A r;
      if (kind == GlobalKind::kMax) {
        r = -std::numeric_limits<A>::infinity();
#pragma omp simd reduction(max : r)
        for (int64_t i = 0; i < plane; ++i) r = std::max(r, static_cast<A>(xp[i]));
      } else if (kind == GlobalKind::kAverage) {
        A s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < plane; ++i) s += static_cast<A>(xp[i]);
        r = plane > 0 ? s / static_cast<A>(plane) : A(0);
      } else {
        A s = 0;
        for (int64_t i = 0; i < plane; ++i) {
          A v = std::abs(static_cast<A>(xp[i]));
          s += p_norm == 2.0 ? v * v : static_cast<A>(std::pow(v, static_cast<A>(p_norm)));
        }
        r = p_norm == 2.0 ? std::sqrt(s) : static_cast<A>(std::pow(s, static_cast<A>(1 / p_norm)));
      }
      y[p] = static_cast<T>(r);
    }
  });
}

class GlobalPool : public ep::Kernel {
 public:
  explicit GlobalPool(const ep::KernelInfo& info) {
    std::string op = info.op_type();
    kind_ = op == "GlobalMaxPool" ? GlobalKind::kMax
                                  : (op == "GlobalLpPool" ? GlobalKind::kLp : GlobalKind::kAverage);
    if (kind_ == GlobalKind::kLp) {
      const NxAttribute* a = info.attr("p");
      if (a != nullptr && ep::Host().Attribute_GetType(a) == NX_ATTR_FLOAT) {
        p_ = ep::Host().Attribute_GetFloat(a);  // opset 1 declared p as a float
      } else {
        p_ = static_cast<double>(info.attr_int("p", 2));
      }
    }
    name_ = op;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() >= 2,
                    name_ + ": input must have rank >= 2, got shape " + DimsToString(shape));
    Dims out_shape(shape.size(), 1);
    out_shape[0] = shape[0];
    out_shape[1] = shape[1];
    int64_t plane = 1;
    for (size_t i = 2; i < shape.size(); ++i) plane *= shape[i];
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      GlobalPoolPlanes<T>(kind_, p_, x.data<T>(), y.data<T>(), shape[0] * shape[1], plane,
                          ctx.threads());
    });
  }

 private:
  GlobalKind kind_;
  double p_ = 2.0;
  std::string name_;
};

}  // namespace

void RegisterGlobalPoolKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("GlobalAveragePool").Versions(1).Build<GlobalPool>(registry);
  ep::KernelDefBuilder("GlobalMaxPool").Versions(1).Build<GlobalPool>(registry);
  ep::KernelDefBuilder("GlobalLpPool").Versions(1).Build<GlobalPool>(registry);
}

}  // namespace nxrt::cpu::nn
