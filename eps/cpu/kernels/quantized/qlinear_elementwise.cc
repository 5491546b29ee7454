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

// The constants of one binary node: Add c = (a - za) ra + (b - zb) rb, Mul c = (a - za)(b - zb) m.
struct BinaryConstants {
  float za = 0.f, zb = 0.f, ra = 1.f, rb = 1.f, mul = 1.f;
  int32_t zc = 0;
};

template <class T>
__m256 Load8(const T* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(std::is_signed_v<T> ? _mm256_cvtepi8_epi32(v)
                                                : _mm256_cvtepu8_epi32(v));
}

// c[i] for i < count from a[i * inc_a] and b[i * inc_b], each increment 0 (one value broadcast
// along the run) or 1: 8 lanes at a time with AVX2 (the CPU EP's baseline), the same operations
// as the scalar tail in the same order. _mm256_cvtps_epi32 rounds half to even in the default
// rounding mode, as StoreQ does; the saturating packs clamp to the type's range.
template <BinaryOp kOp, class T>
void BinaryRun(const T* a, int64_t inc_a, const T* b, int64_t inc_b, T* c, int64_t count,
               const BinaryConstants& k) {
  const __m256 vza = _mm256_set1_ps(k.za), vzb = _mm256_set1_ps(k.zb);
  const __m256 vra = _mm256_set1_ps(k.ra), vrb = _mm256_set1_ps(k.rb);
  const __m256 vmul = _mm256_set1_ps(k.mul);
  const __m256i vzc = _mm256_set1_epi32(k.zc);
  // Keeps the int32 conversion in range; such values saturate anyway.
  const __m256 lim = _mm256_set1_ps(65536.0f), nlim = _mm256_set1_ps(-65536.0f);
  const __m256 a_one = _mm256_set1_ps(static_cast<float>(a[0]));
  const __m256 b_one = _mm256_set1_ps(static_cast<float>(b[0]));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 va = _mm256_sub_ps(inc_a != 0 ? Load8(a + i) : a_one, vza);
    const __m256 vb = _mm256_sub_ps(inc_b != 0 ? Load8(b + i) : b_one, vzb);
    __m256 v = kOp == BinaryOp::kAdd ? _mm256_add_ps(_mm256_mul_ps(va, vra), _mm256_mul_ps(vb, vrb))
                                     : _mm256_mul_ps(_mm256_mul_ps(va, vb), vmul);
    v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzc);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i q8 = std::is_signed_v<T> ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(c + i), q8);
  }
  constexpr NxElementType kType = std::is_signed_v<T> ? NX_TYPE_INT8 : NX_TYPE_UINT8;
  for (; i < count; ++i) {
    const float va = static_cast<float>(a[i * inc_a]) - k.za;
    const float vb = static_cast<float>(b[i * inc_b]) - k.zb;
    // Two statements, so the compiler cannot contract them into an FMA the vector loop lacks.
    const float first = kOp == BinaryOp::kAdd ? va * k.ra : va * vb;
    const float v = kOp == BinaryOp::kAdd ? first + vb * k.rb : first * k.mul;
    StoreQ(v, k.zc, kType, c, i);
  }
}

