// Registration entry points of the reduction family's source files; RegisterReductionKernels
// (register_reduction.cc) calls them all.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::reduction {

void RegisterReduceSums(NxKernelRegistry* registry);     // reduce_sums.cc
void RegisterReduceExtrema(NxKernelRegistry* registry);  // reduce_extrema.cc
void RegisterArgMinMax(NxKernelRegistry* registry);      // arg_min_max.cc
void RegisterSoftmax(NxKernelRegistry* registry);        // softmax.cc
void RegisterLosses(NxKernelRegistry* registry);         // losses.cc
void RegisterStringOps(NxKernelRegistry* registry);      // string_ops.cc
void RegisterTfIdf(NxKernelRegistry* registry);          // tfidf.cc
void RegisterMlOps(NxKernelRegistry* registry);          // ml_ops.cc
void RegisterTreeEnsemble(NxKernelRegistry* registry);   // tree_ensemble.cc
void RegisterSignalWindows(NxKernelRegistry* registry);  // signal_windows.cc
void RegisterDft(NxKernelRegistry* registry);            // dft.cc

}  // namespace nxrt::cpu::reduction
