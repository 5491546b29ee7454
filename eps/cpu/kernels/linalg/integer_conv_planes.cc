// PlaneIntegerConv (integer_conv_planes.h). A task is one image, one group and a block of panels
// (16 output positions each): the block's columns of taps are made and packed first (about
// 64 KiB, so they stay in L2), then each tile of output channels (whose packed weight rows stay
// in L1) runs over the block's panels, and every tile goes to the planes as soon as it is summed.
//
// The quad paths multiply a' = W + sa (u8; sa = 128 for int8 weights) by b' = X - sb (s8; sb =
// 128 for uint8 input). With za' = w_zp + sa, per output channel m and position j:
//   sum_k (W - w_zp)(X - x_zp) = sum_k a' b' + (sb - x_zp) * sum_k a' - za' * sum_k (X - x_zp)
// where sum_k a' is the weight row's (PlaneConvWeights::row_sum) and sum_k (X - x_zp) the
// column's, made with the panel. The pair paths hold both operands centred, as int16.
#include "kernels/linalg/integer_conv_planes.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/parallel.h"

namespace nxrt::cpu::linalg {
namespace {

using quantized::Int8GemmPath;
constexpr int64_t kW = quantized::kInt8PanelWidth;     // output positions per panel
constexpr int64_t kMaxRows = quantized::kInt8AmxRows;  // output channels per tile, at most
// Bytes of packed columns per task: the block stays in L2 while the weight tiles pass over it.
constexpr int64_t kBlockBytes = int64_t{64} << 10;

int RowsPerTile(Int8GemmPath path) {
  switch (path) {
    case Int8GemmPath::kAmx:
    case Int8GemmPath::kPortableAmx:
      return quantized::kInt8AmxRows;
    case Int8GemmPath::kAvx512Vnni:
    case Int8GemmPath::kPortableQuads:
      return quantized::kInt8VnniRows;
    case Int8GemmPath::kAvxVnni:
      return quantized::kInt8AvxVnniRows;
    default:
      return quantized::kInt8Avx2Rows;
  }
}
static_assert(quantized::kInt8VnniRows <= kMaxRows && quantized::kInt8Avx2Rows <= kMaxRows &&
              quantized::kInt8AvxVnniRows <= kMaxRows && kMaxRows % 16 == 0);

// The AMX tile configuration of this thread for one task range: loaded on entry, released on
// exit (another library may configure tiles its own way between our calls).
class AmxTiles {
 public:
  explicit AmxTiles(bool active) : active_(active) {
    if (active_) quantized::AmxTileConfigure();
  }
  ~AmxTiles() {
    if (active_) quantized::AmxTileRelease();
  }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  bool active_;
};

// One thread's buffers, kept across tasks and runs.
struct Scratch {
  std::vector<uint8_t> columns;  // [k_padded][16]: one panel's taps, raw 8-bit values
  std::vector<int8_t> b8;        // quad paths: the block's packed panels
  std::vector<int16_t> b16;      // pair paths: the block's packed panels
  std::vector<int32_t> col_sum;  // quad paths: [panels of the block][16]
  alignas(64) std::array<int32_t, kMaxRows * kW> tile{};
};

// Whether output position o reads input position o alone (1 x 1, stride 1, no padding).
bool IsPointwise(const ConvGeometry& g) {
  for (int i = 0; i < kMaxSpatial; ++i) {
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.pad_begin[i] != 0 || g.in[i] != g.out[i])
      return false;
  }
  return true;
}

// 16 bytes: src[0], src[2], ..., src[30] (reads src[0..31]).
inline __m128i EvenBytes(const uint8_t* src) {
  const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), even);
  const __m128i hi =
      _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)), even);
  return _mm_unpacklo_epi64(lo, hi);
}

