// The CPU EP's com.microsoft quantization contrib operators and com.nxrt's TableLookup
// (kernels/quantized/).
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::quantized {

void RegisterDynamicQuantizeLstmKernels(NxKernelRegistry* registry);   // dynamic_quantize_lstm.cc
void RegisterMatMulIntegerToFloatKernels(NxKernelRegistry* registry);  // matmul_integer_to_float.cc
void RegisterMatMulNBitsKernels(NxKernelRegistry* registry);           // matmul_nbits.cc
void RegisterQLinearElementwiseKernels(NxKernelRegistry* registry);    // qlinear_elementwise.cc
void RegisterQLinearPoolConcatKernels(NxKernelRegistry* registry);     // qlinear_pool_concat.cc
void RegisterQGemmKernels(NxKernelRegistry* registry);                 // qgemm.cc
void RegisterQLinearAveragePoolKernels(NxKernelRegistry* registry);    // qlinear_average_pool.cc
void RegisterQLinearSoftmaxKernels(NxKernelRegistry* registry);        // qlinear_softmax.cc
void RegisterTableLookupKernels(NxKernelRegistry* registry);           // table_lookup.cc (com.nxrt)

}  // namespace nxrt::cpu::quantized

namespace nxrt::cpu {

// Every kernel of kernels/quantized/.
void RegisterContribQuantizedKernels(NxKernelRegistry* registry);

}  // namespace nxrt::cpu
