#include "kernels/all_kernels.h"

namespace nxrt::cpu {

void RegisterAllKernels(NxKernelRegistry* registry) {
  RegisterElementwiseKernels(registry);
  RegisterTensorKernels(registry);
  RegisterNnKernels(registry);
  RegisterReductionKernels(registry);
  RegisterLinalgKernels(registry);
  RegisterSequenceKernels(registry);
  RegisterControlFlowKernels(registry);
  RegisterContribTransformerKernels(registry);
  RegisterContribQuantizedKernels(registry);
}

}  // namespace nxrt::cpu
