// Hands the runtime's control-flow kernels to the host table (plugins/control_flow_slots.h):
// plugins/ sits below controlflow/ and cannot call them directly.
#include "controlflow/control_flow.h"
#include "plugins/control_flow_slots.h"

namespace nxrt {

void RegisterControlFlowKernels() {
  static constexpr ControlFlowSlots kSlots{CreateIfKernel, CreateLoopKernel, CreateScanKernel,
                                           CreateSequenceMapKernel};
  SetControlFlowSlots(&kSlots);
}

}  // namespace nxrt
