#include "kernels/linalg/conv_depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "common/parallel.h"
#include "kernels/linalg/depthwise_2d.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {
namespace {

// ---- 2-D planes with equal strides: padded plane, one long vector loop per plane ----------
//
// The plane is copied into a zero-bordered buffer P with row pitch `pitch`. Output (oh, ow)
// reads P[(oh * s + kh * dh) * pitch + ow * s + kw * dw]; with the flattened index
// i = oh * pitch + ow that is P[s * i + tap_offset], so all taps become long contiguous (s = 1)
// or stride-2 loops over the whole plane, free of boundary tests. Columns ow >= out_w are
// computed and dropped. This beats a row-by-row loop by far on the short rows (7 to 28) of the
// late layers of MobileNet-style networks.

// t[i] = sum_k w[k] * src[k][i] for i in [0, count), rounded up to whole vectors: the sources
// and t must be readable / writable kVectorSlack floats past `count`. Four vectors of outputs
// stay in registers across all taps (a tap-by-tap pass over t loaded and stored t once per tap,
// three times the memory traffic of the taps themselves).
constexpr int64_t kVectorSlack = 8;
constexpr int64_t kMaxVectorTaps = 64;  // kernels up to 8x8; larger ones take the scalar loop

void SumOfTaps(const float* const* src, const float* w, int64_t taps, int64_t count, float* t) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    for (int64_t k = 0; k < taps; ++k) {
      const __m256 wk = _mm256_broadcast_ss(w + k);
      const float* p = src[k] + i;
      a0 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(p), a0);
      a1 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(p + 8), a1);
      a2 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(p + 16), a2);
      a3 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(p + 24), a3);
    }
    _mm256_storeu_ps(t + i, a0);
    _mm256_storeu_ps(t + i + 8, a1);
    _mm256_storeu_ps(t + i + 16, a2);
    _mm256_storeu_ps(t + i + 24, a3);
  }
  for (; i < count; i += 8) {  // the last one may run into the slack
    __m256 a = _mm256_setzero_ps();
    for (int64_t k = 0; k < taps; ++k)
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k), _mm256_loadu_ps(src[k] + i), a);
    _mm256_storeu_ps(t + i, a);
  }
}

template <int S>
void PlaneTapsGeneric(const float* p, int64_t count, int64_t s, const int64_t* off, const float* w,
                      int64_t taps, float* t) {
  std::fill(t, t + count, 0.0f);
  for (int64_t k = 0; k < taps; ++k) {
    const float* pk = p + off[k];
    const float wk = w[k];
    if constexpr (S > 0) {
      for (int64_t i = 0; i < count; ++i) t[i] += wk * pk[S * i];
    } else {
      for (int64_t i = 0; i < count; ++i) t[i] += wk * pk[s * i];
    }
  }
}

struct PlaneLayout {
  int64_t rows, pitch, count;
  std::vector<int64_t> offsets;  // one per tap
};

PlaneLayout MakePlaneLayout(const ConvGeometry& g) {
  const int64_t s = g.stride[2];
  PlaneLayout l;
  // Wide enough for the input with its leading pad and for the rightmost window; tall enough
  // for the bottom window (flattened reads of dropped columns stay inside the buffer).
  l.pitch = std::max(g.pad_begin[2] + g.in[2],
                     s * (g.out[2] - 1) + (g.kernel[2] - 1) * g.dilation[2] + 1);
  l.rows = std::max(g.pad_begin[1] + g.in[1],
                    s * (g.out[1] - 1) + (g.kernel[1] - 1) * g.dilation[1] + 1);
  l.count = (g.out[1] - 1) * l.pitch + g.out[2];
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
    for (int64_t kw = 0; kw < g.kernel[2]; ++kw)
      l.offsets.push_back(kh * g.dilation[1] * l.pitch + kw * g.dilation[2]);
  return l;
}

