// The blocked driver of the 8-bit product (int8_gemm_core.h) and its portable micro-kernels. The
// operands are prepared in int8_gemm_operands.cc, the vector micro-kernels live in
// int8_gemm_avx2.cc, int8_gemm_avx512vnni.cc, int8_gemm_avxvnni.cc and int8_gemm_amx.cc.
//
// The VNNI path multiplies a' = A + sa (u8) by b' = B - sb (s8), sa = 128 for int8 A (0 for
// uint8), sb = 128 for uint8 B (0 for int8). With za' = a_zp + sa:
//   sum_k (A - a_zp)(B - b_zp) = sum_k (a' - za')(b' + sb - b_zp)
//                              = sum_k a' b' + (sb - b_zp) * sum_k a' - za' * sum_k (B - b_zp)
// where sum_k a' is per row (PreparedInt8A::row_sum) and sum_k (B - b_zp) per column
// (PackedInt8B::col_sum): all int32 and exact.
#include "kernels/quantized/int8_gemm_core.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "common/parallel.h"

namespace nxrt::cpu::quantized {
namespace {

int64_t GroupOf(Int8GemmPath path) { return UsesQuads(path) ? 4 : 2; }

// The AMX tile configuration of this thread, for one task range: loaded on entry, released on
// exit (another library may configure tiles its own way between our calls).
class AmxTileScope {
 public:
  explicit AmxTileScope(bool active) : active_(active) {
    if (active_) AmxTileConfigure();
  }
  ~AmxTileScope() {
    if (active_) AmxTileRelease();
  }
  AmxTileScope(const AmxTileScope&) = delete;
  AmxTileScope& operator=(const AmxTileScope&) = delete;

 private:
  bool active_;
};

// The portable stand-in for Int8TileAmx: the same rows (mr rounded up to 16, padding included),
// so the AMX padding of A and of c is exercised on every machine.
void Int8TilePortableAmx(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                         int32_t* c, bool accumulate) {
  Int8TilePortableQuads((mr + 15) / 16 * 16, a, lda, b, quads, c, accumulate);
}

// Groups of k per K block: 256 x 64 bytes = 16 KiB of a B panel, which stays in L1 while the
// rows of A stream past it.
constexpr int64_t kGroupsPerBlock = 256;
static_assert(kGroupsPerBlock % kAmxQuadsPerTile == 0, "K blocks are whole AMX tiles");

}  // namespace

void Int8TilePortable(int mr, const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs,
                      int32_t* c, bool accumulate) {
  for (int r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < kInt8PanelWidth; ++j) {
      int32_t sum = accumulate ? c[r * kInt8PanelWidth + j] : 0;
      for (int64_t g = 0; g < pairs; ++g) {
        const int16_t* bp = b + (g * kInt8PanelWidth + j) * 2;
        sum += int32_t(a[r * lda + 2 * g]) * bp[0] + int32_t(a[r * lda + 2 * g + 1]) * bp[1];
      }
      c[r * kInt8PanelWidth + j] = sum;
    }
  }
}

void Int8TilePortableQuads(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                           int32_t* c, bool accumulate) {
  for (int r = 0; r < mr; ++r) {
    for (int64_t j = 0; j < kInt8PanelWidth; ++j) {
      int32_t sum = accumulate ? c[r * kInt8PanelWidth + j] : 0;
      for (int64_t g = 0; g < quads; ++g) {
        const int8_t* bq = b + (g * kInt8PanelWidth + j) * 4;
        for (int i = 0; i < 4; ++i) sum += int32_t(a[r * lda + 4 * g + i]) * bq[i];
      }
      c[r * kInt8PanelWidth + j] = sum;
    }
  }
}

