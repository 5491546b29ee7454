// CumSum and CumProd along one axis, with the exclusive and reverse flags. Lines along the axis
// are independent; they are walked with stride `inner` so no transpose is needed, and the
// innermost loop runs over the contiguous `inner` elements.
#include <type_traits>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

template <class T>
using ArithOf =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <bool kProduct>
class Cumulative : public ep::Kernel {
 public:
  explicit Cumulative(const ep::KernelInfo& info)
      : exclusive_(info.attr_int("exclusive", 0) != 0),
        reverse_(info.attr_int("reverse", 0) != 0) {}
  void Compute(ep::KernelContext& ctx) override {
    const char* op = kProduct ? "CumProd" : "CumSum";
    ep::ConstTensor x = ctx.input(0);
    std::vector<int64_t> dims = x.shape_vector();
    int64_t rank = static_cast<int64_t>(dims.size());
    NXRT_EP_ENFORCE(rank > 0, std::string(op) + ": input must have rank >= 1");
    int64_t axis = NormalizeAxis(ReadScalarInt(ctx.input(1), op, "axis"), rank, op);
    ep::Tensor y = ctx.output(0, dims, x.type());
    int64_t outer = Product(dims, 0, axis), n = dims[axis];
    int64_t inner = Product(dims, axis + 1, dims.size());
    if (outer * n * inner == 0) return;
    DispatchNumeric(x.type(), [&]<class T>() {
      using A = ArithOf<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const T identity = static_cast<T>(A(kProduct ? 1 : 0));
      ParallelFor(ctx.threads(), outer, std::max<int64_t>(1, 16384 / (n * inner)),
                  [&](int64_t b, int64_t e) {
                    std::vector<T> acc(inner);
                    for (int64_t o = b; o < e; ++o) {
                      std::fill(acc.begin(), acc.end(), identity);
                      for (int64_t s = 0; s < n; ++s) {
                        int64_t j = reverse_ ? n - 1 - s : s;
                        const T* ip = in + (o * n + j) * inner;
                        T* op_ = out + (o * n + j) * inner;
                        for (int64_t i = 0; i < inner; ++i) {
                          // The running value is kept in T and rounded at each step, as numpy does.
                          T next = kProduct ? static_cast<T>(A(acc[i]) * A(ip[i]))
                                            : static_cast<T>(A(acc[i]) + A(ip[i]));
                          op_[i] = exclusive_ ? acc[i] : next;
                          acc[i] = next;
                        }
                      }
                    }
                  });
    });
  }

 private:
  bool exclusive_, reverse_;
};

}  // namespace

void RegisterCumulative(NxKernelRegistry* r) {
  ep::KernelDefBuilder("CumSum")
      .Versions(11)
      .Constraint("T", NumericTypes(), {0}, {0})
      .Build<Cumulative<false>>(r);
  ep::KernelDefBuilder("CumProd")
      .Versions(26)
      .Constraint("T", NumericTypes(), {0}, {0})
      .Build<Cumulative<true>>(r);
}

}  // namespace nxrt::cpu::tensor
