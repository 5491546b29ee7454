#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu {

void RegisterContribQuantizedKernels(NxKernelRegistry* registry) {
  quantized::RegisterDynamicQuantizeLstmKernels(registry);
  quantized::RegisterMatMulIntegerToFloatKernels(registry);
  quantized::RegisterMatMulNBitsKernels(registry);
  quantized::RegisterQLinearElementwiseKernels(registry);
  quantized::RegisterQLinearPoolConcatKernels(registry);
  quantized::RegisterQGemmKernels(registry);
  quantized::RegisterQLinearAveragePoolKernels(registry);
  quantized::RegisterQLinearSoftmaxKernels(registry);
  quantized::RegisterTableLookupKernels(registry);
}

}  // namespace nxrt::cpu
