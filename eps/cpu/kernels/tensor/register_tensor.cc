// Entry point of the tensor / data-movement kernel family.
#include "kernels/all_kernels.h"
#include "kernels/tensor/tensor_kernels.h"

namespace nxrt::cpu {

void RegisterTensorKernels(NxKernelRegistry* registry) {
  using namespace tensor;
  RegisterReshapeLike(registry);
  RegisterShapeSize(registry);
  RegisterTranspose(registry);
  RegisterDepthSpace(registry);
  RegisterConcatSplit(registry);
  RegisterSlice(registry);
  RegisterGather(registry);
  RegisterScatter(registry);
  RegisterExpandTile(registry);
  RegisterPad(registry);
  RegisterConstants(registry);
  RegisterTrilu(registry);
  RegisterOneHot(registry);
  RegisterSelection(registry);
  RegisterTopK(registry);
  RegisterReverseSequence(registry);
  RegisterUnique(registry);
  RegisterCumulative(registry);
  RegisterCol2Im(registry);
  RegisterDet(registry);
  RegisterBitCast(registry);
  RegisterTensorScatter(registry);
}

}  // namespace nxrt::cpu
