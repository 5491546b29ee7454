// The blocked 8-bit matrix product behind MatMulInteger, MatMulIntegerToFloat and
// DynamicQuantizeMatMul: Y = (A - a_zp) (B - b_zp) summed exactly in int32, then either stored
// as int32 or scaled to float (a_scale * b_scale[column] * sum + bias[column]).
//
// B is packed once (at kernel creation when it is constant) into panels of 16 columns laid out
// for one micro-kernel; A is prepared per run (widened or quantized) into rows the micro-kernel
// broadcasts from. Three micro-kernels, chosen by CPUID (BestInt8GemmPath):
// - kAvx2: int16 pairs. Each 32-bit lane of B holds (b[k], b[k+1]) - zp of one column; the pair
//   (a[k], a[k+1]) - zp is broadcast as an int32 and vpmaddwd adds both products into int32.
//   |a - zp|, |b - zp| <= 255, so a pair sum stays below 2^17: exact. (vpmaddubsw would be twice
//   as fast but saturates its int16 pair sums, so results would differ.)
// - kAvx512Vnni: vpdpbusd adds four u8 x s8 products straight into int32, exact. A is used as
//   u8 (int8 A is shifted by +128), B as s8 (uint8 B is shifted by -128); the shifts and zero
//   points come back as exact int32 corrections per row and column (see int8_gemm_core.cc).
// - kAvxVnni: the same quad layout and corrections with the VEX-encoded vpdpbusd on ymm
//   registers, for CPUs with AVX-VNNI but not AVX512-VNNI (or an `isa=avx2` session).
// - kAmx: the quad layout with k padded to 64 and A's rows to 16, so that a panel's K block is
//   a run of whole AMX tiles (16 quads x 16 columns); TDPBUSD multiplies 32 x 16 per call
//   (int8_gemm_amx.cc). Products with fewer than kAmxMinRows rows take the AVX512-VNNI
//   micro-kernel on the same packing (a tile would be mostly padding).
// Three portable paths in plain C++ (kPortable on the kAvx2 layout, kPortableQuads on the VNNI
// layout with its corrections, kPortableAmx on the AMX padding and 32-row blocking) are the
// references the tests compare the vector paths with; the last two let machines without VNNI or
// AMX test everything of those paths but their micro-kernels.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <vector>

#include "common/cpu_features.h"

