#include "kernels/all_kernels.h"
#include "kernels/elementwise/elementwise_kernels.h"

namespace nxrt::cpu {

// Every elementwise operator: math, activations, arithmetic / logic with broadcasting, Where,
// Clip, Cast, Identity, Dropout and (de)quantisation.
void RegisterElementwiseKernels(NxKernelRegistry* registry) {
  using namespace elementwise;
  RegisterUnaryMathKernels(registry);
  RegisterActivationKernels(registry);
  RegisterPredicateKernels(registry);
  RegisterBinaryArithKernels(registry);
  RegisterPowKernels(registry);
  RegisterVariadicKernels(registry);
  RegisterLogicalKernels(registry);
  RegisterWhereClipKernels(registry);
  RegisterCastKernels(registry);
  RegisterIdentityDropoutKernels(registry);
  RegisterQuantizeKernels(registry);
}

}  // namespace nxrt::cpu
