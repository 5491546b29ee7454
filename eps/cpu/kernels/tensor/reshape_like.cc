// Ops that keep the data and change only the shape: Reshape, Flatten, Squeeze and
// Unsqueeze. The output usually takes over the input's buffer (Alias); where the host gives it
// a buffer of its own (a caller-bound output, another memory), each is one (parallel) memcpy.
#include <algorithm>
#include <optional>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

// Output dims of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
Dims ReshapeDims(std::span<const int64_t> in, const Dims& spec, bool allowzero) {
  Dims out(spec.size());
  int64_t known = 1;
  std::optional<size_t> infer;
  bool has_zero = false;
  bool overflow = false;  // a hostile shape's product past int64 (harmless if a dim is 0)
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      NXRT_EP_ENFORCE(!infer, "Reshape: more than one -1 in shape " + ShapeToString(spec));
      infer = i;
      continue;
    }
    if (v == 0 && !allowzero) {
      NXRT_EP_ENFORCE(i < in.size(), "Reshape: shape " + ShapeToString(spec) + " copies dim " +
                                         std::to_string(i) + " (0) but the input " +
                                         ShapeToString(in) + " has no such dim");
      v = in[i];
    }
    NXRT_EP_ENFORCE(
        v >= 0, "Reshape: invalid dim " + std::to_string(v) + " in shape " + ShapeToString(spec));
    has_zero |= v == 0;
    out[i] = v;
    overflow |= __builtin_mul_overflow(known, v, &known);
  }
  if (has_zero) known = 0;
  NXRT_EP_ENFORCE(!overflow || has_zero, "Reshape: shape " + ShapeToString(spec) +
                                             " has more elements than int64 can count");
  int64_t total = ShapeSize(in);
  if (infer) {
    NXRT_EP_ENFORCE(!(allowzero && has_zero),
                    "Reshape: shape " + ShapeToString(spec) + " has both 0 and -1 with allowzero");
    NXRT_EP_ENFORCE(known != 0 && total % known == 0,
                    "Reshape: cannot infer the -1 dim of " + ShapeToString(spec) +
                        " for an input of shape " + ShapeToString(in));
    out[*infer] = total / known;
    known *= out[*infer];
  }
  NXRT_EP_ENFORCE(known == total, "Reshape: input of shape " + ShapeToString(in) + " (" +
                                      std::to_string(total) + " elements) cannot become " +
                                      ShapeToString(spec));
  return out;
}

class Reshape : public ep::Kernel {
 public:
  explicit Reshape(const ep::KernelInfo& info)
      : allowzero_(info.attr_int("allowzero", 0) != 0), shape_attr_(info.attr_ints("shape")) {
    from_attr_ = info.opset() < 5 || (!info.has_input(1) && info.has_attr("shape"));
  }
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims spec = from_attr_ ? Dims(shape_attr_) : ReadInts(ctx.input(1), "Reshape", "shape");
    CopyWithShape(ctx, x, ReshapeDims(x.shape(), spec, allowzero_));
  }

 private:
  bool allowzero_;
  bool from_attr_;
  std::vector<int64_t> shape_attr_;
};

class Flatten : public ep::Kernel {
 public:
  explicit Flatten(const ep::KernelInfo& info) : axis_(info.attr_int("axis", 1)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    int64_t rank = static_cast<int64_t>(s.size());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    NXRT_EP_ENFORCE(axis >= 0 && axis <= rank, "Flatten: axis " + std::to_string(axis_) +
                                                   " is out of range for rank " +
                                                   std::to_string(rank));
    int64_t dims[2] = {Product(s, 0, axis), Product(s, axis, s.size())};
    CopyWithShape(ctx, x, dims);
  }

 private:
  int64_t axis_;
};

// Axes come from an attribute (Squeeze/Unsqueeze before opset 13) or from input 1.
std::optional<Dims> AxesOf(ep::KernelContext& ctx, bool has_attr, const Dims& attr,
                           const char* op) {
  if (ctx.has_input(1)) return ReadInts(ctx.input(1), op, "axes");
  if (has_attr) return attr;
  return std::nullopt;
}

// An empty 'axes' attribute means "all size-1 axes", as if it were absent.
class Squeeze : public ep::Kernel {
 public:
  explicit Squeeze(const ep::KernelInfo& info)
      : has_attr_(!info.attr_ints("axes").empty()), attr_(info.attr_ints("axes")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    int64_t rank = static_cast<int64_t>(s.size());
    SmallVector<bool, 8> drop(s.size(), false);
    auto axes = AxesOf(ctx, has_attr_, attr_, "Squeeze");
    if (axes) {
      for (int64_t a : *axes) {
        int64_t k = NormalizeAxis(a, rank, "Squeeze");
        NXRT_EP_ENFORCE(s[k] == 1, "Squeeze: dim " + std::to_string(a) + " of input " +
                                       ShapeToString(s) + " is not 1");
        drop[k] = true;
      }
    } else {
      for (size_t k = 0; k < s.size(); ++k) drop[k] = s[k] == 1;
    }
    Dims out;
    for (size_t k = 0; k < s.size(); ++k)
      if (!drop[k]) out.push_back(s[k]);
    CopyWithShape(ctx, x, out);
  }

 private:
  bool has_attr_;
  std::vector<int64_t> attr_;
};

class Unsqueeze : public ep::Kernel {
 public:
  explicit Unsqueeze(const ep::KernelInfo& info)
      : has_attr_(info.has_attr("axes")), attr_(info.attr_ints("axes")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    auto axes = AxesOf(ctx, has_attr_, attr_, "Unsqueeze");
    NXRT_EP_ENFORCE(axes.has_value(), "Unsqueeze: 'axes' is required");
    int64_t out_rank = static_cast<int64_t>(s.size() + axes->size());
    SmallVector<bool, 8> inserted(out_rank, false);
    for (int64_t a : *axes) {
      int64_t k = NormalizeAxis(a, out_rank, "Unsqueeze");
      NXRT_EP_ENFORCE(!inserted[k], "Unsqueeze: axis " + std::to_string(a) + " is repeated");
      inserted[k] = true;
    }
    Dims out(out_rank);
    size_t src = 0;
    for (int64_t k = 0; k < out_rank; ++k) out[k] = inserted[k] ? 1 : s[src++];
    CopyWithShape(ctx, x, out);
  }

 private:
  bool has_attr_;
  std::vector<int64_t> attr_;
};

}  // namespace

// Alias(0, 0): the output is the input's data under another shape, so the host may hand the
// input's buffer out as the output (CopyWithShape then copies nothing).
void RegisterReshapeLike(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Reshape").Versions(1).Alias(0, 0).Build<Reshape>(r);
  ep::KernelDefBuilder("Flatten").Versions(1).Alias(0, 0).Build<Flatten>(r);
  ep::KernelDefBuilder("Squeeze").Versions(1).Alias(0, 0).Build<Squeeze>(r);
  ep::KernelDefBuilder("Unsqueeze").Versions(1).Alias(0, 0).Build<Unsqueeze>(r);
}

}  // namespace nxrt::cpu::tensor