// columns[k * 16 + c] = the input value of tap k (channel k / kernel_size, tap k % kernel_size)
// for output position j0 + c, or `pad` outside the input, past the `cols` positions and in the
// rows of padding up to k_padded. A tap whose 16 positions read 16 consecutive input bytes (stride
// 1 inside a row, every 1 x 1 convolution of stride 1) is copied with one 16-byte move per
// channel, one whose positions read every second byte (stride 2 inside a row) with two loads and
// a shuffle; others are gathered.
void PanelColumns(const ConvGeometry& g, bool pointwise, const uint8_t* x, int64_t channels,
                  uint8_t pad, int64_t j0, int64_t cols, int64_t k_padded, uint8_t* columns) {
  // Locals, not g's fields: stores through an 8-bit pointer may alias anything.
  const int64_t in_size = g.in_size(), ks = g.kernel_size();
  std::memset(columns + channels * ks * kW, pad,
              static_cast<size_t>((k_padded - channels * ks) * kW));
  if (pointwise) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      uint8_t* row = columns + ch * kW;
      const uint8_t* src = x + ch * in_size + j0;
      if (cols == kW) {
        std::memcpy(row, src, kW);
      } else {
        std::memcpy(row, src, static_cast<size_t>(cols));
        std::memset(row + cols, pad, static_cast<size_t>(kW - cols));
      }
    }
    return;
  }
  const int64_t in0 = g.in[0], in1 = g.in[1], in2 = g.in[2];
  const int64_t out1 = g.out[1], out2 = g.out[2];
  const int64_t kh0 = g.kernel[0], kh1 = g.kernel[1], kw = g.kernel[2];
  const int64_t d0 = g.dilation[0], d1 = g.dilation[1], d2 = g.dilation[2];
  int64_t base0[kW], base1[kW], base2[kW];
  int64_t o2 = j0 % out2, o1 = (j0 / out2) % out1, o0 = j0 / (out2 * out1);
  for (int64_t c = 0; c < kW; ++c) {
    base0[c] = o0 * g.stride[0] - g.pad_begin[0];
    base1[c] = o1 * g.stride[1] - g.pad_begin[1];
    base2[c] = o2 * g.stride[2] - g.pad_begin[2];
    if (c + 1 < cols && ++o2 == out2) {  // the next position (the last one repeats past cols)
      o2 = 0;
      if (++o1 == out1) {
        o1 = 0;
        ++o0;
      }
    }
  }
  int64_t tap = 0;
  for (int64_t k0 = 0; k0 < kh0; ++k0) {
    for (int64_t k1 = 0; k1 < kh1; ++k1) {
      for (int64_t k2 = 0; k2 < kw; ++k2, ++tap) {
        int64_t offset[kW];
        bool whole = cols == kW;
        for (int64_t c = 0; c < kW; ++c) {
          const int64_t i0 = base0[c] + k0 * d0, i1 = base1[c] + k1 * d1, i2 = base2[c] + k2 * d2;
          const bool inside =
              c < cols && i0 >= 0 && i0 < in0 && i1 >= 0 && i1 < in1 && i2 >= 0 && i2 < in2;
          offset[c] = inside ? (i0 * in1 + i1) * in2 + i2 : -1;
          whole = whole && inside;
        }
        // Offsets of a panel's positions increase strictly, so a span of 15 means consecutive.
        const int64_t span = offset[kW - 1] - offset[0];
        const bool consecutive = whole && span == kW - 1;
        // A span of 30 with every other byte: positions in one row at stride 2 (the 32-byte read
        // stays inside the plane).
        const bool even = whole && span == 2 * (kW - 1) && offset[1] - offset[0] == 2 &&
                          base1[0] == base1[kW - 1] && base0[0] == base0[kW - 1] &&
                          offset[0] + 2 * kW <= in_size;
        for (int64_t ch = 0; ch < channels; ++ch) {
          uint8_t* row = columns + (ch * ks + tap) * kW;
          const uint8_t* src = x + ch * in_size;
          if (consecutive) {
            std::memcpy(row, src + offset[0], kW);
          } else if (even) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(row), EvenBytes(src + offset[0]));
          } else {
            for (int64_t c = 0; c < kW; ++c) row[c] = offset[c] >= 0 ? src[offset[c]] : pad;
          }
        }
      }
    }
  }
}

