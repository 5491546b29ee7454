// The bodies of com.nxrt TableLookup (table_lookup.cc): dst[i] = table[src[i]] over n bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nxrt::cpu::quantized {

void TableLookupScalar(const uint8_t* src, uint8_t* dst, size_t n, const uint8_t* table);
// AVX512-VBMI (table_lookup_avx512vbmi.cc); call only when CPUID reports it.
void TableLookupAvx512Vbmi(const uint8_t* src, uint8_t* dst, size_t n, const uint8_t* table);
bool HasAvx512Vbmi();

}  // namespace nxrt::cpu::quantized
