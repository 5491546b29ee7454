// com.nxrt TableLookup's bodies (kernels/quantized/table_lookup.h): the scalar loop and the
// AVX512-VBMI permutes give table[x] for every byte, every length (the VBMI body's masked tail
// included) and unaligned starts, in place too.
#include "kernels/quantized/table_lookup.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

using nxrt::cpu::quantized::HasAvx512Vbmi;
using nxrt::cpu::quantized::TableLookupAvx512Vbmi;
using nxrt::cpu::quantized::TableLookupScalar;
using Body = void (*)(const uint8_t*, uint8_t*, size_t, const uint8_t*);

void ExpectLooksUp(Body body, const char* name) {
  SCOPED_TRACE(name);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  uint8_t table[256];
  for (uint8_t& t : table) t = static_cast<uint8_t>(byte(rng));
  std::vector<uint8_t> src(300 + 3);
  for (uint8_t& s : src) s = static_cast<uint8_t>(byte(rng));
  for (size_t i = 0; i < 256; ++i) src[i] = static_cast<uint8_t>(i);  // every index once
  for (size_t offset : {0, 1, 3}) {
    for (size_t n = 0; n + offset <= src.size(); ++n) {
      std::vector<uint8_t> dst(n + 1, 0xA5);
      body(src.data() + offset, dst.data(), n, table);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[i], table[src[offset + i]]) << "n " << n << " i " << i;
      EXPECT_EQ(dst[n], 0xA5) << "wrote past the end, n " << n;  // the tail stays in bounds
    }
  }
  std::vector<uint8_t> in_place(src), want(src.size());
  body(src.data(), want.data(), src.size(), table);
  body(in_place.data(), in_place.data(), in_place.size(), table);
  EXPECT_EQ(std::memcmp(in_place.data(), want.data(), want.size()), 0);
}

TEST(TableLookup, EveryBodyReadsTheTableAtEveryByte) {
  ExpectLooksUp(TableLookupScalar, "scalar");
  if (!HasAvx512Vbmi()) GTEST_SKIP() << "this CPU has no AVX512-VBMI: only the scalar body ran";
  ExpectLooksUp(TableLookupAvx512Vbmi, "avx512vbmi");
}

}  // namespace
