// The bodies of com.nxrt TableLookup (table_lookup.cc): dst[i] = table[src[i]] over n bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nxrt::cpu::quantized {

inline void TableLookupScalar(const uint8_t* src, uint8_t* dst, size_t n, const uint8_t* table) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {  // four independent loads per step
    const uint8_t c0 = table[src[i]], c1 = table[src[i + 1]];
    const uint8_t c2 = table[src[i + 2]], c3 = table[src[i + 3]];
    dst[i] = c0;
    dst[i + 1] = c1;
    dst[i + 2] = c2;
    dst[i + 3] = c3;
  }
  for (; i < n; ++i) dst[i] = table[src[i]];
}

// AVX512-VBMI (table_lookup_avx512vbmi.cc); call only when HasAvx512Vbmi().
void TableLookupAvx512Vbmi(const uint8_t* src, uint8_t* dst, size_t n, const uint8_t* table);

inline bool HasAvx512Vbmi() {
  static const bool has = __builtin_cpu_supports("avx512vbmi") != 0;
  return has;
}

}  // namespace nxrt::cpu::quantized
