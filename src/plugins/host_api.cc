// The host side of the plugin ABI: every NxHostApi function, translating handles to the IR and
// value structs. No function lets an exception escape; errors become NxStatus.
#include <algorithm>
#include <cstring>
#include <functional>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "controlflow/control_flow.h"
#include "graph/op_since_version.h"
#include "plugins/host_objects.h"
#include "plugins/kernel_registry.h"
#include "session/prepack_store.h"
#include "session/profiler.h"
#include "session/thread_pool.h"

namespace nxrt {
namespace {

const Graph* G(const NxGraph* g) { return reinterpret_cast<const Graph*>(g); }
const Node* N(const NxNode* n) { return reinterpret_cast<const Node*>(n); }
const ValueDef* V(const NxValueInfo* v) { return reinterpret_cast<const ValueDef*>(v); }
const Attribute* A(const NxAttribute* a) { return reinterpret_cast<const Attribute*>(a); }
const NxValueInfo* VI(const Graph* g, int index) {
  return index < 0 ? nullptr : reinterpret_cast<const NxValueInfo*>(&g->value(index));
}

// ---- Status ----
NxStatus* CreateStatus(NxStatusCode code, const char* message) {
  return NewStatus(code, message ? message : "");
}
// A plugin may only pass statuses the host gave it; anything else reads as a generic failure.
NxStatusCode StatusGetCode(const NxStatus* s) {
  if (s == nullptr) return NX_OK;
  return IsHostStatus(s) ? s->code : NX_FAIL;
}
const char* StatusGetMessage(const NxStatus* s) {
  if (s == nullptr) return "";
  return IsHostStatus(s) ? s->message.c_str() : "(not a status the host created)";
}
void ReleaseStatus(NxStatus* s) { FreeStatus(s); }

// ---- Logging and config ----
void Log(const NxLogger* logger, NxLogLevel level, const char* message) {
  if (logger && message) logger->logger.Log(level, message);
}
const char* ConfigGet(const NxConfig* config, const char* key) {
  if (!config || !key) return nullptr;
  const std::string* v = config->Find(key);
  return v ? v->c_str() : nullptr;
}

// ---- Graph view ----
size_t GraphGetNodeCount(const NxGraph* g) { return G(g)->nodes.size(); }
const NxNode* GraphGetNode(const NxGraph* g, size_t i) {
  return i < G(g)->nodes.size() ? reinterpret_cast<const NxNode*>(&G(g)->nodes[i]) : nullptr;
}
size_t GraphGetInputCount(const NxGraph* g) { return G(g)->inputs.size(); }
const NxValueInfo* GraphGetInput(const NxGraph* g, size_t i) {
  return i < G(g)->inputs.size() ? VI(G(g), G(g)->inputs[i]) : nullptr;
}
size_t GraphGetOutputCount(const NxGraph* g) { return G(g)->outputs.size(); }
const NxValueInfo* GraphGetOutput(const NxGraph* g, size_t i) {
  return i < G(g)->outputs.size() ? VI(G(g), G(g)->outputs[i]) : nullptr;
}
int32_t GraphGetOpsetVersion(const NxGraph* g, const char* domain) {
  std::string d = domain ? domain : "";
  if (d == "ai.onnx") d.clear();
  auto it = G(g)->opsets.find(d);
  return it == G(g)->opsets.end() ? -1 : it->second;
}

const char* NodeGetName(const NxNode* n) { return N(n)->name.c_str(); }
const char* NodeGetOpType(const NxNode* n) { return N(n)->op_type.c_str(); }
const char* NodeGetDomain(const NxNode* n) { return N(n)->domain.c_str(); }
int32_t NodeGetOpsetVersion(const NxNode* n) { return N(n)->opset; }
int32_t NodeGetSinceVersion(const NxNode* n) {
  return OpSinceVersion(N(n)->domain, N(n)->op_type, N(n)->opset);
}
size_t NodeGetInputCount(const NxNode* n) { return N(n)->inputs.size(); }
const NxValueInfo* NodeGetInput(const NxNode* n, size_t i) {
  return i < N(n)->inputs.size() ? VI(N(n)->owner, N(n)->inputs[i]) : nullptr;
}
size_t NodeGetOutputCount(const NxNode* n) { return N(n)->outputs.size(); }
const NxValueInfo* NodeGetOutput(const NxNode* n, size_t i) {
  return i < N(n)->outputs.size() ? VI(N(n)->owner, N(n)->outputs[i]) : nullptr;
}
size_t NodeGetAttributeCount(const NxNode* n) { return N(n)->attributes.size(); }
const NxAttribute* NodeGetAttributeAt(const NxNode* n, size_t i) {
  return i < N(n)->attributes.size() ? reinterpret_cast<const NxAttribute*>(&N(n)->attributes[i])
                                     : nullptr;
}
const NxAttribute* NodeGetAttribute(const NxNode* n, const char* name) {
  if (!name) return nullptr;
  return reinterpret_cast<const NxAttribute*>(N(n)->FindAttribute(name));
}

const char* ValueInfoGetName(const NxValueInfo* v) { return V(v)->name.c_str(); }
NxValueKind ValueInfoGetKind(const NxValueInfo* v) { return V(v)->type.kind; }
NxElementType ValueInfoGetElementType(const NxValueInfo* v) { return V(v)->type.elem_type; }
bool ValueInfoGetShape(const NxValueInfo* v, const int64_t** dims, size_t* rank) {
  const TypeInfo& t = V(v)->type;
  if (!t.has_shape) return false;
  if (dims) *dims = t.dims.data();
  if (rank) *rank = t.dims.size();
  return true;
}
const NxValue* ValueInfoGetConstant(const NxValueInfo* v) { return V(v)->initializer.get(); }

const char* AttributeGetName(const NxAttribute* a) { return A(a)->name.c_str(); }
NxAttributeType AttributeGetType(const NxAttribute* a) {
  return static_cast<NxAttributeType>(A(a)->type);
}
int64_t AttributeGetInt(const NxAttribute* a) { return A(a)->i; }
float AttributeGetFloat(const NxAttribute* a) { return A(a)->f; }
const char* AttributeGetString(const NxAttribute* a, size_t* size) {
  if (size) *size = A(a)->s.size();
  return A(a)->s.data();
}
const int64_t* AttributeGetInts(const NxAttribute* a, size_t* count) {
  if (count) *count = A(a)->ints.size();
  return A(a)->ints.data();
}
const float* AttributeGetFloats(const NxAttribute* a, size_t* count) {
  if (count) *count = A(a)->floats.size();
  return A(a)->floats.data();
}
size_t AttributeGetStringCount(const NxAttribute* a) { return A(a)->strings.size(); }
const char* AttributeGetStringAt(const NxAttribute* a, size_t i, size_t* size) {
  if (i >= A(a)->strings.size()) {
    if (size) *size = 0;
    return nullptr;
  }
  if (size) *size = A(a)->strings[i].size();
  return A(a)->strings[i].data();
}
const NxValue* AttributeGetTensor(const NxAttribute* a) { return A(a)->tensor.get(); }
const NxGraph* AttributeGetGraph(const NxAttribute* a) {
  return reinterpret_cast<const NxGraph*>(A(a)->graph.get());
}

size_t AttributeGetTensorCount(const NxAttribute* a) { return a ? A(a)->tensors.size() : 0; }
const NxValue* AttributeGetTensorAt(const NxAttribute* a, size_t i) {
  return a && i < A(a)->tensors.size() ? A(a)->tensors[i].get() : nullptr;
}
size_t AttributeGetGraphCount(const NxAttribute* a) { return a ? A(a)->graphs.size() : 0; }
const NxGraph* AttributeGetGraphAt(const NxAttribute* a, size_t i) {
  return a && i < A(a)->graphs.size() ? reinterpret_cast<const NxGraph*>(A(a)->graphs[i].get())
                                      : nullptr;
}

// ---- Capability ----
// Whether `node` is one of `graph`'s nodes, decided from the pointer alone: a plugin may pass a
// stale node of another (released) graph, which must not be read.
bool IsNodeOf(const nxrt::Graph* graph, const NxNode* node) {
  if (graph == nullptr || node == nullptr || graph->nodes.empty()) return false;
  const auto base = reinterpret_cast<uintptr_t>(graph->nodes.data());
  const auto p = reinterpret_cast<uintptr_t>(node);
  const uintptr_t bytes = graph->nodes.size() * sizeof(nxrt::Node);
  return p >= base && p - base < bytes && (p - base) % sizeof(nxrt::Node) == 0;
}

bool CapabilityIsNodeTaken(const NxCapability* cap, const NxNode* node) {
  if (!cap || !node || !cap->node_ep || !IsNodeOf(cap->graph, node)) return false;
  const size_t i = static_cast<size_t>(N(node)->index);
  return i < cap->node_ep->size() && (*cap->node_ep)[i] >= 0;
}

NxStatus* CapabilityAddNode(NxCapability* cap, const NxNode* node) {
  if (!cap || !node) return CreateStatus(NX_INVALID_ARGUMENT, "Capability_AddNode: null argument");
  if (!IsNodeOf(cap->graph, node)) {
    return CreateStatus(NX_INVALID_ARGUMENT, "Capability_AddNode: the node is not in this graph");
  }
  for (const auto& group : cap->groups) {
    if (std::find(group.nodes.begin(), group.nodes.end(), N(node)) != group.nodes.end())
      return CreateStatus(NX_INVALID_ARGUMENT, ("Capability_AddNode: " + N(node)->Describe() +
                                                " is already claimed in a fused group")
                                                   .c_str());
  }
  cap->claimed.push_back(N(node));
  return nullptr;
}

// ---- A device per kernel node (version 12) ----
NxStatus* CapabilityAddNodeWithOptions(NxCapability* cap, const NxNode* node,
                                       const NxNodeOptions* options) {
  const NxHardwareDevice* device =
      options != nullptr && options->version >= 12 ? options->hardware_device : nullptr;
  if (cap != nullptr && device != nullptr &&
      std::find(cap->devices.begin(), cap->devices.end(), device) == cap->devices.end()) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddNodeWithOptions: the hardware device is not one of the "
                        "EP's devices in this session");
  }
  if (NxStatus* status = CapabilityAddNode(cap, node)) return status;
  if (device != nullptr) cap->claimed_device[N(node)] = device;
  return nullptr;
}
const NxHardwareDevice* KernelInfoGetHardwareDevice(const NxKernelInfo* info) {
  return info ? info->device : nullptr;
}

