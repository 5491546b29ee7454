// AVX2 body of the single-pass 2-D pooling plane (pool_2d.h).
#include "common/simd_avx2.h"
#include "kernels/nn/pool_2d.h"

namespace nxrt::cpu::nn {

void Pool2dPlanesAvx2(Pool2dOp op, const Pool2dPlane& p, const float* x, float* y, int64_t planes,
                      float* scratch) {
  pool2d_body::Run<Avx2>(op, p, x, y, planes, scratch);
}

}  // namespace nxrt::cpu::nn
