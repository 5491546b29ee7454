#include "kernels/linalg/panel_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "common/parallel.h"
#include "kernels/linalg/conv_dnnl.h"

namespace nxrt::cpu::linalg {
namespace {

// Rows of the register tile, and the most depth of a K block: up to 256 x 16 floats of a panel
// (16 KiB) stay in L1 while the row tiles pass (256 and 384 measured best of 128-768 on Zen 1).
// K is cut into equal blocks (257 is 129 + 128, not 256 + 1: each block passes over C once).
constexpr int kTileRows = 6;
constexpr int64_t kDepthBlock = 256;
// When A is the larger operand (more rows than B has columns: Magika's 20480 x 257 x 64), rows
// run in blocks of this many, each block of A read once from memory for all panels (instead of
// once per panel) while the small B stays in cache.
constexpr int64_t kRowBlock = 20 * kTileRows;
// Bytes of A's rows one K block of the panels passes over at a time: half of a Zen core's L2.
constexpr int64_t kL2RowBytes = 256 * 1024;
constexpr int64_t kCacheLine = 64;

struct Tile {
  const float* a;  // first row of the tile at the block's first column
  int64_t lda;
  const float* b;  // the panel at the block's first row
  int64_t depth;
  float* c;  // first row of the tile at the panel's first column
  int64_t ldc;
  int columns;      // real columns of the panel (16 but for the last)
  bool accumulate;  // add to what an earlier K block stored
  bool last;        // the final K block: scale by alpha and add the bias
  float alpha;
  const float* bias;            // 16 floats (the panel's, zero-padded) or null
  const char* fetch = nullptr;  // this tile's share of the next panel's block, to bring into L2
  int fetch_lines = 0;          // cache lines of it
};

// R rows x 16 columns of C over one K block, in twelve (or fewer) accumulators.
// The loops over rows are unrolled by hand-written pragmas: without them GCC keeps the
// accumulator arrays in memory (a store after every FMA, half the speed).
template <int R>
void RunTile(const Tile& t) {
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  const float* row[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) row[r] = t.a + r * t.lda;
    // The tile's rows of C are read (a later K block) or written only after the K loop, a row of C
    // apart: with a wide C (ViT's 197 x 3072) they are out of cache, and each tile stalled on them.
    // Fetching them now hides that behind the loop: 197 x 768 x 3072 17.3 -> 12.1 ms (best of six)
    // at 1 thread on Zen 3, onnxruntime 11.5-13.
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(t.c + r * t.ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(t.c + r * t.ldc + 15), _MM_HINT_T0);
  }
  for (int l = 0; l < t.fetch_lines; ++l) _mm_prefetch(t.fetch + l * kCacheLine, _MM_HINT_T1);
  const float* b = t.b;
  if constexpr (R == 1) {
    // One row: two independent pairs of accumulators, so the adds do not wait on each other.
    __m256 lo2 = _mm256_setzero_ps(), hi2 = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 2 <= t.depth; k += 2, b += 2 * kPanelWidth) {
      const __m256 x0 = _mm256_broadcast_ss(row[0] + k), x1 = _mm256_broadcast_ss(row[0] + k + 1);
      lo[0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b), lo[0]);
      hi[0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + 8), hi[0]);
      lo2 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 16), lo2);
      hi2 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 24), hi2);
    }
    if (k < t.depth) {
      const __m256 x0 = _mm256_broadcast_ss(row[0] + k);
      lo[0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b), lo[0]);
      hi[0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + 8), hi[0]);
    }
    lo[0] = _mm256_add_ps(lo[0], lo2);
    hi[0] = _mm256_add_ps(hi[0], hi2);
  } else {
    for (int64_t k = 0; k < t.depth; ++k, b += kPanelWidth) {
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(row[r] + k);
        lo[r] = _mm256_fmadd_ps(x, b0, lo[r]);
        hi[r] = _mm256_fmadd_ps(x, b1, hi[r]);
      }
    }
  }
  const __m256 alpha = _mm256_set1_ps(t.alpha);
  const bool bias = t.last && t.bias != nullptr;
  const __m256 bias_lo = bias ? _mm256_loadu_ps(t.bias) : _mm256_setzero_ps();
  const __m256 bias_hi = bias ? _mm256_loadu_ps(t.bias + 8) : _mm256_setzero_ps();
  if (t.columns == kPanelWidth) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* c = t.c + r * t.ldc;
      if (t.accumulate) {
        lo[r] = _mm256_add_ps(lo[r], _mm256_loadu_ps(c));
        hi[r] = _mm256_add_ps(hi[r], _mm256_loadu_ps(c + 8));
      }
      if (t.last) {
        lo[r] = _mm256_fmadd_ps(lo[r], alpha, bias_lo);
        hi[r] = _mm256_fmadd_ps(hi[r], alpha, bias_hi);
      }
      _mm256_storeu_ps(c, lo[r]);
      _mm256_storeu_ps(c + 8, hi[r]);
    }
    return;
  }
  // The last panel: through a buffer, so nothing past column N is read or written.
  alignas(32) float buffer[R][kPanelWidth];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(buffer[r], lo[r]);
    _mm256_store_ps(buffer[r] + 8, hi[r]);
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* c = t.c + r * t.ldc;
    for (int j = 0; j < t.columns; ++j) {
      float v = buffer[r][j] + (t.accumulate ? c[j] : 0.0f);
      if (t.last) v = v * t.alpha + (t.bias != nullptr ? t.bias[j] : 0.0f);
      c[j] = v;
    }
  }
}

