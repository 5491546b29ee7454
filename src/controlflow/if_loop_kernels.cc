// If and Loop: run a branch, or a body until its condition or the trip count stops it.
#include <cstring>
#include <limits>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "controlflow/body_runner.h"
#include "controlflow/control_flow.h"
#include "plugins/host_objects.h"

namespace nxrt {
namespace {

std::shared_ptr<Graph> GraphAttribute(const Node& node, const char* name) {
  const Attribute* a = node.FindAttribute(name);
  NXRT_CHECK(a != nullptr && a->graph, NX_INVALID_MODEL,
             node.Describe() + ": missing graph attribute '" + name + "'");
  return a->graph;
}

// A scalar read on the host (the condition and trip count are host inputs).
bool ReadBool(const Value* v, const Node& node, const char* what) {
  NXRT_CHECK(v != nullptr && v->kind == NX_VALUE_TENSOR && v->type == NX_TYPE_BOOL &&
                 v->count == 1 && IsHostReadable(*v),
             NX_INVALID_ARGUMENT, node.Describe() + ": " + what + " must be one bool");
  return *static_cast<const bool*>(v->data);
}

// Releases the kernel base class's owner.
template <class K>
void ReleaseKernel(NxKernel* k) {
  delete reinterpret_cast<K*>(k);
}

template <class K, class Fn>
NxStatus* Guard(NxKernel* k, Fn&& fn) {
  return CatchAsStatus([&] { fn(*reinterpret_cast<K*>(k)); });
}

// ---- If -------------------------------------------------------------------------------------

struct IfKernel {
  NxKernel base{};
  std::unique_ptr<BodyRunner> then_branch, else_branch;
  const NxMemoryInfo* memory = nullptr;  // the kernel's memory: where its outputs go

  void Compute(NxKernelContext& ctx) const {
    const Node& node = *ctx.node;
    NXRT_CHECK(ctx.num_inputs >= 1, NX_INVALID_MODEL, node.Describe() + ": has no condition input");
    const BodyRunner& branch =
        ReadBool(ctx.inputs[0], node, "the condition") ? *then_branch : *else_branch;
    NXRT_CHECK(branch.num_outputs() == ctx.num_outputs, NX_INVALID_MODEL,
               node.Describe() + ": the branch has " + std::to_string(branch.num_outputs()) +
                   " outputs, the node " + std::to_string(ctx.num_outputs));
    // Where each output goes; on the stack for the usual handful of outputs.
    constexpr size_t kInline = 16;
    const NxMemoryInfo* inline_deliver[kInline];
    std::vector<const NxMemoryInfo*> many;
    if (ctx.num_outputs > kInline) many.resize(ctx.num_outputs);
    const std::span<const NxMemoryInfo*> deliver =
        ctx.num_outputs > kInline ? std::span<const NxMemoryInfo*>(many)
                                  : std::span<const NxMemoryInfo*>(inline_deliver, ctx.num_outputs);
    for (size_t o = 0; o < deliver.size(); ++o) deliver[o] = OutputMemory(ctx, o, memory);
    branch.RunInto({}, ctx, deliver, std::span<ValuePtr>(ctx.outputs, ctx.num_outputs));
  }
};

// ---- Loop -----------------------------------------------------------------------------------

struct LoopKernel {
  NxKernel base{};
  std::unique_ptr<BodyRunner> body;
  NxLoopHelper* helper = nullptr;
  const NxMemoryInfo* memory = nullptr;  // the kernel's memory: where its outputs go

  ~LoopKernel() {
    if (helper != nullptr) helper->Release(helper);
  }