// ---- Compiled groups (version 6) ----
NxStatus* CapabilityAddFusedGroup(NxCapability* cap, const NxNode* const* nodes, size_t count,
                                  const NxFusionOptions* options) {
  if (!cap || !nodes || count == 0)
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddFusedGroup: null argument or empty group");
  if (!cap->can_compile)
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "Capability_AddFusedGroup: the EP has no CompileGroup (NxEp version >= 6)");
  return CatchAsStatus([&] {
    NxCapability::Group group;
    for (size_t i = 0; i < count; ++i) {
      const nxrt::Node* node = N(nodes[i]);
      NXRT_CHECK(node != nullptr, NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: node " + std::to_string(i) + " is null");
      NXRT_CHECK(IsNodeOf(cap->graph, nodes[i]), NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: node " + std::to_string(i) + " is not in this graph");
      const bool in_group =
          std::find(group.nodes.begin(), group.nodes.end(), node) != group.nodes.end();
      bool taken = std::find(cap->claimed.begin(), cap->claimed.end(), node) != cap->claimed.end();
      for (const auto& other : cap->groups)
        taken =
            taken || std::find(other.nodes.begin(), other.nodes.end(), node) != other.nodes.end();
      NXRT_CHECK(!in_group && !taken, NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: " + node->Describe() + " is already claimed");
      group.nodes.push_back(node);
    }
    if (options != nullptr && options->version >= 6 && options->hardware_device != nullptr) {
      NXRT_CHECK(std::find(cap->devices.begin(), cap->devices.end(), options->hardware_device) !=
                     cap->devices.end(),
                 NX_INVALID_ARGUMENT,
                 "Capability_AddFusedGroup: the declared hardware device is not one of the EP's "
                 "devices");
      group.device = options->hardware_device;
    }
    cap->groups.push_back(std::move(group));
  });
}

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

NxEp* KernelInfoGetEp(const NxKernelInfo* info) { return info ? info->ep : nullptr; }
const NxMemoryInfo* KernelInfoGetMemoryInfo(const NxKernelInfo* info) {
  return info && info->memory ? info->memory : HostMemory();
}
const NxMemoryInfo* ValueGetMemoryInfo(const NxValue* v) { return v ? MemoryOf(*v) : HostMemory(); }
bool MemoryInfoAreEqual(const NxMemoryInfo* a, const NxMemoryInfo* b) {
  return a != nullptr && b != nullptr && SameMemory(a, b);
}
NxStatus* PrePackCacheStore(NxPrePackCache* cache, void* const* buffers, const size_t* sizes,
                            size_t count) {
  if (!cache) return CreateStatus(NX_INVALID_ARGUMENT, "PrePackCache_Store: cache is null");
  if (count == 0 || !buffers || !sizes) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "PrePackCache_Store: needs at least one buffer with its size");
  }
  return CatchAsStatus([&] {
    std::vector<void*> b(buffers, buffers + count);
    std::vector<size_t> n(sizes, sizes + count);
    cache->FreeBuffers();  // a second call replaces the first: the host owned those
    cache->buffers = std::move(b);
    cache->sizes = std::move(n);
    cache->stored = true;
  });
}

