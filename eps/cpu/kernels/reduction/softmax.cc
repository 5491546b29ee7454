// Softmax, LogSoftmax, Hardmax.
// Opset < 13 coerces the input to 2-D [prod(d[:axis]), prod(d[axis:])] and normalises rows;
// opset >= 13 normalises along `axis` alone. Both become [outer, n, inner]: n elements reduced,
// `inner` the distance between them. Numerically stable: exp(x - max) with the row maximum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/reduction/reduction_kernels.h"
#include "kernels/reduction/softmax_core.h"

namespace nxrt::cpu::reduction {
namespace {

template <Mode M>
class SoftmaxKernel : public ep::Kernel {
 public:
  explicit SoftmaxKernel(const ep::KernelInfo& info)
      : name_(info.op_type()),
        coerce_2d_(info.opset() < 13),
        axis_(info.attr_int("axis", info.opset() < 13 ? 1 : -1)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    // The 2-D coercion also accepts axis == rank (a single column per row).
    const int64_t hi = coerce_2d_ ? rank : rank - 1;
    NXRT_EP_ENFORCE(rank >= 1 && axis_ >= -rank && axis_ <= hi,
                    name_ + ": axis " + std::to_string(axis_) + " is out of range for rank " +
                        std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axis) {
        outer *= shape[i];
      } else if (i == axis || coerce_2d_) {
        n *= shape[i];
      } else {
        inner *= shape[i];
      }
    }
    ep::Tensor y = ctx.output(0, shape, x.type());
    if (outer * n * inner == 0) return;
    const int threads = ctx.threads();
    DispatchFloat(x.type(), [&]<class T>() {
      if constexpr (M == Mode::kHardmax) {
        Hardmax<T>(x.data<T>(), y.data<T>(), outer, n, inner, threads);
      } else {
        Normalize<M, T>(x.data<T>(), y.data<T>(), outer, n, inner, threads);
      }
    });
  }

 private:
  std::string name_;
  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void RegisterSoftmax(NxKernelRegistry* r) {
  const std::vector<NxElementType> types = {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16,
                                            NX_TYPE_BFLOAT16};
  ep::KernelDefBuilder("Softmax")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<SoftmaxKernel<Mode::kSoftmax>>(r);
  ep::KernelDefBuilder("LogSoftmax")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<SoftmaxKernel<Mode::kLogSoftmax>>(r);
  ep::KernelDefBuilder("Hardmax")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<SoftmaxKernel<Mode::kHardmax>>(r);
}

}  // namespace nxrt::cpu::reduction
