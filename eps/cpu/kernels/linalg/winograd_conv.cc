#include "kernels/linalg/winograd_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/panel_gemm.h"

namespace nxrt::cpu::linalg {
namespace {

constexpr int64_t kLanes = 8;  // floats of an AVX2 vector: a block of nChw8c, half of nChw16c
constexpr int kPoints = 36;    // 6 x 6 transformed values per tile

// G of F(4x4, 3x3) (Lavin and Gray): the 6x3 weight transform.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// B^T applied to six vectors (a column or a row of a tile).
inline void InputTransform6(const __m256 d[6], __m256 out[6]) {
  const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
  out[0] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[2], _mm256_mul_ps(four, d[0])), d[4]);
  out[1] = _mm256_sub_ps(_mm256_add_ps(d[3], d[4]), _mm256_mul_ps(four, _mm256_add_ps(d[1], d[2])));
  out[2] = _mm256_add_ps(_mm256_sub_ps(d[4], d[3]), _mm256_mul_ps(four, _mm256_sub_ps(d[1], d[2])));
  out[3] = _mm256_add_ps(_mm256_sub_ps(d[4], d[2]), _mm256_mul_ps(two, _mm256_sub_ps(d[3], d[1])));
  out[4] = _mm256_add_ps(_mm256_sub_ps(d[4], d[2]), _mm256_mul_ps(two, _mm256_sub_ps(d[1], d[3])));
  out[5] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[3], _mm256_mul_ps(four, d[1])), d[5]);
}

// A^T applied to six vectors: four results.
inline void OutputTransform6(const __m256 m[6], __m256 out[4]) {
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f),
               eight = _mm256_set1_ps(8.0f);
  const __m256 p12 = _mm256_add_ps(m[1], m[2]), m12 = _mm256_sub_ps(m[1], m[2]);
  const __m256 p34 = _mm256_add_ps(m[3], m[4]), m34 = _mm256_sub_ps(m[3], m[4]);
  out[0] = _mm256_add_ps(_mm256_add_ps(m[0], p12), p34);
  out[1] = _mm256_fmadd_ps(two, m34, m12);
  out[2] = _mm256_fmadd_ps(four, p34, p12);
  out[3] = _mm256_add_ps(_mm256_fmadd_ps(eight, m34, m12), m[5]);
}

}  // namespace

bool WinogradConv3x3::Suits(int64_t in_channels, int64_t out_channels, int64_t kernel_h,
                            int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                            int64_t dilation_h, int64_t dilation_w, int64_t groups) {
  // From 16 channels in and out it beat oneDNN's direct kernel on every shape measured
  // (16 -> 16 at 48x48: 1.7x; 16 -> 64 at 55x55: 1.9x; 64 -> 64 at 56x56: 2.6x).
  // The transformed weights take 36 floats per channel pair (4x the direct ones): layers where
  // they would pass 40 MiB (512 x 512 channels take 36 MiB) stay direct.
  const int64_t in_padded = (in_channels + kLanes - 1) / kLanes * kLanes;
  const int64_t transformed_bytes =
      kPoints * in_padded * PanelCount(out_channels) * kPanelWidth * 4;
  return kernel_h == 3 && kernel_w == 3 && stride_h == 1 && stride_w == 1 && dilation_h == 1 &&
         dilation_w == 1 && groups == 1 && in_channels >= 16 && out_channels >= 16 &&
         transformed_bytes <= (int64_t{40} << 20);
}

bool WinogradConv3x3::Serves(int64_t in_channels, int64_t out_channels, int64_t kernel_h,
                             int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                             int64_t dilation_h, int64_t dilation_w, int64_t groups, int64_t out_h,
                             int64_t out_w) {
  return Suits(in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w, dilation_h,
               dilation_w, groups) &&
         ((out_h + 3) / 4) * ((out_w + 3) / 4) >= 16;
}