// ---- Devices (version 3) ----
NxDeviceType HardwareDeviceGetType(const NxHardwareDevice* d) {
  return d ? d->type : NX_DEVICE_OTHER;
}
const char* HardwareDeviceGetVendor(const NxHardwareDevice* d) {
  return d ? d->vendor.c_str() : "";
}
uint32_t HardwareDeviceGetVendorId(const NxHardwareDevice* d) { return d ? d->vendor_id : 0; }
uint32_t HardwareDeviceGetDeviceId(const NxHardwareDevice* d) { return d ? d->device_id : 0; }
size_t HardwareDeviceGetMetadataCount(const NxHardwareDevice* d) {
  return d ? d->metadata.size() : 0;
}
bool HardwareDeviceGetMetadata(const NxHardwareDevice* d, size_t index, const char** key,
                               const char** value) {
  if (d == nullptr || index >= d->metadata.size()) return false;
  if (key) *key = d->metadata[index].first.c_str();
  if (value) *value = d->metadata[index].second.c_str();
  return true;
}
const char* HardwareDeviceGetMetadataValue(const NxHardwareDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  const std::string* v = d->Find(key);
  return v ? v->c_str() : nullptr;
}

// Copies `n` pairs, refusing NULL strings, repeated keys and keys the host sets itself.
NxStatus* CopyKeyValues(const char* what, const NxKeyValue* kv, size_t n,
                        std::initializer_list<const char*> reserved, KeyValues& out) {
  if (n > 0 && kv == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": pairs are null").c_str());
  for (size_t i = 0; i < n; ++i) {
    if (kv[i].key == nullptr || kv[i].key[0] == '\0' || kv[i].value == nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT, (std::string(what) + ": entry " + std::to_string(i) +
                                                " has a null or empty key or a null value")
                                                   .c_str());
    }
    for (const char* r : reserved) {
      if (std::strcmp(kv[i].key, r) == 0) {
        return CreateStatus(
            NX_INVALID_ARGUMENT,
            (std::string(what) + ": '" + r + "' is set by the host, not by the EP").c_str());
      }
    }
    if (FindKey(out, kv[i].key) != nullptr) {
      return CreateStatus(NX_INVALID_ARGUMENT,
                          (std::string(what) + ": key '" + kv[i].key + "' given twice").c_str());
    }
    out.emplace_back(kv[i].key, kv[i].value);
  }
  return nullptr;
}

