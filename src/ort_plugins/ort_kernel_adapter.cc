// Kernel-based onnxruntime plugins (API level 24): the plugin's kernel registry becomes nxrt's
// (one nxrt definition per ONNX schema version its range spans, type constraints mapped from
// type parameter names to input and output indices), nodes it claims one by one run the
// OrtKernelImpl its create function makes, and kernel infos read the node through nxrt's IR.
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>

#include "base/error.h"
#include "base/memory_info.h"
#include "base/value.h"
#include "graph/graph.h"
#include "ort_plugins/onnx_attribute_defaults.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_kernel_registry.h"
#include "ort_plugins/ort_wrapped_ep.h"
#include "plugins/host_objects.h"

namespace nxrt::ort {

// The create function of every nxrt definition made from a plugin's (defined below).
NxStatus* CreateOrtKernelThunk(void* state, const NxKernelInfo* nx_info, NxKernel** out);

}  // namespace nxrt::ort

// What a kernel's create function reads the node through. Valid for the create call; a copy
// (CopyKernelInfo) lives until ReleaseKernelInfo and still reads the node, which lives as long as
// the session.
struct OrtKernelInfo {
  nxrt::ort::WrappedEp* ep = nullptr;
  const nxrt::ort::OrtKernelEntry* entry = nullptr;
  const nxrt::Node* node = nullptr;
  const nxrt::Config* config = nullptr;
  const NxKernelInfo* nx = nullptr;      // null in a copy: the runtime's kernels need the original
  const NxMemoryInfo* memory = nullptr;  // the kernel's memory (null: host memory)
  // Constant inputs copied to the kernel's device memory, by input index: what
  // KernelInfoGetConstantInput_tensor and PrePackWeight hand a device kernel.
  mutable std::map<size_t, nxrt::ValuePtr> device_constants;
};

// Where PrePackWeight's StoreWeightData puts shared buffers (the host's cache, for one call).
struct OrtSharedPrePackedWeightCache {
  NxPrePackCache* nx = nullptr;
};

namespace nxrt::ort {
namespace {

const NxHostApi* Host() { return GetHostApi(); }

// An nxrt status as an onnxruntime one, prefixed with the call that failed.
OrtStatus* FromNx(NxStatus* s, const char* fn) {
  if (s == nullptr) return nullptr;
  NxStatusCode code = NX_FAIL;
  std::string message;
  TakeStatus(s, code, message);
  return NewOrtStatus(code == NX_INVALID_ARGUMENT ? ORT_INVALID_ARGUMENT : ORT_FAIL,
                      std::string(fn) + ": " + message);
}

// ---- Registry: the plugin's definitions as nxrt's ----------------------------------------------

bool IsCpuMemType(OrtMemType t) { return t == OrtMemTypeCPUInput || t == OrtMemTypeCPUOutput; }

// Formal parameters beyond this many values of a variadic one are not type-checked (no operator
// comes close; the list only has to cover the values a node has).
constexpr int32_t kVariadicLimit = 512;

// The input (or output) indices the schema binds to type parameter `name`; false when the
// parameter is not bound there at all. Heterogeneous variadic values are left out: nxrt binds a
// constraint's values to one type, and those may each have their own.
bool IndicesOf(const std::string& name, const std::vector<std::string>& params, bool variadic,
               bool heterogeneous, std::vector<int32_t>& out) {
  bool found = false;
  bool all_same = !params.empty();
  for (const std::string& p : params) all_same = all_same && p == name;
  if (all_same && variadic && !heterogeneous) {
    out.push_back(-1);
    return true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] != name) continue;
    found = true;
    const bool last = i + 1 == params.size();
    if (last && variadic) {
      if (heterogeneous) continue;
      for (int32_t k = static_cast<int32_t>(i); k < kVariadicLimit; ++k) out.push_back(k);
    } else {
      out.push_back(static_cast<int32_t>(i));
    }
  }
  return found;
}

// The input (or output) indices of the formal parameter called `name`: onnxruntime also lets a
// kernel constrain a parameter by its name, e.g. Squeeze-13's fixed-type "axes".
bool FormalIndicesOf(const std::string& name, const std::vector<std::string>& formal_names,
                     bool variadic, bool heterogeneous, std::vector<int32_t>& out) {
  std::vector<std::string> marked;
  for (const std::string& f : formal_names) marked.push_back(f == name ? name : "");
  return IndicesOf(name, marked, variadic, heterogeneous, out);
}

