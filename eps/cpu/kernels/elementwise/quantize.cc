// QuantizeLinear, DequantizeLinear (per-tensor, per-axis and blocked scales; 8/16-bit integer,
// int4 / uint4, float8 and float4 quantised types) and DynamicQuantizeLinear.
//
// x is viewed as [outer, axis_dim, inner]; a scale (and zero point) applies to a run of
// consecutive elements: the whole tensor (per-tensor), one row of `inner` (per-axis, constant
// along the run) or one row of `inner` with its own value per element (blocked). Work is split
// over element ranges that start on even indices so that packed 4-bit outputs never share a
// byte between threads.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "common/attr_types.h"
#include "kernels/elementwise/cast_convert.h"
#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/float_formats.h"
#include "kernels/quantized/dynamic_quantize_u8.h"

namespace nxrt::cpu::elementwise {
namespace {

struct QuantLayout {
  enum Mode { kTensor, kAxis, kBlocked } mode = kTensor;
  int64_t outer = 1, axis_dim = 1, inner = 1;
  int64_t block = 0;       // block size (blocked mode)
  int64_t scale_axis = 1;  // scale extent along the axis (blocked mode)
  int64_t total() const { return outer * axis_dim * inner; }
};

QuantLayout MakeLayout(std::span<const int64_t> x, std::span<const int64_t> scale, int64_t axis,
                       int64_t block_size, const char* op) {
  QuantLayout L;
  const int64_t n = ShapeSize(x);
  if (ShapeSize(scale) == 1) {
    L.inner = n;
    return L;
  }
  const int64_t r = static_cast<int64_t>(x.size());
  const int64_t a = axis < 0 ? axis + r : axis;
  NXRT_EP_ENFORCE(a >= 0 && a < r, std::string(op) + ": axis " + std::to_string(axis) +
                                       " is out of range for input rank " + std::to_string(r));
  for (int64_t d = 0; d < a; ++d) L.outer *= x[d];
  L.axis_dim = x[a];
  for (int64_t d = a + 1; d < r; ++d) L.inner *= x[d];
  if (block_size <= 0) {
    NXRT_EP_ENFORCE(scale.size() == 1 && scale[0] == x[a],
                    std::string(op) + ": per-axis scale must be 1-D of length " +
                        std::to_string(x[a]) + " (input " + ShapeToString(x) + ", axis " +
                        std::to_string(a) + "), got " + ShapeToString(scale));
    L.mode = QuantLayout::kAxis;
    return L;
  }
  bool ok = static_cast<int64_t>(scale.size()) == r;
  for (int64_t d = 0; ok && d < r; ++d) {
    if (d != a) ok = scale[d] == x[d];
  }
  ok = ok && scale[a] * block_size >= x[a];
  NXRT_EP_ENFORCE(ok, std::string(op) + ": blocked scale shape " + ShapeToString(scale) +
                          " does not match input " + ShapeToString(x) + " with axis " +
                          std::to_string(a) + " and block_size " + std::to_string(block_size));
  L.mode = QuantLayout::kBlocked;
  L.block = block_size;
  L.scale_axis = scale[a];
  return L;
}

// Calls fn(pos, count, param_offset, param_stride) for runs of elements sharing a scale layout
// row: element pos + j uses scale[param_offset + j * param_stride].
template <class Fn>
void ForEachRun(const QuantLayout& L, int threads, Fn&& fn) {
  const int64_t n = L.total();
  if (n == 0) return;
  // Groups of four elements, so that no two threads share a byte of packed 2- or 4-bit output.
  const int64_t quads = (n + 3) / 4;
  ParallelFor(ThreadsFor(threads, n), quads, kGrain / 4, [&](int64_t qb, int64_t qe) {
    const int64_t end = std::min(4 * qe, n);
    for (int64_t pos = 4 * qb; pos < end;) {
      const int64_t row = pos / L.inner, in_row = pos % L.inner;
      const int64_t count = std::min(end - pos, L.inner - in_row);
      switch (L.mode) {
        case QuantLayout::kTensor:
          fn(pos, count, int64_t{0}, int64_t{0});
          break;
        case QuantLayout::kAxis:
          fn(pos, count, row % L.axis_dim, int64_t{0});
          break;
        case QuantLayout::kBlocked: {
          const int64_t o = row / L.axis_dim, a = row % L.axis_dim;
          fn(pos, count, (o * L.scale_axis + a / L.block) * L.inner + in_row, int64_t{1});
          break;
        }
      }
      pos += count;
    }
  });
}

std::vector<float> TensorAsFloats(const ep::ConstTensor& t) {
  std::vector<float> v(t.size());
  if (!v.empty()) LoadFloats(t.raw(), t.type(), 0, static_cast<int64_t>(v.size()), v.data());
  return v;
}

bool IntegerRange(NxElementType t, float* lo, float* hi) {
  switch (t) {
    case NX_TYPE_UINT8:
      *lo = 0;
      *hi = 255;
      return true;
    case NX_TYPE_INT8:
      *lo = -128;
      *hi = 127;
      return true;
    case NX_TYPE_UINT16:
      *lo = 0;
      *hi = 65535;
      return true;
    case NX_TYPE_INT16:
      *lo = -32768;
      *hi = 32767;
      return true;
    case NX_TYPE_UINT4:
      *lo = 0;
      *hi = 15;
      return true;
    case NX_TYPE_INT4:
      *lo = -8;
      *hi = 7;
      return true;
    case NX_TYPE_UINT2:
      *lo = 0;
      *hi = 3;
      return true;
    case NX_TYPE_INT2:
      *lo = -2;
      *hi = 1;
      return true;
    case NX_TYPE_INT32:
      // 2^31 - 1 is not a float: clamp to +-2^31 and let the store saturate the top end.
      *lo = -2147483648.0f;
      *hi = 2147483648.0f;
      return true;
    default:
      return false;
  }
}

// The quantised integer value of round(x / scale) + zero_point: out-of-range values saturate to
// [lo, hi] (as onnxruntime does) and NaN (0 / 0, a NaN input or scale) becomes 0, which C++
// would leave undefined when converting to an integer.
inline float SaturateQuantized(float v, float lo, float hi) {
  if (std::isnan(v)) return 0.0f;
  return v < lo ? lo : (v > hi ? hi : v);
}

// Rounds a float to the precision of a 16-bit float type (identity for other types).
inline float RoundTo(float v, NxElementType precision) {
  if (precision == NX_TYPE_FLOAT16) return static_cast<float>(Half(v));
  if (precision == NX_TYPE_BFLOAT16) return static_cast<float>(BFloat16(v));
  return v;
}

class QuantizeLinear : public ep::Kernel {
 public:
  explicit QuantizeLinear(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", 1)),
        block_size_(info.attr_int("block_size", 0)),
        saturate_(info.attr_int("saturate", 1) != 0),
        output_dtype_(AttrElementType(info, "output_dtype", 0)),
        precision_(AttrElementType(info, "precision", 0)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), scale = ctx.input(1);
    auto zp = ctx.optional_input(2);
    NxElementType out_type = output_dtype_ != NX_TYPE_UNDEFINED ? output_dtype_ : NX_TYPE_UINT8;
    if (zp) {
      NXRT_EP_ENFORCE(output_dtype_ == NX_TYPE_UNDEFINED || output_dtype_ == zp->type(),
                      "QuantizeLinear: output_dtype differs from the zero point's type");
      out_type = zp->type();
      NXRT_EP_ENFORCE(zp->size() == scale.size(),
                      "QuantizeLinear: y_zero_point and y_scale must have the same shape");
    }
    NXRT_EP_ENFORCE(
        IsConvertible(out_type) && out_type != NX_TYPE_BOOL,
        std::string("QuantizeLinear: unsupported output type ") + ep::ElementTypeName(out_type));
    const QuantLayout L =
        MakeLayout(x.shape(), scale.shape(), axis_, block_size_, "QuantizeLinear");
    ep::Tensor y = ctx.output(0, x.shape(), out_type);
    if (L.total() == 0) return;

    // The division happens in the scale's precision unless `precision` says otherwise; float16
    // and bfloat16 quotients are rounded to that type (numpy divides in it when x shares it).
    NxElementType precision = precision_;
    if (precision == NX_TYPE_UNDEFINED && x.type() == scale.type()) precision = scale.type();

    const std::vector<float> s = TensorAsFloats(scale);
    std::vector<float> z = zp ? TensorAsFloats(*zp) : std::vector<float>(s.size(), 0.0f);
    const bool is_fp8 = MiniFloatOf(out_type) != nullptr && out_type != NX_TYPE_FLOAT4E2M1;
    if (is_fp8) std::fill(z.begin(), z.end(), 0.0f);  // the zero point is not used for float8
    float lo = 0, hi = 0;
    const bool integral = IntegerRange(out_type, &lo, &hi);
    const bool saturate = saturate_;

    // Fast path: float input, float scale, 8-bit output.
    if (x.type() == NX_TYPE_FLOAT && scale.type() == NX_TYPE_FLOAT &&
        (precision == NX_TYPE_FLOAT || precision == NX_TYPE_UNDEFINED) &&
        (out_type == NX_TYPE_UINT8 || out_type == NX_TYPE_INT8)) {
      const float* px = x.data<float>();
      ForEachRun(L, ctx.threads(), [&](int64_t pos, int64_t count, int64_t off, int64_t stride) {
        if (out_type == NX_TYPE_UINT8) {
          QuantizeRow(px + pos, s.data() + off, z.data() + off, stride, y.data<uint8_t>() + pos,
                      count, lo, hi);
        } else {
          QuantizeRow(px + pos, s.data() + off, z.data() + off, stride, y.data<int8_t>() + pos,
                      count, lo, hi);
        }
      });
      return;
    }

    const NxElementType xt = x.type();
    const void* xraw = x.raw();
    void* yraw = y.mutable_raw();
    ForEachRun(L, ctx.threads(), [&](int64_t pos, int64_t count, int64_t off, int64_t stride) {
      constexpr int64_t kBlock = 256;
      alignas(32) float buf[kBlock];
      for (int64_t j0 = 0; j0 < count; j0 += kBlock) {
        const int64_t m = std::min(kBlock, count - j0);
        LoadFloats(xraw, xt, pos + j0, m, buf);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t p = off + (j0 + j) * stride;
          float q = RoundTo(buf[j] / s[p], precision);
          if (integral) {
            buf[j] = SaturateQuantized(std::nearbyint(q) + z[p], lo, hi);
          } else {
            buf[j] = q + z[p];
          }
        }
        StoreFloats(buf, m, yraw, out_type, pos + j0, saturate);
      }
    });
    ClearPackedTail(out_type, yraw, L.total());
  }