void RequantizeRow(const int32_t* row, const double* scale, int64_t cols, int32_t zero_point,
                   bool is_signed, void* out) {
  const double lo = is_signed ? -128.0 : 0.0, hi = is_signed ? 127.0 : 255.0;
  auto one = [&](int64_t j) {
    double r = std::nearbyint(static_cast<double>(row[j]) * scale[j]) + zero_point;
    if (std::isnan(r)) r = 0.0;
    const auto v = static_cast<int32_t>(std::clamp(r, lo, hi));
    if (is_signed) {
      static_cast<int8_t*>(out)[j] = static_cast<int8_t>(v);
    } else {
      static_cast<uint8_t*>(out)[j] = static_cast<uint8_t>(v);
    }
  };
  // Four at a time in double, the same operations as `one` (products of int32 and double are
  // exact in the same way; round_pd rounds half to even like nearbyint). NaN lanes take `one`.
  const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi);
  const __m256d vzp = _mm256_set1_pd(static_cast<double>(zero_point));
  int64_t j = 0;
  for (; j + 4 <= cols; j += 4) {
    const __m128i acc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + j));
    const __m256d prod = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), _mm256_loadu_pd(scale + j));
    __m256d r =
        _mm256_add_pd(_mm256_round_pd(prod, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
    if (_mm256_movemask_pd(_mm256_cmp_pd(r, r, _CMP_UNORD_Q)) != 0) {
      for (int64_t l = j; l < j + 4; ++l) one(l);
      continue;
    }
    r = _mm256_min_pd(_mm256_max_pd(r, vlo), vhi);
    alignas(16) int32_t q[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm256_cvtpd_epi32(r));
    for (int l = 0; l < 4; ++l) {
      if (is_signed) {
        static_cast<int8_t*>(out)[j + l] = static_cast<int8_t>(q[l]);
      } else {
        static_cast<uint8_t*>(out)[j + l] = static_cast<uint8_t>(q[l]);
      }
    }
  }
  for (; j < cols; ++j) one(j);
}

namespace {

// Rows [r0, r1) of panel p from the int32 tile `c` (row stride 16) to the output.
void Epilogue(const PreparedInt8A& a, const PackedInt8B& w, const Int8GemmOutput& out, int64_t r0,
              int64_t r1, int64_t p, int32_t* c) {
  constexpr int64_t kW = kInt8PanelWidth;
  const int64_t j0 = p * kW, cols = std::min(kW, w.n - j0);
  if (UsesQuads(w.path)) {
    // The shifts and zero points (file comment).
    int32_t shift[kW] = {}, sum[kW] = {};
    for (int64_t j = 0; j < cols; ++j) {
      shift[j] = w.col_shift[j0 + j];
      sum[j] = a.zero_point * w.col_sum[j0 + j];
    }
    for (int64_t m = r0; m < r1; ++m) {
      int32_t* row = c + (m - r0) * kW;
      const int32_t rs = a.row_sum[m];
      for (int64_t j = 0; j < kW; ++j) row[j] += shift[j] * rs - sum[j];
    }
  }
  if (out.y32 != nullptr) {
    for (int64_t m = r0; m < r1; ++m) {
      std::copy(c + (m - r0) * kW, c + (m - r0) * kW + cols, out.y32 + m * out.ldy + j0);
    }
    return;
  }
  if (out.y8 != nullptr) {
    for (int64_t m = r0; m < r1; ++m) {
      RequantizeRow(c + (m - r0) * kW, out.requant + j0, cols, out.y_zero_point, out.y8_signed,
                    static_cast<uint8_t*>(out.y8) + m * out.ldy + j0);
    }
    return;
  }
  float scale[kW] = {}, bias[kW] = {};
  for (int64_t j = 0; j < cols; ++j) {
    scale[j] = a.scale * w.scale[j0 + j];
    if (out.bias != nullptr) bias[j] = out.bias[j0 + j];
  }
  for (int64_t m = r0; m < r1; ++m) {
    const int32_t* row = c + (m - r0) * kW;
    float* y = out.y + m * out.ldy + j0;
    if (cols == kW) {
      // Same order of operations as the scalar tail below (and the kernels before this one).
      for (int64_t j = 0; j < kW; ++j) {
        float v = static_cast<float>(row[j]) * scale[j];
        if (out.accumulate) v = y[j] + v;
        y[j] = v + bias[j];
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        float v = static_cast<float>(row[j]) * scale[j];
        if (out.accumulate) v = y[j] + v;
        y[j] = v + bias[j];
      }
    }
  }
}

}  // namespace

