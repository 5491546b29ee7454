// QLinearAdd, QLinearMul (broadcasting binary) and QLinearSigmoid, QLinearLeakyRelu (unary),
// com.microsoft version 1, on int8 or uint8 tensors with per-tensor scales and zero points.
//
// Binary ops compute in float from the integer values with the zero points removed:
//   Add: c = (a - za) * (sa / sc) + (b - zb) * (sb / sc)
//   Mul: c = (a - za) * (b - zb) * (sa * sb / sc)
// then round half to even, add zc and saturate. Unary ops have only 256 possible inputs, so each
// run builds a 256-entry table: dequantize, apply the function in float, quantize.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "common/broadcast.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

enum class BinaryOp { kAdd, kMul };

// QLinearAdd of two tensors of one shape (ResNet's residual additions), 8 lanes at a time with
// AVX2 (the CPU EP's baseline), split on the pool. _mm256_cvtps_epi32 rounds half to even in the
// default rounding mode, as StoreQ does; the saturating packs clamp to the type's range.
template <class T>
__m256i Load8(const T* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return std::is_signed_v<T> ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

template <class T>
void AddSameShape(const T* a, const T* b, T* c, size_t n, float ra, float rb, float za, float zb,
                  int32_t zc, ep::KernelContext& ctx) {
  ctx.parallel_for(n, 32768, [&](size_t begin, size_t end) {
    const __m256 vra = _mm256_set1_ps(ra), vrb = _mm256_set1_ps(rb);
    const __m256 vza = _mm256_set1_ps(za), vzb = _mm256_set1_ps(zb);
    const __m256i vzc = _mm256_set1_epi32(zc);
    // Keeps the int32 conversion in range; such values saturate anyway.
    const __m256 lim = _mm256_set1_ps(65536.0f), nlim = _mm256_set1_ps(-65536.0f);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      const __m256 va = _mm256_sub_ps(_mm256_cvtepi32_ps(Load8(a + i)), vza);
      const __m256 vb = _mm256_sub_ps(_mm256_cvtepi32_ps(Load8(b + i)), vzb);
      __m256 v = _mm256_add_ps(_mm256_mul_ps(va, vra), _mm256_mul_ps(vb, vrb));
      v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzc);
      const __m128i q16 =
          _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i q8 =
          std::is_signed_v<T> ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(c + i), q8);
    }
    for (; i < end; ++i) {
      const float v = (static_cast<float>(a[i]) - za) * ra + (static_cast<float>(b[i]) - zb) * rb;
      StoreQ(v, zc, std::is_signed_v<T> ? NX_TYPE_INT8 : NX_TYPE_UINT8, c, i);
    }
  });
}

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
    if (kOp == BinaryOp::kAdd && a.shape().size() == b.shape().size() &&
        std::equal(a.shape().begin(), a.shape().end(), b.shape().begin()) &&
        std::isfinite(ratio_a) && std::isfinite(ratio_b)) {
      if (t == NX_TYPE_UINT8)
        AddSameShape(a.data<uint8_t>(), b.data<uint8_t>(), c.data<uint8_t>(), a.size(), ratio_a,
                     ratio_b, za, zb, qc.zero_point, ctx);
      else
        AddSameShape(a.data<int8_t>(), b.data<int8_t>(), c.data<int8_t>(), a.size(), ratio_a,
                     ratio_b, za, zb, qc.zero_point, ctx);
      return;
    }
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