 private:
  template <class Q>
  static void QuantizeRow(const float* x, const float* s, const float* z, int64_t stride, Q* y,
                          int64_t n, float lo, float hi) {
    if (stride == 0) {
      const float sv = s[0], zv = z[0];
      int64_t i = 0;
      // 8 at a time with AVX2, the same operations as below: the quotient (a division, as in
      // the scalar form), rounded half to even, plus the zero point, NaN to 0, clamped.
      const __m256 vs = _mm256_set1_ps(sv), vz = _mm256_set1_ps(zv);
      const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
      for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);
        v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
        v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
        v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
        const __m256i q = _mm256_cvtps_epi32(v);
        const __m128i q16 =
            _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        const __m128i q8 =
            std::is_signed_v<Q> ? _mm_packs_epi16(q16, q16) : _mm_packus_epi16(q16, q16);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), q8);
      }
      for (; i < n; ++i) {
        const float v = SaturateQuantized(std::nearbyint(x[i] / sv) + zv, lo, hi);
        y[i] = static_cast<Q>(static_cast<int32_t>(v));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float v = SaturateQuantized(std::nearbyint(x[i] / s[i]) + z[i], lo, hi);
        y[i] = static_cast<Q>(static_cast<int32_t>(v));
      }
    }
  }

  int64_t axis_, block_size_;
  bool saturate_;
  NxElementType output_dtype_, precision_;
};