void Int8Gemm(const PreparedInt8A& a, const PackedInt8B& w, const Int8GemmOutput& out,
              int threads) {
  const int64_t rows = a.rows;
  if (rows <= 0 || w.n <= 0) return;
  constexpr int64_t kW = kInt8PanelWidth;
  const Int8GemmPath path = w.path;
  const bool vnni = UsesQuads(path);
  // AMX packing with few rows: the VNNI micro-kernels read the same layout.
  const bool tiles = UsesAmxTiles(path) && rows >= kAmxMinRows;
  const int64_t mr = tiles                            ? kInt8AmxRows
                     : path == Int8GemmPath::kAvxVnni ? kInt8AvxVnniRows
                     : vnni                           ? kInt8VnniRows
                                                      : kInt8Avx2Rows;
  const int64_t group = GroupOf(path);
  const int64_t groups = w.k_padded / group;
  // Tasks are (chunk of rows, group of panels). All rows in one chunk unless there are too few
  // panels to give each thread about four tasks (a narrow B with many rows). A group is one
  // panel, or four for 8-bit outputs: a row's 64-byte cache line then holds one task's columns
  // only (with one panel per task, two threads wrote every line of a QLinearMatMul's output:
  // 1.2x at two threads instead of 1.8x).
  const int64_t group_panels = out.y8 != nullptr ? 4 : 1;
  const int64_t groups_of_panels = (w.panels + group_panels - 1) / group_panels;
  int64_t chunk_rows = rows;
  if (threads > 1 && groups_of_panels < 4 * threads) {
    const int64_t want = (4 * threads + groups_of_panels - 1) / groups_of_panels;
    chunk_rows = std::max(mr, ((rows + want - 1) / want + mr - 1) / mr * mr);
  }
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const int64_t tasks = chunks * groups_of_panels;
  const int64_t task_macs =
      std::max<int64_t>(1, std::min(chunk_rows, rows) * kW * group_panels * w.k);
  const int64_t grain = (static_cast<int64_t>(kMinParallelMacs) + task_macs - 1) / task_macs;
  const int64_t panel_stride = w.k_padded * kW;  // elements of one packed panel

  ParallelFor(threads, tasks, grain, [&](int64_t t0, int64_t t1) {
    const AmxTileScope amx(tiles && path == Int8GemmPath::kAmx);
    thread_local std::vector<int32_t> tile;
    tile.resize(static_cast<size_t>((chunk_rows + mr) * kW));
    int32_t* c = tile.data();
    for (int64_t task = t0 * group_panels; task < t1 * group_panels; ++task) {
      const int64_t chunk = task / (groups_of_panels * group_panels);
      const int64_t p = task % (groups_of_panels * group_panels);
      if (p >= w.panels) continue;  // the last group's missing panels
      const int64_t r0 = chunk * chunk_rows, r1 = std::min(rows, r0 + chunk_rows);
      if (groups == 0) std::fill(c, c + (r1 - r0) * kW, 0);
      for (int64_t g0 = 0; g0 < groups; g0 += kGroupsPerBlock) {
        const int64_t gn = std::min(kGroupsPerBlock, groups - g0);
        const bool acc = g0 > 0;
        for (int64_t m = r0; m < r1; m += mr) {
          const int mm = static_cast<int>(std::min(mr, r1 - m));
          int32_t* cm = c + (m - r0) * kW;
          if (vnni) {
            const uint8_t* am = a.a8.data() + m * a.ld + g0 * 4;
            const int8_t* bp = w.w8.data() + p * panel_stride + g0 * 4 * kW;
            if (tiles) {
              (path == Int8GemmPath::kAmx ? Int8TileAmx : Int8TilePortableAmx)(mm, am, a.ld, bp, gn,
                                                                               cm, acc);
            } else if (path == Int8GemmPath::kAvx512Vnni || path == Int8GemmPath::kAmx) {
              Int8TileAvx512Vnni(mm, am, a.ld, bp, gn, cm, acc);
            } else if (path == Int8GemmPath::kAvxVnni) {
              Int8TileAvxVnni(mm, am, a.ld, bp, gn, cm, acc);
            } else {
              Int8TilePortableQuads(mm, am, a.ld, bp, gn, cm, acc);
            }
          } else {
            const int16_t* am = a.a16.data() + m * a.ld + g0 * 2;
            const int16_t* bp = w.w16.data() + p * panel_stride + g0 * 2 * kW;
            if (path == Int8GemmPath::kAvx2) {
              Int8TileAvx2(mm, am, a.ld, bp, gn, cm, acc);
            } else {
              Int8TilePortable(mm, am, a.ld, bp, gn, cm, acc);
            }
          }
        }
      }
      Epilogue(a, w, out, r0, r1, p, c);
    }
  });
}

}  // namespace nxrt::cpu::quantized
