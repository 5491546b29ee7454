#include "kernels/all_kernels.h"
#include "kernels/linalg/linalg_kernels.h"

namespace nxrt::cpu {

void RegisterLinalgKernels(NxKernelRegistry* registry) {
  linalg::RegisterConvKernels(registry);
  linalg::RegisterConvTransposeKernels(registry);
  linalg::RegisterMatMulKernels(registry);
  linalg::RegisterGemmKernels(registry);
  linalg::RegisterQuantizedMatMulKernels(registry);
  linalg::RegisterQuantizedConvKernels(registry);
  linalg::RegisterEinsumKernels(registry);
}

}  // namespace nxrt::cpu