// The quad layout (int8_gemm_core.h): quad q, column c at dst[(q * 16 + c) * 4 + i] holds
// columns[(4q + i) * 16 + c] as s8 (uint8 input flipped by -128, i.e. its top bit).
void PackQuads(const uint8_t* columns, int64_t k_padded, bool flip, int8_t* dst) {
  const __m128i top = _mm_set1_epi8(static_cast<char>(flip ? 0x80 : 0));
  for (int64_t q = 0; q < k_padded / 4; ++q) {
    const uint8_t* r = columns + q * 4 * kW;
    auto row = [&](int i) {
      return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i * kW)), top);
    };
    const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
    const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
    const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
    auto* out = reinterpret_cast<__m128i*>(dst + q * 4 * kW);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));  // columns 0-3
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));  // 4-7
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));  // 8-11
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));  // 12-15
  }
}

// The pair layout: pair q, column c at dst[(q * 16 + c) * 2 + i] holds columns[(2q + i) * 16 + c]
// - x_zp as int16.
void PackPairs(const uint8_t* columns, int64_t k_padded, bool x_signed, int32_t x_zp,
               int16_t* dst) {
  const __m256i zp = _mm256_set1_epi16(static_cast<int16_t>(x_zp));
  for (int64_t q = 0; q < k_padded / 2; ++q) {
    auto row = [&](int i) {
      const __m128i v =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(columns + (2 * q + i) * kW));
      return _mm256_sub_epi16(x_signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v), zp);
    };
    const __m256i a = row(0), b = row(1);
    const __m256i lo = _mm256_unpacklo_epi16(a, b);  // columns 0-3 | 8-11
    const __m256i hi = _mm256_unpackhi_epi16(a, b);  // columns 4-7 | 12-15
    auto* out = reinterpret_cast<__m256i*>(dst + q * 2 * kW);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

// sum[c] = sum over the kdim real taps of (column value - x_zp), modulo 2^32 like the int32 sums
// themselves (unsigned, so that a hostile model's huge kdim wraps instead of overflowing).
template <class T>
void ColumnSums(const uint8_t* columns, int64_t kdim, int32_t x_zp, int32_t* sum) {
  uint32_t s[kW] = {};
  for (int64_t k = 0; k < kdim; ++k) {
    const T* row = reinterpret_cast<const T*>(columns + k * kW);
    for (int64_t c = 0; c < kW; ++c) s[c] += static_cast<uint32_t>(row[c]);
  }
  const auto zp_total = static_cast<uint32_t>(kdim * x_zp);
  for (int64_t c = 0; c < kW; ++c) sum[c] = static_cast<int32_t>(s[c] - zp_total);
}

// The tile's mm channels from m0 on, positions [j0, j0 + cols) of the image whose first output
// plane is `first_plane`: the quad paths' corrections (file comment), then the output.
void FinishTile(const int32_t* tile, int mm, int64_t m0, int64_t j0, int64_t cols,
                const int32_t* col_sum, int32_t x_term, const PlaneConvWeights& w,
                const IntegerConvOutput& out, int64_t first_plane, int64_t out_size) {
  int32_t add[kMaxRows] = {}, za[kMaxRows] = {};
  const bool quads = quantized::UsesQuads(w.path);
  if (quads) {
    for (int r = 0; r < mm; ++r) {
      add[r] = static_cast<int32_t>(int64_t{x_term} * w.row_sum[static_cast<size_t>(m0 + r)]);
      za[r] = w.row_zp[static_cast<size_t>(m0 + r)];
    }
  }
  SumTile t;
  t.tile = tile;
  t.rows = mm;
  t.m0 = m0;
  t.row_add = add;
  t.row_za = quads ? za : nullptr;
  t.col_sum = col_sum;
  t.at = (first_plane + m0) * out_size + j0;
  t.row_stride = out_size;
  t.cols = cols;
  StoreTile(out, t);
}