// Registers `entry` for the opsets [start, end] in which `schema` (null: unknown operator) is the
// definition in effect.
void AddDefinition(NxKernelRegistry* registry, OrtKernelEntry& entry, int32_t start, int32_t end,
                   const OnnxTypeParams* schema, const std::string& context) {
  const OrtKernelDef& d = entry.def;
  std::vector<std::vector<NxElementType>> allowed;
  std::vector<std::vector<int32_t>> inputs, outputs;
  std::vector<std::string> names;
  for (const auto& [name, types] : d.type_constraints) {
    if (schema == nullptr) continue;  // unknown operator: nothing to bind the names to
    std::vector<int32_t> in, out;
    bool bound =
        IndicesOf(name, schema->inputs, schema->variadic_input, schema->heterogeneous_input, in) |
        IndicesOf(name, schema->outputs, schema->variadic_output, schema->heterogeneous_output,
                  out);
    if (!bound) {
      bound = FormalIndicesOf(name, schema->input_names, schema->variadic_input,
                              schema->heterogeneous_input, in) |
              FormalIndicesOf(name, schema->output_names, schema->variadic_output,
                              schema->heterogeneous_output, out);
    }
    NXRT_CHECK(bound, NX_INVALID_PLUGIN,
               context + ": kernel definition of " + d.op_type + " (opset " +
                   std::to_string(schema->since_version) + ") constrains '" + name +
                   "', which is neither a type parameter nor a formal parameter of that operator");
    if (in.empty() && out.empty()) continue;  // only heterogeneous values
    std::vector<NxElementType> t;
    for (int e : types) t.push_back(static_cast<NxElementType>(e));
    allowed.push_back(std::move(t));
    inputs.push_back(std::move(in));
    outputs.push_back(std::move(out));
    names.push_back(name);
  }
  std::vector<NxTypeConstraint> constraints;
  for (size_t i = 0; i < allowed.size(); ++i) {
    NxTypeConstraint c{};
    c.name = names[i].c_str();
    c.allowed_types = allowed[i].data();
    c.num_allowed_types = allowed[i].size();
    c.input_indices = inputs[i].data();
    c.num_input_indices = inputs[i].size();
    c.output_indices = outputs[i].data();
    c.num_output_indices = outputs[i].size();
    constraints.push_back(c);
  }
  std::vector<int32_t> host_inputs, host_outputs;
  // Either CPU memory type puts a value on the host, as in onnxruntime: its kernels commonly mark
  // inputs with OrtMemTypeCPU, which is OrtMemTypeCPUOutput's value.
  for (const auto& [index, mem] : d.input_mem)
    if (IsCpuMemType(mem)) host_inputs.push_back(static_cast<int32_t>(index));
  for (const auto& [index, mem] : d.output_mem)
    if (IsCpuMemType(mem)) host_outputs.push_back(static_cast<int32_t>(index));
  std::vector<NxIoPair> aliases, inplace;
  for (auto [i, o] : d.aliases) aliases.push_back(NxIoPair{i, o});
  for (auto [i, o] : d.mutable_aliases) inplace.push_back(NxIoPair{i, o});

  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = d.op_type.c_str();
  def.domain = d.domain.c_str();
  def.since_version_start = start;
  def.since_version_end = end;
  def.type_constraints = constraints.data();
  def.num_type_constraints = constraints.size();
  def.create_state = &entry;
  def.host_inputs = host_inputs.data();
  def.num_host_inputs = host_inputs.size();
  def.host_outputs = host_outputs.data();
  def.num_host_outputs = host_outputs.size();
  def.aliases = aliases.data();
  def.num_aliases = aliases.size();
  def.may_inplace = inplace.data();
  def.num_may_inplace = inplace.size();
  def.value_kinds = NX_KIND_TENSOR;
  def.create = &CreateOrtKernelThunk;
  ThrowIfStatus(Host()->KernelRegistry_Add(registry, &def),
                context + ": kernel definition of " + d.op_type);
}

// One nxrt definition per schema version the plugin's range [start, end] spans.
void AddDefinitions(NxKernelRegistry* registry, OrtKernelEntry& entry, const std::string& context) {
  const OrtKernelDef& d = entry.def;
  const int32_t start = d.since_start;
  const int32_t end = d.since_end;
  const std::vector<OnnxTypeParams>& schemas = SchemaTypeParams(d.domain, d.op_type);
  if (schemas.empty()) {
    AddDefinition(registry, entry, start, end, nullptr, context);
    return;
  }
  for (size_t i = 0; i < schemas.size(); ++i) {
    const int32_t lo = std::max(start, i == 0 ? 1 : schemas[i].since_version);
    const int32_t hi =
        std::min(end, i + 1 < schemas.size() ? schemas[i + 1].since_version - 1 : INT32_MAX);
    if (lo <= hi) AddDefinition(registry, entry, lo, hi, &schemas[i], context);
  }
}

// ---- Kernels ----------------------------------------------------------------------------------

// The host's OrtAllocator over the NxAllocator PrePackWeight receives (it lives as long as the
// kernel, as onnxruntime promises).
struct PackAllocator : OrtAllocator {
  NxAllocator* nx = nullptr;
};
void* PackAlloc(OrtAllocator* self, size_t size) {
  NxAllocator* a = static_cast<PackAllocator*>(self)->nx;
  return a->Alloc(a, size);
}
void PackFree(OrtAllocator* self, void* block) {
  NxAllocator* a = static_cast<PackAllocator*>(self)->nx;
  a->Free(a, block);
}
const OrtMemoryInfo* PackInfo(const OrtAllocator* self) {
  const NxAllocator* a = static_cast<const PackAllocator*>(self)->nx;
  return OrtMemoryInfoFor(a->GetMemoryInfo ? a->GetMemoryInfo(a) : nullptr);
}
void* PackReserve(OrtAllocator* self, size_t size) { return PackAlloc(self, size); }

// Constant input `index` (host tensor `host`) where the kernel reads it, as onnxruntime places
// initializers: in the kernel's device memory unless the definition keeps that input on the host.
// A device copy is made once per kernel and lives as long as its info.
const NxValue* ConstantWhereKernelReads(const OrtKernelInfo& info, size_t index,
                                        const NxValue& host) {
  const NxMemoryInfo* memory = info.memory;
  if (memory == nullptr || HostAccessible(memory) || host.kind != NX_VALUE_TENSOR) return &host;
  const auto& input_mem = info.entry->def.input_mem;
  auto it = input_mem.find(index);
  if (it != input_mem.end() && IsCpuMemType(it->second)) return &host;
  static std::mutex mutex;  // rare (kernel creation) and short: one for all kernels
  std::lock_guard<std::mutex> lock(mutex);
  ValuePtr& copy = info.device_constants[index];
  if (!copy) copy = DeviceCopyOfWeight(*info.ep, host, memory);
  return copy.get();
}

// A plugin's OrtKernelImpl as an NxKernel.
struct PluginKernel : NxKernel {
  WrappedEp* ep = nullptr;
  OrtKernelImpl* impl = nullptr;
  const Node* node = nullptr;
  std::unique_ptr<PackAllocator> allocator;  // made at the first PrePackWeight
  // What the create function was given; it also keeps the device copies of constant inputs,
  // which work the plugin queued (or a pointer a kernel kept) may still read.
  std::unique_ptr<OrtKernelInfo> info;
  std::string Context(const std::string& what) const {
    return ep->Context(what + " of " + node->Describe());
  }
};

