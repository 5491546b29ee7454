// The runtime's If, Loop and Scan kernels, handed to EPs through NxHostApi::CreateIfKernel /
// CreateLoopKernel / CreateScanKernel (plugin ABI version 4).
#pragma once

#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

NxStatus* CreateIfKernel(const NxKernelInfo* info, NxKernel** kernel);
NxStatus* CreateLoopKernel(const NxKernelInfo* info, NxLoopHelper* helper, NxKernel** kernel);
NxStatus* CreateScanKernel(const NxKernelInfo* info, NxScanHelper* helper, NxKernel** kernel);
NxStatus* CreateSequenceMapKernel(const NxKernelInfo* info, NxKernel** kernel);

}  // namespace nxrt
