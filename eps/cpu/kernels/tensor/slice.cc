// Slice (attributes before opset 10, inputs starts/ends/axes/steps since). Each axis becomes a
// (start, step, count) triple; the copy is a strided copy with strides scaled by the steps, so
// negative steps simply walk backwards.
#include <algorithm>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class Slice : public ep::Kernel {
 public:
  explicit Slice(const ep::KernelInfo& info)
      : from_attrs_(info.opset() < 10),
        starts_(info.attr_ints("starts")),
        ends_(info.attr_ints("ends")),
        has_axes_(info.has_attr("axes")),
        axes_(info.attr_ints("axes")) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims in_dims = Dims(x.shape());
    int64_t rank = static_cast<int64_t>(in_dims.size());
    Dims starts, ends, axes, steps;
    bool has_axes;
    if (from_attrs_) {
      starts = starts_;
      ends = ends_;
      has_axes = has_axes_;
      axes = axes_;
    } else {
      starts = ReadInts(ctx.input(1), "Slice", "starts");
      ends = ReadInts(ctx.input(2), "Slice", "ends");
      has_axes = ctx.has_input(3);
      if (has_axes) axes = ReadInts(ctx.input(3), "Slice", "axes");
      if (ctx.has_input(4)) steps = ReadInts(ctx.input(4), "Slice", "steps");
    }
    NXRT_EP_ENFORCE(starts.size() == ends.size(), "Slice: starts and ends have different lengths");
    if (!has_axes) {
      axes.resize(starts.size());
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    NXRT_EP_ENFORCE(axes.size() == starts.size() && steps.size() == starts.size(),
                    "Slice: starts, ends, axes and steps must have the same length");

    Dims first(rank, 0), step(rank, 1), out_dims = in_dims;
    SmallVector<bool, 8> seen(rank, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = NormalizeAxis(axes[i], rank, "Slice");
      NXRT_EP_ENFORCE(!seen[a], "Slice: axis " + std::to_string(axes[i]) + " is repeated");
      seen[a] = true;
      int64_t dim = in_dims[a], st = steps[i];
      NXRT_EP_ENFORCE(st != 0, "Slice: step must not be 0");
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      int64_t count;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count = e > s ? (e - s + st - 1) / st : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count = s > e ? (s - e + (-st) - 1) / (-st) : 0;
      }
      first[a] = s;
      step[a] = st;
      out_dims[a] = count;
    }
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    if (ShapeSize(out_dims) == 0) return;
    Dims in_strides = StridesOf(in_dims), ss(rank);
    int64_t offset = 0;
    for (int64_t k = 0; k < rank; ++k) {
      offset += first[k] * in_strides[k];
      ss[k] = in_strides[k] * step[k];
    }
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      StridedCopy<T>(src.data() + offset, dst.data(), out_dims, ss, StridesOf(out_dims),
                     ctx.threads());
      dst.Commit();
    });
  }

 private:
  bool from_attrs_;
  std::vector<int64_t> starts_, ends_;
  bool has_axes_;
  std::vector<int64_t> axes_;
};

}  // namespace

void RegisterSlice(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Slice").Versions(1).Build<Slice>(r);
}

}  // namespace nxrt::cpu::tensor