  void Compute(NxKernelContext& ctx) const {
    const Node& node = *ctx.node;
    // M and cond may be empty names (nullptr here) but the slots must be there.
    NXRT_CHECK(ctx.num_inputs >= 2, NX_INVALID_MODEL,
               node.Describe() + ": needs the inputs M and cond (either may be empty)");
    const size_t num_carried = ctx.num_inputs - 2;
    NXRT_CHECK(body->num_inputs() == num_carried + 2, NX_INVALID_MODEL,
               node.Describe() + ": the body takes " + std::to_string(body->num_inputs()) +
                   " inputs, expected " + std::to_string(num_carried + 2));
    NXRT_CHECK(body->num_outputs() >= num_carried + 1, NX_INVALID_MODEL,
               node.Describe() + ": the body has too few outputs");
    const size_t num_scan = body->num_outputs() - 1 - num_carried;
    NXRT_CHECK(ctx.num_outputs == num_carried + num_scan, NX_INVALID_MODEL,
               node.Describe() + ": the node has " + std::to_string(ctx.num_outputs) +
                   " outputs, the body makes " + std::to_string(num_carried + num_scan));

    int64_t trip_count = std::numeric_limits<int64_t>::max();
    if (const Value* m = ctx.inputs[0]) {
      NXRT_CHECK(m->kind == NX_VALUE_TENSOR && m->type == NX_TYPE_INT64 && m->count == 1 &&
                     IsHostReadable(*m),
                 NX_INVALID_ARGUMENT, node.Describe() + ": the trip count M must be one int64");
      trip_count = *static_cast<const int64_t*>(m->data);
    }
    bool cond = ctx.inputs[1] == nullptr || ReadBool(ctx.inputs[1], node, "the condition");

    std::vector<ValuePtr> carried_hold;               // this iteration's carried values (owned)
    std::vector<ValuePtr> wrapped_hold(num_carried);  // ... wrapped for an optional body input
    std::vector<const Value*> carried(ctx.inputs + 2, ctx.inputs + 2 + num_carried);
    std::vector<std::vector<ValuePtr>> scans(num_scan);
    ValuePtr iter = MakeTensor(NX_TYPE_INT64, std::vector<int64_t>{});
    ValuePtr cond_in = MakeTensor(NX_TYPE_BOOL, std::vector<int64_t>{});
    std::vector<const Value*> feeds(num_carried + 2);
    // The condition comes back to the host (it decides the next iteration); carried values and
    // scan outputs stay in the kernel's memory between iterations.
    std::vector<const NxMemoryInfo*> deliver(1 + num_carried + num_scan);
    deliver[0] = HostMemory();
    for (size_t o = 0; o < num_carried + num_scan; ++o)
      deliver[1 + o] = OutputMemory(ctx, o, memory);
    for (int64_t i = 0; i < trip_count && cond; ++i) {
      // A body with no nodes gives the executor no step to check: check every iteration.
      if (ctx.run_control != nullptr && ctx.run_control->ShouldStop())
        ctx.run_control->ThrowIfStopped(node.Describe() + ", iteration " + std::to_string(i));
      *static_cast<int64_t*>(iter->data) = i;
      *static_cast<bool*>(cond_in->data) = cond;
      feeds[0] = iter.get();
      feeds[1] = cond_in.get();
      for (size_t c = 0; c < num_carried; ++c) feeds[2 + c] = carried[c];
      std::vector<ValuePtr> out;
      try {
        out = body->Run(feeds, ctx, deliver);
      } catch (const Error& e) {
        Throw(e.code(), node.Describe() + ": iteration " + std::to_string(i) + ": " + e.what());
      }
      cond = ReadBool(out[0].get(), node, "the body's condition output");
      carried_hold.assign(out.begin() + 1, out.begin() + 1 + static_cast<ptrdiff_t>(num_carried));
      for (size_t c = 0; c < num_carried; ++c) {
        // A body that takes optional(T) and returns T: the next iteration gets it wrapped.
        const Graph& bg = body->graph();
        if (bg.value(bg.inputs[2 + c]).type.kind == NX_VALUE_OPTIONAL &&
            carried_hold[c]->kind != NX_VALUE_OPTIONAL) {
          auto wrapped = std::make_shared<Value>();
          wrapped->kind = NX_VALUE_OPTIONAL;
          wrapped->contained = carried_hold[c];
          wrapped->type = carried_hold[c]->kind == NX_VALUE_SEQUENCE
                              ? carried_hold[c]->sequence_type
                              : carried_hold[c]->type;
          wrapped_hold[c] = std::move(wrapped);
          carried[c] = wrapped_hold[c].get();
          continue;
        }
        carried[c] = carried_hold[c].get();
      }
      for (size_t k = 0; k < num_scan; ++k) scans[k].push_back(std::move(out[1 + num_carried + k]));
    }
    for (size_t c = 0; c < num_carried; ++c) {
      // No iteration ran: the initial values pass through (copied: the caller owns them).
      ctx.outputs[c] =
          carried_hold.empty() ? body->CopyTo(*carried[c], deliver[1 + c]) : carried_hold[c];
    }
    for (size_t k = 0; k < num_scan; ++k) ctx.outputs[num_carried + k] = Stack(ctx, k, scans[k]);
  }