NxStatus* PluginCompute(NxKernel* self, NxKernelContext* ctx) {
  auto* k = static_cast<PluginKernel*>(self);
  return CatchAsStatus([&] {
    OrtKernelContext context{ctx, nullptr, k->ep->logger.get()};
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(k->ep->factory->calls.get());
      status = k->impl->Compute(k->impl, &context);
    }
    ThrowIfOrtStatus(status, k->Context("kernel compute"));
  });
}

void PluginRelease(NxKernel* self) {
  auto* k = static_cast<PluginKernel*>(self);
  {
    LibraryScope scope(k->ep->factory->calls.get());
    k->impl->Release(k->impl);
  }
  delete k;
}

NxStatus* PluginPrePackWeight(NxKernel* self, const NxValue* weight, size_t input_index,
                              NxAllocator* allocator, NxPrePackCache* cache, bool* packed) {
  auto* k = static_cast<PluginKernel*>(self);
  *packed = false;
  return CatchAsStatus([&] {
    if (k->impl->PrePackWeight == nullptr) return;
    if (k->allocator == nullptr) {
      k->allocator = std::make_unique<PackAllocator>();
      OrtAllocator& a = *k->allocator;
      a = OrtAllocator{NXRT_ORT_API_LEVEL, &PackAlloc, &PackFree, &PackInfo,
                       &PackReserve,       nullptr,    nullptr};
    }
    k->allocator->nx = allocator;
    // Like onnxruntime, hand the kernel its weight where it computes: a device kernel gets a
    // device copy (nxrt's session offers the host constant), a host input stays on the host.
    const NxValue* given = ConstantWhereKernelReads(*k->info, input_index, *weight);
    OrtSharedPrePackedWeightCache shared{cache};
    bool is_packed = false;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(k->ep->factory->calls.get());
      status = k->impl->PrePackWeight(k->impl, reinterpret_cast<const OrtValue*>(given),
                                      static_cast<int>(input_index), k->allocator.get(),
                                      cache ? &shared : nullptr, &is_packed);
    }
    ThrowIfOrtStatus(status, k->Context("PrePackWeight of input " + std::to_string(input_index)));
    *packed = is_packed;
  });
}

NxStatus* PluginUseSharedPrePackedWeight(NxKernel* self, size_t input_index,
                                         const void* const* buffers, const size_t* sizes,
                                         size_t count) {
  auto* k = static_cast<PluginKernel*>(self);
  return CatchAsStatus([&] {
    NXRT_CHECK(k->impl->SetSharedPrePackedWeight != nullptr, NX_INVALID_PLUGIN,
               k->Context("the kernel stored a shared packed weight but has no "
                          "SetSharedPrePackedWeight:"));
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(k->ep->factory->calls.get());
      status = k->impl->SetSharedPrePackedWeight(k->impl, buffers, sizes, count,
                                                 static_cast<int>(input_index));
    }
    ThrowIfOrtStatus(
        status, k->Context("SetSharedPrePackedWeight of input " + std::to_string(input_index)));
  });
}

// The runtime's own If / Loop / Scan kernels, handed to the plugin as OrtKernelImpls
// (OrtEpApi::CreateIfKernel ...). When the plugin's create function returns one, nxrt takes the
// NxKernel inside and the wrapper goes.
struct RuntimeKernel : OrtKernelImpl {
  NxKernel* nx = nullptr;
};
std::mutex& RuntimeMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::unordered_set<const OrtKernelImpl*>& RuntimeKernels() {
  static auto* s = new std::unordered_set<const OrtKernelImpl*>();
  return *s;
}
// The runtime kernel `impl` wraps (the wrapper is freed), or null when the plugin made `impl`.
NxKernel* TakeRuntimeKernel(OrtKernelImpl* impl) {
  {
    std::lock_guard<std::mutex> lock(RuntimeMutex());
    if (RuntimeKernels().erase(impl) == 0) return nullptr;
  }
  auto* rk = static_cast<RuntimeKernel*>(impl);
  NxKernel* nx = rk->nx;
  delete rk;
  return nx;
}
OrtStatus* RuntimeCompute(OrtKernelImpl* self, OrtKernelContext* context) {
  NxKernel* nx = static_cast<RuntimeKernel*>(self)->nx;
  return FromNx(nx->Compute(nx, context->nx), "runtime control-flow kernel");
}
void RuntimeRelease(OrtKernelImpl* self) {
  NxKernel* nx = TakeRuntimeKernel(self);
  if (nx != nullptr) nx->Release(nx);
}
OrtStatus* WrapRuntimeKernel(NxStatus* made, NxKernel* nx, const char* fn, OrtKernelImpl** out) {
  if (OrtStatus* s = FromNx(made, fn)) return s;
  return Guard(fn, [&]() -> OrtStatus* {
    auto rk = std::make_unique<RuntimeKernel>();
    rk->ort_version_supported = NXRT_ORT_API_LEVEL;
    rk->flags = 0;
    rk->Compute = &RuntimeCompute;
    rk->Release = &RuntimeRelease;
    rk->PrePackWeight = nullptr;
    rk->SetSharedPrePackedWeight = nullptr;
    rk->nx = nx;
    std::lock_guard<std::mutex> lock(RuntimeMutex());
    RuntimeKernels().insert(rk.get());
    *out = rk.release();
    return nullptr;
  });
}

