// The operands of the 8-bit product (int8_gemm_core.h): B packed once into panels for one
// micro-kernel, A widened or quantized per run into the rows the micro-kernel broadcasts from,
// and the choice of path by CPUID. The quad (VNNI) layout stores shifted values; the driver
// (int8_gemm_core.cc) adds the shifts and zero points back through col_sum and row_sum.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/isolated_probe.h"
#include "kernels/quantized/dynamic_quantize_u8.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {
namespace {

// What k is padded to: a pair (AVX2), a quad (VNNI) or a tile row of 64 (AMX).
int64_t KPaddingOf(Int8GemmPath path) {
  return UsesAmxTiles(path) ? 4 * kAmxQuadsPerTile : UsesQuads(path) ? 4 : 2;
}

// Rows of A held in the prepared buffer: AMX tiles load 16 rows at a time.
int64_t PaddedRows(Int8GemmPath path, int64_t rows) {
  return UsesAmxTiles(path) ? (rows + 15) / 16 * 16 : rows;
}

// CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), and XCR0 bits 17 and 18 (the OS
// saves the tile configuration and data).
bool CpuAndOsHaveAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if ((edx & (3u << 24)) != (3u << 24)) return false;
  __cpuid(1, eax, ebx, ecx, edx);
  if ((ecx & (1u << 27)) == 0) return false;  // OSXSAVE: xgetbv is allowed
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);
}

// Linux hands out the (8 KiB) tile data state only to processes that ask for it.
bool RequestTileData() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// Int8TileAmx against the portable quads kernel on 20 and 32 rows, two tiles of k, with and
// without accumulation: a wrong tile layout or configuration shows here, before any model.
// Everything is allocated up front: Passes() runs in a forked child (RunIsolatedProbe).
class AmxSelfTest {
 public:
  AmxSelfTest() : a_(kRows * kLd), b_(kQuads * 4 * kInt8PanelWidth), got_(kRows * kInt8PanelWidth) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> d(0, 255);
    for (auto& x : a_) x = static_cast<uint8_t>(d(rng));
    for (auto& x : b_) x = static_cast<int8_t>(d(rng) - 128);
    for (int c = 0; c < kCases; ++c) {
      want_[c].assign(kRows * kInt8PanelWidth, 3);
      Int8TilePortableQuads(Rows(c), a_.data(), kLd, b_.data(), kQuads, want_[c].data(),
                            Accumulates(c));
    }
  }

  // Runs the AMX kernel on every case; allocates nothing.
  bool Passes() {
    for (int c = 0; c < kCases; ++c) {
      std::fill(got_.begin(), got_.end(), 3);
      AmxTileConfigure();
      Int8TileAmx(Rows(c), a_.data(), kLd, b_.data(), kQuads, got_.data(), Accumulates(c));
      AmxTileRelease();
      const auto rows = static_cast<std::ptrdiff_t>(Rows(c) * kInt8PanelWidth);
      if (!std::equal(want_[c].begin(), want_[c].begin() + rows, got_.begin())) return false;
    }
    return true;
  }

 private:
  static constexpr int64_t kRows = 32, kQuads = 2 * kAmxQuadsPerTile, kLd = 4 * kQuads;
  static constexpr int kCases = 4;
  static int Rows(int c) { return c < 2 ? 20 : 32; }
  static bool Accumulates(int c) { return c % 2 == 1; }

  std::vector<uint8_t> a_;
  std::vector<int8_t> b_;
  std::vector<int32_t> want_[kCases];
  std::vector<int32_t> got_;
};

template <class T>
int32_t Load(const void* p, int64_t i) {
  return static_cast<const T*>(p)[i];
}

// Sizes a8 for out.rows rows (and the AMX padding rows, zeroed: tiles read them).
void PadRows(Int8GemmPath path, PreparedInt8A& out) {
  const int64_t padded = PaddedRows(path, out.rows);
  out.a8.resize(static_cast<size_t>(padded * out.ld));
  std::fill(out.a8.begin() + out.rows * out.ld, out.a8.end(), uint8_t{0});
}

}  // namespace

bool CpuHasAvx512Vnni() {
  static const bool has = __builtin_cpu_supports("avx512vnni") != 0;
  return has;
}

bool CpuHasAvxVnni() {
  // CPUID leaf 7 sub-leaf 1, EAX bit 4 (clang 14's __builtin_cpu_supports does not know
  // "avxvnni"). The EP already requires AVX2, so the OS saves ymm state.
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    return (eax & (1u << 4)) != 0;
  }();
  return has;
}