NxStatus* VirtualDeviceListAdd(NxVirtualDeviceList* list, NxDeviceType type, const char* vendor,
                               uint32_t vendor_id, uint32_t device_id, const NxKeyValue* metadata,
                               size_t num_metadata) {
  if (list == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "VirtualDeviceList_Add: list is null");
  if (RawEnum(type) < NX_DEVICE_CPU || RawEnum(type) > NX_DEVICE_OTHER)
    return CreateStatus(NX_INVALID_ARGUMENT, "VirtualDeviceList_Add: unknown device type");
  return CatchAsStatus([&] {
    HardwareDevice d;
    d.type = type;
    d.vendor = vendor ? vendor : "";
    d.vendor_id = vendor_id;
    d.device_id = device_id;
    ThrowIfStatus(CopyKeyValues("VirtualDeviceList_Add", metadata, num_metadata,
                                {"is_virtual", "discovered_by"}, d.metadata),
                  "");
    list->added.push_back(std::move(d));
  });
}

NxStatus* EpDeviceListAdd(NxEpDeviceList* list, const NxHardwareDevice* device,
                          const NxKeyValue* ep_metadata, size_t num_metadata,
                          const NxKeyValue* default_options, size_t num_options) {
  if (list == nullptr || list->offered == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "EpDeviceList_Add: list is null");
  bool offered = false;
  for (const NxHardwareDevice* d : *list->offered) offered = offered || d == device;
  if (device == nullptr || !offered) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "EpDeviceList_Add: the device is not one of those offered");
  }
  for (const auto& e : list->added) {
    if (e.device == device)
      return CreateStatus(NX_INVALID_ARGUMENT, "EpDeviceList_Add: the device was added twice");
  }
  return CatchAsStatus([&] {
    NxEpDeviceList::Entry e;
    e.device = device;
    ThrowIfStatus(CopyKeyValues("EpDeviceList_Add metadata", ep_metadata, num_metadata,
                                {"version", "library_path"}, e.metadata),
                  "");
    ThrowIfStatus(
        CopyKeyValues("EpDeviceList_Add options", default_options, num_options, {}, e.options), "");
    list->added.push_back(std::move(e));
  });
}

bool AttributeGetTypeInfo(const NxAttribute* attr, NxValueKind* kind, NxElementType* elem) {
  if (attr == nullptr || A(attr)->type != NX_ATTR_TYPE_PROTO) return false;
  if (kind) *kind = A(attr)->type_info.kind;
  if (elem) *elem = A(attr)->type_info.elem_type;
  return true;
}