// The plugin's Loop / Scan helpers as nxrt's (host memory: the host slices and concatenates
// itself when the helper cannot).
struct LoopHelper : NxLoopHelper {
  OrtLoopKernelHelper* ort = nullptr;
  WrappedEp* ep = nullptr;
};
NxStatus* LoopConcat(NxLoopHelper* self, const NxValue* const* parts, size_t count,
                     NxValue* output) {
  auto* h = static_cast<LoopHelper*>(self);
  return CatchAsStatus([&] {
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(h->ep->factory->calls.get());
      status =
          h->ort->ConcatOutput(h->ort, nullptr, reinterpret_cast<const OrtValue* const*>(parts),
                               count, output->data, TensorBytes(*output));
    }
    ThrowIfOrtStatus(status, h->ep->Context("OrtLoopKernelHelper::ConcatOutput"));
  });
}
void LoopRelease(NxLoopHelper* self) {
  auto* h = static_cast<LoopHelper*>(self);
  if (h->ort->Release != nullptr) {
    LibraryScope scope(h->ep->factory->calls.get());
    h->ort->Release(h->ort);
  }
  delete h;
}
struct ScanHelper : NxScanHelper {
  OrtScanKernelHelper* ort = nullptr;
  WrappedEp* ep = nullptr;
};
NxStatus* ScanTranspose(NxScanHelper* self, const size_t* perm, size_t rank, const NxValue* input,
                        NxValue* output) {
  auto* h = static_cast<ScanHelper*>(self);
  return CatchAsStatus([&] {
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(h->ep->factory->calls.get());
      status = h->ort->Transpose(h->ort, perm, rank, reinterpret_cast<const OrtValue*>(input),
                                 nullptr, reinterpret_cast<OrtValue*>(output));
    }
    ThrowIfOrtStatus(status, h->ep->Context("OrtScanKernelHelper::Transpose"));
  });
}
void ScanRelease(NxScanHelper* self) {
  auto* h = static_cast<ScanHelper*>(self);
  if (h->ort->Release != nullptr) {
    LibraryScope scope(h->ep->factory->calls.get());
    h->ort->Release(h->ort);
  }
  delete h;
}

OrtStatus* CreateIfKernel(const OrtKernelInfo* info, OrtKernelImpl** out) {
  if (!info || !out) return NullArgument("CreateIfKernel");
  if (info->nx == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "CreateIfKernel: needs the kernel info of the create call, not a copy");
  NxKernel* k = nullptr;
  NxStatus* s = Host()->CreateIfKernel(info->nx, &k);
  return WrapRuntimeKernel(s, k, "CreateIfKernel", out);
}
OrtStatus* CreateLoopKernel(const OrtKernelInfo* info, OrtLoopKernelHelper* helper,
                            OrtKernelImpl** out) {
  if (!info || !helper || !out || !helper->ConcatOutput) return NullArgument("CreateLoopKernel");
  if (info->nx == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "CreateLoopKernel: needs the kernel info of the create call, not a copy");
  return Guard("CreateLoopKernel", [&]() -> OrtStatus* {
    auto h = std::make_unique<LoopHelper>();
    NxLoopHelper& nx = *h;
    nx = NxLoopHelper{};
    nx.version = NXRT_EP_API_VERSION;
    nx.ConcatOutput = &LoopConcat;
    nx.Release = &LoopRelease;
    h->ort = helper;
    h->ep = info->ep;
    NxKernel* k = nullptr;
    // The runtime's kernel takes the helper and releases it with itself; on failure it stays
    // ours, and the plugin's helper is released as onnxruntime does (it took ownership).
    LoopHelper* raw = h.release();
    NxStatus* s = Host()->CreateLoopKernel(info->nx, raw, &k);
    if (s != nullptr) LoopRelease(raw);
    return WrapRuntimeKernel(s, k, "CreateLoopKernel", out);
  });
}
OrtStatus* CreateScanKernel(const OrtKernelInfo* info, OrtScanKernelHelper* helper,
                            OrtKernelImpl** out) {
  if (!info || !helper || !out || !helper->Transpose) return NullArgument("CreateScanKernel");
  if (info->nx == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "CreateScanKernel: needs the kernel info of the create call, not a copy");
  return Guard("CreateScanKernel", [&]() -> OrtStatus* {
    auto h = std::make_unique<ScanHelper>();
    NxScanHelper& nx = *h;
    nx = NxScanHelper{};
    nx.version = NXRT_EP_API_VERSION;
    nx.Transpose = &ScanTranspose;
    nx.Release = &ScanRelease;
    h->ort = helper;
    h->ep = info->ep;
    NxKernel* k = nullptr;
    ScanHelper* raw = h.release();  // as in CreateLoopKernel
    NxStatus* s = Host()->CreateScanKernel(info->nx, raw, &k);
    if (s != nullptr) ScanRelease(raw);
    return WrapRuntimeKernel(s, k, "CreateScanKernel", out);
  });
}
void ReleaseKernelImpl(OrtKernelImpl* impl) {
  // Only the runtime's kernels are the host's to release; a plugin releases its own.
  NxKernel* nx = impl ? TakeRuntimeKernel(impl) : nullptr;
  if (nx != nullptr) nx->Release(nx);
}

}  // namespace

// The plugin's create function, then its OrtKernelImpl as an NxKernel.
NxStatus* CreateOrtKernelThunk(void* state, const NxKernelInfo* nx_info, NxKernel** out) {
  auto* entry = static_cast<OrtKernelEntry*>(state);
  *out = nullptr;
  return CatchAsStatus([&] {
    WrappedEp* ep = entry->ep;
    // As in onnxruntime, the info outlives the create call: kernels keep it and read the node
    // from Compute. A plugin kernel owns it; a runtime kernel (If / Loop / Scan) needs none.
    auto info_owner = std::make_unique<OrtKernelInfo>();
    OrtKernelInfo& info = *info_owner;
    info.ep = ep;
    info.entry = entry;
    info.node = nx_info->node;
    info.config = nx_info->config;
    info.nx = nx_info;
    info.memory = nx_info->memory;
    const std::string what = "kernel of " + info.node->Describe();
    OrtKernelImpl* impl = nullptr;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      status = entry->create(entry->state, &info, &impl);
    }
    if (status != nullptr && impl != nullptr) {
      // A failing create owns nothing it returned; a runtime kernel is the host's to free.
      if (NxKernel* nx = TakeRuntimeKernel(impl)) nx->Release(nx);
    }
    ThrowIfOrtStatus(status, ep->Context("creating the " + what + " failed"));
    NXRT_CHECK(impl != nullptr, NX_INVALID_PLUGIN,
               ep->Context("the create function of the " + what + " returned no kernel"));
    if (NxKernel* nx = TakeRuntimeKernel(impl)) {
      *out = nx;
      return;
    }
    if (impl->Compute == nullptr || impl->Release == nullptr) {
      if (impl->Release != nullptr) {
        LibraryScope scope(ep->factory->calls.get());
        impl->Release(impl);
      }
      Throw(NX_INVALID_PLUGIN, ep->Context("the " + what + " has no Compute or no Release"));
    }
    auto k = std::make_unique<PluginKernel>();
    k->ep = ep;
    k->impl = impl;
    k->node = info.node;
    info.nx = nullptr;  // the runtime's create-time info does not outlive this call
    k->info = std::move(info_owner);
    NxKernel& nx = *k;
    nx = NxKernel{};
    nx.version = NXRT_EP_API_VERSION;
    nx.Compute = &PluginCompute;
    nx.Release = &PluginRelease;
    if (impl->PrePackWeight != nullptr) {
      nx.PrePackWeight = &PluginPrePackWeight;
      nx.UseSharedPrePackedWeight = &PluginUseSharedPrePackedWeight;
    }
    *out = k.release();
  });
}

