// ReduceMax, ReduceMin, ReduceProd, ReduceLogSumExp: the non-additive reductions.
#include "kernels/reduction/reduce_kernel.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {

void RegisterReduceExtrema(NxKernelRegistry* r) {
  const auto types = ReduceTypes(false);
  const auto with_bool = ReduceTypes(true);  // Max/Min accept bool from opset 20
  ep::KernelDefBuilder("ReduceMax")
      .Versions(1)
      .Constraint("T", with_bool, {0}, {0})
      .Build<ReduceKernel<MaxOp, 18, true>>(r);
  ep::KernelDefBuilder("ReduceMin")
      .Versions(1)
      .Constraint("T", with_bool, {0}, {0})
      .Build<ReduceKernel<MinOp, 18, true>>(r);
  ep::KernelDefBuilder("ReduceProd")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<ProdOp, 18, false>>(r);
  ep::KernelDefBuilder("ReduceLogSumExp")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<LogSumExpOp, 18, false>>(r);
}

}  // namespace nxrt::cpu::reduction
