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

namespace onnx {
class NodeProto;
}

namespace nxrt {

// The domain of fused nodes in a session's graph (never in a model).
inline constexpr const char* kCompiledDomain = "nxrt.compiled";

// Compiled kernels and compile failures of one session and its control-flow bodies, shared by
// their Sessions: the main graph's placement compiles the groups of the bodies (the report must
// say which compiled), the body's session later takes those kernels instead of compiling again.
// A compiled group as NxEp::ExportCompiledGroup handed it over (NxEnv_CompileModel), by names:
// the graph is rewritten once the groups are installed.
struct ExportedGroup {
  const Graph* graph = nullptr;  // the graph (main graph or a body) whose nodes it replaces
  std::string ep;                // the EP that compiled it
  std::string ep_version;
  std::string name;                       // the fused node's name
  std::vector<std::string> node_names;    // its nodes (as the model names them; may be "")
  std::vector<std::string> node_outputs;  // every value its nodes produce
  std::vector<std::string> inputs;        // in the order CompileGroup saw them
  std::vector<std::string> outputs;       // likewise
  std::string payload, compatibility;
  // The whole EPContext node, when the EP wrote it itself (onnxruntime plugin EPs return one
  // from OrtEp::Compile): written as it is, `payload` unused.
  std::shared_ptr<const onnx::NodeProto> context_node;
};

// Whether a payload saved with `compatibility` suits these devices of `factory`
// (NxEpFactory::CheckCompatibility; optimal when the factory cannot say).
NxCompatibility CheckContextCompatibility(EpFactory& factory,
                                          const std::vector<const NxHardwareDevice*>& devices,
                                          const std::string& compatibility);
// "optimal", "supported but suboptimal", "needs recompilation", "unsupported", "not applicable".
const char* CompatibilityName(NxCompatibility c);

// The `source` attribute of an EPContext node (com.microsoft), or "" for any other node.
std::string ContextSource(const Node& node);

class CompiledGroups {
 public:
  ~CompiledGroups();  // releases kernels no session took

  // NxEnv_CompileModel: ask every EP that compiles a group for its payload (ExportCompiledGroup).
  void set_export(bool on) { export_ = on; }
  // The model's folder (saved payloads in files, "" = none allowed) and metadata (where the
  // compatibility strings are, "ep_compatibility_info.<EP>").
  void set_model(std::string dir, std::map<std::string, std::string> metadata) {
    model_dir_ = std::move(dir);
    metadata_ = std::move(metadata);
  }
  const std::vector<ExportedGroup>& exported() const { return exported_; }

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
  // The kernel of a saved group (one EPContext node the EP claimed): its payload from the node
  // or the file next to the model, checked with the factory, then NxEp::LoadCompiledGroup.
  NxKernel* LoadContext(const Graph& g, int node, EpInstance& ep, const Graph& view,
                        std::string& error);
  void Export(const Graph& g, const FusedGroup& group, EpInstance& ep, NxKernel* kernel,
              const std::string& name, const std::vector<int>& inputs,
              const std::vector<int>& outputs);

  bool export_ = false;
  std::string model_dir_;
  std::map<std::string, std::string> metadata_;
  std::vector<ExportedGroup> exported_;
  std::mutex mu_;
  std::map<const Graph*, FailedGroups> failed_;
  std::map<Key, Compiled> compiled_;
  int next_id_ = 0;
};

}  // namespace nxrt
