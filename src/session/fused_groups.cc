#include "session/fused_groups.h"

#include "base/error.h"
#include "plugins/host_objects.h"
#include "session/profiler.h"

namespace nxrt {

CompiledGroups::~CompiledGroups() {
  for (auto& [key, compiled] : compiled_)
    if (compiled.kernel != nullptr) compiled.kernel->Release(compiled.kernel);
}

GraphPlacement CompiledGroups::PlaceAndCompile(const Graph& g,
                                               const std::vector<std::shared_ptr<EpInstance>>& eps,
                                               const NxLogger& logger,
                                               const CompileObserver& on_compile) {
  std::lock_guard<std::mutex> lock(mu_);
  FailedGroups& failed = failed_[&g];
  for (;;) {
    GraphPlacement placement = PlaceGraph(g, eps, logger, &failed);
    bool any_failed = false;
    for (const FusedGroup& group : placement.groups) {
      Key key{&g, group.ep, group.nodes};
      if (compiled_.count(key)) continue;
      EpInstance& ep = *eps[static_cast<size_t>(group.ep)];
      const std::string name = ep.name() + "_fused_" + std::to_string(next_id_++);
      std::vector<int> inputs, outputs;
      std::string error;
      NxKernel* kernel = nullptr;
      const uint64_t begin = Profiler::NowNs();
      try {
        std::unique_ptr<Graph> view = MakeGroupGraph(g, group.nodes, name, inputs, outputs);
        NxEp* raw = ep.raw();
        NxStatus* st = raw->CompileGroup(raw, reinterpret_cast<const NxGraph*>(view.get()),
                                         name.c_str(), &kernel);
        if (st != nullptr) {
          NxStatusCode code = NX_FAIL;
          if (!TakeStatus(st, code, error))
            error = "it returned a status pointer the host did not create";
          if (kernel != nullptr) kernel->Release(kernel);
          kernel = nullptr;
        } else if (kernel == nullptr) {
          error = "it returned no kernel";
        } else if (kernel->Compute == nullptr || kernel->Release == nullptr) {
          if (kernel->Release != nullptr) kernel->Release(kernel);
          kernel = nullptr;
          error = "it returned an incomplete kernel";
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (on_compile) on_compile(begin, Profiler::NowNs(), ep.name(), name, kernel != nullptr);
      if (kernel == nullptr) {
        logger.logger.Log(NX_LOG_WARNING, "EP '" + ep.name() + "' could not compile a group of " +
                                              std::to_string(group.nodes.size()) +
                                              " nodes (they fall back): " + error);
        failed[{group.ep, group.nodes}] = error;
        any_failed = true;
        continue;
      }
      compiled_[key] = {kernel, name};
    }
    if (!any_failed) return placement;
  }
}

std::map<std::string, CompiledGroups::Installed> CompiledGroups::Install(
    Graph& g, const Graph* original, const GraphPlacement& placement) {
  std::map<std::string, Installed> kernels;
  if (placement.groups.empty()) return kernels;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = g.nodes.size();
  std::vector<char> dead(n, 0);
  std::vector<std::unique_ptr<Node>> fused_at(n);
  for (const FusedGroup& group : placement.groups) {
    auto it = compiled_.find(Key{original, group.ep, group.nodes});
    NXRT_CHECK(it != compiled_.end() && it->second.kernel != nullptr, NX_RUNTIME_ERROR,
               "internal: a fused group has no compiled kernel");
    auto fused = std::make_unique<Node>();
    fused->name = it->second.name;
    fused->op_type = "CompiledGroup";
    fused->domain = kCompiledDomain;
    fused->opset = 1;
    fused->assigned_ep = group.ep;
    GroupBoundary(g, group.nodes, fused->inputs, fused->outputs);
    for (int i : group.nodes) dead[static_cast<size_t>(i)] = 1;
    fused_at[static_cast<size_t>(group.nodes.back())] = std::move(fused);
    kernels[it->second.name] = {it->second.kernel, group.device};
    it->second.kernel = nullptr;  // the caller's now
  }
  std::vector<Node> kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (fused_at[i]) kept.push_back(std::move(*fused_at[i]));
    if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  g.Finalize();
  return kernels;
}

}  // namespace nxrt
