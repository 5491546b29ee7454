// Packing and the thread split of the pointwise convolution (pointwise_conv.h); the tiles are in
// pointwise_conv_body.h.
#include "kernels/linalg/pointwise_conv.h"

#include <algorithm>

#include "common/parallel.h"

namespace nxrt::cpu::linalg {
namespace {

constexpr int64_t kVectorsPerTile = 3;  // as instantiated in pointwise_conv_avx*.cc

int64_t Lanes(Isa isa) { return isa == Isa::kAvx512 ? 16 : 8; }

// Bytes of X (IC x chunk pixels) that every channel block re-reads: about a quarter of a 1 MB
// L2, leaving room for the weights and the outputs being written.
constexpr int64_t kChunkBytes = 256 * 1024;

}  // namespace

int PointwiseRows(Isa isa) { return isa == Isa::kAvx512 ? 8 : 4; }

int64_t PointwisePackedSize(Isa isa, int64_t out_channels, int64_t in_channels) {
  const int64_t rows = PointwiseRows(isa);
  return (out_channels + rows - 1) / rows * rows * in_channels;
}

void PackPointwiseWeights(Isa isa, const float* w, int64_t out_channels, int64_t in_channels,
                          float* packed) {
  const int64_t rows = PointwiseRows(isa), blocks = (out_channels + rows - 1) / rows;
  for (int64_t b = 0; b < blocks; ++b) {
    float* dst = packed + b * in_channels * rows;
    for (int64_t k = 0; k < in_channels; ++k) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t o = b * rows + r;
        dst[k * rows + r] = o < out_channels ? w[o * in_channels + k] : 0.0f;
      }
    }
  }
}

void RunPointwise(Isa isa, const PointwiseJob& job, int threads) {
  if (job.out_channels == 0 || job.pixels == 0) return;
  const int64_t rows = PointwiseRows(isa), blocks = (job.out_channels + rows - 1) / rows;
  const int64_t tile_cols = kVectorsPerTile * Lanes(isa);
  // Chunks of whole tiles, so only the image's last one has a partial tile.
  const int64_t fit = kChunkBytes / (std::max<int64_t>(job.in_channels, 1) * 4);
  const int64_t chunk = std::max<int64_t>(1, fit / tile_cols) * tile_cols;
  const int64_t chunks = (job.pixels + chunk - 1) / chunk;
  auto tiles = [&](int64_t b0, int64_t b1, int64_t p0, int64_t p1) {
    if (isa == Isa::kAvx512) {
      PointwiseTilesAvx512(job, b0, b1, p0, p1);
    } else {
      PointwiseTilesAvx2(job, b0, b1, p0, p1);
    }
  };
  const double macs =
      static_cast<double>(job.out_channels) * job.in_channels * static_cast<double>(job.pixels);
  // Work items: (pixel chunk, group of channel blocks). Several items per thread so a slow
  // item does not hold the others up; channel groups when there are few chunks.
  int64_t groups = 1;
  if (threads > 1 && macs >= kMinParallelMacs && chunks < 4 * threads) {
    groups = std::min<int64_t>(blocks, (4 * threads + chunks - 1) / chunks);
  }
  const int64_t items = chunks * groups;
  auto run = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = i / groups, g = i % groups;
      const int64_t p0 = c * chunk, p1 = std::min(job.pixels, p0 + chunk);
      tiles(blocks * g / groups, blocks * (g + 1) / groups, p0, p1);
    }
  };
  if (threads <= 1 || macs < kMinParallelMacs || items < 2) {
    run(0, items);
  } else {
    ParallelFor(threads, items, 1, run);
  }
}

}  // namespace nxrt::cpu::linalg