std::vector<WinogradConv3x3::Part> WinogradConv3x3::Parts(int threads) const {
  const int64_t slices = std::max(threads, 1);
  const bool by_tiles = tiles() >= int64_t{24} * slices || panels() < slices;
  const int64_t parts = std::min<int64_t>(slices, by_tiles ? tiles() : panels());
  std::vector<Part> out;
  for (int64_t s = 0; s < parts; ++s) {
    if (by_tiles)
      out.push_back({tiles() * s / parts, tiles() * (s + 1) / parts, 0, panels()});
    else
      out.push_back({0, tiles(), panels() * s / parts, panels() * (s + 1) / parts});
  }
  return out;
}

std::shared_ptr<const WinogradConv3x3> WinogradConv3x3::Shared(const Shape& shape,
                                                               const float* weights,
                                                               const std::vector<Step>& chain) {
  struct Entry {
    Shape shape;
    std::vector<float> weights;  // compared whole: equal hashes are not enough
    std::vector<Step> chain;
    std::weak_ptr<const WinogradConv3x3> kernel;
  };
  static std::mutex mu;
  static std::vector<Entry> entries;
  const size_t count = static_cast<size_t>(shape.in_channels * shape.out_channels * 9);
  auto same_shape = [](const Shape& a, const Shape& b) {
    return a.in_channels == b.in_channels && a.out_channels == b.out_channels &&
           a.height == b.height && a.width == b.width && a.out_height == b.out_height &&
           a.out_width == b.out_width && a.pad_top == b.pad_top && a.pad_left == b.pad_left &&
           a.block == b.block;
  };
  auto same_chain = [](const std::vector<Step>& a, const std::vector<Step>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].sum != b[i].sum) return false;
      if (!a[i].sum &&
          (a[i].eltwise.alg != b[i].eltwise.alg || a[i].eltwise.alpha != b[i].eltwise.alpha ||
           a[i].eltwise.beta != b[i].eltwise.beta))
        return false;
    }
    return true;
  };
  std::lock_guard<std::mutex> lock(mu);
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const Entry& e) { return e.kernel.expired(); }),
                entries.end());
  for (const Entry& e : entries) {
    if (!same_shape(e.shape, shape) || !same_chain(e.chain, chain) || e.weights.size() != count ||
        !std::equal(e.weights.begin(), e.weights.end(), weights))
      continue;
    if (auto kernel = e.kernel.lock()) return kernel;
  }
  auto kernel = std::make_shared<const WinogradConv3x3>(shape, weights, nullptr, chain);
  entries.push_back({shape, std::vector<float>(weights, weights + count), chain, kernel});
  return kernel;
}

WinogradConv3x3::WinogradConv3x3(const Shape& shape, const float* weights, const float* bias,
                                 std::vector<Step> chain)
    : s_(shape) {
  if (s_.block != 8 && s_.block != 16)
    throw std::invalid_argument("Winograd: block of " + std::to_string(s_.block) + " channels");
  for (const Step& step : chain) {  // runs of activations between sums
    if (step.sum || segments_.empty() || segments_.back().sum) segments_.push_back({step.sum, {}});
    if (!step.sum) segments_.back().activations.push_back(step.eltwise);
  }
  const int64_t c = s_.in_channels, m = s_.out_channels;
  in_padded_ = (c + s_.block - 1) / s_.block * s_.block;
  out_panels_ = PanelCount(m);
  tiles_h_ = (s_.out_height + 3) / 4;
  tiles_w_ = (s_.out_width + 3) / 4;
  // Tiles per pass: 24 (four GEMM row tiles) measured best from 56x56 to 28x28 (12: the
  // transformed weights, streamed once per pass, cost more; 48: the transformed tiles no longer
  // stay in L2); fewer when the image has fewer.
  tile_block_ = std::min<int64_t>(24, tiles());
  u_.assign(static_cast<size_t>(kPoints * out_panels_ * in_padded_ * kPanelWidth), 0.0f);
  // G g G^T for eight output channels at a time (one vector), in float: the lanes of a vector
  // are eight consecutive columns of a panel, stored together.
  __m256 gm[6][3];
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 3; ++j) gm[r][j] = _mm256_set1_ps(static_cast<float>(kG[r][j]));
  // Both halves of a panel's row (16 output channels) one after the other: every write of the
  // 36 streams fills whole cache lines.
  for (int64_t panel = 0; panel < out_panels_; ++panel) {
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t o0 = panel * kPanelWidth; o0 < std::min(m, (panel + 1) * kPanelWidth);
           o0 += kLanes) {
        alignas(32) float lane[9][kLanes] = {};
        for (int64_t l = 0; l < kLanes && o0 + l < m; ++l)
          for (int k = 0; k < 9; ++k) lane[k][l] = weights[((o0 + l) * c + i) * 9 + k];
        __m256 g[9];
        for (int k = 0; k < 9; ++k) g[k] = _mm256_load_ps(lane[k]);
        __m256 half[6][3];  // G g
        for (int r = 0; r < 6; ++r)
          for (int j = 0; j < 3; ++j)
            half[r][j] = _mm256_fmadd_ps(
                gm[r][0], g[j],
                _mm256_fmadd_ps(gm[r][1], g[3 + j], _mm256_mul_ps(gm[r][2], g[6 + j])));
        for (int r = 0; r < 6; ++r) {
          for (int j = 0; j < 6; ++j) {
            const __m256 u = _mm256_fmadd_ps(
                half[r][0], gm[j][0],
                _mm256_fmadd_ps(half[r][1], gm[j][1], _mm256_mul_ps(half[r][2], gm[j][2])));
            const int64_t point = r * 6 + j;
            _mm256_storeu_ps(u_.data() +
                                 ((point * out_panels_ + panel) * in_padded_ + i) * kPanelWidth +
                                 (o0 - panel * kPanelWidth),
                             u);
          }
        }
      }
    }
  }
  bias_.assign(static_cast<size_t>((m + s_.block - 1) / s_.block * s_.block), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + m, bias_.begin());
}

