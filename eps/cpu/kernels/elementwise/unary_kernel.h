// A generic same-type unary kernel: y = op(x), elementwise.
//
// An op is a small struct:
//   static constexpr TypeSet kTypes = ...;          // which element types it accepts
//   explicit Op(const ep::KernelInfo&)               // reads attributes once
//   template <class C> C operator()(C x) const       // scalar, on the compute type
//   void Array(const float* x, float* y, int64_t n)  // optional float32 fast path
// The float fast path is also used for float16 / bfloat16 data, block by block.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <type_traits>

#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/half_arrays.h"

namespace nxrt::cpu::elementwise {

enum class TypeSet { kFloat, kSignedNumeric, kNumeric, kInteger };

// Calls fn.template operator()<T>() for `t`, which must be in `set`.
template <TypeSet kSet, class Fn>
void DispatchSet(NxElementType t, const char* op, Fn&& fn) {
  auto fail = [&] { UnsupportedType(op, t); };
  switch (t) {
    case NX_TYPE_FLOAT:
      if constexpr (kSet != TypeSet::kInteger) return fn.template operator()<float>();
      break;
    case NX_TYPE_DOUBLE:
      if constexpr (kSet != TypeSet::kInteger) return fn.template operator()<double>();
      break;
    case NX_TYPE_FLOAT16:
      if constexpr (kSet != TypeSet::kInteger) return fn.template operator()<Half>();
      break;
    case NX_TYPE_BFLOAT16:
      if constexpr (kSet != TypeSet::kInteger) return fn.template operator()<BFloat16>();
      break;
    case NX_TYPE_INT8:
      if constexpr (kSet != TypeSet::kFloat) return fn.template operator()<int8_t>();
      break;
    case NX_TYPE_INT16:
      if constexpr (kSet != TypeSet::kFloat) return fn.template operator()<int16_t>();
      break;
    case NX_TYPE_INT32:
      if constexpr (kSet != TypeSet::kFloat) return fn.template operator()<int32_t>();
      break;
    case NX_TYPE_INT64:
      if constexpr (kSet != TypeSet::kFloat) return fn.template operator()<int64_t>();
      break;
    case NX_TYPE_UINT8:
      if constexpr (kSet == TypeSet::kNumeric || kSet == TypeSet::kInteger)
        return fn.template operator()<uint8_t>();
      break;
    case NX_TYPE_UINT16:
      if constexpr (kSet == TypeSet::kNumeric || kSet == TypeSet::kInteger)
        return fn.template operator()<uint16_t>();
      break;
    case NX_TYPE_UINT32:
      if constexpr (kSet == TypeSet::kNumeric || kSet == TypeSet::kInteger)
        return fn.template operator()<uint32_t>();
      break;
    case NX_TYPE_UINT64:
      if constexpr (kSet == TypeSet::kNumeric || kSet == TypeSet::kInteger)
        return fn.template operator()<uint64_t>();
      break;
    default:
      break;
  }
  fail();
}

inline TypeList TypesOf(TypeSet s) {
  switch (s) {
    case TypeSet::kFloat:
      return FloatTypes();
    case TypeSet::kSignedNumeric:
      return SignedNumericTypes();
    case TypeSet::kNumeric:
      return NumericTypes();
    case TypeSet::kInteger:
      return IntTypes();
  }
  return {};
}

template <class Op>
concept HasFloatArray = requires(const Op& op, const float* x, float* y, int64_t n) {
  op.Array(x, y, n);
};

// The vectorised float path (float, or 16-bit floats through float blocks). A separate function
// rather than lambdas under `if constexpr`: clang 14 instantiates lambdas in discarded branches
// and would then look for Op::Array in ops that have none.
template <class T, HasFloatArray Op>
void UnaryFloatArray(const Op& op, int threads, const T* px, T* py, int64_t n) {
  ParallelFor(threads, n, kGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      op.Array(px + b, py + b, e - b);
    } else {
      ViaFloatBlocks(px + b, py + b, e - b,
                     [&](const float* in, float* out, int64_t m) { op.Array(in, out, m); });
    }
  });
}

template <class Op>
class UnaryKernel : public ep::Kernel {
 public:
  explicit UnaryKernel(const ep::KernelInfo& info) : op_(info), name_(info.op_type()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType type = x.type();
    ep::Tensor y = ctx.output(0, x.shape(), type);
    const int64_t n = static_cast<int64_t>(x.size());
    if (n == 0) return;
    DispatchSet<Op::kTypes>(type, name_.c_str(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int threads = ThreadsFor(ctx.threads(), n);
      if constexpr (HasFloatArray<Op> && (std::is_same_v<T, float> || kIsHalfLike<T>)) {
        UnaryFloatArray(op_, threads, px, py, n);
      } else {
        ParallelUnary(threads, px, py, n, op_);
      }
    });
  }

 private:
  Op op_;
  std::string name_;
};

// Registers UnaryKernel<Op> as `op` from opset `since`. MayInplace(0, 0): y[i] depends on x[i]
// only, so when x dies at this node the host may give y x's buffer (one buffer less to touch).
template <class Op>
void RegisterUnary(NxKernelRegistry* r, const char* op, int since, const char* domain = "") {
  ep::KernelDefBuilder(op, domain)
      .Versions(since)
      .Constraint("T", TypesOf(Op::kTypes), {-1}, {-1})
      .MayInplace(0, 0)
      .template Build<UnaryKernel<Op>>(r);
}

}  // namespace nxrt::cpu::elementwise
