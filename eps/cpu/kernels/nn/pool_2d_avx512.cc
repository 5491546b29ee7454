// AVX-512 body of the single-pass 2-D pooling plane (pool_2d.h). Built with the AVX-512 flags
// (CMakeLists.txt) and only called when the CPU has them (common/cpu_features.h).
#include "common/simd_avx512.h"
#include "kernels/nn/pool_2d.h"

namespace nxrt::cpu::nn {

void Pool2dPlanesAvx512(Pool2dOp op, const Pool2dPlane& p, const float* x, float* y, int64_t planes,
                        float* scratch) {
  pool2d_body::Run<Avx512>(op, p, x, y, planes, scratch);
}

}  // namespace nxrt::cpu::nn
