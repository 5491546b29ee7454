// Runs one control-flow body (an If branch, a Loop or Scan body) as a plan of its own on the
// enclosing session's EPs, feeding its graph inputs and the outer-scope values it reads.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/value.h"
#include "graph/graph.h"

struct NxKernelContext;

namespace nxrt {

class Session;

class BodyRunner {
 public:
  // `node` is the control-flow node, `body` one of its graph attributes.
  BodyRunner(const Session& session, const Node& node, std::shared_ptr<Graph> body);
  ~BodyRunner();
  BodyRunner(const BodyRunner&) = delete;
  BodyRunner& operator=(const BodyRunner&) = delete;

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const;
  const Graph& graph() const;

  // One run: `inputs` feed the body's graph inputs in order; outer-scope values come from the
  // node's implicit inputs in `ctx`. Returns the body outputs in order.
  std::vector<ValuePtr> Run(std::span<const Value* const> inputs, const NxKernelContext& ctx) const;

 private:
  std::unique_ptr<Session> plan_;
  std::vector<int> inputs_;                    // body graph inputs (value indices)
  std::vector<std::pair<int, size_t>> outer_;  // body value -> index in implicit inputs
};

// Host-memory helpers the kernels use when the EP gave no helper (host-accessible memory).
// A tensor `src` sliced at index `i` of axis 0 (a fresh host tensor of rank - 1).
ValuePtr SliceAxis0(const Value& src, int64_t i);
// output = transpose(input, perm) in host memory.
void TransposeHost(const Value& input, std::span<const size_t> perm, Value& output);

}  // namespace nxrt
