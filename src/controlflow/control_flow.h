// The runtime's If, Loop and Scan kernels, handed to EPs through NxHostApi::CreateIfKernel /
// CreateLoopKernel / CreateScanKernel (plugin ABI version 4) once RegisterControlFlowKernels has
// filled the host table's slots (plugins/control_flow_slots.h).
#pragma once

#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

NxStatus* CreateIfKernel(const NxKernelInfo* info, NxKernel** kernel);
NxStatus* CreateLoopKernel(const NxKernelInfo* info, NxLoopHelper* helper, NxKernel** kernel);
NxStatus* CreateScanKernel(const NxKernelInfo* info, NxScanHelper* helper, NxKernel** kernel);
NxStatus* CreateSequenceMapKernel(const NxKernelInfo* info, NxKernel** kernel);

// Fills the host table's control-flow slots with the kernels above. Called once at start-up by
// the layer that links the runtime together (api/c_api.cc); calling it again changes nothing.
void RegisterControlFlowKernels();

}  // namespace nxrt
