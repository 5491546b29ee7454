// Packing, activation preparation and the blocked driver of the 8-bit product
// (int8_gemm_core.h). The micro-kernels live in int8_gemm_avx2.cc and int8_gemm_avx512vnni.cc.
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
#include "kernels/quantized/dynamic_quantize_u8.h"

namespace nxrt::cpu::quantized {
namespace {

int64_t GroupOf(Int8GemmPath path) { return UsesQuads(path) ? 4 : 2; }

template <class T>
int32_t Load(const void* p, int64_t i) {
  return static_cast<const T*>(p)[i];
}

// Groups of k per K block: 256 x 64 bytes = 16 KiB of a B panel, which stays in L1 while the
// rows of A stream past it.
constexpr int64_t kGroupsPerBlock = 256;

}  // namespace

bool CpuHasAvx512Vnni() {
  static const bool has = __builtin_cpu_supports("avx512vnni") != 0;
  return has;
}

Int8GemmPath BestInt8GemmPath(Isa isa) {
  return isa == Isa::kAvx512 && CpuHasAvx512Vnni() ? Int8GemmPath::kAvx512Vnni
                                                   : Int8GemmPath::kAvx2;
}

PackedInt8B PackInt8B(Int8GemmPath path, const void* b, NxElementType type, int64_t k, int64_t n,
                      const std::vector<int32_t>& zp, const std::vector<float>& scale,
                      bool transposed) {
  const int64_t group = GroupOf(path);
  PackedInt8B p;
  p.path = path;
  p.k = k;
  p.n = n;
  p.k_padded = (k + group - 1) / group * group;
  p.panels = (n + kInt8PanelWidth - 1) / kInt8PanelWidth;
  p.scale.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    p.scale[j] = scale.empty() ? 1.f : scale.size() == 1 ? scale[0] : scale[j];
  }
  const int64_t row_stride = transposed ? 1 : n, col_stride = transposed ? k : 1;
  const bool is_int8 = type == NX_TYPE_INT8;
  auto at = [&](int64_t i, int64_t j) {
    const int64_t idx = i * row_stride + j * col_stride;
    return is_int8 ? Load<int8_t>(b, idx) : Load<uint8_t>(b, idx);
  };
  auto zero_of = [&](int64_t j) { return zp.size() == 1 ? zp[0] : zp[j]; };
  const size_t packed = static_cast<size_t>(p.panels * p.k_padded * kInt8PanelWidth);
  if (UsesQuads(path)) {
    const int32_t shift = is_int8 ? 0 : 128;
    p.w8.assign(packed, 0);
    p.col_shift.assign(static_cast<size_t>(n), 0);
    p.col_sum.assign(static_cast<size_t>(n), 0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t panel = j / kInt8PanelWidth, c = j % kInt8PanelWidth;
      const int32_t z = zero_of(j);
      int32_t sum = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int32_t v = at(i, j);
        sum += v - z;
        p.w8[((panel * (p.k_padded / 4) + i / 4) * kInt8PanelWidth + c) * 4 + i % 4] =
            static_cast<int8_t>(v - shift);
      }
      p.col_sum[j] = sum;
      p.col_shift[j] = shift - z;
    }
  } else {
    p.w16.assign(packed, 0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t panel = j / kInt8PanelWidth, c = j % kInt8PanelWidth;
      const int32_t z = zero_of(j);
      for (int64_t i = 0; i < k; ++i) {
        p.w16[((panel * (p.k_padded / 2) + i / 2) * kInt8PanelWidth + c) * 2 + i % 2] =
            static_cast<int16_t>(at(i, j) - z);
      }
    }
  }
  return p;
}

void PrepareInt8A(const void* a, NxElementType type, int64_t rows, int64_t k, int32_t zero_point,
                  const PackedInt8B& w, PreparedInt8A& out) {
  out.rows = rows;
  out.ld = w.k_padded;
  out.scale = 1.f;
  const bool is_int8 = type == NX_TYPE_INT8;
  const size_t size = static_cast<size_t>(rows * out.ld);
  if (UsesQuads(w.path)) {
    out.a8.resize(size);
    out.row_sum.resize(static_cast<size_t>(rows));
    out.zero_point = zero_point + (is_int8 ? 128 : 0);
    for (int64_t m = 0; m < rows; ++m) {
      uint8_t* dst = out.a8.data() + m * out.ld;
      int32_t sum = 0;
      if (is_int8) {
        const int8_t* src = static_cast<const int8_t*>(a) + m * k;
        for (int64_t i = 0; i < k; ++i) dst[i] = static_cast<uint8_t>(src[i] + 128);
      } else {
        const uint8_t* src = static_cast<const uint8_t*>(a) + m * k;
        std::copy(src, src + k, dst);
      }
      for (int64_t i = 0; i < k; ++i) sum += dst[i];
      std::fill(dst + k, dst + out.ld, uint8_t{0});
      out.row_sum[m] = sum;
    }
    return;
  }
  out.a16.resize(size);
  out.zero_point = zero_point;
  for (int64_t m = 0; m < rows; ++m) {
    int16_t* dst = out.a16.data() + m * out.ld;
    if (is_int8) {
      const int8_t* src = static_cast<const int8_t*>(a) + m * k;
      for (int64_t i = 0; i < k; ++i) dst[i] = static_cast<int16_t>(src[i] - zero_point);
    } else {
      const uint8_t* src = static_cast<const uint8_t*>(a) + m * k;
      for (int64_t i = 0; i < k; ++i) dst[i] = static_cast<int16_t>(src[i] - zero_point);
    }
    std::fill(dst + k, dst + out.ld, int16_t{0});
  }
}