// ---- Sequences and optionals (version 4) ----
size_t ValueGetSequenceLength(const NxValue* v) {
  return v && v->kind == NX_VALUE_SEQUENCE ? v->elements.size() : 0;
}
const NxValue* ValueGetSequenceElement(const NxValue* v, size_t i) {
  if (!v || v->kind != NX_VALUE_SEQUENCE || i >= v->elements.size()) return nullptr;
  return v->elements[i].get();
}
bool ValueOptionalHasValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL && v->contained != nullptr;
}
const NxValue* ValueGetOptionalValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL ? v->contained.get() : nullptr;
}

// An independent copy (for values the run does not own: graph inputs, initializers).
ValuePtr DeepCopy(const Value& v) {
  if (v.kind == NX_VALUE_SEQUENCE || v.kind == NX_VALUE_OPTIONAL) {
    auto out = std::make_shared<Value>();
    out->kind = v.kind;
    out->type = v.type;
    out->sequence_type = v.sequence_type;
    for (const ValuePtr& e : v.elements) out->elements.push_back(DeepCopy(*e));
    if (v.contained) out->contained = DeepCopy(*v.contained);
    return out;
  }
  NXRT_CHECK(IsHostReadable(v), NX_NOT_IMPLEMENTED,
             "sequences and optionals of tensors in device memory are not supported yet");
  ValuePtr fresh = MakeTensor(v.type, v.dims);
  if (v.type == NX_TYPE_STRING)
    fresh->strings = v.strings;
  else if (TensorBytes(v) > 0)
    std::memcpy(fresh->data, v.data, TensorBytes(v));
  return fresh;
}

// Whether a tensor's data belongs to it (not borrowed from the caller): such a tensor may be
// shared past the run.
bool OwnsData(const Value& v) {
  return v.kind != NX_VALUE_TENSOR || v.type == NX_TYPE_STRING || v.storage != nullptr ||
         v.count == 0;
}

// Maps every value a kernel may hand to SetOutput* to a shareable handle (null: copy it). Built
// once per Compute call, so building a long sequence stays linear.
void IndexShareable(const ValuePtr& v, bool shareable, NxKernelContext& c) {
  if (!v) return;
  c.share_index.emplace(v.get(), shareable && OwnsData(*v) ? v : nullptr);
  for (const ValuePtr& e : v->elements) IndexShareable(e, true, c);
  IndexShareable(v->contained, true, c);
}

void BuildShareIndex(NxKernelContext& c) {
  if (c.share_index_built) return;
  c.share_index_built = true;
  for (const ValuePtr& t : c.created) c.share_index.emplace(t.get(), t);
  for (size_t i = 0; i < c.num_inputs; ++i) {
    const Value* in = c.inputs[i];
    if (in == nullptr) continue;
    if (c.input_owners != nullptr && c.input_owners[i].get() == in) {
      IndexShareable(c.input_owners[i], true, c);
      continue;
    }
    // Not the run's (a graph input or a constant): the value itself is copied, what it holds
    // through shared handles is shared when it owns its data.
    c.share_index.emplace(in, nullptr);
    for (const ValuePtr& e : in->elements) IndexShareable(e, true, c);
    IndexShareable(in->contained, true, c);
  }
}

// `v` as a shared handle (the run's own value, one inside an input, a tensor the kernel created)
// or a copy. Refuses pointers the kernel could not have been given.
ValuePtr ShareOrCopy(NxKernelContext& c, const NxValue* v, const char* what) {
  NXRT_CHECK(v != nullptr, NX_INVALID_ARGUMENT, std::string(what) + ": a value is null");
  BuildShareIndex(c);
  auto it = c.share_index.find(v);
  NXRT_CHECK(it != c.share_index.end(), NX_INVALID_ARGUMENT,
             std::string(what) +
                 ": the value is neither an input (or inside one) nor a tensor from "
                 "KernelContext_CreateTensor");
  return it->second ? it->second : DeepCopy(*v);
}

void CheckOutputSlot(const NxKernelContext& c, size_t index, const char* what) {
  const Node& node = *c.node;
  NXRT_CHECK(index < c.num_outputs, NX_INVALID_ARGUMENT,
             node.Describe() + ": " + what + " for output " + std::to_string(index) +
                 " but the node has " + std::to_string(c.num_outputs) + " outputs");
  NXRT_CHECK(!c.outputs[index], NX_RUNTIME_ERROR,
             node.Describe() + ": output " + std::to_string(index) + " set twice");
}

