// Runs one control-flow body (an If branch, a Loop or Scan body) as a plan of its own on the
// enclosing session's EPs, feeding its graph inputs and the outer-scope values it reads.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/value.h"
#include "graph/graph.h"
#include "nxrt/nxrt_types.h"

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

  // One run: `inputs` feed the body's graph inputs in order (any memory); outer-scope values
  // come from the node's implicit inputs in `ctx`. Returns the body outputs in order, each
  // tensor in `deliver[i]` (copied there if the body produced it elsewhere; a null entry, or
  // none, leaves it where it was produced).
  std::vector<ValuePtr> Run(std::span<const Value* const> inputs, const NxKernelContext& ctx,
                            std::span<const NxMemoryInfo* const> deliver = {}) const;
  // The same, writing the outputs into `out` (one entry per body output; a size mismatch is an
  // invalid model): no allocation per run once the body's plan is warm.
  void RunInto(std::span<const Value* const> inputs, const NxKernelContext& ctx,
               std::span<const NxMemoryInfo* const> deliver, std::span<ValuePtr> out) const;

  // `v` in `memory` (itself when it is a tensor there already, or not a tensor).
  ValuePtr Place(const ValuePtr& v, const NxMemoryInfo* memory) const;
  // A fresh copy of tensor `v` in `memory`; other kinds are shared (their tensors are immutable).
  ValuePtr CopyTo(const Value& v, const NxMemoryInfo* memory) const;

 private:
  std::unique_ptr<Session> plan_;
  std::vector<int> inputs_;                    // body graph inputs (value indices)
  std::vector<std::pair<int, size_t>> outer_;  // body value -> index in implicit inputs
};

// Where a control-flow kernel's output `o` lives: `memory` (the kernel's), unless its definition
// puts that output on the host.
const NxMemoryInfo* OutputMemory(const NxKernelContext& ctx, size_t o, const NxMemoryInfo* memory);

// A tensor for a control-flow kernel to fill: on the host when `like` is host-readable, else in
// the kernel's memory (its arena in `ctx`).
ValuePtr AllocateLike(const NxKernelContext& ctx, const Value& like, NxElementType type,
                      const std::vector<int64_t>& dims);

// Host-memory helpers the kernels use when the EP gave no helper (host-accessible memory).
// A tensor `src` sliced at index `i` of axis 0 (a fresh host tensor of rank - 1).
ValuePtr SliceAxis0(const Value& src, int64_t i);
// output = transpose(input, perm) in host memory.
void TransposeHost(const Value& input, std::span<const size_t> perm, Value& output);

}  // namespace nxrt