void LoadKernelRegistry(WrappedEp& ep) {
  if (ep.ort->ort_version_supported < 24 || ep.ort->GetKernelRegistry == nullptr) return;
  const OrtKernelRegistry* registry = nullptr;
  OrtStatus* status = nullptr;
  {
    LibraryScope scope(ep.factory->calls.get());
    status = ep.ort->GetKernelRegistry(ep.ort, &registry);
  }
  ThrowIfOrtStatus(status, ep.Context("GetKernelRegistry failed"));
  if (registry == nullptr) return;
  NXRT_CHECK(IsHostKernelRegistry(registry), NX_INVALID_PLUGIN,
             ep.Context("GetKernelRegistry returned a registry that OrtEpApi::CreateKernelRegistry "
                        "did not make (or that was released)"));
  ThrowIfStatus(Host()->CreateKernelRegistry(&ep.kernels), ep.Context("kernel registry"));
  std::vector<std::string> foreign;
  for (const auto& e : registry->entries) {
    if (e->def.ep_name != ep.name) {
      foreign.push_back(e->def.op_type + " (for '" + e->def.ep_name + "')");
      continue;
    }
    auto entry = std::make_unique<OrtKernelEntry>();
    entry->ep = &ep;
    entry->def = e->def;
    entry->create = e->create;
    entry->state = e->state;
    AddDefinitions(ep.kernels, *entry, ep.Context("GetKernelRegistry"));
    ep.kernel_entries.push_back(std::move(entry));
  }
  if (!foreign.empty()) {
    std::string list;
    for (const std::string& f : foreign) list += (list.empty() ? "" : ", ") + f;
    ep.logger->logger.Log(
        NX_LOG_WARNING,
        ep.Context("registers kernels for another EP, which it cannot run: " + list));
  }
}

void ReleaseKernelRegistry(WrappedEp& ep) {
  if (ep.kernels != nullptr) Host()->ReleaseKernelRegistry(ep.kernels);
  ep.kernels = nullptr;
  ep.kernel_entries.clear();
}

namespace {

// ---- Claiming single nodes, looking kernels up ------------------------------------------------

// The IR node behind a node of the graph GetCapability received, or null.
const NxNode* NodeOf(const OrtEpGraphSupportInfo* info, const OrtNode* node) {
  if (!info->view->HasNode(node) || node->ir == nullptr) return nullptr;
  return reinterpret_cast<const NxNode*>(node->ir);
}

OrtStatus* AddSingleNode(OrtEpGraphSupportInfo* info, const OrtNode* node) {
  if (!info || !node) return NullArgument("EpGraphSupportInfo_AddSingleNode");
  const NxNode* nx = NodeOf(info, node);
  if (nx == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "EpGraphSupportInfo_AddSingleNode: the node is not a node of the graph "
                        "passed to GetCapability");
  if (info->ep->kernels == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "EpGraphSupportInfo_AddSingleNode: the EP has no kernel registry "
                        "(OrtEp::GetKernelRegistry) to run " +
                            node->ir->Describe() + " with");
  const char* reason = nullptr;
  if (!Host()->KernelRegistry_HasKernel(info->ep->kernels, nx, &reason))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "EpGraphSupportInfo_AddSingleNode: the EP's kernel registry has no kernel "
                        "for " +
                            node->ir->Describe() + (reason ? std::string(": ") + reason : ""));
  return FromNx(Host()->Capability_AddNode(info->capability, nx),
                "EpGraphSupportInfo_AddSingleNode");
}

OrtStatus* LookUpKernel(OrtEpGraphSupportInfo* info, const OrtNode* node,
                        const OrtKernelDef** out) {
  if (!info || !node || !out) return NullArgument("EpGraphSupportInfo_LookUpKernel");
  *out = nullptr;
  const NxNode* nx = NodeOf(info, node);
  if (nx == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "EpGraphSupportInfo_LookUpKernel: the node is not a node of the graph "
                        "passed to GetCapability");
  if (info->ep->kernels == nullptr) return nullptr;
  const NxKernelDef* def = Host()->KernelRegistry_FindKernel(info->ep->kernels, nx, nullptr);
  if (def != nullptr) *out = &static_cast<const OrtKernelEntry*>(def->create_state)->def;
  return nullptr;
}

// ---- Shared pre-packed weights ------------------------------------------------------------------

OrtStatus* StoreWeightData(OrtSharedPrePackedWeightCache* cache, void** buffers, size_t* sizes,
                           size_t count) {
  if (!cache || (count > 0 && (!buffers || !sizes)))
    return NullArgument("SharedPrePackedWeightCache_StoreWeightData");
  return FromNx(Host()->PrePackCache_Store(cache->nx, buffers, sizes, count),
                "SharedPrePackedWeightCache_StoreWeightData");
}

// ---- Kernel infos
// ---------------------------------------------------------------------------------