void QuantizeFloatA(const float* a, int64_t rows, int64_t k, const PackedInt8B& w,
                    PreparedInt8A& out) {
  const int64_t count = rows * k;
  // The range (widened to include 0), vectorized.
  float mn = 0.f, mx = 0.f;
  UpdateRange(a, count, mn, mx);
  const float scale = mx == mn ? 1.f : (mx - mn) / 255.f;
  const int32_t zp = static_cast<int32_t>(std::nearbyint(std::clamp(0.f - mn / scale, 0.f, 255.f)));

  // q = clamp(round-half-even(x / scale) + zp, 0, 255), as uint8 (VNNI) or centered int16.
  const bool vnni = UsesQuads(w.path);
  out.rows = rows;
  out.ld = w.k_padded;
  out.scale = scale;
  out.zero_point = zp;
  const size_t size = static_cast<size_t>(rows * out.ld);
  if (vnni) {
    out.a8.resize(size);
    out.row_sum.resize(static_cast<size_t>(rows));
  } else {
    out.a16.resize(size);
  }
  const __m256 vscale = _mm256_set1_ps(scale), vzp = _mm256_set1_ps(static_cast<float>(zp));
  const __m256i izp = _mm256_set1_epi32(zp);
  for (int64_t m = 0; m < rows; ++m) {
    const float* src = a + m * k;
    alignas(32) int32_t q[8];
    int32_t sum = 0;
    for (int64_t j = 0; j < k; j += 8) {
      const int64_t take = std::min<int64_t>(8, k - j);
      __m256 x;
      if (take == 8) {
        x = _mm256_loadu_ps(src + j);
      } else {
        alignas(32) float tail[8] = {};
        std::copy(src + j, src + j + take, tail);
        x = _mm256_load_ps(tail);
      }
      __m256i qi = QuantizeU8x8(x, vscale, vzp);
      if (!vnni) qi = _mm256_sub_epi32(qi, izp);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), qi);
      if (vnni) {
        uint8_t* dst = out.a8.data() + m * out.ld + j;
        for (int64_t l = 0; l < take; ++l) {
          dst[l] = static_cast<uint8_t>(q[l]);
          sum += q[l];
        }
      } else {
        int16_t* dst = out.a16.data() + m * out.ld + j;
        for (int64_t l = 0; l < take; ++l) dst[l] = static_cast<int16_t>(q[l]);
      }
    }
    if (vnni) {
      std::fill(out.a8.data() + m * out.ld + k, out.a8.data() + (m + 1) * out.ld, uint8_t{0});
      out.row_sum[m] = sum;
    } else {
      std::fill(out.a16.data() + m * out.ld + k, out.a16.data() + (m + 1) * out.ld, int16_t{0});
    }
  }
}

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
  const int64_t mr = vnni ? kInt8VnniRows : kInt8Avx2Rows;
  const int64_t group = GroupOf(path);
  const int64_t groups = w.k_padded / group;
  // Tasks are (chunk of rows, panel). All rows in one chunk unless there are too few panels to
  // give each thread about four tasks (a narrow B with many rows).
  int64_t chunk_rows = rows;
  if (threads > 1 && w.panels < 4 * threads) {
    const int64_t want = (4 * threads + w.panels - 1) / w.panels;
    chunk_rows = std::max(mr, ((rows + want - 1) / want + mr - 1) / mr * mr);
  }
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const int64_t tasks = chunks * w.panels;
  const int64_t task_macs = std::max<int64_t>(1, std::min(chunk_rows, rows) * kW * w.k);
  const int64_t grain = (static_cast<int64_t>(kMinParallelMacs) + task_macs - 1) / task_macs;
  const int64_t panel_stride = w.k_padded * kW;  // elements of one packed panel

  ParallelFor(threads, tasks, grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<int32_t> tile;
    tile.resize(static_cast<size_t>((chunk_rows + mr) * kW));
    int32_t* c = tile.data();
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t chunk = t / w.panels, p = t % w.panels;
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
            if (path == Int8GemmPath::kAvx512Vnni) {
              Int8TileAvx512Vnni(mm, am, a.ld, bp, gn, cm, acc);
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