  // The per-iteration values of scan output `k` stacked along a new first axis.
  ValuePtr Stack(NxKernelContext& ctx, size_t k, const std::vector<ValuePtr>& parts) const {
    const Node& node = *ctx.node;
    if (parts.empty()) {
      // No iteration: an empty tensor whose inner shape comes from the body's declaration.
      const TypeInfo& t =
          body->graph().value(body->graph().outputs[1 + ctx.num_inputs - 2 + k]).type;
      std::vector<int64_t> dims{0};
      for (int64_t d : t.dims) dims.push_back(d < 0 ? 0 : d);
      const NxElementType type = t.elem_type == NX_TYPE_UNDEFINED ? NX_TYPE_FLOAT : t.elem_type;
      return type == NX_TYPE_STRING || ctx.pool == nullptr
                 ? MakeTensor(type, dims)
                 : MakeTensorFromPool(type, dims, *ctx.pool);
    }
    const Value& first = *parts[0];
    for (const ValuePtr& p : parts) {
      NXRT_CHECK(p->kind == NX_VALUE_TENSOR && p->type == first.type && p->dims == first.dims,
                 NX_RUNTIME_ERROR,
                 node.Describe() + ": scan output " + std::to_string(k) +
                     " changes type or shape between iterations (" + DescribeTensor(first) +
                     " then " + DescribeTensor(*p) + ")");
    }
    std::vector<int64_t> dims{static_cast<int64_t>(parts.size())};
    dims.insert(dims.end(), first.dims.begin(), first.dims.end());
    ValuePtr out = first.type == NX_TYPE_STRING || ctx.pool == nullptr
                       ? MakeTensor(first.type, dims)
                       : MakeTensorFromPool(first.type, dims, *ctx.pool);
    if (helper != nullptr && first.type != NX_TYPE_STRING) {
      std::vector<const NxValue*> raw;
      for (const ValuePtr& p : parts) raw.push_back(p.get());
      if (ctx.stream != nullptr && helper->version >= 13 && helper->ConcatOutputOnStream) {
        // Queued on the node's stream (ABI 13): the parts stay alive until the run synchronises.
        ThrowIfStatus(
            helper->ConcatOutputOnStream(helper, raw.data(), raw.size(), out.get(), ctx.stream),
            node.Describe() + ": the EP's ConcatOutputOnStream failed");
        ctx.keep_alive.insert(ctx.keep_alive.end(), parts.begin(), parts.end());
        return out;
      }
      ThrowIfStatus(helper->ConcatOutput(helper, raw.data(), raw.size(), out.get()),
                    node.Describe() + ": the EP's ConcatOutput failed");
      return out;
    }
    NXRT_CHECK(IsHostReadable(first), NX_NOT_IMPLEMENTED,
               node.Describe() + ": scan outputs in device memory need the EP's ConcatOutput");
    const size_t n = first.count;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (first.type == NX_TYPE_STRING) {
        for (size_t e = 0; e < n; ++e) out->strings[i * n + e] = parts[i]->strings[e];
      } else {
        const size_t bytes = TensorBytes(first);
        if (bytes) std::memcpy(static_cast<char*>(out->data) + i * bytes, parts[i]->data, bytes);
      }
    }
    return out;
  }
};

// ---- SequenceMap ----------------------------------------------------------------------------

struct SequenceMapKernel {
  NxKernel base{};
  std::unique_ptr<BodyRunner> body;

  void Compute(NxKernelContext& ctx) const {
    const Node& node = *ctx.node;
    NXRT_CHECK(ctx.num_inputs >= 1, NX_INVALID_MODEL, node.Describe() + ": has no input sequence");
    const Value* first = ctx.inputs[0];
    NXRT_CHECK(first != nullptr && first->kind == NX_VALUE_SEQUENCE, NX_INVALID_ARGUMENT,
               node.Describe() + ": input 0 must be a sequence");
    const size_t count = first->elements.size();
    for (size_t i = 1; i < ctx.num_inputs; ++i) {
      const Value* in = ctx.inputs[i];
      NXRT_CHECK(in != nullptr, NX_INVALID_ARGUMENT, node.Describe() + ": missing input");
      NXRT_CHECK(in->kind != NX_VALUE_SEQUENCE || in->elements.size() == count, NX_INVALID_ARGUMENT,
                 node.Describe() + ": sequence input " + std::to_string(i) + " has " +
                     std::to_string(in->elements.size()) + " elements, input 0 has " +
                     std::to_string(count));
    }
    NXRT_CHECK(body->num_inputs() == ctx.num_inputs && body->num_outputs() == ctx.num_outputs,
               NX_INVALID_MODEL, node.Describe() + ": the body does not match the node");
    std::vector<std::shared_ptr<Value>> outs(ctx.num_outputs);
    for (size_t o = 0; o < ctx.num_outputs; ++o) {
      outs[o] = std::make_shared<Value>();
      outs[o]->kind = NX_VALUE_SEQUENCE;
      if (node.outputs[o] >= 0)
        outs[o]->sequence_type = node.owner->value(node.outputs[o]).type.elem_type;
    }
    std::vector<const Value*> feeds(ctx.num_inputs);
    for (size_t e = 0; e < count; ++e) {
      for (size_t i = 0; i < ctx.num_inputs; ++i) {
        const Value* in = ctx.inputs[i];
        feeds[i] = in->kind == NX_VALUE_SEQUENCE ? in->elements[e].get() : in;
      }
      std::vector<ValuePtr> r;
      try {
        r = body->Run(feeds, ctx);
      } catch (const Error& err) {
        Throw(err.code(), node.Describe() + ": element " + std::to_string(e) + ": " + err.what());
      }
      for (size_t o = 0; o < r.size(); ++o) {
        NXRT_CHECK(r[o]->kind == NX_VALUE_TENSOR, NX_RUNTIME_ERROR,
                   node.Describe() + ": the body must produce tensors");
        if (outs[o]->sequence_type == NX_TYPE_UNDEFINED) outs[o]->sequence_type = r[o]->type;
        outs[o]->elements.push_back(std::move(r[o]));
      }
    }
    for (size_t o = 0; o < ctx.num_outputs; ++o) ctx.outputs[o] = std::move(outs[o]);
  }
};

}  // namespace

