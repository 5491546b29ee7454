// AVX-512 body of the single-pass depthwise plane (depthwise_2d_body.h). Built with the
// AVX-512 flags (CMakeLists.txt) and only called when the CPU has them (common/cpu_features.h).
#include "common/simd_avx512.h"
#include "kernels/linalg/depthwise_2d_body.h"

namespace nxrt::cpu::linalg {

void Depthwise2dPlaneAvx512(const DepthwisePlane2d& p, const float* x, const float* zeros,
                            const float* w, float bias, const float* z, float* y) {
  depthwise_body::Run<Avx512>(p, x, zeros, w, bias, z, y);
}

}  // namespace nxrt::cpu::linalg
