// Concat and Split. Both are strided copies where every row of the outer axes is one contiguous
// run of (size along axis) x (inner size) elements on the concatenated side.
#include <numeric>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class Concat : public ep::Kernel {
 public:
  explicit Concat(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", info.opset() < 4 ? 1 : 0)) {
    NXRT_EP_ENFORCE(info.opset() < 4 || info.has_attr("axis"),
                    "Concat: missing required attribute 'axis'");
  }
  void Compute(ep::KernelContext& ctx) override {
    // Inputs by index (no per-run list of them): the first present one sets rank and type.
    const size_t count = ctx.input_count();
    size_t first = 0;
    while (first < count && !ctx.has_input(first)) ++first;
    NXRT_EP_ENFORCE(first < count, "Concat: no inputs");
    const ep::ConstTensor head = ctx.input(first);
    Dims out_dims(head.shape());
    int64_t rank = static_cast<int64_t>(out_dims.size());
    NXRT_EP_ENFORCE(rank > 0, "Concat: inputs must have rank >= 1");
    int64_t axis = NormalizeAxis(axis_, rank, "Concat");
    NxElementType type = head.type();
    out_dims[axis] = 0;
    for (size_t i = first; i < count; ++i) {
      if (!ctx.has_input(i)) continue;
      const ep::ConstTensor t = ctx.input(i);
      auto s = t.shape();
      NXRT_EP_ENFORCE(t.type() == type, "Concat: inputs have different element types");
      bool ok = static_cast<int64_t>(s.size()) == rank;
      for (int64_t k = 0; ok && k < rank; ++k) ok = k == axis || s[k] == out_dims[k];
      NXRT_EP_ENFORCE(ok, "Concat: input shape " + ShapeToString(s) + " does not match " +
                              ShapeToString(head.shape()) + " outside axis " +
                              std::to_string(axis));
      out_dims[axis] += s[axis];
    }
    ep::Tensor y = ctx.output(0, out_dims, type);
    const Dims out_strides = StridesOf(out_dims);
    DispatchMove(type, [&]<class T>() {
      OutView<T> dst(y);
      int64_t offset = 0;
      for (size_t i = first; i < count; ++i) {
        if (!ctx.has_input(i)) continue;
        const ep::ConstTensor t = ctx.input(i);
        const auto dims = t.shape();
        if (ShapeSize(dims) != 0) {
          InView<T> src(t);
          StridedCopy<T>(src.data(), dst.data() + offset * out_strides[axis], Dims(dims),
                         StridesOf(dims), out_strides, ctx.threads());
        }
        offset += dims[axis];
      }
      dst.Commit();
    });
  }

 private:
  int64_t axis_;
};

class Split : public ep::Kernel {
 public:
  explicit Split(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", 0)),
        has_split_attr_(info.has_attr("split")),
        split_attr_(info.attr_ints("split")),
        num_outputs_(info.attr_int("num_outputs", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const Dims in_dims(x.shape());
    int64_t rank = static_cast<int64_t>(in_dims.size());
    NXRT_EP_ENFORCE(rank > 0, "Split: input must have rank >= 1");
    int64_t axis = NormalizeAxis(axis_, rank, "Split");
    int64_t dim = in_dims[axis];
    size_t outputs = ctx.output_count();
    Dims sizes;
    if (ctx.has_input(1)) {
      sizes = ReadInts(ctx.input(1), "Split", "split");
    } else if (has_split_attr_) {
      sizes = split_attr_;
    } else {
      // Equal parts; since opset 18 the last chunk may be smaller (ceil-sized chunks).
      int64_t n = num_outputs_ > 0 ? num_outputs_ : static_cast<int64_t>(outputs);
      NXRT_EP_ENFORCE(n > 0, "Split: no outputs");
      int64_t chunk = (dim + n - 1) / n;
      int64_t left = dim;
      for (int64_t i = 0; i < n; ++i) {
        sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
        left -= sizes.back();
      }
    }
    NXRT_EP_ENFORCE(sizes.size() == outputs, "Split: " + std::to_string(sizes.size()) +
                                                 " split sizes for " + std::to_string(outputs) +
                                                 " outputs");
    int64_t total = 0;
    for (int64_t v : sizes) {
      NXRT_EP_ENFORCE(v >= 0, "Split: negative split size " + std::to_string(v));
      total += v;
    }
    NXRT_EP_ENFORCE(total == dim, "Split: split sizes " + ShapeToString(sizes) + " sum to " +
                                      std::to_string(total) + ", not the axis size " +
                                      std::to_string(dim));
    const Dims in_strides = StridesOf(in_dims);
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      int64_t offset = 0;
      for (size_t i = 0; i < outputs; ++i) {
        Dims dims = in_dims;
        dims[axis] = sizes[i];
        ep::Tensor y = ctx.output(i, dims, x.type());
        OutView<T> dst(y);
        if (ShapeSize(dims) != 0) {
          StridedCopy<T>(src.data() + offset * in_strides[axis], dst.data(), dims, in_strides,
                         StridesOf(dims), ctx.threads());
        }
        dst.Commit();
        offset += sizes[i];
      }
    });
  }

 private:
  int64_t axis_;
  bool has_split_attr_;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_;
};

}  // namespace

void RegisterConcatSplit(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Concat").Versions(1).Build<Concat>(r);
  ep::KernelDefBuilder("Split").Versions(1).Build<Split>(r);
}

}  // namespace nxrt::cpu::tensor
