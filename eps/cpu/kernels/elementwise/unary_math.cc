// Elementwise math functions: Abs, Neg, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round, Sign,
// Erf and the trigonometric / hyperbolic family.
#include <cmath>
#include <type_traits>

#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/unary_kernel.h"
#include "kernels/elementwise/vec_math.h"

namespace nxrt::cpu::elementwise {
namespace {

// Ops without attributes share this constructor.
struct NoAttrs {
  explicit NoAttrs(const ep::KernelInfo&) {}
};

struct AbsOp : NoAttrs {
  using NoAttrs::NoAttrs;
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (std::is_floating_point_v<C>) {
      return std::fabs(x);
    } else {
      return x < 0 ? static_cast<C>(-x) : x;  // wraps for the most negative value, like numpy
    }
  }
};

struct NegOp : NoAttrs {
  using NoAttrs::NoAttrs;
  static constexpr TypeSet kTypes = TypeSet::kSignedNumeric;
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      // Negate in the unsigned domain: the most negative value wraps instead of overflowing.
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(U(0) - static_cast<U>(x));
    } else {
      return -x;
    }
  }
};

#define NXRT_FLOAT_UNARY(NAME, EXPR)                   \
  struct NAME : NoAttrs {                              \
    using NoAttrs::NoAttrs;                            \
    static constexpr TypeSet kTypes = TypeSet::kFloat; \
    template <class C>                                 \
    C operator()(C x) const {                          \
      return EXPR;                                     \
    }                                                  \
  };

NXRT_FLOAT_UNARY(LogOp, std::log(x))
NXRT_FLOAT_UNARY(SqrtOp, std::sqrt(x))
NXRT_FLOAT_UNARY(ReciprocalOp, C(1) / x)
NXRT_FLOAT_UNARY(FloorOp, std::floor(x))
NXRT_FLOAT_UNARY(CeilOp, std::ceil(x))
// The default floating-point environment rounds to nearest even, which is what Round wants.
NXRT_FLOAT_UNARY(RoundOp, std::nearbyint(x))
NXRT_FLOAT_UNARY(SinOp, std::sin(x))
NXRT_FLOAT_UNARY(CosOp, std::cos(x))
NXRT_FLOAT_UNARY(TanOp, std::tan(x))
NXRT_FLOAT_UNARY(AsinOp, std::asin(x))
NXRT_FLOAT_UNARY(AcosOp, std::acos(x))
NXRT_FLOAT_UNARY(AtanOp, std::atan(x))
NXRT_FLOAT_UNARY(SinhOp, std::sinh(x))
NXRT_FLOAT_UNARY(CoshOp, std::cosh(x))
NXRT_FLOAT_UNARY(AsinhOp, std::asinh(x))
NXRT_FLOAT_UNARY(AcoshOp, std::acosh(x))
NXRT_FLOAT_UNARY(AtanhOp, std::atanh(x))
#undef NXRT_FLOAT_UNARY

struct ExpOp : NoAttrs {
  using NoAttrs::NoAttrs;
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return std::exp(x);
  }
  void Array(const float* x, float* y, int64_t n) const { ExpArray(x, y, n); }
};

struct ErfOp : NoAttrs {
  using NoAttrs::NoAttrs;
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return std::erf(x);
  }
  void Array(const float* x, float* y, int64_t n) const { ErfArray(x, y, n); }
};

struct SignOp : NoAttrs {
  using NoAttrs::NoAttrs;
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (x != x) return x;  // NaN stays NaN
    }
    if constexpr (std::is_unsigned_v<C>) {
      return x > 0 ? C(1) : C(0);
    } else {
      return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0));
    }
  }
};

}  // namespace

void RegisterUnaryMathKernels(NxKernelRegistry* r) {
  RegisterUnary<AbsOp>(r, "Abs", 1);
  RegisterUnary<NegOp>(r, "Neg", 1);
  RegisterUnary<ExpOp>(r, "Exp", 1);
  RegisterUnary<LogOp>(r, "Log", 1);
  RegisterUnary<SqrtOp>(r, "Sqrt", 1);
  RegisterUnary<ReciprocalOp>(r, "Reciprocal", 1);
  RegisterUnary<FloorOp>(r, "Floor", 1);
  RegisterUnary<CeilOp>(r, "Ceil", 1);
  RegisterUnary<RoundOp>(r, "Round", 11);
  RegisterUnary<SignOp>(r, "Sign", 9);
  RegisterUnary<ErfOp>(r, "Erf", 9);
  RegisterUnary<SinOp>(r, "Sin", 7);
  RegisterUnary<CosOp>(r, "Cos", 7);
  RegisterUnary<TanOp>(r, "Tan", 7);
  RegisterUnary<AsinOp>(r, "Asin", 7);
  RegisterUnary<AcosOp>(r, "Acos", 7);
  RegisterUnary<AtanOp>(r, "Atan", 7);
  RegisterUnary<SinhOp>(r, "Sinh", 9);
  RegisterUnary<CoshOp>(r, "Cosh", 9);
  RegisterUnary<AsinhOp>(r, "Asinh", 9);
  RegisterUnary<AcoshOp>(r, "Acosh", 9);
  RegisterUnary<AtanhOp>(r, "Atanh", 9);
}

}  // namespace nxrt::cpu::elementwise