// c = rows [m0, m0 + mm) of the packed weights times one packed panel. The AMX paths multiply
// mm rounded up to 16 rows (the weights hold zero rows past the last channel, `c` room for them);
// with fewer than kAmxMinRows rows the VNNI micro-kernel reads the same layout.
void Tile(Int8GemmPath path, int mm, const PlaneConvWeights& w, int64_t m0, const void* panel,
          int32_t* c) {
  const int64_t kp = w.k_padded;
  const auto* b8 = static_cast<const int8_t*>(panel);
  const auto* b16 = static_cast<const int16_t*>(panel);
  // (Only the quad paths hold a8, only the pair paths a16.)
  auto a8 = [&] { return w.a8.data() + m0 * kp; };
  switch (path) {
    case Int8GemmPath::kAmx:
      if (mm >= quantized::kAmxMinRows)
        return quantized::Int8TileAmx(mm, a8(), kp, b8, kp / 4, c, false);
      return quantized::Int8TileAvx512Vnni(mm, a8(), kp, b8, kp / 4, c, false);
    case Int8GemmPath::kPortableAmx:
      return quantized::Int8TilePortableQuads((mm + 15) / 16 * 16, a8(), kp, b8, kp / 4, c, false);
    case Int8GemmPath::kAvx512Vnni:
      return quantized::Int8TileAvx512Vnni(mm, a8(), kp, b8, kp / 4, c, false);
    case Int8GemmPath::kAvxVnni:
      return quantized::Int8TileAvxVnni(mm, a8(), kp, b8, kp / 4, c, false);
    case Int8GemmPath::kPortableQuads:
      return quantized::Int8TilePortableQuads(mm, a8(), kp, b8, kp / 4, c, false);
    case Int8GemmPath::kAvx2:
      return quantized::Int8TileAvx2(mm, w.a16.data() + m0 * kp, kp, b16, kp / 2, c, false);
    default:
      return quantized::Int8TilePortable(mm, w.a16.data() + m0 * kp, kp, b16, kp / 2, c, false);
  }
}

}  // namespace

PlaneConvWeights PackPlaneConvWeights(Int8GemmPath gemm_path, const void* w, bool w_signed,
                                      int64_t m, int64_t kdim, int64_t group,
                                      const std::vector<int32_t>& zp) {
  PlaneConvWeights p;
  p.path = gemm_path;
  const bool quads = quantized::UsesQuads(p.path);
  p.group = group;
  p.ocg = group > 0 ? m / group : 0;
  p.kdim = kdim;
  const bool amx = quantized::UsesAmxTiles(p.path);
  // k in whole pairs, quads or (AMX) tile rows of 64; AMX tiles also read up to 15 rows past the
  // last channel (zero).
  const int64_t step = amx ? 4 * quantized::kAmxQuadsPerTile : quads ? 4 : 2;
  p.k_padded = (kdim + step - 1) / step * step;
  const size_t size = static_cast<size_t>((m + (amx ? 15 : 0)) * p.k_padded);
  if (quads) {
    p.a8.assign(size, 0);
    p.row_sum.assign(static_cast<size_t>(m), 0);
    p.row_zp.assign(static_cast<size_t>(m), 0);
  } else {
    p.a16.assign(size, 0);
  }
  for (int64_t r = 0; r < m; ++r) {
    const int32_t z = zp[zp.size() > 1 ? static_cast<size_t>(r) : 0];
    int64_t row_sum = 0;
    for (int64_t k = 0; k < kdim; ++k) {
      const int64_t i = r * kdim + k;
      const int32_t v = w_signed ? int32_t(static_cast<const int8_t*>(w)[i])
                                 : int32_t(static_cast<const uint8_t*>(w)[i]);
      const size_t at = static_cast<size_t>(r * p.k_padded + k);
      if (quads) {
        const int32_t shifted = v + (w_signed ? 128 : 0);
        p.a8[at] = static_cast<uint8_t>(shifted);
        row_sum += shifted;
      } else {
        p.a16[at] = static_cast<int16_t>(v - z);
      }
    }
    if (quads) {
      p.row_sum[static_cast<size_t>(r)] = static_cast<int32_t>(row_sum);  // modulo 2^32
      p.row_zp[static_cast<size_t>(r)] = z + (w_signed ? 128 : 0);
    }
  }
  return p;
}

