// Pow with broadcasting and independent base / exponent types; the output has the base's type.
// Results follow numpy.power(base, exponent).astype(base type): integer ** integer is exact
// (wrapping) integer arithmetic, anything involving a float is computed in floating point.
#include <cmath>
#include <type_traits>

#include "kernels/elementwise/binary_kernel.h"
#include "kernels/elementwise/cast_convert.h"
#include "kernels/elementwise/elementwise_kernels.h"

namespace nxrt::cpu::elementwise {
namespace {

// base ** exp for integers by repeated squaring (wrapping). Negative exponents give the
// truncated reciprocal: 0 unless |base| == 1.
template <class A, class B>
inline A IntPow(A base, B exp) {
  if constexpr (std::is_signed_v<B>) {
    if (exp < 0) {
      if (base == 1) return A(1);
      if constexpr (std::is_signed_v<A>) {
        if (base == -1) return (exp & 1) ? A(-1) : A(1);
      }
      return A(0);
    }
  }
  A result = 1;
  while (exp != 0) {
    if (exp & 1) result = WrapMul(result, base);
    exp = static_cast<B>(exp >> 1);
    if (exp != 0) base = WrapMul(base, base);
  }
  return result;
}

struct PowOp {
  template <class CA, class CB>
  CA operator()(CA a, CB b) const {
    if constexpr (std::is_integral_v<CA> && std::is_integral_v<CB>) {
      return IntPow(a, b);
    } else if constexpr (std::is_same_v<CA, float> && std::is_same_v<CB, float>) {
      return std::pow(a, b);
    } else if constexpr (std::is_integral_v<CA>) {
      // int ** float: NaN (0 ** -inf... or a NaN exponent), inf and huge results have no integer
      // value; they become 0 or saturate (Cast's rules) instead of undefined behaviour.
      return SaturatingFloatToInt<CA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    } else {
      return static_cast<CA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

// Base types the spec allows.
template <class Fn>
void DispatchBase(NxElementType t, Fn&& fn) {
  switch (t) {
    case NX_TYPE_FLOAT:
      return fn.template operator()<float>();
    case NX_TYPE_DOUBLE:
      return fn.template operator()<double>();
    case NX_TYPE_FLOAT16:
      return fn.template operator()<Half>();
    case NX_TYPE_BFLOAT16:
      return fn.template operator()<BFloat16>();
    case NX_TYPE_INT32:
      return fn.template operator()<int32_t>();
    case NX_TYPE_INT64:
      return fn.template operator()<int64_t>();
    default:
      UnsupportedType("Pow base", t);
  }
}

class Pow : public ep::Kernel {
 public:
  explicit Pow(const ep::KernelInfo& info) : legacy_(info) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0), b = ctx.input(1);
    const PlanDims b_shape = legacy_.BShape(a.shape(), b.shape(), "Pow");
    auto plan = PlanBroadcast<2>({a.shape(), std::span<const int64_t>(b_shape)}, "Pow");
    ep::Tensor y = ctx.output(0, plan.out_shape, a.type());
    if (plan.total == 0) return;
    DispatchBase(a.type(), [&]<class TA>() {
      DispatchSet<TypeSet::kNumeric>(b.type(), "Pow exponent", [&]<class TB>() {
        const TA* pa = a.data<TA>();
        const TB* pb = b.data<TB>();
        TA* py = y.data<TA>();
        if constexpr (std::is_same_v<TA, float>) {
          // Common float fast paths with a single exponent value.
          if (b.size() == 1 && RunScalarExponent(plan, ctx.threads(), pa, As<double>(pb[0]), py)) {
            return;
          }
        }
        BinaryBroadcast(plan, ctx.threads(), pa, pb, py, PowOp{});
      });
    });
  }

 private:
  LegacyBroadcast legacy_;

  // x ** 1, 2, 3 over float data (squares are common in normalisation layers); false if `e`
  // is not one of them.
  static bool RunScalarExponent(const BroadcastPlan<2>& plan, int threads, const float* x, double e,
                                float* y) {
    if (e != 2.0 && e != 1.0 && e != 3.0) return false;
    // With a one-element exponent the output has the base's elements in the same order.
    const int64_t n = plan.total;
    ParallelFor(ThreadsFor(threads, n), n, kGrain, [&](int64_t b, int64_t end) {
      if (e == 2.0) {
        for (int64_t i = b; i < end; ++i) y[i] = x[i] * x[i];
      } else if (e == 3.0) {
        for (int64_t i = b; i < end; ++i) y[i] = x[i] * x[i] * x[i];
      } else {
        for (int64_t i = b; i < end; ++i) y[i] = x[i];
      }
    });
    return true;
  }
};

}  // namespace

void RegisterPowKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Pow")
      .Versions(1)
      .Constraint("T",
                  {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16, NX_TYPE_INT32,
                   NX_TYPE_INT64},
                  {0}, {0})
      .Constraint("T1", NumericTypes(), {1})
      .Build<Pow>(r);
}

}  // namespace nxrt::cpu::elementwise
