// ReduceSum, ReduceMean, ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum: the additive
// reductions.
#include "kernels/reduction/reduce_kernel.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {

void RegisterReduceSums(NxKernelRegistry* r) {
  const auto types = ReduceTypes(false);
  // ReduceSum took axes as an input from opset 13, the others from opset 18. One definition per
  // op covers every opset; the kernel reads the node's opset to know where axes come from.
  ep::KernelDefBuilder("ReduceSum")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<SumOp, 13, false>>(r);
  ep::KernelDefBuilder("ReduceMean")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<MeanOp, 18, false>>(r);
  ep::KernelDefBuilder("ReduceSumSquare")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<SumSquareOp, 18, false>>(r);
  ep::KernelDefBuilder("ReduceL1")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<L1Op, 18, false>>(r);
  ep::KernelDefBuilder("ReduceL2")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<L2Op, 18, false>>(r);
  ep::KernelDefBuilder("ReduceLogSum")
      .Versions(1)
      .Constraint("T", types, {0}, {0})
      .Build<ReduceKernel<LogSumOp, 18, false>>(r);
}

}  // namespace nxrt::cpu::reduction
