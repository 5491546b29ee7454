// The host-side structs behind the opaque handles an EP receives during capability, kernel
// creation and compute. Filled by the session, read through the NxHostApi table.
#pragma once

#include <string>
#include <vector>

#include "base/buffer_pool.h"
#include "base/config.h"
#include "base/logger.h"
#include "base/value.h"
#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"

// Collects the nodes one EP claims in one graph.
struct NxCapability {
  const nxrt::Graph* graph = nullptr;
  std::vector<const nxrt::Node*> claimed;
};

struct NxKernelInfo {
  const nxrt::Node* node = nullptr;
  const nxrt::Config* config = nullptr;
};

struct NxKernelContext {
  const nxrt::Node* node = nullptr;
  const nxrt::Value* const* inputs = nullptr;  // null entries for omitted inputs
  size_t num_inputs = 0;
  nxrt::ValuePtr* outputs = nullptr;           // filled by AllocateOutput
  size_t num_outputs = 0;
  int threads = 1;
  nxrt::BufferPool* pool = nullptr;            // where output buffers come from
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
