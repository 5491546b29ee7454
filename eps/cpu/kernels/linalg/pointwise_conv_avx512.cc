// AVX-512 tiles of the pointwise convolution (pointwise_conv_body.h): 8 channels x 3 vectors.
// Built with the AVX-512 flags (CMakeLists.txt), called only when the CPU has them.
#include "common/simd_avx512.h"
#include "kernels/linalg/pointwise_conv_body.h"

namespace nxrt::cpu::linalg {

void PointwiseTilesAvx512(const PointwiseJob& job, int64_t block_begin, int64_t block_end,
                          int64_t p_begin, int64_t p_end) {
  pointwise_body::Run<Avx512, 8, 3>(job, block_begin, block_end, p_begin, p_end);
}

void GatheredRowTilesAvx512(const PointwiseJob& job, int64_t block_begin, int64_t block_end) {
  if (job.x_step == 2) {
    pointwise_body::Run<Avx512, 8, 3, 2>(job, block_begin, block_end, 0, job.pixels);
  } else {
    pointwise_body::Run<Avx512, 8, 3, 1>(job, block_begin, block_end, 0, job.pixels);
  }
}

}  // namespace nxrt::cpu::linalg
