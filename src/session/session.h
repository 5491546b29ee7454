// A session: one model, the EPs chosen for it, one kernel per node, and the plan that runs them.
// Created once; Run may be called from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/buffer_pool.h"
#include "model/model.h"
#include "plugins/host_objects.h"
#include "session/ep_instance.h"
#include "session/session_options.h"

namespace nxrt {

class Env;

class Session {
 public:
  Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Model& model() const { return *model_; }
  const Graph& graph() const { return *model_->graph; }
  int threads() const { return threads_; }

  // Runs the model. `inputs[i]` feeds the graph input named `input_names[i]` (borrowed for the
  // call). Returns the requested outputs (all graph outputs when `output_names` is empty).
  std::vector<ValuePtr> Run(const std::vector<std::string>& input_names,
                            const std::vector<const Value*>& inputs,
                            const std::vector<std::string>& output_names) const;

  // Placement: the EPs in priority order, and which one runs each node (graph order).
  size_t ep_count() const { return eps_.size(); }
  const std::string& ep_name(size_t i) const { return eps_[i]->name(); }
  int node_ep(size_t node) const { return node_ep_[node]; }

 private:
  void CreateEps(const SessionOptions& options);
  void AssignNodes();
  void CreateKernels();
  void PlanLifetimes();
  void CheckFeeds(const std::vector<std::string>& names, const std::vector<const Value*>& values,
                  std::vector<const Value*>& slots) const;

  Env& env_;
  std::shared_ptr<Model> model_;
  NxConfig config_;
  NxLogger logger_;
  int threads_ = 1;
  std::vector<std::unique_ptr<EpInstance>> eps_;
  std::vector<int> node_ep_;                 // EP index per node
  std::vector<NxKernel*> kernels_;           // kernel per node
  std::vector<std::vector<int>> free_after_; // values whose last use is node i
  std::shared_ptr<BufferPool> pool_;          // output buffers, reused across runs
};

}  // namespace nxrt