NxStatus* CreateSequenceMapKernel(const NxKernelInfo* info, NxKernel** kernel) {
  if (info == nullptr || kernel == nullptr || info->session == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "CreateSequenceMapKernel: needs the kernel info of a SequenceMap node");
  return CatchAsStatus([&] {
    const Node& node = *info->node;
    NXRT_CHECK(node.op_type == "SequenceMap" && node.domain.empty(), NX_INVALID_ARGUMENT,
               "CreateSequenceMapKernel: " + node.Describe() + " is not a SequenceMap node");
    auto k = std::make_unique<SequenceMapKernel>();
    k->body = std::make_unique<BodyRunner>(*info->session, node, GraphAttribute(node, "body"));
    k->base.version = NXRT_EP_API_VERSION;
    k->base.Compute = [](NxKernel* self, NxKernelContext* ctx) {
      return Guard<SequenceMapKernel>(self, [&](SequenceMapKernel& me) { me.Compute(*ctx); });
    };
    k->base.Release = &ReleaseKernel<SequenceMapKernel>;
    *kernel = &k.release()->base;
  });
}

NxStatus* CreateIfKernel(const NxKernelInfo* info, NxKernel** kernel) {
  if (info == nullptr || kernel == nullptr || info->session == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT, "CreateIfKernel: needs the kernel info of an If node");
  return CatchAsStatus([&] {
    const Node& node = *info->node;
    NXRT_CHECK(node.op_type == "If" && node.domain.empty(), NX_INVALID_ARGUMENT,
               "CreateIfKernel: " + node.Describe() + " is not an If node");
    auto k = std::make_unique<IfKernel>();
    k->then_branch =
        std::make_unique<BodyRunner>(*info->session, node, GraphAttribute(node, "then_branch"));
    k->else_branch =
        std::make_unique<BodyRunner>(*info->session, node, GraphAttribute(node, "else_branch"));
    k->base.version = NXRT_EP_API_VERSION;
    k->base.Compute = [](NxKernel* self, NxKernelContext* ctx) {
      return Guard<IfKernel>(self, [&](IfKernel& me) { me.Compute(*ctx); });
    };
    k->base.Release = &ReleaseKernel<IfKernel>;
    k->memory = info->memory;
    *kernel = &k.release()->base;
  });
}

NxStatus* CreateLoopKernel(const NxKernelInfo* info, NxLoopHelper* helper, NxKernel** kernel) {
  if (info == nullptr || kernel == nullptr || info->session == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "CreateLoopKernel: needs the kernel info of a Loop node");
  if (helper != nullptr && (helper->ConcatOutput == nullptr || helper->Release == nullptr))
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "CreateLoopKernel: the helper needs ConcatOutput and Release");
  return CatchAsStatus([&] {
    const Node& node = *info->node;
    NXRT_CHECK(node.op_type == "Loop" && node.domain.empty(), NX_INVALID_ARGUMENT,
               "CreateLoopKernel: " + node.Describe() + " is not a Loop node");
    auto k = std::make_unique<LoopKernel>();
    k->body = std::make_unique<BodyRunner>(*info->session, node, GraphAttribute(node, "body"));
    k->base.version = NXRT_EP_API_VERSION;
    k->base.Compute = [](NxKernel* self, NxKernelContext* ctx) {
      return Guard<LoopKernel>(self, [&](LoopKernel& me) { me.Compute(*ctx); });
    };
    k->base.Release = &ReleaseKernel<LoopKernel>;
    k->memory = info->memory;
    k->helper = helper;  // owned from here on
    *kernel = &k.release()->base;
  });
}

}  // namespace nxrt