void PlaneIntegerConv(const ConvGeometry& g, const void* x, bool x_signed, int32_t x_zp,
                      const PlaneConvWeights& w, const IntegerConvOutput& out, int threads) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t kdim = icg * g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  NXRT_EP_ENFORCE(w.group == g.group && w.ocg == ocg && w.kdim == kdim,
                  "8-bit convolution: packed weights do not match the convolution");
  if (out_size == 0 || ocg == 0 || g.batch == 0) return;
  const Int8GemmPath path = w.path;
  const bool quads = quantized::UsesQuads(path);
  const int mr = RowsPerTile(path);
  const int64_t kp = w.k_padded;
  const int64_t panels = (out_size + kW - 1) / kW;
  const int64_t panel_elems = kp * kW;  // int8 or int16 values of one packed panel
  const int64_t panel_bytes = panel_elems * (quads ? 1 : 2);
  int64_t block = std::clamp<int64_t>(kBlockBytes / std::max<int64_t>(1, panel_bytes), 1, panels);
  const int64_t planes = g.batch * g.group;
  if (threads > 1) {
    // About four tasks per thread where the positions allow.
    const int64_t per_plane = (4 * threads + planes - 1) / planes;
    if ((panels + block - 1) / block < per_plane)
      block = std::max<int64_t>(1, (panels + per_plane - 1) / per_plane);
  }
  const int64_t blocks = (panels + block - 1) / block;
  const int64_t tasks = planes * blocks;
  const int64_t task_macs = std::max<int64_t>(1, block * kW * ocg * kdim);
  const int64_t grain = (static_cast<int64_t>(kMinParallelMacs) + task_macs - 1) / task_macs;
  const bool pointwise = IsPointwise(g);
  const uint8_t pad = static_cast<uint8_t>(x_zp);  // an int8 zero point's two's complement byte
  const int32_t x_term = (x_signed ? 0 : 128) - x_zp;
  const auto* xb = static_cast<const uint8_t*>(x);

  ParallelFor(threads, tasks, grain, [&](int64_t t0, int64_t t1) {
    const AmxTiles amx(path == Int8GemmPath::kAmx);
    thread_local Scratch s;  // the running thread's own
    s.columns.resize(static_cast<size_t>(panel_elems));
    if (quads) {
      s.b8.resize(static_cast<size_t>(block * panel_elems));
      s.col_sum.resize(static_cast<size_t>(block * kW));
    } else {
      s.b16.resize(static_cast<size_t>(block * panel_elems));
    }
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t plane = task / blocks, n = plane / g.group, grp = plane % g.group;
      const int64_t p0 = (task % blocks) * block, p1 = std::min(panels, p0 + block);
      const uint8_t* xg = xb + (n * g.in_channels + grp * icg) * in_size;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j0 = p * kW, cols = std::min(kW, out_size - j0);
        PanelColumns(g, pointwise, xg, icg, pad, j0, cols, kp, s.columns.data());
        if (quads) {
          PackQuads(s.columns.data(), kp, !x_signed, s.b8.data() + (p - p0) * panel_elems);
          int32_t* sum = s.col_sum.data() + (p - p0) * kW;
          if (x_signed) {
            ColumnSums<int8_t>(s.columns.data(), kdim, x_zp, sum);
          } else {
            ColumnSums<uint8_t>(s.columns.data(), kdim, x_zp, sum);
          }
        } else {
          PackPairs(s.columns.data(), kp, x_signed, x_zp, s.b16.data() + (p - p0) * panel_elems);
        }
      }
      const int64_t first_plane = n * g.out_channels;
      for (int64_t r0 = 0; r0 < ocg; r0 += mr) {
        const int mm = static_cast<int>(std::min<int64_t>(mr, ocg - r0));
        const int64_t m0 = grp * ocg + r0;
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t j0 = p * kW, cols = std::min(kW, out_size - j0);
          const void* panel = quads
                                  ? static_cast<const void*>(s.b8.data() + (p - p0) * panel_elems)
                                  : static_cast<const void*>(s.b16.data() + (p - p0) * panel_elems);
          Tile(path, mm, w, m0, panel, s.tile.data());
          FinishTile(s.tile.data(), mm, m0, j0, cols,
                     quads ? s.col_sum.data() + (p - p0) * kW : nullptr, x_term, w, out,
                     first_plane, out_size);
        }
      }
    }
  });
}

}  // namespace nxrt::cpu::linalg
