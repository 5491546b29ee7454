// The host table's control-flow part: CreateIfKernel, CreateLoopKernel, CreateScanKernel and
// CreateSequenceMapKernel forward to the slots controlflow/ fills (control_flow_slots.h), so that
// plugins/ does not depend on the layer above it.
#include <atomic>
#include <string>

#include "plugins/control_flow_slots.h"
#include "plugins/host_api_parts.h"

namespace nxrt {
namespace {

// Constant-initialised: safe to set from another file's static initialiser.
std::atomic<const ControlFlowSlots*> g_slots{nullptr};

}  // namespace

void SetControlFlowSlots(const ControlFlowSlots* slots) {
  g_slots.store(slots, std::memory_order_release);
}

const ControlFlowSlots* GetControlFlowSlots() { return g_slots.load(std::memory_order_acquire); }

namespace host_api {
namespace {

// An unfilled slot: the program links the host without the runtime's control-flow kernels. The
// helper (Loop, Scan) stays the EP's, as on any failure.
NxStatus* NotRegistered(const char* function) {
  return CreateStatus(NX_NOT_IMPLEMENTED,
                      (std::string(function) +
                       ": the runtime's control-flow kernels are not registered in this program "
                       "(controlflow/RegisterControlFlowKernels was not called)")
                          .c_str());
}

NxStatus* CreateIfKernel(const NxKernelInfo* info, NxKernel** kernel) {
  const ControlFlowSlots* slots = GetControlFlowSlots();
  if (slots == nullptr || slots->create_if == nullptr) return NotRegistered("CreateIfKernel");
  return slots->create_if(info, kernel);
}
NxStatus* CreateLoopKernel(const NxKernelInfo* info, NxLoopHelper* helper, NxKernel** kernel) {
  const ControlFlowSlots* slots = GetControlFlowSlots();
  if (slots == nullptr || slots->create_loop == nullptr) return NotRegistered("CreateLoopKernel");
  return slots->create_loop(info, helper, kernel);
}
NxStatus* CreateScanKernel(const NxKernelInfo* info, NxScanHelper* helper, NxKernel** kernel) {
  const ControlFlowSlots* slots = GetControlFlowSlots();
  if (slots == nullptr || slots->create_scan == nullptr) return NotRegistered("CreateScanKernel");
  return slots->create_scan(info, helper, kernel);
}
NxStatus* CreateSequenceMapKernel(const NxKernelInfo* info, NxKernel** kernel) {
  const ControlFlowSlots* slots = GetControlFlowSlots();
  if (slots == nullptr || slots->create_sequence_map == nullptr)
    return NotRegistered("CreateSequenceMapKernel");
  return slots->create_sequence_map(info, kernel);
}

}  // namespace

void FillControlFlowApi(NxHostApi& api) {
  api.CreateIfKernel = CreateIfKernel;
  api.CreateLoopKernel = CreateLoopKernel;
  api.CreateScanKernel = CreateScanKernel;
  api.CreateSequenceMapKernel = CreateSequenceMapKernel;
}

}  // namespace host_api
}  // namespace nxrt
