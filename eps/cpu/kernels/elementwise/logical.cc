// Logical, comparison and bitwise binary ops with broadcasting: And, Or, Xor, Equal (including
// strings and bool), Less, Greater, LessOrEqual, GreaterOrEqual, BitShift, BitwiseAnd,
// BitwiseOr, BitwiseXor.
#include <string>
#include <string_view>
#include <type_traits>

#include "kernels/elementwise/binary_kernel.h"
#include "kernels/elementwise/elementwise_kernels.h"

namespace nxrt::cpu::elementwise {
namespace {

// ---- Boolean logic (bool storage is one byte holding 0 or 1) ------------------------------

template <class Op>
class BoolBinary : public ep::Kernel {
 public:
  explicit BoolBinary(const ep::KernelInfo& info) : name_(info.op_type()), legacy_(info) {}
  void Compute(ep::KernelContext& ctx) override {
    NXRT_EP_ENFORCE(ctx.input(0).type() == NX_TYPE_BOOL && ctx.input(1).type() == NX_TYPE_BOOL,
                    name_ + ": inputs must be bool");
    ComputeBinary<uint8_t, uint8_t, uint8_t>(ctx, name_.c_str(), NX_TYPE_BOOL, Op{}, &legacy_);
  }

 private:
  std::string name_;
  LegacyBroadcast legacy_;
};

struct AndOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a & b; }
};
struct OrOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a | b; }
};
struct XorOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a ^ b; }
};

// ---- Comparisons ------------------------------------------------------------------------------

#define NXRT_COMPARE_OP(NAME, EXPR)                      \
  struct NAME {                                          \
    explicit NAME(const ep::KernelInfo&) {}              \
    static constexpr TypeSet kTypes = TypeSet::kNumeric; \
    static constexpr bool kBoolOutput = true;            \
    template <class C>                                   \
    bool operator()(C a, C b) const {                    \
      return EXPR;                                       \
    }                                                    \
  };
NXRT_COMPARE_OP(LessOp, a < b)
NXRT_COMPARE_OP(GreaterOp, a > b)
NXRT_COMPARE_OP(LessOrEqualOp, a <= b)
NXRT_COMPARE_OP(GreaterOrEqualOp, a >= b)
NXRT_COMPARE_OP(EqualNumericOp, a == b)
#undef NXRT_COMPARE_OP

// Equal also takes bool and string inputs.
class Equal : public ep::Kernel {
 public:
  explicit Equal(const ep::KernelInfo& info) : numeric_(info), legacy_(info) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0), b = ctx.input(1);
    const NxElementType type = a.type();
    NXRT_EP_ENFORCE(b.type() == type, std::string("Equal: input types differ (") +
                                          ep::ElementTypeName(type) + " and " +
                                          ep::ElementTypeName(b.type()) + ")");
    if (type == NX_TYPE_BOOL) {
      ComputeBinary<uint8_t, uint8_t, uint8_t>(
          ctx, "Equal", NX_TYPE_BOOL, [](uint8_t x, uint8_t y) -> uint8_t { return x == y; },
          &legacy_);
    } else if (type == NX_TYPE_STRING) {
      auto plan = PlanBroadcast<2>({a.shape(), b.shape()}, "Equal");
      ep::Tensor y = ctx.output(0, plan.out_shape, NX_TYPE_BOOL);
      bool* py = y.data<bool>();
      const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
      // String access goes through the host: keep it on one thread.
      RunBroadcast(plan, 1, [&](int64_t oo, const int64_t* io, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          py[oo + i] = a.string(static_cast<size_t>(io[0] + i * sa)) ==
                       b.string(static_cast<size_t>(io[1] + i * sb));
        }
      });
    } else {
      numeric_.Compute(ctx);
    }
  }

 private:
  BinaryKernel<EqualNumericOp> numeric_;
  LegacyBroadcast legacy_;
};

// ---- Bitwise ----------------------------------------------------------------------------------

#define NXRT_BITWISE_OP(NAME, EXPR)                      \
  struct NAME {                                          \
    explicit NAME(const ep::KernelInfo&) {}              \
    static constexpr TypeSet kTypes = TypeSet::kInteger; \
    static constexpr bool kBoolOutput = false;           \
    template <class C>                                   \
    C operator()(C a, C b) const {                       \
      return static_cast<C>(EXPR);                       \
    }                                                    \
  };
NXRT_BITWISE_OP(BitwiseAndOp, a& b)
NXRT_BITWISE_OP(BitwiseOrOp, a | b)
NXRT_BITWISE_OP(BitwiseXorOp, a ^ b)
#undef NXRT_BITWISE_OP

// Shifts by a negative amount or by at least the bit width give what the sign fill alone
// produces: -1 for a right shift of a negative value, else 0. Right shifts of signed values are
// arithmetic; left shifts discard bits past the top (done unsigned, then reinterpreted).
struct BitShiftOp {
  explicit BitShiftOp(const ep::KernelInfo& info) {
    std::string dir = info.attr_string("direction", "");
    NXRT_EP_ENFORCE(dir == "LEFT" || dir == "RIGHT",
                    info.describe() + ": direction must be LEFT or RIGHT, got '" + dir + "'");
    left = dir == "LEFT";
  }
  static constexpr TypeSet kTypes = TypeSet::kInteger;
  static constexpr bool kBoolOutput = false;
  bool left = true;
  template <class C>
  C operator()(C x, C s) const {
    constexpr int kBits = static_cast<int>(sizeof(C) * 8);
    bool out_of_range = s >= C(kBits);
    if constexpr (std::is_signed_v<C>) out_of_range = out_of_range || s < 0;
    if (out_of_range) {
      if constexpr (std::is_signed_v<C>) {
        if (!left && x < 0) return C(-1);
      }
      return C(0);
    }
    if (left) {
      using U = WrapType<C>;
      return static_cast<C>(static_cast<U>(static_cast<std::make_unsigned_t<C>>(x)) << s);
    }
    return static_cast<C>(x >> s);
  }
};

}  // namespace

void RegisterLogicalKernels(NxKernelRegistry* r) {
  const TypeList kBool = {NX_TYPE_BOOL};
  ep::KernelDefBuilder("And")
      .Versions(1)
      .Constraint("T", kBool, {-1}, {0})
      .Build<BoolBinary<AndOp>>(r);
  ep::KernelDefBuilder("Or")
      .Versions(1)
      .Constraint("T", kBool, {-1}, {0})
      .Build<BoolBinary<OrOp>>(r);
  ep::KernelDefBuilder("Xor")
      .Versions(1)
      .Constraint("T", kBool, {-1}, {0})
      .Build<BoolBinary<XorOp>>(r);
  ep::KernelDefBuilder("Equal")
      .Versions(1)
      .Constraint("T", Concat(NumericTypes(), {NX_TYPE_BOOL, NX_TYPE_STRING}), {-1})
      .Constraint("T1", kBool, {}, {0})
      .Build<Equal>(r);
  RegisterBinary<LessOp>(r, "Less", 1);
  RegisterBinary<GreaterOp>(r, "Greater", 1);
  RegisterBinary<LessOrEqualOp>(r, "LessOrEqual", 12);
  RegisterBinary<GreaterOrEqualOp>(r, "GreaterOrEqual", 12);
  RegisterBinary<BitShiftOp>(r, "BitShift", 11);
  RegisterBinary<BitwiseAndOp>(r, "BitwiseAnd", 18);
  RegisterBinary<BitwiseOrOp>(r, "BitwiseOr", 18);
  RegisterBinary<BitwiseXorOp>(r, "BitwiseXor", 18);
}

}  // namespace nxrt::cpu::elementwise