// Copies `s` out the way onnxruntime's string getters do: `out` null asks for the size.
OrtStatus* CopyString(const char* fn, const std::string& s, char* out, size_t* size) {
  if (!size) return NullArgument(fn);
  const size_t need = s.size() + 1;
  if (out == nullptr) {
    *size = need;
    return nullptr;
  }
  if (*size < need) {
    *size = need;
    return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": buffer too small");
  }
  std::memcpy(out, s.c_str(), need);
  *size = need;
  return nullptr;
}

// Same for arrays.
template <class T>
OrtStatus* CopyArray(const char* fn, const std::vector<T>& v, T* out, size_t* size) {
  if (!size) return NullArgument(fn);
  if (out == nullptr) {
    *size = v.size();
    return nullptr;
  }
  if (*size < v.size()) {
    *size = v.size();
    return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": buffer too small");
  }
  std::copy(v.begin(), v.end(), out);
  *size = v.size();
  return nullptr;
}

// The attribute `name` of the node with type `type`, or a status saying why not.
OrtStatus* FindAttr(const char* fn, const OrtKernelInfo* info, const char* name, int type,
                    const Attribute** out) {
  if (!info || !name) return NullArgument(fn);
  const Attribute* a = info->node->FindAttribute(name);
  if (a == nullptr) {  // as in onnxruntime, the schema's default stands in for a missing one
    const Node& n = *info->node;
    // A channels-last node (com.ms.internal.nhwc) has its ONNX operator's attributes.
    const std::string& domain = n.domain == "com.ms.internal.nhwc" ? std::string() : n.domain;
    a = SchemaDefaultAttribute(domain, n.op_type, n.opset, name);
  }
  if (a == nullptr)
    return NewOrtStatus(ORT_FAIL, std::string(fn) + ": " + info->node->Describe() +
                                      " has no attribute '" + name + "'");
  if (a->type != type)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": attribute '" + name + "' of " +
                                                  info->node->Describe() + " has another type");
  *out = a;
  return nullptr;
}

OrtStatus* GetAttributeFloat(const OrtKernelInfo* info, const char* name, float* out) {
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttribute_float", info, name, NX_ATTR_FLOAT, &a))
    return s;
  if (!out) return NullArgument("KernelInfoGetAttribute_float");
  *out = a->f;
  return nullptr;
}
OrtStatus* GetAttributeInt64(const OrtKernelInfo* info, const char* name, int64_t* out) {
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttribute_int64", info, name, NX_ATTR_INT, &a))
    return s;
  if (!out) return NullArgument("KernelInfoGetAttribute_int64");
  *out = a->i;
  return nullptr;
}
OrtStatus* GetAttributeString(const OrtKernelInfo* info, const char* name, char* out,
                              size_t* size) {
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttribute_string", info, name, NX_ATTR_STRING, &a))
    return s;
  return CopyString("KernelInfoGetAttribute_string", a->s, out, size);
}
OrtStatus* GetAttributeArrayFloat(const OrtKernelInfo* info, const char* name, float* out,
                                  size_t* size) {
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttributeArray_float", info, name, NX_ATTR_FLOATS, &a))
    return s;
  return CopyArray("KernelInfoGetAttributeArray_float", a->floats, out, size);
}
OrtStatus* GetAttributeArrayInt64(const OrtKernelInfo* info, const char* name, int64_t* out,
                                  size_t* size) {
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttributeArray_int64", info, name, NX_ATTR_INTS, &a))
    return s;
  return CopyArray("KernelInfoGetAttributeArray_int64", a->ints, out, size);
}
OrtStatus* GetAttributeTensor(const OrtKernelInfo* info, const char* name, OrtAllocator* allocator,
                              OrtValue** out) {
  (void)allocator;  // the value shares the model's data, read-only, as OpAttr values do
  const Attribute* a = nullptr;
  if (OrtStatus* s = FindAttr("KernelInfoGetAttribute_tensor", info, name, NX_ATTR_TENSOR, &a))
    return s;
  if (!out || a->tensor == nullptr) return NullArgument("KernelInfoGetAttribute_tensor");
  return Guard("KernelInfoGetAttribute_tensor", [&]() -> OrtStatus* {
    *out = AdoptPluginValue(new Value(*a->tensor));
    return nullptr;
  });
}

