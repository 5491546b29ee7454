// MaxUnpool: scatters pooled values back to the positions MaxPool's Indices output recorded;
// every other output element is zero.
#include <cstring>

#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class MaxUnpool : public ep::Kernel {
 public:
  explicit MaxUnpool(const ep::KernelInfo& info) {
    kernel_ = info.attr_ints("kernel_shape");
    NXRT_EP_ENFORCE(!kernel_.empty(), "MaxUnpool: attribute kernel_shape is required");
    size_t n = kernel_.size();
    strides_ = info.attr_ints("strides", std::vector<int64_t>(n, 1));
    pads_ = info.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    NXRT_EP_ENFORCE(strides_.size() == n && pads_.size() == 2 * n,
                    "MaxUnpool: strides/pads do not match kernel_shape");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor ind = ctx.input(1);
    auto xs = x.shape();
    size_t n = kernel_.size();
    NXRT_EP_ENFORCE(xs.size() == n + 2, "MaxUnpool: input rank " + std::to_string(xs.size()) +
                                            " does not match kernel_shape");
    NXRT_EP_ENFORCE(ind.size() == x.size() && ind.type() == NX_TYPE_INT64,
                    "MaxUnpool: I must be an int64 tensor of X's shape");
    // Indices address the unpooled shape implied by the attributes; an explicit output_shape
    // may only enlarge it, the extra elements staying zero (the values keep their coordinates).
    std::vector<int64_t> inferred = {xs[0], xs[1]};
    for (size_t i = 0; i < n; ++i) {
      inferred.push_back((xs[2 + i] - 1) * strides_[i] + kernel_[i] - pads_[i] - pads_[n + i]);
      NXRT_EP_ENFORCE(inferred.back() >= 0, "MaxUnpool: negative output dimension");
    }
    std::vector<int64_t> out_shape = inferred;
    if (auto os = ctx.optional_input(2); os && os->size() > 0) {
      out_shape = ReadInt64s(*os, "MaxUnpool output_shape");
      NXRT_EP_ENFORCE(out_shape.size() == xs.size(),
                      "MaxUnpool: output_shape must have the input's rank");
      for (size_t i = 0; i < out_shape.size(); ++i) {
        NXRT_EP_ENFORCE(out_shape[i] >= inferred[i],
                        "MaxUnpool: output_shape " + DimsToString(out_shape) +
                            " is smaller than the unpooled shape " + DimsToString(inferred));
      }
    }
    int64_t inferred_total = 1, total = 1;
    for (size_t i = 0; i < out_shape.size(); ++i) {
      inferred_total *= inferred[i];
      total *= out_shape[i];
    }
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    size_t elem = ElementSize(x.type());
    NXRT_EP_ENFORCE(elem > 0, "MaxUnpool: unsupported element type");
    std::memset(y.mutable_raw(), 0, static_cast<size_t>(total) * elem);
    const int64_t* idx = ind.data<int64_t>();
    bool same = out_shape == inferred;
    DispatchBySize(x.type(), [&]<class T>() {
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      for (size_t i = 0; i < x.size(); ++i) {
        int64_t at = idx[i];
        NXRT_EP_ENFORCE(at >= 0 && at < inferred_total,
                        "MaxUnpool: index " + std::to_string(at) + " is out of range");
        if (!same) {
          // Re-address the element: coordinates in the unpooled shape, offset in the output.
          int64_t rest = at, offset = 0, stride = 1;
          for (size_t d = out_shape.size(); d-- > 0;) {
            offset += (rest % inferred[d]) * stride;
            rest /= inferred[d];
            stride *= out_shape[d];
          }
          at = offset;
        }
        dst[at] = src[i];
      }
    });
  }

 private:
  std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

void RegisterMaxUnpoolKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MaxUnpool").Versions(9).Build<MaxUnpool>(registry);
}

}  // namespace nxrt::cpu::nn