class DequantizeLinear : public ep::Kernel {
 public:
  explicit DequantizeLinear(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", 1)),
        block_size_(info.attr_int("block_size", 0)),
        output_dtype_(AttrElementType(info, "output_dtype", 0)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), scale = ctx.input(1);
    auto zp = ctx.optional_input(2);
    const NxElementType xt = x.type();
    NXRT_EP_ENFORCE(IsConvertible(xt), std::string("DequantizeLinear: unsupported input type ") +
                                           ep::ElementTypeName(xt));
    const NxElementType out_type =
        output_dtype_ != NX_TYPE_UNDEFINED ? output_dtype_ : scale.type();
    const QuantLayout L =
        MakeLayout(x.shape(), scale.shape(), axis_, block_size_, "DequantizeLinear");
    ep::Tensor y = ctx.output(0, x.shape(), out_type);
    if (L.total() == 0) return;
    const std::vector<float> s = TensorAsFloats(scale);
    std::vector<float> z(s.size(), 0.0f);
    const bool float_input = MiniFloatOf(xt) != nullptr;
    if (zp && !float_input) {
      NXRT_EP_ENFORCE(zp->type() == xt, "DequantizeLinear: x_zero_point type differs from x");
      NXRT_EP_ENFORCE(zp->size() == scale.size(),
                      "DequantizeLinear: x_zero_point and x_scale must have the same shape");
      z = TensorAsFloats(*zp);
    }

    if (out_type == NX_TYPE_FLOAT && (xt == NX_TYPE_UINT8 || xt == NX_TYPE_INT8)) {
      float* py = y.data<float>();
      ForEachRun(L, ctx.threads(), [&](int64_t pos, int64_t count, int64_t off, int64_t stride) {
        if (xt == NX_TYPE_UINT8) {
          DequantizeRow(x.data<uint8_t>() + pos, s.data() + off, z.data() + off, stride, py + pos,
                        count);
        } else {
          DequantizeRow(x.data<int8_t>() + pos, s.data() + off, z.data() + off, stride, py + pos,
                        count);
        }
      });
      return;
    }

    const void* xraw = x.raw();
    void* yraw = y.mutable_raw();
    ForEachRun(L, ctx.threads(), [&](int64_t pos, int64_t count, int64_t off, int64_t stride) {
      constexpr int64_t kBlock = 256;
      alignas(32) float buf[kBlock];
      for (int64_t j0 = 0; j0 < count; j0 += kBlock) {
        const int64_t m = std::min(kBlock, count - j0);
        LoadFloats(xraw, xt, pos + j0, m, buf);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t p = off + (j0 + j) * stride;
          buf[j] = (buf[j] - z[p]) * s[p];
        }
        StoreFloats(buf, m, yraw, out_type, pos + j0, true);
      }
    });
  }

 private:
  template <class Q>
  static void DequantizeRow(const Q* x, const float* s, const float* z, int64_t stride, float* y,
                            int64_t n) {
    if (stride == 0) {
      const float sv = s[0], zv = z[0];
      int64_t i = 0;
      // 8 at a time with AVX2 (GCC left this loop scalar): the same subtraction and product.
      const __m256 vs = _mm256_set1_ps(sv), vz = _mm256_set1_ps(zv);
      for (; i + 8 <= n; i += 8) {
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
        const __m256i w = std::is_signed_v<Q> ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(w), vz), vs));
      }
      for (; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zv) * sv;
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - z[i]) * s[i];
    }
  }

  int64_t axis_, block_size_;
  NxElementType output_dtype_;
};

