// The CPU EP's kernel families. Each family registers its kernel definitions in one function,
// defined in its own folder under kernels/.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu {

void RegisterElementwiseKernels(NxKernelRegistry* registry);         // kernels/elementwise/
void RegisterTensorKernels(NxKernelRegistry* registry);              // kernels/tensor/
void RegisterNnKernels(NxKernelRegistry* registry);                  // kernels/nn/
void RegisterReductionKernels(NxKernelRegistry* registry);           // kernels/reduction/
void RegisterLinalgKernels(NxKernelRegistry* registry);              // kernels/linalg/
void RegisterSequenceKernels(NxKernelRegistry* registry);            // kernels/sequence/
void RegisterControlFlowKernels(NxKernelRegistry* registry);         // kernels/controlflow/
void RegisterContribTransformerKernels(NxKernelRegistry* registry);  // kernels/contrib/
void RegisterContribQuantizedKernels(NxKernelRegistry* registry);    // kernels/quantized/

// All of the above, in one registry.
void RegisterAllKernels(NxKernelRegistry* registry);

}  // namespace nxrt::cpu
