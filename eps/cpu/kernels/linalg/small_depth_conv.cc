#include "kernels/linalg/small_depth_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {
namespace {

// Floats past the padded planes that the last row's full-vector loads may reach: two vectors
// per pixel vector of a tile (stride 2) for the three vectors of the widest tile.
constexpr int64_t kTailFloats = 2 * 3 * 16 + 64;

}  // namespace

bool UseSmallDepthConv(const ConvGeometry& g) {
  return g.spatial == 2 && g.group == 1 && g.in_channels <= kSmallDepthMaxChannels &&
         (g.stride[2] == 1 || g.stride[2] == 2) && g.kernel[1] * g.kernel[2] > 1;
}

void RunSmallDepthConv(Isa isa, const ConvGeometry& g, PointwiseJob job, const float* x,
                       const float* z, float* y, int threads) {
  const int64_t C = g.in_channels, M = g.out_channels;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t kh = g.kernel[1], kw = g.kernel[2];
  const int64_t pt = g.pad_begin[1], pl = g.pad_begin[2];
  const int64_t Hp = H + pt + g.pad_end[1], Wp = W + pl + g.pad_end[2];
  const int64_t plane = Hp * Wp;
  // Negative end pads (a crop) are not produced by the geometry of a forward convolution, but
  // the buffer must hold every row an output reads either way.
  const int64_t rows_read = (OH - 1) * g.stride[1] + (kh - 1) * g.dilation[1] + 1;
  const int64_t floats = C * plane + kTailFloats;
  NXRT_EP_ENFORCE(Hp >= rows_read && Wp >= (OW - 1) * g.stride[2] + (kw - 1) * g.dilation[2] + 1,
                  "small-depth convolution: inconsistent geometry");
  float* padded = static_cast<float*>(ThreadScratch(kScratchPad, floats * sizeof(float)));
  const int64_t K = C * kh * kw;
  int64_t* offsets = static_cast<int64_t*>(ThreadScratch(kScratchPlaneOut, K * sizeof(int64_t)));
  for (int64_t c = 0, k = 0; c < C; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j, ++k)
        offsets[k] = c * plane + i * g.dilation[1] * Wp + j * g.dilation[2];
  std::fill(padded + C * plane, padded + floats, 0.0f);

  job.in_channels = K;
  job.pixels = OW;
  job.x_offsets = offsets;
  job.x_step = static_cast<int>(g.stride[2]);
  job.y_stride = OH * OW;
  const int64_t rows = PointwiseRows(isa), blocks = (M + rows - 1) / rows;
  const double macs = static_cast<double>(M) * K * OH * OW;
  const int use = macs < kMinParallelMacs ? 1 : threads;
  // Items: (output row, group of channel blocks); channel groups only when rows are few.
  const int64_t groups = use > 1 && OH < 4 * use ? std::min<int64_t>(blocks, 4 * use) : 1;

  for (int64_t n = 0; n < g.batch; ++n) {
    const float* xn = x + n * C * H * W;
    // The padded copy: row by row, zeros around.
    ParallelFor(use, C * Hp, 32, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t c = r / Hp, ih = r % Hp - pt;
        float* dst = padded + r * Wp;
        if (ih < 0 || ih >= H) {
          std::fill(dst, dst + Wp, 0.0f);
          continue;
        }
        std::fill(dst, dst + pl, 0.0f);
        std::memcpy(dst + pl, xn + (c * H + ih) * W, W * sizeof(float));
        std::fill(dst + pl + W, dst + Wp, 0.0f);
      }
    });
    float* yn = y + n * M * OH * OW;
    const float* zn = z != nullptr ? z + n * M * OH * OW : nullptr;
    ParallelFor(use, OH * groups, 1, [&](int64_t i0, int64_t i1) {
      PointwiseJob row = job;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t oh = i / groups, grp = i % groups;
        row.x = padded + oh * g.stride[1] * Wp;
        row.y = yn + oh * OW;
        row.z = zn != nullptr ? zn + oh * OW : nullptr;
        const int64_t b0 = blocks * grp / groups, b1 = blocks * (grp + 1) / groups;
        if (isa == Isa::kAvx512) {
          GatheredRowTilesAvx512(row, b0, b1);
        } else {
          GatheredRowTilesAvx2(row, b0, b1);
        }
      }
    });
  }
}

}  // namespace nxrt::cpu::linalg