OrtStatus* GetInputCount(const OrtKernelInfo* info, size_t* out) {
  if (!info || !out) return NullArgument("KernelInfo_GetInputCount");
  *out = info->node->inputs.size();
  return nullptr;
}
OrtStatus* GetOutputCount(const OrtKernelInfo* info, size_t* out) {
  if (!info || !out) return NullArgument("KernelInfo_GetOutputCount");
  *out = info->node->outputs.size();
  return nullptr;
}
// Value `index` of the node's inputs (or outputs); -1 for an omitted one.
OrtStatus* ValueIndex(const char* fn, const OrtKernelInfo* info, size_t index, bool output,
                      int* value) {
  if (!info) return NullArgument(fn);
  const std::vector<int>& list = output ? info->node->outputs : info->node->inputs;
  if (index >= list.size())
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        std::string(fn) + ": index " + std::to_string(index) + " out of range");
  *value = list[index];
  return nullptr;
}
OrtStatus* GetName(const char* fn, const OrtKernelInfo* info, size_t index, bool output, char* out,
                   size_t* size) {
  int v = -1;
  if (OrtStatus* s = ValueIndex(fn, info, index, output, &v)) return s;
  return CopyString(fn, v >= 0 ? info->node->owner->value(v).name : std::string(), out, size);
}
OrtStatus* GetInputName(const OrtKernelInfo* info, size_t index, char* out, size_t* size) {
  return GetName("KernelInfo_GetInputName", info, index, false, out, size);
}
OrtStatus* GetOutputName(const OrtKernelInfo* info, size_t index, char* out, size_t* size) {
  return GetName("KernelInfo_GetOutputName", info, index, true, out, size);
}
OrtStatus* GetTypeInfo(const char* fn, const OrtKernelInfo* info, size_t index, bool output,
                       OrtTypeInfo** out) {
  if (!out) return NullArgument(fn);
  int v = -1;
  if (OrtStatus* s = ValueIndex(fn, info, index, output, &v)) return s;
  if (v < 0)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        std::string(fn) + ": " + info->node->Describe() + " omits that value");
  return Guard(fn, [&]() -> OrtStatus* {
    *out = new OrtTypeInfo(MakeTypeInfo(info->node->owner->value(v).type));
    return nullptr;
  });
}
OrtStatus* GetInputTypeInfo(const OrtKernelInfo* info, size_t index, OrtTypeInfo** out) {
  return GetTypeInfo("KernelInfo_GetInputTypeInfo", info, index, false, out);
}
OrtStatus* GetOutputTypeInfo(const OrtKernelInfo* info, size_t index, OrtTypeInfo** out) {
  return GetTypeInfo("KernelInfo_GetOutputTypeInfo", info, index, true, out);
}
OrtStatus* GetNodeName(const OrtKernelInfo* info, char* out, size_t* size) {
  if (!info) return NullArgument("KernelInfo_GetNodeName");
  return CopyString("KernelInfo_GetNodeName", info->node->name, out, size);
}
OrtStatus* GetLogger(const OrtKernelInfo* info, const OrtLogger** out) {
  if (!info || !out) return NullArgument("KernelInfo_GetLogger");
  *out = info->ep->logger.get();
  return nullptr;
}
OrtStatus* GetConstantInput(const OrtKernelInfo* info, size_t index, int* is_constant,
                            const OrtValue** out) {
  if (!is_constant || !out) return NullArgument("KernelInfoGetConstantInput_tensor");
  int v = -1;
  if (OrtStatus* s = ValueIndex("KernelInfoGetConstantInput_tensor", info, index, false, &v))
    return s;
  const Value* init = v >= 0 ? info->node->owner->value(v).initializer.get() : nullptr;
  *is_constant = init != nullptr;
  *out = nullptr;
  if (init == nullptr) return nullptr;
  return Guard("KernelInfoGetConstantInput_tensor", [&]() -> OrtStatus* {
    *out = reinterpret_cast<const OrtValue*>(ConstantWhereKernelReads(*info, index, *init));
    return nullptr;
  });
}
// What KernelInfoGetAllocator hands out: the caller owns it and frees it with
// OrtApi::ReleaseAllocator (as in onnxruntime), so each call makes a handle that forwards to the
// allocator behind it (the host's CPU allocator, or the plugin's of the kernel's device memory).
struct AllocatorHandle : OrtAllocator {
  OrtAllocator* target = nullptr;
};
OrtAllocator* Target(OrtAllocator* self) { return static_cast<AllocatorHandle*>(self)->target; }
void* HandleAlloc(OrtAllocator* self, size_t size) {
  return Target(self)->Alloc(Target(self), size);
}
void HandleFree(OrtAllocator* self, void* block) { Target(self)->Free(Target(self), block); }
const OrtMemoryInfo* HandleInfo(const OrtAllocator* self) {
  const OrtAllocator* t = static_cast<const AllocatorHandle*>(self)->target;
  return t->Info(t);
}
void* HandleReserve(OrtAllocator* self, size_t size) {
  OrtAllocator* t = Target(self);
  return t->version >= 18 && t->Reserve != nullptr ? t->Reserve(t, size) : t->Alloc(t, size);
}
LiveSet<AllocatorHandle>& LiveHandles() {
  static auto* live = new LiveSet<AllocatorHandle>();
  return *live;
}
// Frees a handle KernelInfoGetAllocator made; any other allocator (the host's own, or one a
// plugin made) is not the caller's to free here and is left alone.
void ReleaseAllocator(OrtAllocator* allocator) {
  auto* handle = static_cast<AllocatorHandle*>(allocator);
  if (allocator == nullptr || !LiveHandles().Remove(handle)) return;
  delete handle;
}

OrtStatus* GetAllocator(const OrtKernelInfo* info, OrtMemType mem_type, OrtAllocator** out) {
  if (!info || !out) return NullArgument("KernelInfoGetAllocator");
  *out = nullptr;
  return Guard("KernelInfoGetAllocator", [&]() -> OrtStatus* {
    auto handle = std::make_unique<AllocatorHandle>();
    OrtAllocator& a = *handle;
    a = OrtAllocator{NXRT_ORT_API_LEVEL, &HandleAlloc, &HandleFree, &HandleInfo,
                     &HandleReserve,     nullptr,      nullptr};
    const bool host =
        mem_type != OrtMemTypeDefault || info->memory == nullptr || HostAccessible(info->memory);
    // The kernel's device memory: an allocator of the plugin's own, one per EP and memory.
    handle->target = host ? CpuAllocator() : DeviceAllocator(*info->ep, info->memory);
    LiveHandles().Add(handle.get());
    *out = handle.release();
    return nullptr;
  });
}
OrtStatus* GetConfigEntries(const OrtKernelInfo* info, OrtKeyValuePairs** out) {
  if (!info || !out) return NullArgument("KernelInfo_GetConfigEntries");
  return Guard("KernelInfo_GetConfigEntries", [&]() -> OrtStatus* {
    auto kv = std::make_unique<OrtKeyValuePairs>();
    const Config& config = info->config ? *info->config : info->ep->options.config;
    for (const auto& [k, v] : config.entries) kv->Set(k, v);
    *out = kv.release();
    return nullptr;
  });
}
OrtStatus* GetOperatorDomain(const OrtKernelInfo* info, char* out, size_t* size) {
  if (!info) return NullArgument("KernelInfo_GetOperatorDomain");
  return CopyString("KernelInfo_GetOperatorDomain", info->node->domain, out, size);
}
OrtStatus* GetOperatorType(const OrtKernelInfo* info, char* out, size_t* size) {
  if (!info) return NullArgument("KernelInfo_GetOperatorType");
  return CopyString("KernelInfo_GetOperatorType", info->node->op_type, out, size);
}
OrtStatus* GetOperatorSinceVersion(const OrtKernelInfo* info, int* out) {
  if (!info || !out) return NullArgument("KernelInfo_GetOperatorSinceVersion");
  *out = Host()->Node_GetSinceVersion(reinterpret_cast<const NxNode*>(info->node));
  if (*out < 0) *out = info->node->opset;  // an operator the schema table does not know
  return nullptr;
}
OrtStatus* GetEp(const OrtKernelInfo* info, const OrtEp** out) {
  if (!info || !out) return NullArgument("KernelInfo_GetEp");
  *out = info->ep->ort;
  return nullptr;
}
OrtStatus* CopyKernelInfo(const OrtKernelInfo* info, OrtKernelInfo** out) {
  if (!info || !out) return NullArgument("CopyKernelInfo");
  return Guard("CopyKernelInfo", [&]() -> OrtStatus* {
    auto copy = std::make_unique<OrtKernelInfo>(*info);
    copy->nx = nullptr;
    *out = copy.release();
    return nullptr;
  });
}
void ReleaseKernelInfo(OrtKernelInfo* info) { delete info; }

