// TableLookup's body for CPUs with AVX512-VBMI (Ice Lake, Zen 4 and later): 64 bytes per step,
// each half of the 256-entry table one two-register byte permute (vpermi2b), the index's top bit
// choosing between them. Built with the VBMI flags (CMakeLists.txt); called only when CPUID
// reports VBMI (table_lookup.cc).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/table_lookup.h"

namespace nxrt::cpu::quantized {

void TableLookupAvx512Vbmi(const uint8_t* src, uint8_t* dst, size_t n, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table);
  const __m512i t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128);
  const __m512i t3 = _mm512_loadu_si512(table + 192);
  auto lookup = [&](__m512i idx) {
    const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1);   // entries 0..127 (bit 6: t1)
    const __m512i high = _mm512_permutex2var_epi8(t2, idx, t3);  // entries 128..255
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high);
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(dst + i, lookup(_mm512_loadu_si512(src + i)));
  if (i < n) {
    const __mmask64 m = (uint64_t{1} << (n - i)) - 1;  // n - i < 64
    _mm512_mask_storeu_epi8(dst + i, m, lookup(_mm512_maskz_loadu_epi8(m, src + i)));
  }
}

}  // namespace nxrt::cpu::quantized