bool AmxInt8Usable() {
  static const bool usable = [] {
    // Every AMX CPU has AVX512-VNNI, which takes the products with few rows.
    if (!CpuHasAvx512Vnni() || !CpuAndOsHaveAmxInt8()) return false;
    if (!RequestTileData()) {
      std::fprintf(stderr,
                   "nxrt CPU EP: the OS refused AMX tile data (arch_prctl); 8-bit "
                   "products use AVX512-VNNI\n");
      return false;
    }
    // In a child process: a CPU or hypervisor that reports AMX but faults on it costs the
    // child, not the application.
    AmxSelfTest test;
    const std::string failure = RunIsolatedProbe([&] { return test.Passes(); });
    if (!failure.empty()) {
      std::fprintf(stderr,
                   "nxrt CPU EP: the AMX micro-kernel's self-test %s; 8-bit products use "
                   "AVX512-VNNI\n",
                   failure.c_str());
      return false;
    }
    return true;
  }();
  return usable;
}

Int8GemmPath BestInt8GemmPath(Isa isa, bool allow_amx) {
  if (isa == Isa::kAvx512 && allow_amx && AmxInt8Usable()) return Int8GemmPath::kAmx;
  if (isa == Isa::kAvx512 && CpuHasAvx512Vnni()) return Int8GemmPath::kAvx512Vnni;
  return CpuHasAvxVnni() ? Int8GemmPath::kAvxVnni : Int8GemmPath::kAvx2;
}

Int8GemmPath KernelInt8GemmPath(const ep::KernelInfo& info) {
  const std::string amx = info.config("ep.cpu.amx", "1");
  if (amx != "0" && amx != "1") {
    ep::Fail(NX_INVALID_ARGUMENT, "CPU EP option amx='" + amx + "' is not 0 or 1");
  }
  return BestInt8GemmPath(KernelIsa(info), amx == "1");
}

PackedInt8B PackInt8B(Int8GemmPath path, const void* b, NxElementType type, int64_t k, int64_t n,
                      const std::vector<int32_t>& zp, const std::vector<float>& scale,
                      bool transposed) {
  const int64_t group = KPaddingOf(path);
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

namespace {

// PrepareInt8A in two steps: ShapeInt8A sizes `out` for `rows` rows, then PrepareInt8ARows
// converts rows [begin, end), given as `a` = row `begin` of [end - begin, k] 8-bit values.
void ShapeInt8A(NxElementType type, int64_t rows, int32_t zero_point, const PackedInt8B& w,
                PreparedInt8A& out) {
  out.rows = rows;
  out.ld = w.k_padded;
  out.scale = 1.f;
  if (UsesQuads(w.path)) {
    PadRows(w.path, out);
    out.row_sum.resize(static_cast<size_t>(rows));
    out.zero_point = zero_point + (type == NX_TYPE_INT8 ? 128 : 0);
  } else {
    out.a16.resize(static_cast<size_t>(rows * out.ld));
    out.zero_point = zero_point;
  }
}

void PrepareInt8ARows(const void* a, NxElementType type, int64_t begin, int64_t end, int64_t k,
                      const PackedInt8B& w, PreparedInt8A& out) {
  const bool is_int8 = type == NX_TYPE_INT8;
  if (UsesQuads(w.path)) {
    for (int64_t m = begin; m < end; ++m) {
      uint8_t* dst = out.a8.data() + m * out.ld;
      const int64_t i = m - begin;
      int32_t sum = 0;
      if (is_int8) {
        const int8_t* src = static_cast<const int8_t*>(a) + i * k;
        for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<uint8_t>(src[j] + 128);
      } else {
        const uint8_t* src = static_cast<const uint8_t*>(a) + i * k;
        std::copy(src, src + k, dst);
      }
      for (int64_t j = 0; j < k; ++j) sum += dst[j];
      std::fill(dst + k, dst + out.ld, uint8_t{0});
      out.row_sum[m] = sum;
    }
    return;
  }
  const int32_t zero_point = out.zero_point;
  for (int64_t m = begin; m < end; ++m) {
    int16_t* dst = out.a16.data() + m * out.ld;
    const int64_t i = m - begin;
    if (is_int8) {
      const int8_t* src = static_cast<const int8_t*>(a) + i * k;
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<int16_t>(src[j] - zero_point);
    } else {
      const uint8_t* src = static_cast<const uint8_t*>(a) + i * k;
      for (int64_t j = 0; j < k; ++j) dst[j] = static_cast<int16_t>(src[j] - zero_point);
    }
    std::fill(dst + k, dst + out.ld, int16_t{0});
  }
}

}  // namespace

void PrepareInt8A(const void* a, NxElementType type, int64_t rows, int64_t k, int32_t zero_point,
                  const PackedInt8B& w, PreparedInt8A& out) {
  ShapeInt8A(type, rows, zero_point, w, out);
  PrepareInt8ARows(a, type, 0, rows, k, w, out);
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
    PadRows(w.path, out);
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

}  // namespace nxrt::cpu::quantized