NxStatus* ContextCreateTensor(NxKernelContext* c, NxElementType type, const int64_t* dims,
                              size_t rank, bool host, NxValue** tensor) {
  if (!c || !tensor) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_CreateTensor: null");
  return CatchAsStatus([&] {
    NXRT_CHECK(rank == 0 || dims != nullptr, NX_INVALID_ARGUMENT,
               "KernelContext_CreateTensor: dims is null");
    NXRT_CHECK(type != NX_TYPE_UNDEFINED, NX_INVALID_ARGUMENT,
               "KernelContext_CreateTensor: undefined element type");
    std::vector<int64_t> shape(dims, dims + rank);
    for (int64_t d : shape)
      NXRT_CHECK(d >= 0, NX_INVALID_ARGUMENT,
                 "KernelContext_CreateTensor: negative dimension in " + ShapeString(shape));
    BufferPool* pool = host ? c->host_pool : c->pool;
    ValuePtr t = pool != nullptr ? MakeTensorFromPool(type, shape, *pool) : MakeTensor(type, shape);
    c->created.push_back(t);
    if (c->share_index_built) c->share_index.emplace(t.get(), t);
    *tensor = t.get();
  });
}

NxStatus* ContextSetOutputSequence(NxKernelContext* c, size_t index, NxElementType element_type,
                                   const NxValue* const* elements, size_t count) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputSequence: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputSequence");
    NXRT_CHECK(count == 0 || elements != nullptr, NX_INVALID_ARGUMENT,
               "KernelContext_SetOutputSequence: elements are null");
    auto seq = std::make_shared<Value>();
    seq->kind = NX_VALUE_SEQUENCE;
    seq->sequence_type = element_type;
    for (size_t i = 0; i < count; ++i) {
      ValuePtr e = ShareOrCopy(*c, elements[i], "KernelContext_SetOutputSequence");
      NXRT_CHECK(e->kind == NX_VALUE_TENSOR, NX_INVALID_ARGUMENT,
                 c->node->Describe() + ": sequence elements must be tensors");
      if (seq->sequence_type == NX_TYPE_UNDEFINED) seq->sequence_type = e->type;
      NXRT_CHECK(e->type == seq->sequence_type, NX_RUNTIME_ERROR,
                 c->node->Describe() + ": sequence element " + std::to_string(i) + " is " +
                     ElementTypeName(e->type) + ", the sequence holds " +
                     ElementTypeName(seq->sequence_type));
      seq->elements.push_back(std::move(e));
    }
    c->outputs[index] = std::move(seq);
  });
}

NxStatus* ContextSetOutputOptional(NxKernelContext* c, size_t index, const NxValue* value) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputOptional: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputOptional");
    auto opt = std::make_shared<Value>();
    opt->kind = NX_VALUE_OPTIONAL;
    if (value != nullptr) {
      opt->contained = ShareOrCopy(*c, value, "KernelContext_SetOutputOptional");
      NXRT_CHECK(opt->contained->kind != NX_VALUE_OPTIONAL, NX_INVALID_ARGUMENT,
                 c->node->Describe() + ": an optional cannot hold an optional");
      opt->type = opt->contained->kind == NX_VALUE_SEQUENCE ? opt->contained->sequence_type
                                                            : opt->contained->type;
    } else if (c->node->outputs[index] >= 0) {
      opt->type = c->node->owner->value(c->node->outputs[index]).type.elem_type;
    }
    c->outputs[index] = std::move(opt);
  });
}

NxStatus* ContextSetOutputValue(NxKernelContext* c, size_t index, const NxValue* value) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputValue: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputValue");
    c->outputs[index] = ShareOrCopy(*c, value, "KernelContext_SetOutputValue");
  });
}

const NxHardwareDevice* EpDeviceGetHardwareDevice(const NxEpDevice* d) {
  return d ? d->device : nullptr;
}
const char* EpDeviceGetMetadataValue(const NxEpDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  const std::string* v = FindKey(d->metadata, key);
  return v ? v->c_str() : nullptr;
}

