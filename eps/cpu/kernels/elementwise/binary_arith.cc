// Arithmetic with broadcasting: Add, Sub, Mul, Div, Mod, PRelu.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/elementwise/binary_kernel.h"
#include "kernels/elementwise/elementwise_kernels.h"

namespace nxrt::cpu::elementwise {
namespace {

struct AddOp {
  explicit AddOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kBoolOutput = false;
  template <class C>
  C operator()(C a, C b) const {
    return WrapAdd(a, b);
  }
};

struct SubOp {
  explicit SubOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kBoolOutput = false;
  template <class C>
  C operator()(C a, C b) const {
    return WrapSub(a, b);
  }
};

struct MulOp {
  explicit MulOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kBoolOutput = false;
  template <class C>
  C operator()(C a, C b) const {
    return WrapMul(a, b);
  }
};

// Integer division truncates toward zero (C semantics, as the spec asks). Division by zero gives
// 0 (numpy's result) instead of trapping, and MIN / -1 wraps.
struct DivOp {
  explicit DivOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kBoolOutput = false;
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return WrapSub(C(0), a);
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// fmod = 1: remainder of truncated division (sign of a), std::fmod for floats.
// fmod = 0: remainder of floored division (sign of b), like numpy.mod / Python's %.
struct ModOp {
  explicit ModOp(const ep::KernelInfo& info) : fmod(info.attr_int("fmod", 0) != 0) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  static constexpr bool kBoolOutput = false;
  bool fmod;
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      if (!fmod) {
        if (r != 0) {
          if ((r < 0) != (b < 0)) r += b;
        } else {
          r = std::copysign(C(0), b);
        }
      }
      return r;
    }
  }
};

// PRelu: y = x < 0 ? slope * x : x, with slope broadcast to x's shape (unidirectional).
// Before opset 7 there was no broadcasting: a slope of C values is one per channel (axis 1).
class PRelu : public ep::Kernel {
 public:
  explicit PRelu(const ep::KernelInfo& info) : per_channel_slope_(info.since_version() < 7) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), slope = ctx.input(1);
    const NxElementType type = x.type();
    NXRT_EP_ENFORCE(slope.type() == type, std::string("PRelu: slope type ") +
                                              ep::ElementTypeName(slope.type()) +
                                              " differs from X type " + ep::ElementTypeName(type));
    const PlanDims xshape(x.shape());
    std::vector<int64_t> slope_dims = slope.shape_vector();
    if (per_channel_slope_ && slope_dims.size() == 1 && x.rank() >= 2 && slope_dims[0] > 1 &&
        slope_dims[0] == x.dim(1)) {
      slope_dims.assign(x.rank() - 1, 1);  // [C] -> [C, 1, ..., 1]: lines up with axis 1
      slope_dims[0] = x.dim(1);
    }
    auto plan =
        PlanBroadcast<2>({x.shape(), std::span<const int64_t>(slope_dims)}, "PRelu", &xshape);
    ep::Tensor y = ctx.output(0, xshape, type);
    if (plan.total == 0) return;
    DispatchSet<TypeSet::kNumeric>(type, "PRelu", [&]<class T>() {
      BinaryBroadcast(plan, ctx.threads(), x.data<T>(), slope.data<T>(), y.data<T>(),
                      [](auto v, auto s) {
                        if constexpr (std::is_unsigned_v<decltype(v)>) {
                          return v;  // never negative
                        } else {
                          return v < 0 ? WrapMul(s, v) : v;
                        }
                      });
    });
  }

 private:
  bool per_channel_slope_;
};

}  // namespace

void RegisterBinaryArithKernels(NxKernelRegistry* r) {
  RegisterBinary<AddOp>(r, "Add", 1);
  RegisterBinary<SubOp>(r, "Sub", 1);
  RegisterBinary<MulOp>(r, "Mul", 1);
  RegisterBinary<DivOp>(r, "Div", 1);
  RegisterBinary<ModOp>(r, "Mod", 10);
  TypeList prelu_types =
      Concat(FloatTypes(), {NX_TYPE_INT32, NX_TYPE_INT64, NX_TYPE_UINT32, NX_TYPE_UINT64});
  RegisterSameType<PRelu>(r, "PRelu", 1, prelu_types);
}

}  // namespace nxrt::cpu::elementwise
