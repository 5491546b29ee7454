// Registration functions of the elementwise kernel files; RegisterElementwiseKernels
// (register_elementwise.cc) calls them all.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::elementwise {

void RegisterUnaryMathKernels(NxKernelRegistry* r);        // unary_math.cc
void RegisterActivationKernels(NxKernelRegistry* r);       // activations.cc
void RegisterPredicateKernels(NxKernelRegistry* r);        // predicates.cc
void RegisterBinaryArithKernels(NxKernelRegistry* r);      // binary_arith.cc
void RegisterPowKernels(NxKernelRegistry* r);              // pow.cc
void RegisterVariadicKernels(NxKernelRegistry* r);         // variadic.cc
void RegisterLogicalKernels(NxKernelRegistry* r);          // logical.cc
void RegisterWhereClipKernels(NxKernelRegistry* r);        // where_clip.cc
void RegisterCastKernels(NxKernelRegistry* r);             // cast.cc
void RegisterIdentityDropoutKernels(NxKernelRegistry* r);  // identity_dropout.cc
void RegisterQuantizeKernels(NxKernelRegistry* r);         // quantize.cc

}  // namespace nxrt::cpu::elementwise
