// AVX2 body of the single-pass depthwise plane (depthwise_2d_body.h).
#include <immintrin.h>

#include "kernels/linalg/depthwise_2d_body.h"

namespace nxrt::cpu::linalg {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using Vec = __m256;
  using Mask = __m256i;
  static Mask Lanes(int64_t lo, int64_t hi) {
    // Clamped first: the lane indices are 32-bit.
    const int l = static_cast<int>(std::clamp<int64_t>(lo, -1, kLanes + 1));
    const int h = static_cast<int>(std::clamp<int64_t>(hi, -1, kLanes + 1));
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(l - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(h), idx));
  }
  static Mask And(Mask a, Mask b) { return _mm256_and_si256(a, b); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec LoadMasked(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void StoreMasked(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
  static Vec Set1(float v) { return _mm256_set1_ps(v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec Even(Vec a, Vec b) {
    // [a0 a2 b0 b2 | a4 a6 b4 b6], then the 64-bit pairs in the order 0 2 1 3.
    const __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
  }
};

}  // namespace

void Depthwise2dPlaneAvx2(const DepthwisePlane2d& p, const float* x, const float* zeros,
                          const float* w, float bias, const float* z, float* y) {
  depthwise_body::Run<Avx2>(p, x, zeros, w, bias, z, y);
}

}  // namespace nxrt::cpu::linalg
