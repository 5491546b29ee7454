// A generic binary kernel over two inputs of one element type with multidirectional
// broadcasting: y = op(a, b). An op is a struct with
//   static constexpr TypeSet kTypes;                 // accepted input types (unary_kernel.h)
//   static constexpr bool kBoolOutput;               // output is bool (comparisons) or T
//   explicit Op(const ep::KernelInfo&);
//   template <class C> auto operator()(C a, C b) const;   // on the compute type
#pragma once

#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <type_traits>

#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/unary_kernel.h"

namespace nxrt::cpu::elementwise {

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined in C++, and
// small unsigned types promote to int): done in an unsigned type at least as wide as int.
template <class C>
using WrapType =
    std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
template <class C>
inline C WrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<WrapType<C>>(a) + static_cast<WrapType<C>>(b));
  } else {
    return a + b;
  }
}
template <class C>
inline C WrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<WrapType<C>>(a) - static_cast<WrapType<C>>(b));
  } else {
    return a - b;
  }
}
template <class C>
inline C WrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<WrapType<C>>(a) * static_cast<WrapType<C>>(b));
  } else {
    return a * b;
  }
}

template <class Op>
class BinaryKernel : public ep::Kernel {
 public:
  explicit BinaryKernel(const ep::KernelInfo& info)
      : op_(info), name_(info.op_type()), legacy_(info) {}

  void Compute(ep::KernelContext& ctx) override {
    const NxElementType type = ctx.input(0).type();
    const NxElementType btype = ctx.input(1).type();
    if (btype != type) {
      ep::Fail(NX_INVALID_ARGUMENT, name_ + ": input types differ (" + ep::ElementTypeName(type) +
                                        " and " + ep::ElementTypeName(btype) + ")");
    }
    const NxElementType out_type = Op::kBoolOutput ? NX_TYPE_BOOL : type;
    DispatchSet<Op::kTypes>(type, name_.c_str(), [&]<class T>() {
      using Out = std::conditional_t<Op::kBoolOutput, bool, T>;
      ComputeBinary<T, T, Out>(ctx, name_.c_str(), out_type, op_, &legacy_);
    });
  }

 private:
  Op op_;
  std::string name_;
  LegacyBroadcast legacy_;
};

template <class Op>
void RegisterBinary(NxKernelRegistry* r, const char* op, int since) {
  if constexpr (Op::kBoolOutput) {
    ep::KernelDefBuilder(op)
        .Versions(since)
        .Constraint("T", TypesOf(Op::kTypes), {-1})
        .Constraint("T1", {NX_TYPE_BOOL}, {}, {0})
        .template Build<BinaryKernel<Op>>(r);
  } else {
    RegisterSameType<BinaryKernel<Op>>(r, op, since, TypesOf(Op::kTypes));
  }
}

}  // namespace nxrt::cpu::elementwise
