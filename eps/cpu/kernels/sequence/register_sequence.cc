// Entry point of the sequence / optional kernel family (ABI version 4 value kinds).
#include "kernels/all_kernels.h"
#include "kernels/sequence/sequence_kernels.h"

namespace nxrt::cpu {

void RegisterSequenceKernels(NxKernelRegistry* registry) {
  using namespace sequence;
  RegisterSequenceOps(registry);
  RegisterConcatSplitSequence(registry);
  RegisterOptionalOps(registry);
}

}  // namespace nxrt::cpu