// ---- Values ----
// A NULL value (a plugin's bug, e.g. an optional input it did not check) reads as an empty
// tensor, as in the public C API, instead of crashing the host.
NxValueKind ValueGetKind(const NxValue* v) { return v ? v->kind : NX_VALUE_TENSOR; }
NxElementType ValueGetElementType(const NxValue* v) {
  if (v == nullptr) return NX_TYPE_UNDEFINED;
  return v->kind == NX_VALUE_SEQUENCE ? v->sequence_type : v->type;
}
void ValueGetShape(const NxValue* v, const int64_t** dims, size_t* rank) {
  if (dims) *dims = v ? v->dims.data() : nullptr;
  if (rank) *rank = v ? v->dims.size() : 0;
}
size_t ValueGetElementCount(const NxValue* v) { return v ? v->count : 0; }
void* ValueGetData(const NxValue* v) {
  if (v == nullptr || v->type == NX_TYPE_STRING) return nullptr;
  return v->data;
}
const char* ValueGetString(const NxValue* v, size_t i, size_t* size) {
  if (v == nullptr || v->type != NX_TYPE_STRING || i >= v->strings.size()) {
    if (size) *size = 0;
    return nullptr;
  }
  if (size) *size = v->strings[i].size();
  return v->strings[i].data();
}
NxStatus* ValueSetString(NxValue* v, size_t i, const char* data, size_t size) {
  if (v == nullptr) return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: value is null");
  if (v->type != NX_TYPE_STRING)
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: not a string tensor");
  if (i >= v->strings.size())
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: index out of range");
  if (size > 0 && data == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: data is null");
  return CatchAsStatus([&] { v->strings[i].assign(data ? data : "", size); });
}

// ---- Profiling (version 6) ----
uint64_t ProfilerNowNs() { return Profiler::NowNs(); }
bool ContextShouldStop(const NxKernelContext* ctx) {
  return ctx != nullptr && ctx->run_control != nullptr && ctx->run_control->ShouldStop();
}

bool ContextIsProfiling(const NxKernelContext* ctx) {
  return ctx != nullptr && ctx->profile != nullptr && ctx->profile->profiler->active();
}
void ContextAddProfileEvent(NxKernelContext* ctx, const char* name, uint64_t begin_ns,
                            uint64_t end_ns, const NxKeyValue* args, size_t num_args) {
  if (!ContextIsProfiling(ctx) || name == nullptr) return;
  try {
    const ProfiledRun& run = *ctx->profile;
    ProfileEvent event{name, "ep", begin_ns, end_ns, Profiler::ThreadId(), {}};
    for (size_t i = 0; args != nullptr && i < num_args; ++i) {
      if (args[i].key != nullptr && args[i].value != nullptr)
        event.args.emplace_back(args[i].key, args[i].value);
    }
    if (ctx->node != nullptr) event.args.emplace_back("node", ctx->node->name);
    if (run.ep != nullptr) event.args.emplace_back("ep", *run.ep);
    if (run.run_known) event.args.emplace_back("run", std::to_string(run.run));
    run.profiler->Add(std::move(event));
  } catch (...) {  // out of memory: the event is lost, the kernel goes on
  }
}

NxHostApi MakeHostApi() {
  NxHostApi api{};
  api.version = NXRT_EP_API_VERSION;
  api.CreateStatus = CreateStatus;
  api.Status_GetCode = StatusGetCode;
  api.Status_GetMessage = StatusGetMessage;
  api.ReleaseStatus = ReleaseStatus;
  api.Log = Log;
  api.Config_Get = ConfigGet;
  api.Graph_GetNodeCount = GraphGetNodeCount;
  api.Graph_GetNode = GraphGetNode;
  api.Graph_GetInputCount = GraphGetInputCount;
  api.Graph_GetInput = GraphGetInput;
  api.Graph_GetOutputCount = GraphGetOutputCount;
  api.Graph_GetOutput = GraphGetOutput;
  api.Graph_GetOpsetVersion = GraphGetOpsetVersion;
  api.Node_GetName = NodeGetName;
  api.Node_GetOpType = NodeGetOpType;
  api.Node_GetDomain = NodeGetDomain;
  api.Node_GetOpsetVersion = NodeGetOpsetVersion;
  api.Node_GetSinceVersion = NodeGetSinceVersion;
  // Version 2
  api.Attribute_GetTensorCount = AttributeGetTensorCount;
  api.Attribute_GetTensorAt = AttributeGetTensorAt;
  api.Attribute_GetGraphCount = AttributeGetGraphCount;
  api.Attribute_GetGraphAt = AttributeGetGraphAt;
  api.KernelRegistry_FindKernel = KernelRegistryFindKernel;
  api.KernelInfo_GetEp = KernelInfoGetEp;
  api.KernelInfo_GetMemoryInfo = KernelInfoGetMemoryInfo;
  api.KernelContext_GetScratch = ContextGetScratch;
  api.KernelContext_ParallelFor = ContextParallelFor;
  api.Value_GetMemoryInfo = ValueGetMemoryInfo;
  api.MemoryInfo_AreEqual = MemoryInfoAreEqual;
  api.PrePackCache_Store = PrePackCacheStore;
  // Version 3
  api.HardwareDevice_GetType = HardwareDeviceGetType;
  api.HardwareDevice_GetVendor = HardwareDeviceGetVendor;
  api.HardwareDevice_GetVendorId = HardwareDeviceGetVendorId;
  api.HardwareDevice_GetDeviceId = HardwareDeviceGetDeviceId;
  api.HardwareDevice_GetMetadataCount = HardwareDeviceGetMetadataCount;
  api.HardwareDevice_GetMetadata = HardwareDeviceGetMetadata;
  api.HardwareDevice_GetMetadataValue = HardwareDeviceGetMetadataValue;
  api.VirtualDeviceList_Add = VirtualDeviceListAdd;
  api.EpDeviceList_Add = EpDeviceListAdd;
  api.EpDevice_GetHardwareDevice = EpDeviceGetHardwareDevice;
  api.EpDevice_GetMetadataValue = EpDeviceGetMetadataValue;
  // Version 4
  api.Value_GetSequenceLength = ValueGetSequenceLength;
  api.Value_GetSequenceElement = ValueGetSequenceElement;
  api.Value_OptionalHasValue = ValueOptionalHasValue;
  api.Value_GetOptionalValue = ValueGetOptionalValue;
  api.KernelContext_CreateTensor = ContextCreateTensor;
  api.KernelContext_SetOutputSequence = ContextSetOutputSequence;
  api.KernelContext_SetOutputOptional = ContextSetOutputOptional;
  api.KernelContext_SetOutputValue = ContextSetOutputValue;
  api.CreateIfKernel = CreateIfKernel;
  api.CreateLoopKernel = CreateLoopKernel;
  api.CreateScanKernel = CreateScanKernel;
  api.Attribute_GetTypeInfo = AttributeGetTypeInfo;
  api.CreateSequenceMapKernel = CreateSequenceMapKernel;
  api.Node_GetInputCount = NodeGetInputCount;
  api.Node_GetInput = NodeGetInput;
  api.Node_GetOutputCount = NodeGetOutputCount;
  api.Node_GetOutput = NodeGetOutput;
  api.Node_GetAttributeCount = NodeGetAttributeCount;
  api.Node_GetAttributeAt = NodeGetAttributeAt;
  api.Node_GetAttribute = NodeGetAttribute;
  api.ValueInfo_GetName = ValueInfoGetName;
  api.ValueInfo_GetKind = ValueInfoGetKind;
  api.ValueInfo_GetElementType = ValueInfoGetElementType;
  api.ValueInfo_GetShape = ValueInfoGetShape;
  api.ValueInfo_GetConstant = ValueInfoGetConstant;
  api.Attribute_GetName = AttributeGetName;
  api.Attribute_GetType = AttributeGetType;
  api.Attribute_GetInt = AttributeGetInt;
  api.Attribute_GetFloat = AttributeGetFloat;
  api.Attribute_GetString = AttributeGetString;
  api.Attribute_GetInts = AttributeGetInts;
  api.Attribute_GetFloats = AttributeGetFloats;
  api.Attribute_GetStringCount = AttributeGetStringCount;
  api.Attribute_GetStringAt = AttributeGetStringAt;
  api.Attribute_GetTensor = AttributeGetTensor;
  api.Attribute_GetGraph = AttributeGetGraph;
  api.Capability_AddNode = CapabilityAddNode;
  api.Capability_AddNodeWithOptions = CapabilityAddNodeWithOptions;
  api.KernelInfo_GetHardwareDevice = KernelInfoGetHardwareDevice;
  api.KernelContext_GetStream = [](const NxKernelContext* ctx) -> NxStream* {
    return ctx != nullptr ? ctx->stream : nullptr;
  };
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
  api.Value_GetKind = ValueGetKind;
  api.Value_GetElementType = ValueGetElementType;
  api.Value_GetShape = ValueGetShape;
  api.Value_GetElementCount = ValueGetElementCount;
  api.Value_GetData = ValueGetData;
  api.Value_GetString = ValueGetString;
  api.Value_SetString = ValueSetString;
  // version 6: profiling
  api.Profiler_NowNs = ProfilerNowNs;
  api.KernelContext_IsProfiling = ContextIsProfiling;
  api.KernelContext_AddProfileEvent = ContextAddProfileEvent;
  // version 6: compiled groups
  api.Capability_AddFusedGroup = CapabilityAddFusedGroup;
  // version 7: stopping runs
  api.KernelContext_ShouldStop = ContextShouldStop;
  // version 8: placement
  api.Capability_IsNodeTaken = CapabilityIsNodeTaken;
  return api;
}

}  // namespace

const NxHostApi* GetHostApi() {
  static const NxHostApi api = MakeHostApi();
  return &api;
}

}  // namespace nxrt
