#include "kernels/linalg/conv_taps.h"

#include <algorithm>

namespace nxrt::cpu::linalg {

LiveTaps FindLiveTaps(const ConvGeometry& g) {
  LiveTaps live;
  for (int d = 0; d < kMaxSpatial; ++d) {
    const int64_t in = g.in[d], out = g.out[d], k = g.kernel[d], s = g.stride[d],
                  dil = g.dilation[d], pb = g.pad_begin[d];
    live.count[d] = k;
    live.pad_begin[d] = pb;
    live.pad_end[d] = g.pad_end[d];
    // Tap t reads input i * s + t * dil - pb for outputs i in [0, out): live when one of those
    // lies in [0, in). The smallest i that is not below the image decides.
    auto is_live = [&](int64_t t) {
      const int64_t offset = t * dil - pb;
      const int64_t i = offset >= 0 ? 0 : (-offset + s - 1) / s;
      return i < out && i * s + offset < in;
    };
    int64_t first = 0, last = k - 1;
    while (first < k && !is_live(first)) ++first;
    while (last > first && !is_live(last)) --last;
    if (first >= k || (first == 0 && last == k - 1)) continue;  // none dead (or all: leave it)
    const int64_t count = last - first + 1;
    const int64_t pad_begin = pb - first * dil;
    // The output size stays: (in + pad_begin + pad_end - span) / s + 1 == out.
    const int64_t pad_end = (out - 1) * s + (count - 1) * dil + 1 - in - pad_begin;
    if (pad_begin < 0 || pad_end < 0) continue;  // (a stride past the image: keep it whole)
    live.first[d] = first;
    live.count[d] = count;
    live.pad_begin[d] = pad_begin;
    live.pad_end[d] = pad_end;
    live.trims = true;
  }
  return live;
}

ConvGeometry TrimmedGeometry(const ConvGeometry& g, const LiveTaps& live) {
  ConvGeometry t = g;
  t.kernel = live.count;
  t.pad_begin = live.pad_begin;
  t.pad_end = live.pad_end;
  return t;
}

std::vector<float> TrimmedWeights(const ConvGeometry& g, const LiveTaps& live, const float* w) {
  const int64_t filters = g.out_channels * g.in_channels_per_group();
  const Dims3& k = g.kernel;
  const Dims3& c = live.count;
  std::vector<float> out(static_cast<size_t>(filters * c[0] * c[1] * c[2]));
  float* o = out.data();
  for (int64_t f = 0; f < filters; ++f) {
    const float* src = w + f * k[0] * k[1] * k[2];
    for (int64_t a = 0; a < c[0]; ++a)
      for (int64_t b = 0; b < c[1]; ++b) {
        const float* row =
            src + ((live.first[0] + a) * k[1] + live.first[1] + b) * k[2] + live.first[2];
        o = std::copy(row, row + c[2], o);
      }
  }
  return out;
}

}  // namespace nxrt::cpu::linalg
