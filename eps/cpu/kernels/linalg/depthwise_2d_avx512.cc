// AVX-512 body of the single-pass depthwise plane (depthwise_2d_body.h). Built with the
// AVX-512 flags (CMakeLists.txt) and only called when the CPU has them (common/cpu_features.h).
#include <immintrin.h>

#include "kernels/linalg/depthwise_2d_body.h"

namespace nxrt::cpu::linalg {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  using Vec = __m512;
  using Mask = __mmask16;
  static Mask Lanes(int64_t lo, int64_t hi) {
    const int64_t l = std::clamp<int64_t>(lo, 0, kLanes), h = std::clamp<int64_t>(hi, 0, kLanes);
    if (h <= l) return 0;
    return static_cast<Mask>(((1u << h) - 1u) & ~((1u << l) - 1u));
  }
  static Mask And(Mask a, Mask b) { return static_cast<Mask>(a & b); }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec LoadMasked(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void StoreMasked(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static Vec Set1(float v) { return _mm512_set1_ps(v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec Even(Vec a, Vec b) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, even, b);
  }
};

}  // namespace

void Depthwise2dPlaneAvx512(const DepthwisePlane2d& p, const float* x, const float* zeros,
                            const float* w, float bias, const float* z, float* y) {
  depthwise_body::Run<Avx512>(p, x, zeros, w, bias, z, y);
}

}  // namespace nxrt::cpu::linalg
