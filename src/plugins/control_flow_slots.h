// Slots for the runtime's control-flow kernels (If, Loop, Scan, SequenceMap), which the host
// table hands to EPs (NxHostApi::CreateIfKernel etc., ABI version 4). Those kernels run their
// bodies as plans of the enclosing session, so they live above plugins/ and session/ (in
// controlflow/): plugins/ cannot call them directly. The layer that links them in fills the slots
// once at start-up (controlflow's RegisterControlFlowKernels, called by api/c_api.cc); until
// then the host table's entries answer NX_NOT_IMPLEMENTED.
#pragma once

#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

struct ControlFlowSlots {
  NxStatus* (*create_if)(const NxKernelInfo* info, NxKernel** kernel) = nullptr;
  NxStatus* (*create_loop)(const NxKernelInfo* info, NxLoopHelper* helper,
                           NxKernel** kernel) = nullptr;
  NxStatus* (*create_scan)(const NxKernelInfo* info, NxScanHelper* helper,
                           NxKernel** kernel) = nullptr;
  NxStatus* (*create_sequence_map)(const NxKernelInfo* info, NxKernel** kernel) = nullptr;
};

// Installs `slots`, which must outlive every use (static storage); null uninstalls. Thread-safe.
void SetControlFlowSlots(const ControlFlowSlots* slots);
// The installed slots, or null.
const ControlFlowSlots* GetControlFlowSlots();

}  // namespace nxrt
