// LpNormalization (x / ||x||_p along one axis) and MeanVarianceNormalization
// ((x - E[x]) / (sqrt(Var[x]) + 1e-9) over a set of axes).
#include <algorithm>
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class LpNormalization : public ep::Kernel {
 public:
  explicit LpNormalization(const ep::KernelInfo& info) {
    axis_ = info.attr_int("axis", -1);
    p_ = info.attr_int("p", 2);
    NXRT_EP_ENFORCE(p_ == 1 || p_ == 2,
                    "LpNormalization: p must be 1 or 2, got " + std::to_string(p_));
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    ep::Tensor y = ctx.output(0, shape, x.type());
    if (shape.empty()) {
      ep::Fail(NX_INVALID_ARGUMENT, "LpNormalization: X must have rank >= 1");
    }
    size_t axis = static_cast<size_t>(
        NormalizeAxis(axis_, static_cast<int64_t>(shape.size()), "LpNormalization"));
    int64_t outer = 1, len = shape[axis], inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      ParallelFor(ctx.threads(), outer * inner, 1024, [&](int64_t begin, int64_t end) {
        for (int64_t oi = begin; oi < end; ++oi) {
          int64_t o = oi / inner, i = oi % inner;
          const T* xs = xd + o * len * inner + i;
          T* ys = yd + o * len * inner + i;
          A norm = 0;
          for (int64_t k = 0; k < len; ++k) {
            A v = static_cast<A>(xs[k * inner]);
            norm += p_ == 2 ? v * v : std::abs(v);
          }
          if (p_ == 2) norm = std::sqrt(norm);
          // A zero vector stays zero instead of becoming 0/0.
          A inv = norm == A(0) ? A(0) : A(1) / norm;
          for (int64_t k = 0; k < len; ++k)
            ys[k * inner] = static_cast<T>(static_cast<A>(xs[k * inner]) * inv);
        }
      });
    });
  }

 private:
  int64_t axis_ = -1, p_ = 2;
};

class MeanVarianceNormalization : public ep::Kernel {
 public:
  explicit MeanVarianceNormalization(const ep::KernelInfo& info) {
    axes_ = info.attr_ints("axes", {0, 2, 3});
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<bool> reduced(rank, false);
    for (int64_t a : axes_) reduced[NormalizeAxis(a, rank, "MeanVarianceNormalization")] = true;
    // Group index of every element: its coordinates along the kept axes.
    std::vector<int64_t> group_stride(rank, 0);
    int64_t groups = 1;
    for (int64_t d = rank; d-- > 0;) {
      if (!reduced[d]) {
        group_stride[d] = groups;
        groups *= shape[d];
      }
    }
    int64_t total = static_cast<int64_t>(x.size());
    int64_t per_group = groups > 0 ? total / groups : 0;
    ep::Tensor y = ctx.output(0, shape, x.type());
    if (total == 0) return;
    DispatchFloat(x.type(), [&]<class T>() {
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      std::vector<double> sum(groups, 0.0), sum2(groups, 0.0);
      std::vector<int64_t> gid(total);
      std::vector<int64_t> idx(rank, 0);
      int64_t g = 0;
      for (int64_t i = 0; i < total; ++i) {
        gid[i] = g;
        double v = static_cast<double>(static_cast<AccOf<T>>(xd[i]));
        sum[g] += v;
        sum2[g] += v * v;
        for (int64_t d = rank; d-- > 0;) {
          g += group_stride[d];
          if (++idx[d] < shape[d]) break;
          g -= group_stride[d] * shape[d];
          idx[d] = 0;
        }
      }
      std::vector<double> mean(groups), denom(groups);
      for (int64_t k = 0; k < groups; ++k) {
        mean[k] = sum[k] / per_group;
        double var = std::max(0.0, sum2[k] / per_group - mean[k] * mean[k]);
        denom[k] = std::sqrt(var) + 1e-9;
      }
      for (int64_t i = 0; i < total; ++i) {
        double v = static_cast<double>(static_cast<AccOf<T>>(xd[i]));
        yd[i] = static_cast<T>(static_cast<AccOf<T>>((v - mean[gid[i]]) / denom[gid[i]]));
      }
    });
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

void RegisterLpNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("LpNormalization").Versions(1).Build<LpNormalization>(registry);
  ep::KernelDefBuilder("MeanVarianceNormalization")
      .Versions(9)
      .Build<MeanVarianceNormalization>(registry);
}

}  // namespace nxrt::cpu::nn
