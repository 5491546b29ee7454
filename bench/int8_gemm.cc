// The blocked 8-bit GEMM of the CPU EP (eps/cpu/kernels/quantized/int8_gemm_core.h) on its own,
// one thread, on every micro-kernel this CPU can run (AVX2 int16 pairs, AVX-VNNI, AVX512-VNNI,
// AMX): the products of BERT-base with 128 tokens (768 x 768, 768 x 3072, 3072 x 768), one
// token (a decoder step) and a convolution's rows of taps. Prints per path and shape the
// milliseconds of A's preparation (8-bit A widened or re-laid out) and of the product, and the
// product's GMAC/s. Separates a slow micro-kernel from the rest of a model's int8 time.
//
//   nxrt_bench_int8_gemm [--runs N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/int8_gemm_core.h"

namespace q = nxrt::cpu::quantized;

namespace {

struct Shape {
  const char* what;
  int64_t m, k, n;
};

const char* PathName(q::Int8GemmPath p) {
  switch (p) {
    case q::Int8GemmPath::kAvx2:
      return "avx2";
    case q::Int8GemmPath::kAvxVnni:
      return "avx-vnni";
    case q::Int8GemmPath::kAvx512Vnni:
      return "avx512-vnni";
    case q::Int8GemmPath::kAmx:
      return "amx";
    default:
      return "portable";
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: nxrt_bench_int8_gemm [--runs N]\n");
      return 2;
    }
  }
  std::vector<q::Int8GemmPath> paths = {q::Int8GemmPath::kAvx2};
  if (q::CpuHasAvxVnni()) paths.push_back(q::Int8GemmPath::kAvxVnni);
  if (q::CpuHasAvx512Vnni()) paths.push_back(q::Int8GemmPath::kAvx512Vnni);
  if (q::AmxInt8Usable()) paths.push_back(q::Int8GemmPath::kAmx);
  const Shape shapes[] = {{"bert qkv/out", 128, 768, 768},
                          {"bert ffn in", 128, 768, 3072},
                          {"bert ffn out", 128, 3072, 768},
                          {"decoder step", 1, 768, 3072},
                          {"conv 3x3 64->64 56x56", 3136, 576, 64}};
  std::printf("8-bit GEMM, 1 thread, median of %d runs; u8 A x s8 B, int32 out\n", runs);
  std::printf("%-12s %-22s %8s %10s %10s %8s\n", "path", "shape", "m", "prepare ms", "gemm ms",
              "GMAC/s");
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Shape& s : shapes) {
    std::vector<uint8_t> a(static_cast<size_t>(s.m * s.k));
    std::vector<int8_t> b(static_cast<size_t>(s.k * s.n));
    for (auto& x : a) x = static_cast<uint8_t>(byte(rng));
    for (auto& x : b) x = static_cast<int8_t>(byte(rng) - 128);
    std::vector<int32_t> y(static_cast<size_t>(s.m * s.n));
    for (q::Int8GemmPath path : paths) {
      const q::PackedInt8B w = q::PackInt8B(path, b.data(), NX_TYPE_INT8, s.k, s.n, {0}, {});
      q::PreparedInt8A prepared;
      q::Int8GemmOutput out;
      out.y32 = y.data();
      out.ldy = s.n;
      std::vector<double> prep, gemm;
      for (int r = 0; r < runs + 2; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        q::PrepareInt8A(a.data(), NX_TYPE_UINT8, s.m, s.k, 128, w, prepared);
        const auto t1 = std::chrono::steady_clock::now();
        q::Int8Gemm(prepared, w, out, 1);
        const auto t2 = std::chrono::steady_clock::now();
        if (r < 2) continue;  // warm-up
        prep.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        gemm.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
      }
      const double ms = Median(gemm);
      std::printf("%-12s %-22s %8lld %10.3f %10.3f %8.1f\n", PathName(path), s.what,
                  static_cast<long long>(s.m), Median(prep), ms,
                  static_cast<double>(s.m * s.k * s.n) / (ms * 1e6));
    }
  }
  return 0;
}
