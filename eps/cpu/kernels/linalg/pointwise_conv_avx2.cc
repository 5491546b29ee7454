// AVX2 tiles of the pointwise convolution (pointwise_conv_body.h): 4 channels x 3 vectors.
#include "common/simd_avx2.h"
#include "kernels/linalg/pointwise_conv_body.h"

namespace nxrt::cpu::linalg {

void PointwiseTilesAvx2(const PointwiseJob& job, int64_t block_begin, int64_t block_end,
                        int64_t p_begin, int64_t p_end) {
  pointwise_body::Run<Avx2, 4, 3>(job, block_begin, block_end, p_begin, p_end);
}

void GatheredRowTilesAvx2(const PointwiseJob& job, int64_t block_begin, int64_t block_end) {
  if (job.x_step == 2) {
    pointwise_body::Run<Avx2, 4, 3, 2>(job, block_begin, block_end, 0, job.pixels);
  } else {
    pointwise_body::Run<Avx2, 4, 3, 1>(job, block_begin, block_end, 0, job.pixels);
  }
}

}  // namespace nxrt::cpu::linalg
