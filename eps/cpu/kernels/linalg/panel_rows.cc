#include "kernels/linalg/panel_rows.h"

#include <algorithm>

#include "common/cpu_features.h"
#include "common/parallel.h"

namespace nxrt::cpu::linalg {

void PanelRows(const PanelRowsProblem& p, int threads, const PanelRowsFinish& finish) {
  if (p.m <= 0 || p.n <= 0) return;
  auto range = DetectedIsa() == Isa::kAvx512 ? &PanelRowsRangeAvx512 : &PanelRowsRangeAvx2;
  const int64_t panels = (p.n + p.panel - 1) / p.panel;
  const int64_t macs_per_panel = p.m * p.panel * (p.k > 0 ? p.k : 1);
  const int64_t grain =
      (static_cast<int64_t>(kMinParallelMacs) + macs_per_panel - 1) / macs_per_panel;
  ParallelFor(threads, panels, grain, [&](int64_t q0, int64_t q1) {
    range(p, q0, q1);
    if (finish) finish(q0 * p.panel, std::min(p.n, q1 * p.panel));
  });
}

}  // namespace nxrt::cpu::linalg