namespace nxrt::cpu::quantized {

enum class Int8GemmPath {
  kPortable,
  kAvx2,
  kAvx512Vnni,
  kPortableQuads,
  kAvxVnni,
  kAmx,
  kPortableAmx
};

// Whether the path pads k and A's rows for AMX tiles (kAmx, kPortableAmx).
inline bool UsesAmxTiles(Int8GemmPath p) {
  return p == Int8GemmPath::kAmx || p == Int8GemmPath::kPortableAmx;
}

// Whether the path uses the u8 x s8 quad layout (kAvx512Vnni, kAvxVnni, kPortableQuads and the
// AMX paths).
inline bool UsesQuads(Int8GemmPath p) {
  return p == Int8GemmPath::kAvx512Vnni || p == Int8GemmPath::kAvxVnni ||
         p == Int8GemmPath::kPortableQuads || UsesAmxTiles(p);
}

// Columns per packed panel, for every path.
constexpr int64_t kInt8PanelWidth = 16;

// kAmx when `isa` allows AVX-512, `allow_amx` is set and AmxInt8Usable(); else kAvx512Vnni when
// `isa` allows AVX-512 and the CPU has AVX512-VNNI; else kAvxVnni when the CPU has AVX-VNNI;
// else kAvx2.
Int8GemmPath BestInt8GemmPath(Isa isa, bool allow_amx = true);
// The path of a kernel created with `info`: its ISA (KernelIsa) and the session option
// "ep.cpu.amx" ("0" keeps 8-bit products off AMX; default "1"; anything else is an error).
Int8GemmPath KernelInt8GemmPath(const ep::KernelInfo& info);
bool CpuHasAvx512Vnni();
bool CpuHasAvxVnni();
// AMX-INT8 is usable: the CPU has AMX-TILE and AMX-INT8, the OS enables tile state (XCR0) and
// grants this process the tile data (Linux arch_prctl ARCH_REQ_XCOMP_PERM, asked once), and
// Int8TileAmx gave the portable kernel's sums on a test product, run in a forked child
// (common/isolated_probe.h) so that a fault ends the child only. Decided once per process; a
// failed check is logged to stderr and leaves the product on AVX512-VNNI.
bool AmxInt8Usable();

// B [k, n] packed for one path.
struct PackedInt8B {
  Int8GemmPath path = Int8GemmPath::kAvx2;
  int64_t k = 0, n = 0;
  int64_t k_padded = 0;  // k rounded up to the path's group (2 or 4); the padding is zero
  int64_t panels = 0;    // ceil(n / 16); the columns past n are zero
  // kAvx2/kPortable: panel p, pair g, column c at w16[((p * k_padded / 2 + g) * 16 + c) * 2 + i]
  // holds B[2g + i, 16p + c] - zp.
  std::vector<int16_t> w16;
  // quad paths: panel p, quad g, column c at w8[((p * k_padded / 4 + g) * 16 + c) * 4 + i]
  // holds B[4g + i, 16p + c] - shift (shift = 128 for uint8 B, 0 for int8 B).
  std::vector<int8_t> w8;
  std::vector<int32_t> col_shift;  // quad paths: shift - zp[j]
  std::vector<int32_t> col_sum;    // quad paths: sum over k of (B[k, j] - zp[j])
  std::vector<float> scale;        // one per column (a per-tensor scale is repeated)
};

// Packs `b` (int8 or uint8, row-major [k, n], or [n, k] when `transposed`); zp and scale have 1
// or n entries (scale may be empty for integer-only products).
PackedInt8B PackInt8B(Int8GemmPath path, const void* b, NxElementType type, int64_t k, int64_t n,
                      const std::vector<int32_t>& zp, const std::vector<float>& scale,
                      bool transposed = false);

// A [rows, k] prepared for the path of the B it multiplies. Reused across runs by its owner
// (a thread_local in the kernels), so a run allocates nothing once the sizes are known.
struct PreparedInt8A {
  int64_t rows = 0, ld = 0;      // ld = the B's k_padded
  std::vector<int16_t> a16;      // kAvx2/kPortable: A - zp, zero padded
  std::vector<uint8_t> a8;       // quad paths: A as u8 (+128 for int8), zero padded
  std::vector<int32_t> row_sum;  // quad paths: sum over k of a8
  int32_t zero_point = 0;        // quad paths: zp (+128 for int8)
  float scale = 1.f;             // the activations' scale, for float outputs
};

// From 8-bit A (int8 or uint8) with a per-tensor zero point.
void PrepareInt8A(const void* a, NxElementType type, int64_t rows, int64_t k, int32_t zero_point,
                  const PackedInt8B& w, PreparedInt8A& out);

// From float A, quantized to uint8 as onnxruntime's DynamicQuantizeLinear: one range over all of
// A, widened to include 0; scale = (max - min) / 255; zp = round(clamp(-min / scale, 0, 255)).
void QuantizeFloatA(const float* a, int64_t rows, int64_t k, const PackedInt8B& w,
                    PreparedInt8A& out);

// Where the product goes: int32 (y32), float (y) or requantized 8-bit (y8), row stride ldy.
struct Int8GemmOutput {
  int32_t* y32 = nullptr;
  float* y = nullptr;  // y = a.scale * w.scale[j] * sum + bias[j] (+ y when accumulate)
  int64_t ldy = 0;
  const float* bias = nullptr;
  bool accumulate = false;
  // QLinearMatMul: y8 = saturate(round-half-even(sum * requant[j]) + y_zero_point), int8 when
  // y8_signed else uint8; a NaN product (a non-finite scale) gives 0. requant has n entries.
  void* y8 = nullptr;
  bool y8_signed = false;
  const double* requant = nullptr;
  int32_t y_zero_point = 0;
};

// One row of the y8 output: out[j] for j < cols from the exact sums row[j] (Int8GemmOutput).
void RequantizeRow(const int32_t* row, const double* scale, int64_t cols, int32_t zero_point,
                   bool is_signed, void* out);

// The whole product on up to `threads` threads of the running kernel's pool.
void Int8Gemm(const PreparedInt8A& a, const PackedInt8B& w, const Int8GemmOutput& out, int threads);

// Micro-kernels: c[r * 16 + j] (+)= sum over the group steps of A row r times panel column j,
// for r < mr (mr <= the kernel's row count). `a` points at the first row's first element,
// `b` at the panel's first group of this K block.
constexpr int kInt8Avx2Rows = 6;
constexpr int kInt8VnniRows = 8;
constexpr int kInt8AvxVnniRows = 6;
constexpr int kInt8AmxRows = 32;          // two tiles of 16 rows
constexpr int64_t kAmxQuadsPerTile = 16;  // 64 k per tile row
constexpr int64_t kAmxMinRows = 8;        // fewer rows: the VNNI micro-kernel (not yet measured)
void Int8TilePortable(int mr, const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs,
                      int32_t* c, bool accumulate);
void Int8TileAvx2(int mr, const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs,
                  int32_t* c, bool accumulate);
void Int8TilePortableQuads(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                           int32_t* c, bool accumulate);
void Int8TileAvx512Vnni(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                        int32_t* c, bool accumulate);
void Int8TileAvxVnni(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads,
                     int32_t* c, bool accumulate);
// mr <= 32; `quads` a multiple of kAmxQuadsPerTile; A readable (padded) up to mr rounded up to
// 16 rows, and c has room for as many. Rows of c past mr receive sums of padding. Needs the
// tile configuration of AmxTileConfigure() loaded in the calling thread.
void Int8TileAmx(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads, int32_t* c,
                 bool accumulate);
// Loads (and releases) the tile configuration Int8TileAmx expects, in the calling thread.
void AmxTileConfigure();
void AmxTileRelease();

}  // namespace nxrt::cpu::quantized
