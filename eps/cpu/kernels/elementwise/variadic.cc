// Variadic elementwise reductions over inputs with broadcasting: Max, Min, Sum, Mean.
// The first two inputs are combined straight into the output; each further input is folded in
// place (out = op(out, input_k)), so no temporary tensors are needed.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/elementwise/binary_kernel.h"
#include "kernels/elementwise/elementwise_kernels.h"

namespace nxrt::cpu::elementwise {
namespace {

// NaN wins in Max / Min, like numpy.maximum / numpy.minimum.
struct MaxOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kMean = false;
  template <class C>
  C operator()(C a, C b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct MinOp {
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kMean = false;
  template <class C>
  C operator()(C a, C b) const {
    return (a < b || a != a) ? a : b;
  }
};
struct SumOp {
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  static constexpr bool kMean = false;
  template <class C>
  C operator()(C a, C b) const {
    return a + b;
  }
};
struct MeanOp : SumOp {
  static constexpr bool kMean = true;
};

template <class Op>
class Variadic : public ep::Kernel {
 public:
  explicit Variadic(const ep::KernelInfo& info) : name_(info.op_type()) {}

  void Compute(ep::KernelContext& ctx) override {
    const size_t count = ctx.input_count();
    NXRT_EP_ENFORCE(count >= 1, name_ + ": needs at least one input");
    // Inputs by index: no per-run list of them.
    auto in = [&ctx](size_t i) { return ctx.input(i); };
    const NxElementType type = in(0).type();
    PlanDims out_shape(in(0).shape());
    for (size_t i = 1; i < count; ++i) {
      NXRT_EP_ENFORCE(in(i).type() == type, name_ + ": input " + std::to_string(i) + " has type " +
                                                ep::ElementTypeName(in(i).type()) + ", expected " +
                                                ep::ElementTypeName(type));
      try {
        out_shape = BroadcastShapes(out_shape, in(i).shape());
      } catch (const ep::Error& e) {
        ep::Fail(NX_INVALID_ARGUMENT, name_ + ": " + e.what());
      }
    }
    ep::Tensor y = ctx.output(0, out_shape, type);
    const int64_t total = ShapeSize(out_shape);
    if (total == 0) return;
    const int threads = ctx.threads();
    const Op op;
    DispatchSet<Op::kTypes>(type, name_.c_str(), [&]<class T>() {
      T* py = y.data<T>();
      if (count == 1) {
        auto plan = PlanBroadcast<1>({in(0).shape()}, name_.c_str(), &out_shape);
        const T* px = in(0).template data<T>();
        RunBroadcast(plan, threads, [&](int64_t oo, const int64_t* io, int64_t n) {
          if (plan.inner_stride(0) != 0) {
            std::memcpy(py + oo, px + io[0], sizeof(T) * n);
          } else {
            for (int64_t i = 0; i < n; ++i) py[oo + i] = px[io[0]];
          }
        });
      } else {
        auto plan = PlanBroadcast<2>({in(0).shape(), in(1).shape()}, name_.c_str(), &out_shape);
        BinaryBroadcast(plan, threads, in(0).template data<T>(), in(1).template data<T>(), py, op);
        for (size_t k = 2; k < count; ++k) {
          auto p = PlanBroadcast<2>({std::span<const int64_t>(out_shape), in(k).shape()},
                                    name_.c_str(), &out_shape);
          BinaryBroadcast(p, threads, static_cast<const T*>(py), in(k).template data<T>(), py, op);
        }
      }
      if constexpr (Op::kMean) {
        using C = ComputeT<T>;
        const C n = static_cast<C>(count);
        ParallelUnary(threads, py, py, total, [n](C v) { return v / n; });
      }
    });
  }

 private:
  std::string name_;
};

}  // namespace

void RegisterVariadicKernels(NxKernelRegistry* r) {
  RegisterSameType<Variadic<MaxOp>>(r, "Max", 1, TypesOf(MaxOp::kTypes));
  RegisterSameType<Variadic<MinOp>>(r, "Min", 1, TypesOf(MinOp::kTypes));
  RegisterSameType<Variadic<SumOp>>(r, "Sum", 1, TypesOf(SumOp::kTypes));
  RegisterSameType<Variadic<MeanOp>>(r, "Mean", 1, TypesOf(MeanOp::kTypes));
}

}  // namespace nxrt::cpu::elementwise