void Plane2d(const ConvGeometry& g, const PlaneLayout& l, const float* x, const float* w,
             float bias, const float* z, float* y) {
  const int64_t h = g.in[1], wd = g.in[2], oh = g.out[1], ow = g.out[2], s = g.stride[2];
  const int64_t pt = g.pad_begin[1], pl = g.pad_begin[2];
  const int64_t padded = l.rows * l.pitch;
  // Stride 2 also keeps the even and odd elements of the flattened plane apart (after it), so
  // that every tap reads contiguous floats: P[2 i + o] is even[i + o / 2] or odd[i + o / 2].
  const int64_t half = (padded + 1) / 2 + kVectorSlack;
  const int64_t p_floats = s == 2 ? padded + 2 * half : padded + kVectorSlack;
  float* p = static_cast<float*>(ThreadScratch(kScratchPlane, sizeof(float) * p_floats));
  float* t = static_cast<float*>(
      ThreadScratch(kScratchPlaneOut, sizeof(float) * (l.count + kVectorSlack)));
  // Zero only the border; the interior is overwritten by the copy.
  std::fill(p, p + pt * l.pitch, 0.0f);
  for (int64_t r = 0; r < h; ++r) {
    float* row = p + (pt + r) * l.pitch;
    std::fill(row, row + pl, 0.0f);
    std::memcpy(row + pl, x + r * wd, sizeof(float) * wd);
    std::fill(row + pl + wd, row + l.pitch, 0.0f);
  }
  std::fill(p + (pt + h) * l.pitch, p + padded, 0.0f);

  const int64_t taps = g.kernel[1] * g.kernel[2];
  const int64_t* off = l.offsets.data();
  if ((s == 1 || s == 2) && taps <= kMaxVectorTaps) {
    const float* src[kMaxVectorTaps];
    if (s == 2) {
      float* even = p + padded;
      float* odd = even + half;
      for (int64_t j = 0; j < padded / 2; ++j) {
        even[j] = p[2 * j];
        odd[j] = p[2 * j + 1];
      }
      if (padded % 2 != 0) even[padded / 2] = p[padded - 1];
      std::fill(even + (padded + 1) / 2, even + half, 0.0f);  // the slack
      std::fill(odd + padded / 2, odd + half, 0.0f);
      for (int64_t k = 0; k < taps; ++k) src[k] = (off[k] % 2 == 0 ? even : odd) + off[k] / 2;
    } else {
      std::fill(p + padded, p + p_floats, 0.0f);  // the slack
      for (int64_t k = 0; k < taps; ++k) src[k] = p + off[k];
    }
    SumOfTaps(src, w, taps, l.count, t);
  } else if (s == 1) {
    PlaneTapsGeneric<1>(p, l.count, s, off, w, taps, t);
  } else {
    PlaneTapsGeneric<0>(p, l.count, s, off, w, taps, t);
  }

  for (int64_t r = 0; r < oh; ++r) {
    const float* src = t + r * l.pitch;
    float* dst = y + r * ow;
    if (z != nullptr) {
      const float* zr = z + r * ow;
      for (int64_t c = 0; c < ow; ++c) dst[c] = src[c] + bias + zr[c];
    } else {
      for (int64_t c = 0; c < ow; ++c) dst[c] = src[c] + bias;
    }
  }
}

// ---- Any rank: row-by-row with boundary ranges (1-D, 3-D, unequal strides) ---------------

// Output positions o in [0, out) whose input index o * stride - pad + tap_offset lies in
// [0, in): returns [lo, hi).
inline void ValidRange(int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t tap_offset,
                       int64_t* lo, int64_t* hi) {
  const int64_t a = pad - tap_offset;
  const int64_t b = in - 1 + pad - tap_offset;
  int64_t l = a <= 0 ? 0 : (a + stride - 1) / stride;
  int64_t h = b < 0 ? 0 : b / stride + 1;
  *lo = std::min(l, out);
  *hi = std::max(*lo, std::min(h, out));
}

