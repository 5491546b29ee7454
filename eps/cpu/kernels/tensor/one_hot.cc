// OneHot: output = off everywhere, then `on` at each valid index. Negative indices count from
// depth; indices outside [-depth, depth) leave their row all `off`, as the spec says.
#include <cmath>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class OneHot : public ep::Kernel {
 public:
  explicit OneHot(const ep::KernelInfo& info) : axis_(info.attr_int("axis", -1)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor indices = ctx.input(0), depth_t = ctx.input(1), values = ctx.input(2);
    double depth_d = ReadScalarDouble(depth_t, "OneHot", "depth");
    NXRT_EP_ENFORCE(std::isfinite(depth_d) && depth_d >= 1, "OneHot: depth must be >= 1");
    int64_t depth = static_cast<int64_t>(depth_d);
    NXRT_EP_ENFORCE(values.size() == 2, "OneHot: values must hold [off_value, on_value]");
    std::vector<int64_t> id = indices.shape_vector();
    int64_t out_rank = static_cast<int64_t>(id.size()) + 1;
    int64_t axis = NormalizeAxis(axis_, out_rank, "OneHot");
    std::vector<int64_t> out_dims = id;
    out_dims.insert(out_dims.begin() + axis, depth);
    ep::Tensor y = ctx.output(0, out_dims, values.type());
    int64_t outer = Product(id, 0, axis), inner = Product(id, axis, id.size());
    int64_t n = outer * inner;
    // Indices as int64 (float indices are truncated, like a cast).
    std::vector<int64_t> idx(n);
    if (IsIntegerType(indices.type())) {
      idx = ReadInts(indices, "OneHot", "indices");
    } else {
      DispatchFloat(indices.type(), [&]<class I>() {
        const I* p = indices.data<I>();
        for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int64_t>(static_cast<double>(p[i]));
      });
    }
    if (n * depth == 0) return;
    DispatchMove(values.type(), [&]<class T>() {
      InView<T> v(values);
      OutView<T> dst(y);
      T off = v.data()[0], on = v.data()[1];
      T* out = dst.data();
      std::fill_n(out, n * depth, off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = idx[o * inner + i];
          if (k < 0) k += depth;
          if (k >= 0 && k < depth) out[(o * depth + k) * inner + i] = on;
        }
      }
      dst.Commit();
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterOneHot(NxKernelRegistry* r) {
  ep::KernelDefBuilder("OneHot").Versions(9).Build<OneHot>(r);
}

}  // namespace nxrt::cpu::tensor