// The whole broadcast product as runs along the output's last dimension, rows split on the pool
// (a bias over [..., N] and residual additions alike).
template <BinaryOp kOp, class T>
void BinaryBroadcast(const T* a, const Dims& sa, const T* b, const Dims& sb, T* c,
                     const Dims& out_shape, const BinaryConstants& k, ep::KernelContext& ctx) {
  const size_t rank = out_shape.size();
  const int64_t total = ShapeSize(out_shape);
  if (total == 0) return;
  if (rank == 0) return BinaryRun<kOp>(a, 0, b, 0, c, 1, k);
  const int64_t inner = out_shape[rank - 1];
  const int64_t inc_a = sa[rank - 1], inc_b = sb[rank - 1];
  if (inner == 0) return;
  const int64_t rows = total / inner;
  const size_t grain = static_cast<size_t>(std::max<int64_t>(1, 32768 / inner));
  ctx.parallel_for(static_cast<size_t>(rows), grain, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      int64_t oa = 0, ob = 0, rest = static_cast<int64_t>(r);
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t idx = rest % out_shape[d];
        rest /= out_shape[d];
        oa += idx * sa[d];
        ob += idx * sb[d];
      }
      BinaryRun<kOp>(a + oa, inc_a, b + ob, inc_b, c + static_cast<int64_t>(r) * inner, inner, k);
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
    Dims out_shape = BroadcastShapes(a.shape(), b.shape());
    ep::Tensor c = ctx.output(0, out_shape, t);
    Dims sa = BroadcastStrides(a.shape(), out_shape);
    Dims sb = BroadcastStrides(b.shape(), out_shape);
    BinaryConstants k;
    k.ra = qa.scale / qc.scale;
    k.rb = qb.scale / qc.scale;
    k.mul = qa.scale * qb.scale / qc.scale;
    k.za = static_cast<float>(qa.zero_point);
    k.zb = static_cast<float>(qb.zero_point);
    k.zc = qc.zero_point;
    const bool finite =
        kOp == BinaryOp::kAdd ? std::isfinite(k.ra) && std::isfinite(k.rb) : std::isfinite(k.mul);
    if (!finite) return Scalar(a, b, c, out_shape, sa, sb, k);  // NaN handling of StoreQ
    if (a.shape().size() == b.shape().size() &&
        std::equal(a.shape().begin(), a.shape().end(), b.shape().begin())) {
      // One shape: flat runs of kFlatRun elements, split on the pool (as one run, ResNet-50
      // int8's 16 residual additions took 1.2 ms at one thread and at two alike).
      return FlatRuns(a, b, c, static_cast<int64_t>(a.size()), k, ctx);
    }
    if (t == NX_TYPE_UINT8) {
      BinaryBroadcast<kOp>(a.data<uint8_t>(), sa, b.data<uint8_t>(), sb, c.data<uint8_t>(),
                           out_shape, k, ctx);
    } else {
      BinaryBroadcast<kOp>(a.data<int8_t>(), sa, b.data<int8_t>(), sb, c.data<int8_t>(), out_shape,
                           k, ctx);
    }
  }

 private:
  static constexpr int64_t kFlatRun = 16384;

  // a, b and c of one shape and n elements, in runs of kFlatRun split on the pool.
  static void FlatRuns(const ep::ConstTensor& a, const ep::ConstTensor& b, ep::Tensor& c, int64_t n,
                       const BinaryConstants& k, ep::KernelContext& ctx) {
    const size_t runs = static_cast<size_t>((n + kFlatRun - 1) / kFlatRun);
    ctx.parallel_for(runs, 1, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        const int64_t at = static_cast<int64_t>(r) * kFlatRun, count = std::min(kFlatRun, n - at);
        if (a.type() == NX_TYPE_UINT8) {
          BinaryRun<kOp>(a.data<uint8_t>() + at, 1, b.data<uint8_t>() + at, 1,
                         c.data<uint8_t>() + at, count, k);
        } else {
          BinaryRun<kOp>(a.data<int8_t>() + at, 1, b.data<int8_t>() + at, 1, c.data<int8_t>() + at,
                         count, k);
        }
      }
    });
  }

  // Element by element: scales whose ratios are not finite (StoreQ turns NaN into 0).
  static void Scalar(const ep::ConstTensor& a, const ep::ConstTensor& b, ep::Tensor& c,
                     const Dims& out_shape, const Dims& sa, const Dims& sb,
                     const BinaryConstants& k) {
    const NxElementType t = a.type();
    const std::vector<int64_t> strides[2] = {{sa.begin(), sa.end()}, {sb.begin(), sb.end()}};
    const void* pa = a.raw();
    const void* pb = b.raw();
    void* pc = c.mutable_raw();
    ForEachBroadcastRun<2>(
        out_shape, strides,
        [&](int64_t out, const int64_t* offs, int64_t count, const int64_t* inc) {
          for (int64_t i = 0; i < count; ++i) {
            const float va = static_cast<float>(LoadQ(pa, t, offs[0] + i * inc[0])) - k.za;
            const float vb = static_cast<float>(LoadQ(pb, t, offs[1] + i * inc[1])) - k.zb;
            const float v = kOp == BinaryOp::kAdd ? va * k.ra + vb * k.rb : va * vb * k.mul;
            StoreQ(v, k.zc, t, pc, out + i);
          }
        });
  }

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
