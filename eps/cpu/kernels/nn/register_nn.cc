#include "kernels/all_kernels.h"

namespace nxrt::cpu {

void RegisterNnKernels(NxKernelRegistry* registry) {
  (void)registry;
}

}  // namespace nxrt::cpu