// `next`: the next panel's block (depth x 16 floats) or null; the row tiles fetch it in equal
// shares while they compute, so the next panel does not start on loads from memory.
void RunRows(Tile t, int64_t rows, const float* next) {
  const int64_t tiles = (rows + kTileRows - 1) / kTileRows;
  int64_t lines = next == nullptr ? 0 : t.depth * kPanelWidth * int64_t{sizeof(float)} / kCacheLine;
  const int64_t share = tiles == 0 ? 0 : (lines + tiles - 1) / tiles;
  t.fetch = reinterpret_cast<const char*>(next);
  const auto take_share = [&] {
    t.fetch_lines = static_cast<int>(std::min(share, lines));
    lines -= t.fetch_lines;
  };
  for (; rows >= kTileRows; rows -= kTileRows) {
    take_share();
    RunTile<kTileRows>(t);
    t.fetch += t.fetch_lines * kCacheLine;
    t.a += kTileRows * t.lda;
    t.c += kTileRows * t.ldc;
  }
  take_share();
  switch (rows) {
    case 5:
      RunTile<5>(t);
      break;
    case 4:
      RunTile<4>(t);
      break;
    case 3:
      RunTile<3>(t);
      break;
    case 2:
      RunTile<2>(t);
      break;
    case 1:
      RunTile<1>(t);
      break;
    default:
      break;
  }
}

}  // namespace

void MultiplyPanels(const float* a, int64_t lda, int64_t rows, const float* panels, int64_t depth,
                    int64_t panel_count, float* c, int64_t ldc) {
  for (int64_t p = 0; p < panel_count; ++p) {
    Tile t;
    t.a = a;
    t.lda = lda;
    t.b = panels + p * depth * kPanelWidth;
    t.depth = depth;
    t.c = c + p * kPanelWidth;
    t.ldc = ldc;
    t.columns = static_cast<int>(kPanelWidth);
    t.accumulate = false;
    t.last = false;
    t.alpha = 1.0f;
    t.bias = nullptr;
    RunRows(t, rows, nullptr);
  }
}

void PackPanels(const float* b, bool b_is_nk, int64_t k, int64_t n, float* out) {
  const int64_t panels = PanelCount(n);
  for (int64_t p = 0; p < panels; ++p) {
    if (!b_is_nk && (p + 1) * kPanelWidth <= n) {  // a whole panel of rows: 16 floats each
      for (int64_t i = 0; i < k; ++i)
        std::memcpy(out + (p * k + i) * kPanelWidth, b + i * n + p * kPanelWidth,
                    kPanelWidth * sizeof(float));
      continue;
    }
    for (int64_t i = 0; i < k; ++i) {
      float* dst = out + (p * k + i) * kPanelWidth;
      for (int64_t j = 0; j < kPanelWidth; ++j) {
        const int64_t col = p * kPanelWidth + j;
        dst[j] = col >= n ? 0.0f : b_is_nk ? b[col * k + i] : b[i * n + col];
      }
    }
  }
}

PanelMatMul::PanelMatMul(const float* panels, int64_t k, int64_t n, float alpha,
                         std::vector<DnnlEltwise> post)
    : panels_(panels), k_(k), n_(n), alpha_(alpha), post_(std::move(post)) {}

void PanelMatMul::RunBlock(const float* a, int64_t r0, int64_t r1, int64_t p0, int64_t p1, float* c,
                           const float* bias) const {
  // Each K block of every panel passes over all the rows of one call of RunPanelRows. When A is
  // the larger operand its blocks of kRowBlock rows are read once from memory for all panels
  // while the small B stays in cache. Otherwise rows still run in blocks whose slice of A stays
  // in L2: with all of them, a slice past L2 came from L3 once per panel (a batch of 8 x 128
  // tokens: 1 MB per panel, 64 panels).
  int64_t block_rows = kRowBlock;
  if (!RowsOuter(r1 - r0)) {
    const int64_t depth = std::min(k_, kDepthBlock);
    block_rows = std::max<int64_t>(
        kTileRows, kL2RowBytes / (depth * int64_t{sizeof(float)}) / kTileRows * kTileRows);
    if (r1 - r0 <= block_rows + block_rows / 2) block_rows = r1 - r0;  // one block
  }
  for (int64_t b0 = r0; b0 < r1; b0 += block_rows)
    RunPanelRows(a, b0, std::min(r1, b0 + block_rows), p0, p1, c, bias, !RowsOuter(r1 - r0));
}