void WinogradConv3x3::TransformInput(const float* x, int64_t t0, int64_t count, float* v) const {
  // Channels in groups of eight (a vector): group g is lanes (g % halves) * 8.. of block
  // g / halves, whose pixels are `block` floats apart.
  const int64_t h = s_.height, w = s_.width, block = s_.block, halves = block / kLanes;
  const int64_t plane = h * w * block;
  for (int64_t cb = 0; cb < in_padded_ / kLanes; ++cb) {
    const float* xc = x + cb / halves * plane + cb % halves * kLanes;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t ti = (t0 + t) / tiles_w_, tj = (t0 + t) % tiles_w_;
      const int64_t top = ti * 4 - s_.pad_top, left = tj * 4 - s_.pad_left;
      __m256 d[6][6];
      for (int i = 0; i < 6; ++i) {
        const int64_t row = top + i;
        for (int j = 0; j < 6; ++j) {
          const int64_t col = left + j;
          d[i][j] = row >= 0 && row < h && col >= 0 && col < w
                        ? _mm256_loadu_ps(xc + (row * w + col) * block)
                        : _mm256_setzero_ps();
        }
      }
      __m256 cols[6][6];  // B^T d: per column j, the six transformed rows
      for (int j = 0; j < 6; ++j) {
        const __m256 column[6] = {d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]};
        __m256 out[6];
        InputTransform6(column, out);
        for (int i = 0; i < 6; ++i) cols[i][j] = out[i];
      }
      for (int i = 0; i < 6; ++i) {  // (B^T d) B: per row
        __m256 out[6];
        InputTransform6(cols[i], out);
        for (int j = 0; j < 6; ++j)
          _mm256_storeu_ps(v + ((i * 6 + j) * tile_block_ + t) * in_padded_ + cb * kLanes, out[j]);
      }
    }
  }
}

