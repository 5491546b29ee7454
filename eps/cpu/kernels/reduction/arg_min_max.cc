// ArgMax / ArgMin (opsets 1-13+): index of the extreme value along one axis, int64 output.
// NaN counts as the extreme (like numpy, the reference): the first NaN wins, or the last one
// with select_last_index.
#include <cmath>
#include <cstdint>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/reduction/reduce_ops.h"
#include "kernels/reduction/reduction_kernels.h"
#include "kernels/reduction/vec_math.h"

namespace nxrt::cpu::reduction {
namespace {

// Whether v replaces the current best b.
template <bool kMax, bool kLast, class C>
inline bool Better(C v, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if constexpr (kLast) {
      if (std::isnan(v)) return true;
      if (std::isnan(b)) return false;
    } else {
      if (std::isnan(b)) return false;
      if (std::isnan(v)) return true;
    }
  }
  if constexpr (kMax) {
    return kLast ? v >= b : v > b;
  } else {
    return kLast ? v <= b : v < b;
  }
}

template <bool kMax, bool kLast, class T>
void ArgExtreme(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner, int threads) {
  using C = ComputeT<T>;
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) {
      // Vector pass for the extreme value, then a scan for its first (or last) position.
      ParallelFor(threads, outer, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const float* row = x + o * n;
          const float m = ExtremeOf<kMax>(row, n);
          auto hit = [&](int64_t i) { return std::isnan(m) ? std::isnan(row[i]) : row[i] == m; };
          int64_t at = 0;
          if constexpr (kLast) {
            at = n - 1;
            while (at > 0 && !hit(at)) --at;
          } else {
            while (at < n - 1 && !hit(at)) ++at;
          }
          y[o] = at;
        }
      });
      return;
    }
  }
  if (inner == 1) {
    ParallelFor(threads, outer, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * n;
        C best = static_cast<C>(row[0]);
        int64_t at = 0;
        for (int64_t i = 1; i < n; ++i) {
          C v = static_cast<C>(row[i]);
          if (Better<kMax, kLast>(v, best)) {
            best = v;
            at = i;
          }
        }
        y[o] = at;
      }
    });
    return;
  }
  // Axis not last: compare whole rows of `inner` elements so loads stay contiguous.
  ParallelFor(threads, outer, std::max<int64_t>(1, 16384 / (n * inner)), [&](int64_t b, int64_t e) {
    std::unique_ptr<C[]> best(new C[inner]);
    for (int64_t o = b; o < e; ++o) {
      const T* block = x + o * n * inner;
      int64_t* yo = y + o * inner;
      for (int64_t j = 0; j < inner; ++j) {
        best[j] = static_cast<C>(block[j]);
        yo[j] = 0;
      }
      for (int64_t i = 1; i < n; ++i) {
        const T* row = block + i * inner;
        for (int64_t j = 0; j < inner; ++j) {
          C v = static_cast<C>(row[j]);
          if (Better<kMax, kLast>(v, best[j])) {
            best[j] = v;
            yo[j] = i;
          }
        }
      }
    }
  });
}

template <bool kMax>
class ArgKernel : public ep::Kernel {
 public:
  explicit ArgKernel(const ep::KernelInfo& info)
      : name_(info.op_type()),
        axis_(info.attr_int("axis", 0)),
        keepdims_(info.attr_int("keepdims", 1) != 0),
        last_(info.attr_int("select_last_index", 0) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    NXRT_EP_ENFORCE(rank >= 1, name_ + ": input must have rank >= 1");
    NXRT_EP_ENFORCE(axis_ >= -rank && axis_ < rank, name_ + ": axis " + std::to_string(axis_) +
                                                        " is out of range for rank " +
                                                        std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1, inner = 1;
    std::vector<int64_t> out_shape;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axis) outer *= shape[i];
      if (i > axis) inner *= shape[i];
      if (i != axis)
        out_shape.push_back(shape[i]);
      else if (keepdims_)
        out_shape.push_back(1);
    }
    const int64_t n = shape[axis];
    ep::Tensor y = ctx.output(0, out_shape, NX_TYPE_INT64);
    if (outer * inner == 0) return;
    NXRT_EP_ENFORCE(n > 0, name_ + ": cannot take the index of an extreme over an empty axis");
    const int threads = ctx.threads();
    int64_t* out = y.data<int64_t>();
    DispatchNumeric(x.type(), [&]<class T>() {
      if (last_) {
        ArgExtreme<kMax, true>(x.data<T>(), out, outer, n, inner, threads);
      } else {
        ArgExtreme<kMax, false>(x.data<T>(), out, outer, n, inner, threads);
      }
    });
  }

 private:
  std::string name_;
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

}  // namespace

void RegisterArgMinMax(NxKernelRegistry* r) {
  const std::vector<NxElementType> types = {NX_TYPE_FLOAT,    NX_TYPE_DOUBLE, NX_TYPE_FLOAT16,
                                            NX_TYPE_BFLOAT16, NX_TYPE_INT8,   NX_TYPE_UINT8,
                                            NX_TYPE_INT16,    NX_TYPE_UINT16, NX_TYPE_INT32,
                                            NX_TYPE_UINT32,   NX_TYPE_INT64,  NX_TYPE_UINT64};
  ep::KernelDefBuilder("ArgMax").Versions(1).Constraint("T", types, {0}).Build<ArgKernel<true>>(r);
  ep::KernelDefBuilder("ArgMin").Versions(1).Constraint("T", types, {0}).Build<ArgKernel<false>>(r);
}

}  // namespace nxrt::cpu::reduction