void PanelMatMul::RunPanelRows(const float* a, int64_t r0, int64_t r1, int64_t p0, int64_t p1,
                               float* c, const float* bias, bool fetch_next) const {
  if (r1 <= r0 || p1 <= p0) return;
  const float* b = bias;
  if (k_ == 0) {  // no products: the bias (or zero), then the activations
    for (int64_t r = r0; r < r1; ++r) {
      float* row = c + r * n_;
      const int64_t j0 = p0 * kPanelWidth, j1 = std::min(n_, p1 * kPanelWidth);
      for (int64_t j = j0; j < j1; ++j) row[j] = b != nullptr ? b[j] : 0.0f;
      ApplyEltwiseRange(post_, row + j0, j1 - j0);
    }
    return;
  }
  alignas(32) float last_bias[kPanelWidth] = {};
  const int64_t blocks = (k_ + kDepthBlock - 1) / kDepthBlock;
  const int64_t step = (k_ + blocks - 1) / blocks;
  for (int64_t k0 = 0; k0 < k_; k0 += step) {
    const int64_t depth = std::min(step, k_ - k0);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t col = p * kPanelWidth;
      Tile t;
      t.a = a + r0 * k_ + k0;
      t.lda = k_;
      t.b = panels_ + (p * k_ + k0) * kPanelWidth;
      t.depth = depth;
      t.c = c + r0 * n_ + col;
      t.ldc = n_;
      t.columns = static_cast<int>(std::min(kPanelWidth, n_ - col));
      t.accumulate = k0 > 0;
      t.last = k0 + depth == k_;
      t.alpha = alpha_;
      t.bias = nullptr;
      if (b != nullptr) {
        if (t.columns == kPanelWidth) {
          t.bias = b + col;
        } else {
          std::copy(b + col, b + n_, last_bias);
          t.bias = last_bias;
        }
      }
      // B's panels pass once per block of rows: a wide weight (BERT's and ViT's 768 x 3072)
      // comes from memory, and the first row tile of each panel waited on every line. Fetching
      // the next panel during this one: 49 x 768 x 3072 and 128 x 768 x 3072 5-18% faster at 1
      // thread on Zen 3 (interleaved runs), within noise where A is the larger operand (its
      // small B stays in cache, so that path does not fetch).
      const float* next = fetch_next && p + 1 < p1 ? t.b + k_ * kPanelWidth : nullptr;
      RunRows(t, r1 - r0, next);
      if (t.last && !post_.empty()) {  // while the panel's columns are in cache
        ApplyEltwiseRows(post_, c + r0 * n_ + col, n_, r1 - r0, t.columns);
      }
    }
  }
}

void PanelMatMul::Run(const float* a, int64_t m, float* c, int threads, const float* bias) const {
  if (m <= 0 || n_ == 0) return;
  const int64_t panels = PanelCount(n_);
  const double macs = static_cast<double>(m) * static_cast<double>(k_) * static_cast<double>(n_);
  if (threads <= 1 || macs < kMinParallelMacs) {
    RunBlock(a, 0, m, 0, panels, c, bias);
    return;
  }
  const double macs_per_panel = static_cast<double>(m) * static_cast<double>(k_) * kPanelWidth;
  if (panels >= 2 * threads && !RowsOuter(m)) {  // each thread reads its panels of the weight
    const auto grain = static_cast<int64_t>(kMinParallelMacs / std::max(1.0, macs_per_panel)) + 1;
    ParallelFor(threads, panels, grain,
                [&](int64_t q0, int64_t q1) { RunBlock(a, 0, m, q0, q1, c, bias); });
    return;
  }
  // Too few panels, or A the larger operand: split the rows.
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  const double macs_per_tile =
      static_cast<double>(kTileRows) * static_cast<double>(k_) * static_cast<double>(n_);
  const auto grain = static_cast<int64_t>(kMinParallelMacs / std::max(1.0, macs_per_tile)) + 1;
  ParallelFor(threads, tiles, grain, [&](int64_t t0, int64_t t1) {
    RunBlock(a, t0 * kTileRows, std::min(m, t1 * kTileRows), 0, panels, c, bias);
  });
}

}  // namespace nxrt::cpu::linalg
