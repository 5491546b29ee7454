#include "kernels/all_kernels.h"

namespace nxrt::cpu {

void RegisterTensorKernels(NxKernelRegistry* registry) {
  (void)registry;
}

}  // namespace nxrt::cpu
