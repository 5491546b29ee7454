// Shape (with the opset-15 start/end window) and Size: both read only the input's metadata.
#include <algorithm>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class Shape : public ep::Kernel {
 public:
  explicit Shape(const ep::KernelInfo& info)
      : start_(info.attr_int("start", 0)),
        end_(info.has_attr("end") ? info.attr_int("end") : 0),
        has_end_(info.has_attr("end")) {}
  void Compute(ep::KernelContext& ctx) override {
    auto s = ctx.input(0).shape();
    int64_t rank = static_cast<int64_t>(s.size());
    // start/end are clamped to [0, rank] after adding rank to negative values.
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    int64_t b = clamp(start_);
    int64_t e = has_end_ ? clamp(end_) : rank;
    int64_t n = std::max<int64_t>(0, e - b);
    ep::Tensor y = ctx.output(0, {n}, NX_TYPE_INT64);
    if (n) std::copy(s.begin() + b, s.begin() + b + n, y.data<int64_t>());
  }

 private:
  int64_t start_, end_;
  bool has_end_;
};

class Size : public ep::Kernel {
 public:
  explicit Size(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::Tensor y = ctx.output(0, std::span<const int64_t>(), NX_TYPE_INT64);
    *y.data<int64_t>() = ShapeSize(ctx.input(0).shape());
  }
};

}  // namespace

void RegisterShapeSize(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Shape").Versions(1).Build<Shape>(r);
  ep::KernelDefBuilder("Size").Versions(1).Build<Size>(r);
}

}  // namespace nxrt::cpu::tensor