void WinogradConv3x3::TransformOutput(const float* mm, int64_t t0, int64_t count, int64_t p0,
                                      int64_t p1, float* y, const float* sum,
                                      const float* bias_values) const {
  // Output channels in groups of eight lanes, laid out as in TransformInput. A 16-channel block
  // may end in a group that holds only padding: it is written zero like every padding lane.
  const int64_t oh = s_.out_height, ow = s_.out_width, block = s_.block, halves = block / kLanes;
  const int64_t plane = oh * ow * block;
  const int64_t columns = out_panels_ * kPanelWidth;
  const int64_t groups = (s_.out_channels + block - 1) / block * halves;
  alignas(32) float row_buffer[4 * kLanes];
  const int64_t per_panel = kPanelWidth / kLanes;
  for (int64_t kb = p0 * per_panel; kb < std::min(groups, p1 * per_panel); ++kb) {
    float* yk = y + kb / halves * plane + kb % halves * kLanes;
    const float* sk = sum != nullptr ? sum + kb / halves * plane + kb % halves * kLanes : nullptr;
    const int64_t real_lanes = std::clamp<int64_t>(s_.out_channels - kb * kLanes, 0, kLanes);
    const __m256 bias = _mm256_loadu_ps(bias_values + kb * kLanes);
    for (int64_t t = 0; t < count; ++t) {
      const int64_t ti = (t0 + t) / tiles_w_, tj = (t0 + t) % tiles_w_;
      const int64_t pixels = std::min<int64_t>(4, ow - tj * 4);
      if (real_lanes == 0) {  // a group of padding lanes only
        for (int i = 0; i < 4 && ti * 4 + i < oh; ++i)
          for (int64_t p = 0; p < pixels; ++p)
            std::fill_n(yk + ((ti * 4 + i) * ow + tj * 4 + p) * block, kLanes, 0.0f);
        continue;
      }
      __m256 rows[4][6];  // A^T m: per column j, four rows
      for (int j = 0; j < 6; ++j) {
        __m256 column[6];
        for (int i = 0; i < 6; ++i)
          column[i] = _mm256_loadu_ps(mm + ((i * 6 + j) * tile_block_ + t) * columns + kb * kLanes);
        __m256 out[4];
        OutputTransform6(column, out);
        for (int i = 0; i < 4; ++i) rows[i][j] = out[i];
      }
      for (int i = 0; i < 4; ++i) {
        const int64_t row = ti * 4 + i;
        if (row >= oh) break;
        __m256 out[4];
        OutputTransform6(rows[i], out);
        for (int j = 0; j < 4; ++j)
          _mm256_store_ps(row_buffer + j * kLanes, _mm256_add_ps(out[j], bias));
        const int64_t at = (row * ow + tj * 4) * block, n = pixels * kLanes;
        for (const Segment& segment : segments_) {
          if (segment.sum) {
            for (int64_t p = 0; p < pixels; ++p)
              for (int64_t l = 0; l < kLanes; ++l)
                row_buffer[p * kLanes + l] += sk[at + p * block + l];
          } else {
            ApplyEltwiseRange(segment.activations, row_buffer, n);
          }
        }
        if (real_lanes < kLanes) {  // padding lanes stay zero whatever the activations made
          for (int64_t p = 0; p < pixels; ++p)
            for (int64_t l = real_lanes; l < kLanes; ++l) row_buffer[p * kLanes + l] = 0.0f;
        }
        for (int64_t p = 0; p < pixels; ++p)
          std::copy_n(row_buffer + p * kLanes, kLanes, yk + at + p * block);
      }
    }
  }
}

void WinogradConv3x3::Run(const float* x, float* y, const float* sum, int64_t t0, int64_t t1,
                          int64_t p0, int64_t p1, const float* bias) const {
  const int64_t columns = out_panels_ * kPanelWidth;
  float* v = static_cast<float*>(
      ThreadScratch(kScratchA, static_cast<size_t>(kPoints * tile_block_ * in_padded_) * 4));
  float* mm = static_cast<float*>(
      ThreadScratch(kScratchB, static_cast<size_t>(kPoints * tile_block_ * columns) * 4));
  for (int64_t b0 = t0; b0 < t1; b0 += tile_block_) {
    const int64_t count = std::min(tile_block_, t1 - b0);
    TransformInput(x, b0, count, v);
    for (int point = 0; point < kPoints; ++point) {
      MultiplyPanels(v + point * tile_block_ * in_padded_, in_padded_, count,
                     u_.data() + (point * out_panels_ + p0) * in_padded_ * kPanelWidth, in_padded_,
                     p1 - p0, mm + point * tile_block_ * columns + p0 * kPanelWidth, columns);
    }
    TransformOutput(mm, b0, count, p0, p1, y, sum, bias != nullptr ? bias : bias_.data());
  }
}

}  // namespace nxrt::cpu::linalg
