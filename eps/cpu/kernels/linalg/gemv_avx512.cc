// AVX-512 body of the matrix-vector product (gemv_body.h).
#include "common/simd_avx512.h"
#include "kernels/linalg/gemv_body.h"

namespace nxrt::cpu::linalg {

void GemvRangeAvx512(const GemvProblem& p, int64_t j_begin, int64_t j_end) {
  gemv_body::Range<Avx512>(p, j_begin, j_end);
}

}  // namespace nxrt::cpu::linalg
