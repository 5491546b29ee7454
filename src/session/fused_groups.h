// Fused groups: the groups of nodes EPs claim to compile as one. Placement accepts a group, the
// EP compiles it (NxEp::CompileGroup) and the session replaces its nodes by one fused node whose
// kernel is the compiled one. A group that fails to compile is placed again without it, so its
// nodes fall back to the next EP.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"
#include "session/ep_instance.h"
#include "session/placement.h"

namespace nxrt {

// The domain of fused nodes in a session's graph (never in a model).
inline constexpr const char* kCompiledDomain = "nxrt.compiled";

// Compiled kernels and compile failures of one session and its control-flow bodies, shared by
// their Sessions: the main graph's placement compiles the groups of the bodies (the report must
// say which compiled), the body's session later takes those kernels instead of compiling again.
class CompiledGroups {
 public:
  ~CompiledGroups();  // releases kernels no session took

  // Places `g` and compiles its groups, placing again without a group whose compilation failed
  // until every accepted group has a kernel. `on_compile(begin_ns, end_ns, ep, name, ok)` is
  // told about each CompileGroup call (for the profile), may be empty.
  using CompileObserver = std::function<void(
      uint64_t begin_ns, uint64_t end_ns, const std::string& ep, const std::string& name, bool ok)>;
  GraphPlacement PlaceAndCompile(const Graph& g,
                                 const std::vector<std::shared_ptr<EpInstance>>& eps,
                                 const NxLogger& logger, const CompileObserver& on_compile = {});

  // A fused node's kernel (now owned by the caller) and the device its group declared.
  struct Installed {
    NxKernel* kernel = nullptr;
    const NxHardwareDevice* device = nullptr;
  };
  // The fused node and kernel of each group of `placement` (made by PlaceAndCompile for
  // `original`, of which `g` is `original` itself or a copy): rewrites `g`, replacing every
  // group's nodes by one node of domain kCompiledDomain that reads the group's inputs and
  // produces its outputs. Returns the kernels by fused node name.
  std::map<std::string, Installed> Install(Graph& g, const Graph* original,
                                           const GraphPlacement& placement);

 private:
  using Key = std::tuple<const Graph*, int, std::vector<int>>;
  struct Compiled {
    NxKernel* kernel = nullptr;
    std::string name;
  };
  std::mutex mu_;
  std::map<const Graph*, FailedGroups> failed_;
  std::map<Key, Compiled> compiled_;
  int next_id_ = 0;
};

}  // namespace nxrt
