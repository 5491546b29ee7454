// ReverseSequence: for batch b, the first sequence_lens[b] steps along the time axis are
// reversed and the rest copied. Time and batch are axes 0 and 1 (either order); every (t, b)
// pair moves one contiguous block of the remaining axes.
#include <cstring>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class ReverseSequence : public ep::Kernel {
 public:
  explicit ReverseSequence(const ep::KernelInfo& info)
      : batch_axis_(info.attr_int("batch_axis", 1)), time_axis_(info.attr_int("time_axis", 0)) {
    NXRT_EP_ENFORCE((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0),
                    "ReverseSequence: batch_axis and time_axis must be 0 and 1 (in either order)");
  }
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    std::vector<int64_t> dims = x.shape_vector();
    NXRT_EP_ENFORCE(dims.size() >= 2, "ReverseSequence: input must have rank >= 2");
    int64_t steps = dims[time_axis_], batch = dims[batch_axis_];
    std::vector<int64_t> lens = ReadInts(ctx.input(1), "ReverseSequence", "sequence_lens");
    NXRT_EP_ENFORCE(static_cast<int64_t>(lens.size()) == batch,
                    "ReverseSequence: sequence_lens has " + std::to_string(lens.size()) +
                        " entries for a batch of " + std::to_string(batch));
    for (int64_t l : lens) {
      NXRT_EP_ENFORCE(l >= 0 && l <= steps, "ReverseSequence: sequence length " +
                                                std::to_string(l) + " is outside [0, " +
                                                std::to_string(steps) + "]");
    }
    ep::Tensor y = ctx.output(0, dims, x.type());
    int64_t inner = Product(dims, 2, dims.size());
    if (steps * batch * inner == 0) return;
    // Element offset of block (t, b).
    int64_t ts = time_axis_ == 0 ? batch * inner : inner;
    int64_t bs = batch_axis_ == 0 ? steps * inner : inner;
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      const T* in = src.data();
      T* out = dst.data();
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < steps; ++t) {
          int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
          std::memcpy(out + t * ts + b * bs, in + from * ts + b * bs,
                      static_cast<size_t>(inner) * sizeof(T));
        }
      }
      dst.Commit();
    });
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

void RegisterReverseSequence(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ReverseSequence").Versions(10).Build<ReverseSequence>(r);
}

}  // namespace nxrt::cpu::tensor
