#include "controlflow/body_runner.h"

#include <cstring>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "plugins/host_objects.h"
#include "plugins/kernel_registry.h"
#include "session/env.h"
#include "session/session.h"

namespace nxrt {

BodyRunner::BodyRunner(const Session& session, const Node& node, std::shared_ptr<Graph> body) {
  // The plan first: it may turn outer-scope constants into initializers of its own copy of the
  // body, which then need no feeding.
  plan_ = std::make_unique<Session>(session, std::move(body));
  const Graph& g = plan_->graph();
  const Graph& outer = *node.owner;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueDef& def = g.values[v];
    if (!def.is_outer_scope) continue;
    size_t k = 0;
    while (k < node.implicit_inputs.size() && outer.value(node.implicit_inputs[k]).name != def.name)
      ++k;
    NXRT_CHECK(k < node.implicit_inputs.size(), NX_INVALID_MODEL,
               node.Describe() + ": its subgraph reads '" + def.name +
                   "', which the enclosing graph does not provide");
    outer_.emplace_back(static_cast<int>(v), k);
  }
  inputs_ = g.inputs;
}

BodyRunner::~BodyRunner() = default;

size_t BodyRunner::num_outputs() const { return plan_->graph().outputs.size(); }
const Graph& BodyRunner::graph() const { return plan_->graph(); }

std::vector<ValuePtr> BodyRunner::Run(std::span<const Value* const> inputs,
                                      const NxKernelContext& ctx,
                                      std::span<const NxMemoryInfo* const> deliver) const {
  std::vector<ValuePtr> out(num_outputs());
  RunInto(inputs, ctx, deliver, out);
  return out;
}

void BodyRunner::RunInto(std::span<const Value* const> inputs, const NxKernelContext& ctx,
                         std::span<const NxMemoryInfo* const> deliver,
                         std::span<ValuePtr> out) const {
  const Graph& g = plan_->graph();
  NXRT_CHECK(inputs.size() == inputs_.size(), NX_RUNTIME_ERROR,
             "subgraph '" + g.name + "' takes " + std::to_string(inputs_.size()) + " inputs, got " +
                 std::to_string(inputs.size()));
  NXRT_CHECK(out.size() == g.outputs.size(), NX_INVALID_MODEL,
             "subgraph '" + g.name + "' has " + std::to_string(g.outputs.size()) +
                 " outputs, its node " + std::to_string(out.size()));
  Session::ScratchLease lease = plan_->LeaseScratch();
  std::vector<const Value*>& feeds = lease->feeds;
  feeds.assign(g.values.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) feeds[static_cast<size_t>(inputs_[i])] = inputs[i];
  for (const auto& [v, k] : outer_) {
    NXRT_CHECK(k < ctx.num_implicit_inputs && ctx.implicit_inputs[k] != nullptr, NX_RUNTIME_ERROR,
               "subgraph '" + g.name + "': outer value '" + g.value(v).name + "' is missing");
    feeds[static_cast<size_t>(v)] = ctx.implicit_inputs[k];
  }
  plan_->Execute(feeds, {}, {}, /*host_outputs=*/false, out);
  for (size_t i = 0; i < out.size() && i < deliver.size(); ++i)
    if (deliver[i] != nullptr) out[i] = Place(out[i], deliver[i]);
}

ValuePtr BodyRunner::Place(const ValuePtr& v, const NxMemoryInfo* memory) const {
  if (v->kind != NX_VALUE_TENSOR || v->type == NX_TYPE_STRING) return v;
  const NxMemoryInfo* have = MemoryOf(*v);
  if (SameMemory(have, memory) || (SameMemory(memory, HostMemory()) && HostAccessible(have)))
    return v;
  return plan_->env().CopyToMemory(*v, memory);
}

ValuePtr BodyRunner::CopyTo(const Value& v, const NxMemoryInfo* memory) const {
  if (v.kind != NX_VALUE_TENSOR) return std::make_shared<Value>(v);
  if (v.type == NX_TYPE_STRING) {
    ValuePtr out = MakeTensor(v.type, v.dims);
    out->strings = v.strings;
    return out;
  }
  return plan_->env().CopyToMemory(v, memory);
}

const NxMemoryInfo* OutputMemory(const NxKernelContext& ctx, size_t o, const NxMemoryInfo* memory) {
  if (memory == nullptr || (ctx.entry != nullptr && ctx.entry->OutputOnHost(o)))
    return HostMemory();
  return memory;
}

ValuePtr AllocateLike(const NxKernelContext& ctx, const Value& like, NxElementType type,
                      const std::vector<int64_t>& dims) {
  if (IsHostReadable(like) || type == NX_TYPE_STRING || ctx.pool == nullptr)
    return MakeTensor(type, dims);
  return MakeTensorFromPool(type, dims, *ctx.pool);
}

ValuePtr SliceAxis0(const Value& src, int64_t i) {
  NXRT_CHECK(src.kind == NX_VALUE_TENSOR && !src.dims.empty(), NX_RUNTIME_ERROR,
             "cannot slice " + DescribeTensor(src) + " along axis 0");
  std::vector<int64_t> dims(src.dims.begin() + 1, src.dims.end());
  ValuePtr out = MakeTensor(src.type, dims);
  const size_t n = out->count;
  if (src.type == NX_TYPE_STRING) {
    for (size_t k = 0; k < n; ++k) out->strings[k] = src.strings[static_cast<size_t>(i) * n + k];
  } else {
    const size_t bytes = StorageBytes(src.type, n);
    if (bytes)
      std::memcpy(out->data, static_cast<const char*>(src.data) + static_cast<size_t>(i) * bytes,
                  bytes);
  }
  return out;
}

void TransposeHost(const Value& input, std::span<const size_t> perm, Value& output) {
  const size_t rank = input.dims.size();
  NXRT_CHECK(perm.size() == rank && output.count == input.count, NX_RUNTIME_ERROR,
             "transpose: bad permutation");
  std::vector<size_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    in_strides[d - 1] = in_strides[d] * static_cast<size_t>(input.dims[d]);
  const size_t es = input.type == NX_TYPE_STRING ? 0 : ElementSize(input.type);
  std::vector<size_t> index(rank, 0);
  for (size_t o = 0; o < output.count; ++o) {
    size_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += index[d] * in_strides[perm[d]];
    if (input.type == NX_TYPE_STRING)
      output.strings[o] = input.strings[src];
    else
      std::memcpy(static_cast<char*>(output.data) + o * es,
                  static_cast<const char*>(input.data) + src * es, es);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < static_cast<size_t>(output.dims[d])) break;
      index[d] = 0;
    }
  }
}

}  // namespace nxrt