void PlaneRows(const ConvGeometry& g, const float* x, const float* w, float bias, const float* z,
               float* y) {
  const int64_t out_size = g.out_size();
  if (z != nullptr) {
    for (int64_t i = 0; i < out_size; ++i) y[i] = z[i] + bias;
  } else {
    std::fill(y, y + out_size, bias);
  }
  const int64_t s = g.stride[2], d = g.dilation[2], pad = g.pad_begin[2];
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      float* row = y + (o0 * g.out[1] + o1) * g.out[2];
      for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
        const int64_t i0 = o0 * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
        if (i0 < 0 || i0 >= g.in[0]) continue;
        for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
          const int64_t i1 = o1 * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
          if (i1 < 0 || i1 >= g.in[1]) continue;
          const float* in_row = x + (i0 * g.in[1] + i1) * g.in[2];
          const float* wk = w + (k0 * g.kernel[1] + k1) * g.kernel[2];
          for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
            int64_t lo, hi;
            ValidRange(g.in[2], g.out[2], s, pad, k2 * d, &lo, &hi);
            const float wv = wk[k2];
            for (int64_t o = lo; o < hi; ++o) row[o] += wv * in_row[o * s - pad + k2 * d];
          }
        }
      }
    }
}

// This thread's row of at least `count` zeros (grows, never shrinks: no allocation per run).
const float* ZeroRow(int64_t count) {
  thread_local std::vector<float> zeros;
  if (zeros.size() < static_cast<size_t>(count)) zeros.assign(static_cast<size_t>(count), 0.0f);
  return zeros.data();
}

}  // namespace

bool IsDepthwiseConv(const ConvGeometry& g) {
  return g.group > 1 && g.group == g.in_channels && g.out_channels % g.group == 0;
}

void DepthwiseConvNchw(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                       const float* z, float* y, int threads, Isa isa,
                       const std::function<void(float*, int64_t)>& epilogue) {
  const int64_t in_size = g.in_size(), out_size = g.out_size(), ks = g.kernel_size();
  const int64_t multiplier = g.out_channels / g.in_channels;
  const int64_t planes = g.batch * g.out_channels;
  // One plane of depth 1 (2-D and 1-D convolutions; a 3-D one only without depth padding).
  const bool one_plane = g.in[0] == 1 && g.kernel[0] == 1 && g.out[0] == 1;
  DepthwisePlane2d plane2d;
  plane2d.in_h = g.in[1];
  plane2d.in_w = g.in[2];
  plane2d.out_h = g.out[1];
  plane2d.out_w = g.out[2];
  plane2d.kernel_h = g.kernel[1];
  plane2d.kernel_w = g.kernel[2];
  plane2d.stride_h = g.stride[1];
  plane2d.stride_w = g.stride[2];
  plane2d.dilation_h = g.dilation[1];
  plane2d.dilation_w = g.dilation[2];
  plane2d.pad_top = g.pad_begin[1];
  plane2d.pad_left = g.pad_begin[2];
  const bool single_pass = one_plane && Depthwise2dSupported(plane2d);
  const auto single_pass_plane =
      isa == Isa::kAvx512 ? Depthwise2dPlaneAvx512 : Depthwise2dPlaneAvx2;
  const bool flat2d = one_plane && g.stride[1] == g.stride[2];
  PlaneLayout layout;
  if (flat2d && !single_pass) layout = MakePlaneLayout(g);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * ks));
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    const float* zeros = single_pass ? ZeroRow(ZeroRowFloats(plane2d)) : nullptr;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / g.out_channels, oc = p % g.out_channels;
      const float* plane = x + (n * g.in_channels + oc / multiplier) * in_size;
      const float bv = bias ? bias[oc] : 0.0f;
      const float* zp = z ? z + p * out_size : nullptr;
      if (single_pass) {
        single_pass_plane(plane2d, plane, zeros, w + oc * ks, bv, zp, y + p * out_size);
      } else if (flat2d) {
        Plane2d(g, layout, plane, w + oc * ks, bv, zp, y + p * out_size);
      } else {
        PlaneRows(g, plane, w + oc * ks, bv, zp, y + p * out_size);
      }
      if (epilogue) epilogue(y + p * out_size, out_size);
    }
  });
}

}  // namespace nxrt::cpu::linalg
