// The host table's kernel part: kernel registries, what a kernel learns at creation (kernel
// info) and what it uses while computing (kernel context: inputs, output allocation with
// aliasing and in-place reuse, scratch, parallel-for, profiling, stop requests).
#include <algorithm>
#include <functional>
#include <string>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "base/profiler.h"
#include "base/thread_pool.h"
#include "plugins/host_api_parts.h"
#include "plugins/host_objects.h"
#include "plugins/kernel_registry.h"

namespace nxrt::host_api {
namespace {

// ---- Kernel registry ----
NxStatus* CreateKernelRegistry(NxKernelRegistry** out) {
  return CatchAsStatus([&] { *out = new NxKernelRegistry(); });
}
NxStatus* KernelRegistryAdd(NxKernelRegistry* r, const NxKernelDef* def) {
  if (!r || !def) return CreateStatus(NX_INVALID_ARGUMENT, "KernelRegistry_Add: null argument");
  return CatchAsStatus([&] { r->Add(*def); });
}
bool KernelRegistryHasKernel(const NxKernelRegistry* r, const NxNode* node, const char** reason) {
  thread_local std::string last_reason;
  if (!r || !node) return false;
  const KernelEntry* e = r->Find(*N(node), &last_reason);
  if (!e && reason) *reason = last_reason.c_str();
  return e != nullptr;
}
void ReleaseKernelRegistry(NxKernelRegistry* r) { delete r; }
const NxKernelDef* KernelRegistryFindKernel(const NxKernelRegistry* r, const NxNode* node,
                                            const char** reason) {
  thread_local std::string last_reason;
  if (!r || !node) return nullptr;
  const KernelEntry* e = r->Find(*N(node), &last_reason);
  if (!e && reason) *reason = last_reason.c_str();
  return e ? &e->abi : nullptr;
}

// ---- Kernel info ----
const NxNode* KernelInfoGetNode(const NxKernelInfo* info) {
  return reinterpret_cast<const NxNode*>(info->node);
}
const NxConfig* KernelInfoGetConfig(const NxKernelInfo* info) { return AsNxConfig(info->config); }

const NxHardwareDevice* KernelInfoGetHardwareDevice(const NxKernelInfo* info) {
  return info ? info->device : nullptr;
}

NxEp* KernelInfoGetEp(const NxKernelInfo* info) { return info ? info->ep : nullptr; }
const NxMemoryInfo* KernelInfoGetMemoryInfo(const NxKernelInfo* info) {
  return info && info->memory ? info->memory : HostMemory();
}

// ---- Kernel context ----
size_t ContextGetInputCount(const NxKernelContext* c) { return c->num_inputs; }
const NxValue* ContextGetInput(const NxKernelContext* c, size_t i) {
  return i < c->num_inputs ? c->inputs[i] : nullptr;
}
size_t ContextGetOutputCount(const NxKernelContext* c) { return c->num_outputs; }

// A tensor that shares `src`'s buffer under a new shape (aliasing and in-place outputs).
ValuePtr ShareBuffer(const Value& src, NxElementType type, std::span<const int64_t> shape) {
  ValuePtr v = NewTensorValue();
  v->kind = NX_VALUE_TENSOR;
  v->type = type;
  v->dims.assign(shape.begin(), shape.end());
  v->count = ElementCount(shape);
  v->data = src.data;
  v->storage = src.storage;
  v->memory = src.memory;
  return v;
}

// Whether output `index` may take over input `in`'s buffer.
bool CanTakeBuffer(const NxKernelContext& c, int in, NxElementType type,
                   std::span<const int64_t> shape, const NxMemoryInfo* memory,
                   bool must_be_reusable) {
  if (in < 0 || static_cast<size_t>(in) >= c.num_inputs || c.inputs[in] == nullptr) return false;
  const Value& src = *c.inputs[in];
  if (src.kind != NX_VALUE_TENSOR || src.type == NX_TYPE_STRING || type == NX_TYPE_STRING)
    return false;
  if (!src.storage || !SameMemory(MemoryOf(src), memory))
    return false;  // only runtime-held buffers
  if (StorageBytes(src.type, src.count) != StorageBytes(type, ElementCount(shape))) return false;
  if (must_be_reusable) {
    if (c.input_reusable == nullptr || !c.input_reusable[in]) return false;
    if (src.storage.use_count() != 1) return false;  // another value shares the buffer
    for (size_t o = 0; o < c.num_outputs; ++o) {     // another output took it already
      if (c.outputs[o] && c.outputs[o]->data == src.data) return false;
    }
  }
  return true;
}

ValuePtr MakeOutput(NxKernelContext& c, size_t index, NxElementType type,
                    std::span<const int64_t> shape) {
  const KernelEntry* e = c.entry;
  const bool on_host = e != nullptr && e->OutputOnHost(index);
  BufferPool* pool = on_host ? c.host_pool : c.pool;
  const NxMemoryInfo* memory = pool ? pool->memory() : HostMemory();
  // A tensor the caller bound for this graph output, when it lives where the output is made.
  if (c.bound_outputs != nullptr && c.bound_outputs[index] != nullptr) {
    Value& b = *c.bound_outputs[index];
    if (b.kind == NX_VALUE_TENSOR && b.type == type && std::ranges::equal(b.dims, shape) &&
        type != NX_TYPE_STRING && SameMemory(MemoryOf(b), memory)) {
      ValuePtr v = NewTensorValue();
      v->kind = NX_VALUE_TENSOR;
      v->type = type;
      v->dims.assign(shape.begin(), shape.end());
      v->count = b.count;
      v->data = b.data;
      v->storage = b.storage;
      v->memory = b.memory;
      return v;
    }
  }
  if (e != nullptr) {
    if (int in = e->AliasInput(index); CanTakeBuffer(c, in, type, shape, memory, false)) {
      return ShareBuffer(*c.inputs[in], type, shape);
    }
    if (int in = e->InplaceInput(index); CanTakeBuffer(c, in, type, shape, memory, true)) {
      return ShareBuffer(*c.inputs[in], type, shape);
    }
  }
  if (pool == nullptr) return MakeTensor(type, shape);
  return MakeTensorFromPool(type, shape, *pool);
}
NxStatus* ContextAllocateOutput(NxKernelContext* c, size_t index, NxElementType type,
                                const int64_t* dims, size_t rank, NxValue** output) {
  return CatchAsStatus([&] {
    const Node& node = *c->node;
    NXRT_CHECK(output != nullptr, NX_INVALID_ARGUMENT, "AllocateOutput: output pointer is null");
    NXRT_CHECK(index < c->num_outputs, NX_INVALID_ARGUMENT,
               node.Describe() + ": kernel allocated output " + std::to_string(index) +
                   " but the node has " + std::to_string(c->num_outputs) + " outputs");
    NXRT_CHECK(!c->outputs[index], NX_RUNTIME_ERROR,
               node.Describe() + ": kernel allocated output " + std::to_string(index) + " twice");
    NXRT_CHECK(rank == 0 || dims != nullptr, NX_INVALID_ARGUMENT, "AllocateOutput: dims is null");
    NxElementType declared = NX_TYPE_UNDEFINED;
    if (node.outputs[index] >= 0) declared = node.owner->value(node.outputs[index]).type.elem_type;
    NxElementType actual = type == NX_TYPE_UNDEFINED ? declared : type;
    NXRT_CHECK(actual != NX_TYPE_UNDEFINED, NX_RUNTIME_ERROR,
               node.Describe() + ": the type of output " + std::to_string(index) +
                   " is not declared by the model and the kernel did not give one");
    if (declared != NX_TYPE_UNDEFINED && actual != declared) {
      Throw(NX_RUNTIME_ERROR, node.Describe() + ": kernel produced output " +
                                  std::to_string(index) + " as " + ElementTypeName(actual) +
                                  " but the model declares " + ElementTypeName(declared));
    }
    const std::span<const int64_t> shape(dims, rank);
    for (int64_t d : shape) {
      NXRT_CHECK(d >= 0, NX_RUNTIME_ERROR,
                 node.Describe() + ": kernel asked for output " + std::to_string(index) +
                     " with negative dimension in " + ShapeString(shape));
    }
    c->outputs[index] = MakeOutput(*c, index, actual, shape);
    *output = c->outputs[index].get();
  });
}
int32_t ContextGetThreadCount(const NxKernelContext* c) { return c->threads; }
NxStatus* ContextGetScratch(NxKernelContext* c, size_t size, bool host, void** memory) {
  if (!c || !memory)
    return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_GetScratch: null argument");
  return CatchAsStatus([&] {
    BufferPool* pool = host ? c->host_pool : c->pool;
    std::shared_ptr<void> block;
    if (pool != nullptr) {
      block = pool->Acquire(size);
    } else {
      void* p = HostRawAllocator()->Alloc(size);
      block = std::shared_ptr<void>(p, [](void* q) { HostRawAllocator()->Free(q); });
    }
    *memory = block.get();
    c->scratch.push_back(std::move(block));
  });
}
NxStatus* ContextParallelFor(NxKernelContext* c, size_t total, size_t grain,
                             void (*fn)(void* user, size_t begin, size_t end), void* user) {
  if (!c || !fn)
    return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_ParallelFor: null argument");
  return CatchAsStatus([&] {
    std::function<void(size_t, size_t)> job = [&](size_t b, size_t e) { fn(user, b, e); };
    if (c->thread_pool == nullptr)
      job(0, total);
    else
      c->thread_pool->ParallelFor(total, grain, job);
  });
}

// ---- Profiling (version 6) ----
uint64_t ProfilerNowNs() { return Profiler::NowNs(); }
bool ContextShouldStop(const NxKernelContext* ctx) {
  return ctx != nullptr && ctx->run_control != nullptr && ctx->run_control->ShouldStop();
}

bool ContextIsProfiling(const NxKernelContext* ctx) {
  return ctx != nullptr && ctx->profile != nullptr && ctx->profile->profiler->active();
}
// Adds an EP event with the args `arg_at(i, &key, &value)` gives (entries it leaves null are
// skipped).
template <class ArgAt>
void AddEpProfileEvent(NxKernelContext* ctx, const char* name, uint64_t begin_ns, uint64_t end_ns,
                       size_t num_args, ArgAt&& arg_at) {
  if (!ContextIsProfiling(ctx) || name == nullptr) return;
  try {
    const ProfiledRun& run = *ctx->profile;
    ProfileEvent event{name, "ep", begin_ns, end_ns, Profiler::ThreadId(), {}};
    for (size_t i = 0; i < num_args; ++i) {
      const char* key = nullptr;
      const char* value = nullptr;
      arg_at(i, &key, &value);
      if (key != nullptr && value != nullptr) event.args.emplace_back(key, value);
    }
    if (ctx->node != nullptr) event.args.emplace_back("node", ctx->node->name);
    if (run.ep != nullptr) event.args.emplace_back("ep", *run.ep);
    if (run.run_known) event.args.emplace_back("run", std::to_string(run.run));
    run.profiler->Add(std::move(event));
  } catch (...) {  // out of memory: the event is lost, the kernel goes on
  }
}

void ContextAddProfileEvent(NxKernelContext* ctx, const char* name, uint64_t begin_ns,
                            uint64_t end_ns, const NxKeyValue* args, size_t num_args) {
  AddEpProfileEvent(ctx, name, begin_ns, end_ns, args != nullptr ? num_args : 0,
                    [&](size_t i, const char** key, const char** value) {
                      *key = args[i].key;
                      *value = args[i].value;
                    });
}

// Version 14: the args in the versioned form (a null entry, or one below version 14, is skipped:
// a profile event is never worth failing a kernel for).
void ContextAddProfileEvent2(NxKernelContext* ctx, const char* name, uint64_t begin_ns,
                             uint64_t end_ns, const NxKeyValue2* const* args, size_t num_args) {
  AddEpProfileEvent(ctx, name, begin_ns, end_ns, args != nullptr ? num_args : 0,
                    [&](size_t i, const char** key, const char** value) {
                      if (args[i] == nullptr || args[i]->version < 14) return;
                      *key = args[i]->key;
                      *value = args[i]->value;
                    });
}

}  // namespace

void FillKernelsApi(NxHostApi& api) {
  api.KernelRegistry_FindKernel = KernelRegistryFindKernel;
  api.KernelInfo_GetEp = KernelInfoGetEp;
  api.KernelInfo_GetMemoryInfo = KernelInfoGetMemoryInfo;
  api.KernelContext_GetScratch = ContextGetScratch;
  api.KernelContext_ParallelFor = ContextParallelFor;
  api.KernelInfo_GetHardwareDevice = KernelInfoGetHardwareDevice;
  api.CreateKernelRegistry = CreateKernelRegistry;
  api.KernelRegistry_Add = KernelRegistryAdd;
  api.KernelRegistry_HasKernel = KernelRegistryHasKernel;
  api.ReleaseKernelRegistry = ReleaseKernelRegistry;
  api.KernelInfo_GetNode = KernelInfoGetNode;
  api.KernelInfo_GetConfig = KernelInfoGetConfig;
  api.KernelContext_GetInputCount = ContextGetInputCount;
  api.KernelContext_GetInput = ContextGetInput;
  api.KernelContext_GetOutputCount = ContextGetOutputCount;
  api.KernelContext_AllocateOutput = ContextAllocateOutput;
  api.KernelContext_GetThreadCount = ContextGetThreadCount;
  api.Profiler_NowNs = ProfilerNowNs;
  api.KernelContext_IsProfiling = ContextIsProfiling;
  api.KernelContext_AddProfileEvent = ContextAddProfileEvent;
  api.KernelContext_AddProfileEvent2 = ContextAddProfileEvent2;
  api.KernelContext_ShouldStop = ContextShouldStop;
  // version 13: the stream a kernel queues its work on (null: synchronous)
  api.KernelContext_GetStream = [](const NxKernelContext* ctx) -> NxStream* {
    return ctx != nullptr ? ctx->stream : nullptr;
  };
}

}  // namespace nxrt::host_api
