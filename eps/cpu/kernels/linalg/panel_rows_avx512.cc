// AVX-512 body of the few-rows product over column panels (panel_rows_body.h).
#include "common/simd_avx512.h"
#include "kernels/linalg/panel_rows_body.h"

namespace nxrt::cpu::linalg {

void PanelRowsRangeAvx512(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end) {
  panel_rows_body::Range<Avx512>(p, q_begin, q_end);
}

}  // namespace nxrt::cpu::linalg
