// The host-side structs behind the opaque handles an EP receives during capability, kernel
// creation and compute. Filled by the session, read through the NxHostApi table.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "base/buffer_pool.h"
#include "base/config.h"
#include "base/logger.h"
#include "base/run_control.h"
#include "base/value.h"
#include "devices/ep_device.h"
#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"

// Collects the nodes one EP claims in one graph: single nodes (run by kernels) and groups (to
// compile as one).
struct NxCapability {
  struct Group {
    std::vector<const nxrt::Node*> nodes;
    const NxHardwareDevice* device = nullptr;  // declared by the EP, or null
  };
  const nxrt::Graph* graph = nullptr;
  std::vector<const nxrt::Node*> claimed;
  // Claimed nodes that name a hardware device (Capability_AddNodeWithOptions, version 12).
  std::unordered_map<const nxrt::Node*, const NxHardwareDevice*> claimed_device;
  std::vector<Group> groups;
  // Set by the host before GetCapability: the EP's hardware devices (a group may name one) and
  // whether it can compile (NxEp::CompileGroup).
  std::vector<const NxHardwareDevice*> devices;
  bool can_compile = false;
  // The EP each node of `graph` went to so far (-1: none yet), for Capability_IsNodeTaken.
  const std::vector<int>* node_ep = nullptr;
};

namespace nxrt {
class Session;
}  // namespace nxrt

struct NxKernelInfo {
  const nxrt::Node* node = nullptr;
  const nxrt::Config* config = nullptr;
  NxEp* ep = nullptr;
  const NxMemoryInfo* memory = nullptr;      // the kernel's default memory (its device's)
  const NxHardwareDevice* device = nullptr;  // the node's hardware device (null: none)
  const nxrt::Session* session = nullptr;    // for the runtime's control-flow kernels
};

namespace nxrt {
struct KernelEntry;
class ThreadPool;
class Session;
struct ProfiledRun;  // profiling
}  // namespace nxrt

struct NxKernelContext {
  const nxrt::Node* node = nullptr;
  const nxrt::KernelEntry* entry = nullptr;  // host outputs, aliases, in-place hints (may be null)
  const nxrt::Value* const* inputs = nullptr;  // null entries for omitted (or packed) inputs
  size_t num_inputs = 0;
  nxrt::ValuePtr* outputs = nullptr;  // filled by AllocateOutput
  size_t num_outputs = 0;
  int threads = 1;
  nxrt::BufferPool* pool = nullptr;       // where output buffers come from (kernel memory)
  nxrt::BufferPool* host_pool = nullptr;  // host buffers (host outputs, host scratch)
  // Optional planning facts, per input: may the buffer be overwritten (last use, runtime-owned).
  const char* input_reusable = nullptr;
  // Optional, per output: a caller-bound tensor to write into when it matches.
  nxrt::Value* const* bound_outputs = nullptr;
  nxrt::ThreadPool* thread_pool = nullptr;
  // Optional, per input: the owning handle when this run owns the value (null otherwise), so a
  // sequence/optional output can share it instead of copying.
  const nxrt::ValuePtr* input_owners = nullptr;
  // Values the node's subgraphs read from outside (Node::implicit_inputs), for control flow.
  const nxrt::Value* const* implicit_inputs = nullptr;
  size_t num_implicit_inputs = 0;
  // Tensors made with KernelContext_CreateTensor during this call.
  std::vector<nxrt::ValuePtr> created;
  // What SetOutput* may share: value -> shareable handle (null: copy). Built on first use.
  std::unordered_map<const nxrt::Value*, nxrt::ValuePtr> share_index;
  bool share_index_built = false;
  std::vector<std::shared_ptr<void>> scratch;  // freed when Compute returns
  // ---- profiling: the run being profiled (base/profiler.h), null when not profiling ----
  nxrt::ProfiledRun* profile = nullptr;
  // The run's stop conditions (terminate flag, time limit), null when it has none.
  const nxrt::RunControl* run_control = nullptr;
  // The stream the kernel queues its work on (ABI 13), null when it runs synchronously.
  NxStream* stream = nullptr;
  // Values queued work still reads after Compute returns (the host's Loop/Scan kernels put the
  // parts their helpers stack on the stream here): kept until the run has synchronised.
  mutable std::vector<nxrt::ValuePtr> keep_alive;
};

// Collects the virtual devices a factory creates for one request (CreateVirtualDevices).
struct NxVirtualDeviceList {
  std::vector<nxrt::HardwareDevice> added;
};

// Collects the devices a factory supports (GetSupportedDevices).
struct NxEpDeviceList {
  struct Entry {
    const NxHardwareDevice* device = nullptr;
    nxrt::KeyValues metadata;
    nxrt::KeyValues options;
  };
  const std::vector<const NxHardwareDevice*>* offered = nullptr;
  std::vector<Entry> added;
};

struct NxLogger {
  nxrt::Logger logger;
};

struct NxConfig : nxrt::Config {};

namespace nxrt {

// The host service table handed to every EP library (static; lives for the process).
const NxHostApi* GetHostApi();

inline const NxConfig* AsNxConfig(const Config* c) { return static_cast<const NxConfig*>(c); }

}  // namespace nxrt
