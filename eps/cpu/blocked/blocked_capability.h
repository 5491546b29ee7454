// The CPU EP's GetCapability: connected runs of blocked-layout operators (blocked_ops.h) that hold
// at least one convolution are claimed as fused groups (compiled by blocked_program.h); every
// other node the kernel registry can run is claimed node by node, as the host would by default.
#pragma once

#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <set>
#include <string>
#include <vector>

namespace nxrt::cpu::blocked {

// Groups whose compilation failed in this session: the next GetCapability call (the host places
// the graph again after a failed compile) claims their nodes one by one instead, so the model
// still runs on the CPU EP's kernels. A group is named by its nodes' first outputs.
class FailedGroups {
 public:
  void Add(std::string key);
  bool Contains(const std::string& key) const;

 private:
  mutable std::mutex mu_;
  std::set<std::string> keys_;
};

// The key FailedGroups uses for `nodes` (of a graph view).
std::string GroupKey(const std::vector<const NxNode*>& nodes);

// Claims the nodes of `graph` for the CPU EP, in groups of `block`-channel blocks (0: node by
// node only).
void ClaimNodes(const NxGraph* graph, const NxKernelRegistry* registry, NxCapability* capability,
                int block, const FailedGroups& failed);

}  // namespace nxrt::cpu::blocked
