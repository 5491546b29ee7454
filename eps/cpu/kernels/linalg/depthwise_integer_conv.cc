// The float route: the input centred into floats (planes in parallel), the weights centred, the
// float depthwise kernel, each output plane stored (integer_conv_output.h) by its epilogue while
// in cache. The direct route (kernels over 258 taps): per output plane, each output row starts
// at zero, then every tap adds its centred weight times the centred input over the run of output
// columns whose input column lies inside the row; the plane is stored once summed.
#include "kernels/linalg/depthwise_integer_conv.h"

#include <algorithm>

#include "common/parallel.h"
#include "kernels/linalg/conv_depthwise.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {
namespace {

// First output column whose input column o * stride + offset is >= 0, and one past the last
// whose input column is < width.
void ColumnRange(int64_t offset, int64_t stride, int64_t width, int64_t out_width, int64_t& lo,
                 int64_t& hi) {
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  hi = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
  lo = std::min(lo, out_width);
  hi = std::clamp(hi, lo, out_width);
}

template <class TX, class TW>
void Planes(const ConvGeometry& g, const TX* x, const TW* w, int32_t x_zp,
            const std::vector<int32_t>& w_zp, const IntegerConvOutput& y, int64_t begin,
            int64_t end) {
  const int64_t ih = g.in[1], iw = g.in[2], oh = g.out[1], ow = g.out[2];
  const int64_t kh = g.kernel[1], kw = g.kernel[2], taps = kh * kw;
  const int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t ph = g.pad_begin[1], pw = g.pad_begin[2];
  const int64_t channels = g.out_channels, multiplier = g.out_channels / g.in_channels;
  std::vector<int32_t> wc(static_cast<size_t>(taps));
  std::vector<int32_t> sums(static_cast<size_t>(oh * ow));
  for (int64_t p = begin; p < end; ++p) {
    const int64_t n = p / channels, m = p % channels;
    const TX* plane = x + (n * g.in_channels + m / multiplier) * ih * iw;
    const int32_t zp = w_zp[w_zp.size() > 1 ? static_cast<size_t>(m) : 0];
    for (int64_t t = 0; t < taps; ++t) wc[static_cast<size_t>(t)] = int32_t(w[m * taps + t]) - zp;
    for (int64_t oy = 0; oy < oh; ++oy) {
      int32_t* acc = sums.data() + oy * ow;
      std::fill(acc, acc + ow, 0);
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * sh - ph + ky * dh;
        if (iy < 0 || iy >= ih) continue;
        const TX* row = plane + iy * iw;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int32_t wv = wc[static_cast<size_t>(ky * kw + kx)];
          if (wv == 0) continue;
          const int64_t offset = kx * dw - pw;
          int64_t lo = 0, hi = 0;
          ColumnRange(offset, sw, iw, ow, lo, hi);
          if (sw == 1) {
            for (int64_t ox = lo; ox < hi; ++ox) acc[ox] += (int32_t(row[ox + offset]) - x_zp) * wv;
          } else {
            for (int64_t ox = lo; ox < hi; ++ox)
              acc[ox] += (int32_t(row[ox * sw + offset]) - x_zp) * wv;
          }
        }
      }
    }
    StoreRun(y, m, sums.data(), p * oh * ow, oh * ow);
  }
}

// Taps below which every partial sum of centred 8-bit products is an exact float.
constexpr int64_t kExactFloatTaps = 258;

template <class TX, class TW>
void ViaFloat(const ConvGeometry& g, const TX* x, const TW* w, int32_t x_zp,
              const std::vector<int32_t>& w_zp, const IntegerConvOutput& y, int threads, Isa isa) {
  const int64_t in_planes = g.batch * g.in_channels, in_size = g.in_size();
  const int64_t out_size = g.out_size(), taps = g.kernel_size(), m_count = g.out_channels;
  float* xf = static_cast<float*>(
      ThreadScratch(kScratchA, static_cast<size_t>(in_planes * in_size) * sizeof(float)));
  float* yf = static_cast<float*>(
      ThreadScratch(kScratchB, static_cast<size_t>(g.batch * m_count * out_size) * sizeof(float)));
  const float zp = static_cast<float>(x_zp);
  ParallelFor(threads, in_planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, in_size)),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin * in_size; i < end * in_size; ++i)
                  xf[i] = static_cast<float>(x[i]) - zp;
              });
  std::vector<float> wf(static_cast<size_t>(m_count * taps));
  for (int64_t m = 0; m < m_count; ++m) {
    const int32_t z = w_zp[w_zp.size() > 1 ? static_cast<size_t>(m) : 0];
    for (int64_t t = 0; t < taps; ++t)
      wf[static_cast<size_t>(m * taps + t)] = static_cast<float>(int32_t(w[m * taps + t]) - z);
  }
  DepthwiseConvNchw(g, xf, wf.data(), nullptr, nullptr, yf, threads, isa,
                    [&](float* plane, int64_t count) {
                      const int64_t first = plane - yf;
                      StoreRun(y, (first / out_size) % m_count, plane, first, count);
                    });
}

}  // namespace

bool SuitsDepthwiseIntegerConv(const ConvGeometry& g) {
  return g.group > 1 && g.group == g.in_channels && g.out_channels % g.group == 0 && g.in[0] == 1 &&
         g.kernel[0] == 1 && g.out[0] == 1;
}

void DepthwiseIntegerConv(const ConvGeometry& g, const void* x, bool x_signed, const void* w,
                          bool w_signed, int32_t x_zp, const std::vector<int32_t>& w_zp,
                          const IntegerConvOutput& y, int threads, Isa isa) {
  const auto* xs = static_cast<const int8_t*>(x);
  const auto* xu = static_cast<const uint8_t*>(x);
  const auto* ws = static_cast<const int8_t*>(w);
  const auto* wu = static_cast<const uint8_t*>(w);
  if (g.kernel_size() <= kExactFloatTaps) {
    auto run = [&](auto* xt, auto* wt) { ViaFloat(g, xt, wt, x_zp, w_zp, y, threads, isa); };
    if (x_signed) {
      w_signed ? run(xs, ws) : run(xs, wu);
    } else {
      w_signed ? run(xu, ws) : run(xu, wu);
    }
    return;
  }
  const int64_t planes = g.batch * g.out_channels;
  const int64_t per_plane = g.out_size() * g.kernel_size();
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, per_plane));
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    auto run = [&](auto* xt, auto* wt) { Planes(g, xt, wt, x_zp, w_zp, y, begin, end); };
    if (x_signed) {
      w_signed ? run(xs, ws) : run(xs, wu);
    } else {
      w_signed ? run(xu, ws) : run(xu, wu);
    }
  });
}

}  // namespace nxrt::cpu::linalg
