// Unary ops whose output type differs from, or is restricted compared with, the arithmetic
// ones: IsNaN, IsInf (float -> bool, including float8 inputs), Not (bool) and BitwiseNot.
#include <cmath>
#include <cstring>

#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/float_formats.h"
#include "kernels/elementwise/unary_kernel.h"

namespace nxrt::cpu::elementwise {
namespace {

// Classifies float8 codes directly from their bits.
inline bool Fp8IsNaN(uint8_t b, NxElementType t) {
  switch (t) {
    case NX_TYPE_FLOAT8E4M3FN:
      return (b & 0x7F) == 0x7F;
    case NX_TYPE_FLOAT8E5M2:
      return (b & 0x7F) > 0x7C;
    default:
      return b == 0x80;  // the FNUZ formats
  }
}
inline int Fp8InfSign(uint8_t b, NxElementType t) {  // +1 / -1 for an infinity, else 0
  if (t != NX_TYPE_FLOAT8E5M2 || (b & 0x7F) != 0x7C) return 0;
  return (b & 0x80) ? -1 : 1;
}

class IsNaN : public ep::Kernel {
 public:
  explicit IsNaN(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_BOOL);
    const int64_t n = static_cast<int64_t>(x.size());
    bool* py = y.data<bool>();
    const NxElementType t = x.type();
    if (MiniFloatOf(t) != nullptr) {
      const uint8_t* px = x.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) py[i] = Fp8IsNaN(px[i], t);
      return;
    }
    DispatchSet<TypeSet::kFloat>(t, "IsNaN", [&]<class T>() {
      ParallelUnary(ctx.threads(), x.data<T>(), py, n, [](auto v) { return v != v; });
    });
  }
};

class IsInf : public ep::Kernel {
 public:
  explicit IsInf(const ep::KernelInfo& info)
      : positive_(info.attr_int("detect_positive", 1) != 0),
        negative_(info.attr_int("detect_negative", 1) != 0) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_BOOL);
    const int64_t n = static_cast<int64_t>(x.size());
    bool* py = y.data<bool>();
    const NxElementType t = x.type();
    const bool pos = positive_, neg = negative_;
    if (MiniFloatOf(t) != nullptr) {
      const uint8_t* px = x.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) {
        int s = Fp8InfSign(px[i], t);
        py[i] = (s > 0 && pos) || (s < 0 && neg);
      }
      return;
    }
    DispatchSet<TypeSet::kFloat>(t, "IsInf", [&]<class T>() {
      ParallelUnary(ctx.threads(), x.data<T>(), py, n,
                    [pos, neg](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
    });
  }

 private:
  bool positive_, negative_;
};

class Not : public ep::Kernel {
 public:
  explicit Not(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_BOOL);
    // Work on bytes: bool storage is 0 / 1.
    const uint8_t* px = x.data<uint8_t>();
    uint8_t* py = y.data<uint8_t>();
    ParallelUnary(ctx.threads(), px, py, static_cast<int64_t>(x.size()),
                  [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
  }
};

struct BitwiseNotOp {
  explicit BitwiseNotOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kInteger;
  template <class C>
  C operator()(C x) const {
    return static_cast<C>(~x);
  }
};

}  // namespace

void RegisterPredicateKernels(NxKernelRegistry* r) {
  const TypeList floats_and_fp8 = Concat(FloatTypes(), Float8Types());
  ep::KernelDefBuilder("IsNaN")
      .Versions(9)
      .Constraint("T1", floats_and_fp8, {0})
      .Constraint("T2", {NX_TYPE_BOOL}, {}, {0})
      .Build<IsNaN>(r);
  ep::KernelDefBuilder("IsInf")
      .Versions(10)
      .Constraint("T1", floats_and_fp8, {0})
      .Constraint("T2", {NX_TYPE_BOOL}, {}, {0})
      .Build<IsInf>(r);
  RegisterSameType<Not>(r, "Not", 1, {NX_TYPE_BOOL});
  RegisterUnary<BitwiseNotOp>(r, "BitwiseNot", 18);
}

}  // namespace nxrt::cpu::elementwise
