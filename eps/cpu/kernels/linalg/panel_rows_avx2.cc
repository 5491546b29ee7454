// AVX2 body of the few-rows product over column panels (panel_rows_body.h).
#include "common/simd_avx2.h"
#include "kernels/linalg/panel_rows_body.h"

namespace nxrt::cpu::linalg {

void PanelRowsRangeAvx2(const PanelRowsProblem& p, int64_t q_begin, int64_t q_end) {
  panel_rows_body::Range<Avx2>(p, q_begin, q_end);
}

}  // namespace nxrt::cpu::linalg
