// Registration entry points of the linear-algebra kernel family, one per source file; all are
// called from RegisterLinalgKernels (register_linalg.cc).
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::linalg {

void RegisterConvKernels(NxKernelRegistry* registry);             // conv.cc
void RegisterConvTransposeKernels(NxKernelRegistry* registry);    // conv_transpose.cc
void RegisterMatMulKernels(NxKernelRegistry* registry);           // matmul.cc
void RegisterGemmKernels(NxKernelRegistry* registry);             // gemm.cc
void RegisterQuantizedMatMulKernels(NxKernelRegistry* registry);  // quantized_matmul.cc
void RegisterQuantizedConvKernels(NxKernelRegistry* registry);    // quantized_conv.cc
void RegisterEinsumKernels(NxKernelRegistry* registry);           // einsum.cc

}  // namespace nxrt::cpu::linalg
