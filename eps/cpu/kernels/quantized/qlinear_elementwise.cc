// QLinearAdd, QLinearMul (broadcasting binary) and QLinearSigmoid, QLinearLeakyRelu (unary),
// com.microsoft version 1, on int8 or uint8 tensors with per-tensor scales and zero points.
//
// Binary ops compute in float from the integer values with the zero points removed:
//   Add: c = (a - za) * (sa / sc) + (b - zb) * (sb / sc)
//   Mul: c = (a - za) * (b - zb) * (sa * sb / sc)
// then round half to even, add zc and saturate. Unary ops have only 256 possible inputs, so each
// run builds a 256-entry table: dequantize, apply the function in float, quantize.
#include <cmath>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

enum class BinaryOp { kAdd, kMul };

template <BinaryOp kOp>
class QLinearBinary : public ep::Kernel {
 public:
  explicit QLinearBinary(const ep::KernelInfo& info) : op_(info.describe()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0), b = ctx.input(3);
    const NxElementType t = a.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t) && b.type() == t,
                    op_ + ": A and B must both be int8 or both uint8");
    const QParams qa = ReadQParams(ctx, 1, 2, t, op_ + ": A");
    const QParams qb = ReadQParams(ctx, 4, 5, t, op_ + ": B");
    const QParams qc = ReadQParams(ctx, 6, 7, t, op_ + ": C");
    const Dims out_shape = BroadcastShapes(a.shape(), b.shape());
    ep::Tensor c = ctx.output(0, out_shape, t);
    const Dims sa_dims = BroadcastStrides(a.shape(), out_shape);
    const Dims sb_dims = BroadcastStrides(b.shape(), out_shape);
    const std::vector<int64_t> strides[2] = {{sa_dims.begin(), sa_dims.end()},
                                             {sb_dims.begin(), sb_dims.end()}};
    const float ratio_a = qa.scale / qc.scale, ratio_b = qb.scale / qc.scale;
    const float mul_scale = qa.scale * qb.scale / qc.scale;
    const void* pa = a.raw();
    const void* pb = b.raw();
    void* pc = c.mutable_raw();
    const float za = static_cast<float>(qa.zero_point), zb = static_cast<float>(qb.zero_point);
    ForEachBroadcastRun<2>(
        out_shape, strides,
        [&](int64_t out, const int64_t* offs, int64_t count, const int64_t* inc) {
          for (int64_t i = 0; i < count; ++i) {
            const float va = static_cast<float>(LoadQ(pa, t, offs[0] + i * inc[0])) - za;
            const float vb = static_cast<float>(LoadQ(pb, t, offs[1] + i * inc[1])) - zb;
            const float v =
                kOp == BinaryOp::kAdd ? va * ratio_a + vb * ratio_b : va * vb * mul_scale;
            StoreQ(v, qc.zero_point, t, pc, out + i);
          }
        });
  }

 private:
  std::string op_;
};

enum class UnaryOp { kSigmoid, kLeakyRelu };

template <UnaryOp kOp>
class QLinearLookup : public ep::Kernel {
 public:
  explicit QLinearLookup(const ep::KernelInfo& info) : op_(info.describe()) {
    alpha_ = info.attr_float("alpha", 0.01f);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t), op_ + ": X must be int8 or uint8");
    const QParams qx = ReadQParams(ctx, 1, 2, t, op_ + ": X");
    const QParams qy = ReadQParams(ctx, 3, 4, t, op_ + ": Y");
    // table[code] for code = stored byte (an int8 value v is stored at index uint8_t(v)).
    uint8_t table[256];
    for (int code = 0; code < 256; ++code) {
      const int32_t v = t == NX_TYPE_INT8 ? int32_t(static_cast<int8_t>(code)) : code;
      const float real = static_cast<float>(v - qx.zero_point) * qx.scale;
      float f;
      if constexpr (kOp == UnaryOp::kSigmoid) {
        f = 1.f / (1.f + std::exp(-real));
      } else {
        f = real >= 0.f ? real : real * alpha_;
      }
      StoreQ(f / qy.scale, qy.zero_point, t, table, code);
    }
    ep::Tensor y = ctx.output(0, x.shape(), t);
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y.mutable_raw());
    const size_t n = x.size();
    ctx.parallel_for(n, 16384, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) dst[i] = table[src[i]];
    });
  }

 private:
  std::string op_;
  float alpha_ = 0.01f;
};

}  // namespace

void RegisterQLinearElementwiseKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("QLinearAdd", "com.microsoft")
      .Versions(1)
      .Build<QLinearBinary<BinaryOp::kAdd>>(registry);
  ep::KernelDefBuilder("QLinearMul", "com.microsoft")
      .Versions(1)
      .Build<QLinearBinary<BinaryOp::kMul>>(registry);
  ep::KernelDefBuilder("QLinearSigmoid", "com.microsoft")
      .Versions(1)
      .Build<QLinearLookup<UnaryOp::kSigmoid>>(registry);
  ep::KernelDefBuilder("QLinearLeakyRelu", "com.microsoft")
      .Versions(1)
      .Build<QLinearLookup<UnaryOp::kLeakyRelu>>(registry);
}

}  // namespace nxrt::cpu::quantized