// y = saturate(round(x / scale) + zero_point) to uint8, with scale and zero point chosen from the
// data range extended to include 0.
class DynamicQuantizeLinear : public ep::Kernel {
 public:
  explicit DynamicQuantizeLinear(const ep::KernelInfo&) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    NXRT_EP_ENFORCE(x.type() == NX_TYPE_FLOAT, "DynamicQuantizeLinear: input must be float");
    const int64_t n = static_cast<int64_t>(x.size());
    const float* px = x.data<float>();
    float mn = 0.0f, mx = 0.0f;
    std::mutex mu;
    ParallelFor(ThreadsFor(ctx.threads(), n), n, kGrain, [&](int64_t b, int64_t e) {
      float lmn = 0.0f, lmx = 0.0f;
      quantized::UpdateRange(px + b, e - b, lmn, lmx);
      std::lock_guard<std::mutex> lock(mu);
      mn = std::min(mn, lmn);
      mx = std::max(mx, lmx);
    });
    const float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    const float zp = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - mn / scale)));

    ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_UINT8);
    ep::Tensor ys = ctx.output(1, std::span<const int64_t>(), NX_TYPE_FLOAT);
    ep::Tensor yz = ctx.output(2, std::span<const int64_t>(), NX_TYPE_UINT8);
    ys.data<float>()[0] = scale;
    yz.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    uint8_t* py = y.data<uint8_t>();
    ParallelFor(ThreadsFor(ctx.threads(), n), n, kGrain, [&](int64_t b, int64_t e) {
      quantized::QuantizeU8(px + b, e - b, scale, zp, py + b);  // vectorized, same results
    });
  }
};

}  // namespace

void RegisterQuantizeKernels(NxKernelRegistry* r) {
  const TypeList quant = {NX_TYPE_INT8,           NX_TYPE_UINT8,      NX_TYPE_INT16,
                          NX_TYPE_UINT16,         NX_TYPE_INT32,      NX_TYPE_FLOAT8E4M3FN,
                          NX_TYPE_FLOAT8E4M3FNUZ, NX_TYPE_FLOAT8E5M2, NX_TYPE_FLOAT8E5M2FNUZ,
                          NX_TYPE_UINT4,          NX_TYPE_INT4,       NX_TYPE_FLOAT4E2M1,
                          NX_TYPE_UINT2,          NX_TYPE_INT2};
  const TypeList scales = {NX_TYPE_FLOAT, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16, NX_TYPE_INT32};
  ep::KernelDefBuilder("QuantizeLinear")
      .Versions(10)
      .Constraint("T1", scales, {0})
      .Constraint("T2", scales, {1})
      .Constraint("T3", quant, {2}, {0})
      .Build<QuantizeLinear>(r);
  ep::KernelDefBuilder("DequantizeLinear")
      .Versions(10)
      .Constraint("T1", quant, {0, 2})
      .Constraint("T2", {NX_TYPE_FLOAT, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16}, {1})
      .Build<DequantizeLinear>(r);
  ep::KernelDefBuilder("DynamicQuantizeLinear")
      .Versions(11)
      .Constraint("T1", {NX_TYPE_FLOAT}, {0})
      .Constraint("T2", {NX_TYPE_UINT8}, {}, {0, 2})
      .Build<DynamicQuantizeLinear>(r);
}

}  // namespace nxrt::cpu::elementwise
