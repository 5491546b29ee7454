// AVX2 body of the single-pass depthwise plane (depthwise_2d_body.h).
#include "common/simd_avx2.h"
#include "kernels/linalg/depthwise_2d_body.h"

namespace nxrt::cpu::linalg {

void Depthwise2dPlaneAvx2(const DepthwisePlane2d& p, const float* x, const float* zeros,
                          const float* w, float bias, const float* z, float* y) {
  depthwise_body::Run<Avx2>(p, x, zeros, w, bias, z, y);
}

}  // namespace nxrt::cpu::linalg
