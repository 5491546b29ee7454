// The Reduce* kernel: reads axes (attribute in older opsets, optional input later), keepdims and
// noop_with_empty_axes, builds a ReducePlan and runs an accumulator policy over it.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/dispatch.h"
#include "kernels/reduction/reduce_engine.h"
#include "kernels/reduction/reduce_ops.h"
#include "kernels/reduction/reduce_plan.h"

namespace nxrt::cpu::reduction {

// Element types the Reduce* kernels accept (bool only for Max/Min).
inline std::vector<NxElementType> ReduceTypes(bool with_bool) {
  std::vector<NxElementType> t = {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16,
                                  NX_TYPE_INT8,  NX_TYPE_UINT8,  NX_TYPE_INT16,   NX_TYPE_UINT16,
                                  NX_TYPE_INT32, NX_TYPE_UINT32, NX_TYPE_INT64,   NX_TYPE_UINT64};
  if (with_bool) t.push_back(NX_TYPE_BOOL);
  return t;
}

// Reads a 1-D int64 (or int32) tensor of axes / indices.
inline Dims ReadInt64s(const ep::ConstTensor& t, const std::string& op, const char* what) {
  Dims out(t.size());
  if (t.type() == NX_TYPE_INT64) {
    const int64_t* p = t.data<int64_t>();
    out.assign(p, p + t.size());
  } else if (t.type() == NX_TYPE_INT32) {
    const int32_t* p = t.data<int32_t>();
    out.assign(p, p + t.size());
  } else {
    ep::Fail(NX_INVALID_ARGUMENT,
             op + " " + what + " must be int64, got " + ep::ElementTypeName(t.type()));
  }
  return out;
}

// Op is a policy template (SumOp, MaxOp, ...); axes become an input from `kAxesInputSince`.
template <template <class> class Op, int kAxesInputSince, bool kBool>
class ReduceKernel : public ep::Kernel {
 public:
  explicit ReduceKernel(const ep::KernelInfo& info)
      : name_(info.op_type()),
        axes_input_(info.opset() >= kAxesInputSince),
        keepdims_(info.attr_int("keepdims", 1) != 0),
        noop_(info.attr_int("noop_with_empty_axes", 0) != 0),
        axes_attr_(info.attr_ints("axes")) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims axes(axes_attr_);
    if (axes_input_) {
      if (auto a = ctx.optional_input(1)) axes = ReadInt64s(*a, name_, "axes");
    }
    const auto shape = x.shape();
    SmallVector<bool, 8> flags;
    if (axes.empty()) {
      // No axes: reduce everything, or (noop_with_empty_axes) nothing, which maps each element
      // through the op on its own (e.g. ReduceSumSquare squares).
      flags.assign(shape.size(), !noop_);
    } else {
      flags = ReducedAxisFlags(axes, shape.size(), name_);
    }
    ReducePlan plan = MakeReducePlan(shape, flags, keepdims_);
    ep::Tensor y = ctx.output(0, plan.out_shape, x.type());
    const int threads = ctx.threads();
    Dispatch(x.type(), [&]<class T>() {
      RunReduce<Op<T>>(plan, plan.in_count ? x.data<T>() : nullptr, y.data<T>(), threads);
    });
  }

 private:
  template <class Fn>
  void Dispatch(NxElementType t, Fn&& fn) const {
    if constexpr (kBool) {
      if (t == NX_TYPE_BOOL) return fn.template operator()<bool>();
    }
    if (t == NX_TYPE_BOOL) UnsupportedType(name_.c_str(), t);
    DispatchNumeric(t, fn);
  }

  std::string name_;
  bool axes_input_;
  bool keepdims_;
  bool noop_;
  std::vector<int64_t> axes_attr_;
};

}  // namespace nxrt::cpu::reduction
