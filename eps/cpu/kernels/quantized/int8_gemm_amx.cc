// AMX micro-kernel of the 8-bit product (int8_gemm_core.h): up to 32 rows x 16 columns in two
// int32 tiles. The quad layout of a B panel is already what TDPBUSD reads as its second
// operand: 16 quads of k (64 k) are 16 tile rows of 64 bytes (16 columns x 4 s8). A's rows are
// tiles of 16 rows x 64 u8 at stride lda. TDPBUSD adds u8 x s8 products into int32 without
// intermediate saturation, so the sums are exact, like the VNNI path's.
//
// Tiles: 0 and 1 accumulate rows 0-15 and 16-31, 2 and 3 hold their A, 4 holds B. Every tile is
// 16 rows x 64 bytes, so one configuration serves every call; the driver loads it once per
// thread and task range (AmxTileScope), because another library (oneDNN) may load its own
// between our calls.
// Built with -mamx-tile -mamx-int8 (CMakeLists.txt) and only called once AmxInt8Usable() said
// the CPU, the OS and this kernel all work (int8_gemm_operands.cc).
//
// The configuration and the tile loads are our own asm, not GCC 12's _tile_loadconfig and
// _tile_loadd: its _tile_loadconfig hands LDTILECFG a pointer-sized memory operand, so the
// compiler kept only the first 16 of the 64 bytes it had to store and LDTILECFG raised #GP
// (seen on a Sapphire Rapids Xeon), and its _tile_loadd does not tell the compiler that it
// reads memory.
#include <immintrin.h>

#include <cstring>

#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {
namespace {

// The 64-byte operand of LDTILECFG (Intel SDM, "TILECFG"): palette 1, then bytes per row of
// each of the 16 tiles, then rows of each tile. Unused tiles and the reserved bytes must be 0.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

constexpr TileConfig MakeTileConfig() {
  TileConfig config;
  for (int t = 0; t <= 4; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  return config;
}

// A constant object in memory: LDTILECFG reads all of it (the "m" operand names the whole
// struct, so nothing of it can be optimised away).
alignas(64) constexpr TileConfig kTileConfig = MakeTileConfig();

}  // namespace

// Tile `t` <- 16 rows of 64 bytes at `base`, rows `stride` bytes apart.
#define NXRT_TILE_LOAD(t, base, stride)                                                   \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(static_cast<const void*>(base)), \
                   "r"(static_cast<int64_t>(stride))                                      \
                   : "memory")

void AmxTileConfigure() { __asm__ volatile("ldtilecfg %0" ::"m"(kTileConfig)); }

void AmxTileRelease() { _tile_release(); }

void Int8TileAmx(int mr, const uint8_t* a, int64_t lda, const int8_t* b, int64_t quads, int32_t* c,
                 bool accumulate) {
  constexpr int64_t kCStride = kInt8PanelWidth * sizeof(int32_t);  // bytes per row of c
  const bool two = mr > 16;
  if (accumulate) {
    NXRT_TILE_LOAD(0, c, kCStride);
    if (two) NXRT_TILE_LOAD(1, c + 16 * kInt8PanelWidth, kCStride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
  }
  for (int64_t g = 0; g < quads; g += kAmxQuadsPerTile) {
    NXRT_TILE_LOAD(4, b + g * 4 * kInt8PanelWidth, 4 * kInt8PanelWidth);
    NXRT_TILE_LOAD(2, a + g * 4, lda);
    _tile_dpbusd(0, 2, 4);
    if (two) {
      NXRT_TILE_LOAD(3, a + 16 * lda + g * 4, lda);
      _tile_dpbusd(1, 3, 4);
    }
  }
  _tile_stored(0, c, kCStride);
  if (two) _tile_stored(1, c + 16 * kInt8PanelWidth, kCStride);
}

#undef NXRT_TILE_LOAD

}  // namespace nxrt::cpu::quantized