// ---- Kernel contexts (what OrtKernelImpl::Compute uses besides inputs and outputs) -------------

OrtStatus* ContextGetAllocator(const OrtKernelContext* c, const OrtMemoryInfo* memory,
                               OrtAllocator** out) {
  if (!c || !memory || !out) return NullArgument("KernelContext_GetAllocator");
  if (memory->device.device_type != OrtMemoryInfoDeviceType_CPU)
    return NewOrtStatus(ORT_NOT_IMPLEMENTED,
                        "KernelContext_GetAllocator: only host memory has an allocator in nxrt's "
                        "ORT plugin host");
  *out = CpuAllocator();
  return nullptr;
}
OrtStatus* ContextGetScratchBuffer(const OrtKernelContext* c, const OrtMemoryInfo* memory,
                                   size_t bytes, void** out) {
  if (!c || !memory || !out) return NullArgument("KernelContext_GetScratchBuffer");
  // Valid until Compute returns; the host frees it.
  return FromNx(Host()->KernelContext_GetScratch(c->nx, bytes, true, out),
                "KernelContext_GetScratchBuffer");
}
struct ParallelForCall {
  void (*fn)(void*, size_t);
  void* user;
};
void RunParallelChunk(void* state, size_t begin, size_t end) {
  auto* call = static_cast<ParallelForCall*>(state);
  for (size_t i = begin; i < end; ++i) call->fn(call->user, i);
}
OrtStatus* ContextParallelFor(const OrtKernelContext* c, void (*fn)(void*, size_t), size_t total,
                              size_t num_batch, void* user) {
  if (!c || !fn) return NullArgument("KernelContext_ParallelFor");
  if (total == 0) return nullptr;
  ParallelForCall call{fn, user};
  const size_t grain =
      num_batch == 0 ? 1 : std::max<size_t>(1, (total + num_batch - 1) / num_batch);
  return FromNx(Host()->KernelContext_ParallelFor(c->nx, total, grain, &RunParallelChunk, &call),
                "KernelContext_ParallelFor");
}

}  // namespace

void InstallKernelApi(OrtApi& api, OrtEpApi& ep_api) {
  InstallKernelRegistryApi(ep_api);
  api.KernelInfoGetAttribute_float = Slot(&GetAttributeFloat);
  api.KernelInfoGetAttribute_int64 = Slot(&GetAttributeInt64);
  api.KernelInfoGetAttribute_string = Slot(&GetAttributeString);
  api.KernelInfoGetAttributeArray_float = Slot(&GetAttributeArrayFloat);
  api.KernelInfoGetAttributeArray_int64 = Slot(&GetAttributeArrayInt64);
  api.KernelInfoGetAttribute_tensor = Slot(&GetAttributeTensor);
  api.CopyKernelInfo = Slot(&CopyKernelInfo);
  api.ReleaseKernelInfo = Slot(&ReleaseKernelInfo);
  api.KernelInfo_GetInputCount = Slot(&GetInputCount);
  api.KernelInfo_GetOutputCount = Slot(&GetOutputCount);
  api.KernelInfo_GetInputName = Slot(&GetInputName);
  api.KernelInfo_GetOutputName = Slot(&GetOutputName);
  api.KernelInfo_GetInputTypeInfo = Slot(&GetInputTypeInfo);
  api.KernelInfo_GetOutputTypeInfo = Slot(&GetOutputTypeInfo);
  api.KernelInfo_GetNodeName = Slot(&GetNodeName);
  api.KernelInfo_GetLogger = Slot(&GetLogger);
  api.KernelInfoGetConstantInput_tensor = Slot(&GetConstantInput);
  api.KernelInfoGetAllocator = Slot(&GetAllocator);
  api.KernelInfo_GetConfigEntries = Slot(&GetConfigEntries);
  api.KernelInfo_GetOperatorDomain = Slot(&GetOperatorDomain);
  api.KernelInfo_GetOperatorType = Slot(&GetOperatorType);
  api.KernelInfo_GetOperatorSinceVersion = Slot(&GetOperatorSinceVersion);
  api.KernelContext_GetAllocator = Slot(&ContextGetAllocator);
  api.ReleaseAllocator = Slot(&ReleaseAllocator);
  api.KernelContext_GetScratchBuffer = Slot(&ContextGetScratchBuffer);
  api.KernelContext_ParallelFor = Slot(&ContextParallelFor);
  ep_api.EpGraphSupportInfo_AddSingleNode = Slot(&AddSingleNode);
  ep_api.EpGraphSupportInfo_LookUpKernel = Slot(&LookUpKernel);
  ep_api.SharedPrePackedWeightCache_StoreWeightData = Slot(&StoreWeightData);
  ep_api.KernelInfo_GetEp = Slot(&GetEp);
  ep_api.CreateIfKernel = Slot(&CreateIfKernel);
  ep_api.CreateLoopKernel = Slot(&CreateLoopKernel);
  ep_api.CreateScanKernel = Slot(&CreateScanKernel);
  ep_api.ReleaseKernelImpl = Slot(&ReleaseKernelImpl);
}

}  // namespace nxrt::ort
