#include "kernels/all_kernels.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu {

void RegisterReductionKernels(NxKernelRegistry* registry) {
  reduction::RegisterReduceSums(registry);
  reduction::RegisterReduceExtrema(registry);
  reduction::RegisterArgMinMax(registry);
  reduction::RegisterSoftmax(registry);
  reduction::RegisterLosses(registry);
  reduction::RegisterStringOps(registry);
  reduction::RegisterTfIdf(registry);
  reduction::RegisterMlOps(registry);
  reduction::RegisterTreeEnsemble(registry);
  reduction::RegisterSignalWindows(registry);
  reduction::RegisterDft(registry);
}

}  // namespace nxrt::cpu
