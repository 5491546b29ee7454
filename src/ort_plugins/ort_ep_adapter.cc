#include "ort_plugins/ort_ep_adapter.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "graph/graph.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_host_objects.h"
#include "ort_plugins/ort_model_editor.h"
#include "ort_plugins/ort_wrapped_ep.h"
#include "ort_plugins/ort_wrapped_factory.h"
#include "plugins/host_objects.h"

namespace nxrt::ort {

// A group the plugin compiled: its compute info and state, and how its inputs map to the
// group's.
struct CompiledKernel : NxKernel {
  WrappedEp* ep = nullptr;
  OrtNodeComputeInfo* info = nullptr;
  void* state = nullptr;
  bool has_state = false;
  // Fused-node input k is input input_map[k] of the group (initializers dropped when the
  // plugin asked for that).
  std::vector<size_t> input_map;
  // The group's view and fused node, alive as long as the kernel (plugins may keep pointers).
  std::unique_ptr<OrtGraph> view;
  std::unique_ptr<OrtNode> fused;
  // The EPContext node Compile returned, while the session writes a compiled model.
  std::optional<ExportedContext> context;
};

namespace {

const Graph* G(const NxGraph* g) { return reinterpret_cast<const Graph*>(g); }

// A key naming a group by its nodes (outputs are unique in a graph; a view copies their names).
std::string GroupKey(const std::vector<const Node*>& nodes, const Graph& g) {
  std::vector<std::string> names;
  for (const Node* n : nodes) {
    std::string first;
    for (int v : n->outputs)
      if (v >= 0) {
        first = g.value(v).name;
        break;
      }
    names.push_back(n->op_type + ":" + first);
  }
  std::sort(names.begin(), names.end());
  std::string key;
  for (const std::string& n : names) key += n + "|";
  return key;
}

const char* WrappedEpName(const NxEp* self) {
  return static_cast<const WrappedEp*>(self)->name.c_str();
}

NxStatus* WrappedGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  auto* ep = static_cast<WrappedEp*>(self);
  return CatchAsStatus([&] {
    const Graph& g = *G(graph);
    std::unique_ptr<OrtGraph> view =
        MakeGraphView(g, g.source == "<buffer>" ? std::string() : g.source);
    OrtEpGraphSupportInfo support{ep, view.get(), capability};
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      status = ep->ort->GetCapability(ep->ort, view.get(), &support);
    }
    ThrowIfOrtStatus(status, ep->Context("GetCapability failed"));
  });
}

NxStatus* WrappedCreateStream(NxEp* self, const NxHardwareDevice* device, NxStream** stream) {
  return CreatePluginStream(*static_cast<WrappedEp*>(self), device, stream);
}

// Run boundaries: the plugin's OnRunStart / OnRunEnd (level 23), around a lock for a plugin
// that cannot run two runs at once.
NxStatus* WrappedOnRunStart(NxEp* self) {
  auto* ep = static_cast<WrappedEp*>(self);
  if (ep->serialize_runs) ep->run_lock.lock();
  NxStatus* failed = CatchAsStatus([&] {
    if (ep->ort->OnRunStart == nullptr) return;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      status = ep->ort->OnRunStart(ep->ort, &ep->run_options);
    }
    ThrowIfOrtStatus(status, ep->Context("OnRunStart failed"));
  });
  if (failed != nullptr && ep->serialize_runs) ep->run_lock.unlock();  // no OnRunEnd follows
  return failed;
}

NxStatus* WrappedOnRunEnd(NxEp* self, bool failed) {
  auto* ep = static_cast<WrappedEp*>(self);
  NxStatus* result = CatchAsStatus([&] {
    if (ep->ort->OnRunEnd == nullptr) return;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      // The host has waited for the EP's streams already; the plugin synchronises its own.
      status = ep->ort->OnRunEnd(ep->ort, &ep->run_options, /*sync_stream=*/true);
    }
    if (failed) {  // the run's own error is the one that counts
      FreeOrtStatus(status);
      return;
    }
    ThrowIfOrtStatus(status, ep->Context("OnRunEnd failed"));
  });
  if (ep->serialize_runs) ep->run_lock.unlock();
  return result;
}

// Channels-last as onnxruntime decides it: the plugin prefers NHWC (GetPreferredDataLayout) and
// does not decline the op (ShouldConvertDataLayoutForOp: 0 declines, -1 leaves it to the host).
NxStatus* WrappedPrefersChannelsLast(NxEp* self, const char* domain, const char* op_type,
                                     bool* yes) {
  auto* ep = static_cast<WrappedEp*>(self);
  *yes = false;
  return CatchAsStatus([&] {
    if (ep->ort->GetPreferredDataLayout == nullptr) return;
    OrtEpDataLayout layout = OrtEpDataLayout_NCHW;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      status = ep->ort->GetPreferredDataLayout(ep->ort, &layout);
    }
    ThrowIfOrtStatus(status, ep->Context("GetPreferredDataLayout failed"));
    if (layout != OrtEpDataLayout_NHWC) return;
    int convert = -1;
    if (ep->ort->ShouldConvertDataLayoutForOp != nullptr) {
      LibraryScope scope(ep->factory->calls.get());
      status = ep->ort->ShouldConvertDataLayoutForOp(ep->ort, domain, op_type, OrtEpDataLayout_NHWC,
                                                     &convert);
    }
    ThrowIfOrtStatus(status, ep->Context("ShouldConvertDataLayoutForOp failed"));
    *yes = convert != 0;
  });
}

NxStatus* WrappedGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = static_cast<WrappedEp*>(self)->kernels;
  return nullptr;
}

void ReleaseCompiledKernel(NxKernel* self) {
  auto* k = static_cast<CompiledKernel*>(self);
  if (k->has_state && k->info->ReleaseState != nullptr) {
    LibraryScope scope(k->ep->factory->calls.get());
    k->info->ReleaseState(k->info, k->state);
  }
  delete k;
}

NxStatus* ComputeCompiledKernel(NxKernel* self, NxKernelContext* ctx) {
  auto* k = static_cast<CompiledKernel*>(self);
  return CatchAsStatus([&] {
    OrtKernelContext context{ctx, &k->input_map, k->ep->logger.get()};
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(k->ep->factory->calls.get());
      status = k->info->Compute(k->info, k->state, &context);
    }
    ThrowIfOrtStatus(status, k->ep->Context("compute of '" + k->fused->name + "' failed"));
  });
}

NxStatus* WrappedCompileGroup(NxEp* self, const NxGraph* group, const char* fused_name,
                              NxKernel** kernel) {
  auto* ep = static_cast<WrappedEp*>(self);
  *kernel = nullptr;
  return CatchAsStatus([&] {
    const Graph& g = *G(group);
    auto k = std::make_unique<CompiledKernel>();
    k->ep = ep;
    k->view = MakeGraphView(g, g.source == "<buffer>" ? std::string() : g.source);
    bool drop = false;
    {
      std::vector<const Node*> nodes;
      for (const Node& n : g.nodes) nodes.push_back(&n);
      std::lock_guard<std::mutex> lock(ep->mutex);
      auto it = ep->drop_initializers.find(GroupKey(nodes, g));
      drop = it != ep->drop_initializers.end() && it->second;
    }
    std::vector<const OrtValueInfo*> inputs, outputs;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const int v = g.inputs[i];
      if (drop && g.value(v).initializer != nullptr) continue;
      inputs.push_back(k->view->Value(v));
      k->input_map.push_back(i);
    }
    for (int v : g.outputs) outputs.push_back(k->view->Value(v));
    // An input whose rank nxrt does not know reads as a scalar to a plugin that does not ask
    // TensorTypeAndShape_HasShape, and it would compile the group for the wrong shape (OpenVINO's
    // plugin does, inside Silero VAD's If branches): such groups stay on the next EP.
    for (const OrtValueInfo* in : inputs) {
      if (in->type.type == ONNX_TYPE_TENSOR && !in->type.tensor.has_shape) {
        Throw(NX_NOT_IMPLEMENTED, "input '" + in->name +
                                      "' has no static shape, which onnxruntime plugins cannot be "
                                      "told apart from a scalar");
      }
    }
    k->fused = MakeFusedNode(*k->view, fused_name, ep->name, inputs, outputs);

    const OrtGraph* graphs[1] = {k->view.get()};
    const OrtNode* fused_nodes[1] = {k->fused.get()};
    OrtNodeComputeInfo* infos[1] = {nullptr};
    OrtNode* context_nodes[1] = {nullptr};
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(ep->factory->calls.get());
      status = ep->ort->Compile(ep->ort, graphs, fused_nodes, 1, infos, context_nodes);
    }
    if (infos[0] != nullptr) {
      std::lock_guard<std::mutex> lock(ep->mutex);
      ep->compute_infos.push_back(infos[0]);  // the plugin's to release, at EP release
    }
    // The host owns an EPContext node once Compile returns it, whatever the status says.
    std::unique_ptr<OrtNode> context_node = TakePluginNode(context_nodes[0]);
    ThrowIfOrtStatus(status, ep->Context("Compile failed"));
    NXRT_CHECK(context_nodes[0] == nullptr || context_node != nullptr, NX_INVALID_PLUGIN,
               ep->Context("Compile returned an EPContext node that OrtModelEditorApi::CreateNode "
                           "did not make (or that was released)"));
    if (context_node != nullptr && ep->writes_context) {
      ExportedContext exported;
      exported.node = std::make_shared<onnx::NodeProto>(ToNodeProto(*context_node));
      if (ep->ort->GetCompiledModelCompatibilityInfo != nullptr) {
        LibraryScope scope(ep->factory->calls.get());
        const char* info = ep->ort->GetCompiledModelCompatibilityInfo(ep->ort, k->view.get());
        if (info != nullptr) exported.compatibility = info;
      }
      k->context = std::move(exported);
    }
    OrtNodeComputeInfo* info = infos[0];
    NXRT_CHECK(info != nullptr, NX_INVALID_PLUGIN, ep->Context("Compile returned no compute info"));
    NXRT_CHECK(info->CreateState && info->Compute && info->ReleaseState, NX_INVALID_PLUGIN,
               ep->Context("Compile returned a compute info with empty functions"));
    k->info = info;
    OrtNodeComputeContext context{fused_name};
    {
      LibraryScope scope(ep->factory->calls.get());
      status = info->CreateState(info, &context, &k->state);
    }
    ThrowIfOrtStatus(status, ep->Context("CreateState failed"));
    k->has_state = true;
    k->version = NXRT_EP_API_VERSION;
    k->Compute = &ComputeCompiledKernel;
    k->Release = &ReleaseCompiledKernel;
    k->PrePackWeight = nullptr;
    k->UseSharedPrePackedWeight = nullptr;
    *kernel = k.release();
  });
}

// ---- Session options and run options ----------------------------------------------------------

OrtStatus* GetSessionConfigEntry(const OrtSessionOptions* o, const char* key, char* value,
                                 size_t* size) {
  if (!o || !key || !size) return NullArgument("GetSessionConfigEntry");
  const std::string* v = o->config.Find(key);
  if (v == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        std::string("GetSessionConfigEntry: no entry '") + key + "'");
  const size_t need = v->size() + 1;
  if (value == nullptr) {
    *size = need;
    return nullptr;
  }
  if (*size < need) {
    *size = need;
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetSessionConfigEntry: buffer too small");
  }
  std::memcpy(value, v->c_str(), need);
  *size = need;
  return nullptr;
}
OrtStatus* HasSessionConfigEntry(const OrtSessionOptions* o, const char* key, int* out) {
  if (!o || !key || !out) return NullArgument("HasSessionConfigEntry");
  *out = o->config.Find(key) != nullptr;
  return nullptr;
}
OrtStatus* GetSessionOptionsConfigEntries(const OrtSessionOptions* o, OrtKeyValuePairs** out) {
  if (!o || !out) return NullArgument("GetSessionOptionsConfigEntries");
  auto kv = std::make_unique<OrtKeyValuePairs>();
  for (const auto& [k, v] : o->config.entries) kv->Set(k, v);
  *out = kv.release();
  return nullptr;
}
const char* GetRunConfigEntry(const OrtRunOptions* o, const char* key) {
  if (!o || !key) return nullptr;
  const std::string* v = o->config.Find(key);
  return v ? v->c_str() : nullptr;
}

// ---- Graph support info and compute contexts --------------------------------------------------

OrtStatus* AddNodesToFuse(OrtEpGraphSupportInfo* info, const OrtNode* const* nodes, size_t count,
                          const OrtNodeFusionOptions* options) {
  if (!info || !nodes || count == 0) return NullArgument("EpGraphSupportInfo_AddNodesToFuse");
  std::vector<const NxNode*> nx_nodes;
  std::vector<const Node*> ir_nodes;
  for (size_t i = 0; i < count; ++i) {
    if (!info->view->HasNode(nodes[i]) || nodes[i]->ir == nullptr)
      return NewOrtStatus(ORT_INVALID_ARGUMENT,
                          "EpGraphSupportInfo_AddNodesToFuse: a node is not a node of the graph "
                          "passed to GetCapability");
    nx_nodes.push_back(reinterpret_cast<const NxNode*>(nodes[i]->ir));
    ir_nodes.push_back(nodes[i]->ir);
  }
  NxStatus* s = GetHostApi()->Capability_AddFusedGroup(info->capability, nx_nodes.data(),
                                                       nx_nodes.size(), nullptr);
  if (s != nullptr) {
    NxStatusCode code = NX_FAIL;
    std::string message;
    TakeStatus(s, code, message);
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "EpGraphSupportInfo_AddNodesToFuse: " + message);
  }
  const bool drop = options != nullptr && options->ort_version_supported >= 23 &&
                    options->drop_constant_initializers;
  try {
    std::lock_guard<std::mutex> lock(info->ep->mutex);
    info->ep->drop_initializers[GroupKey(ir_nodes, *info->view->ir)] = drop;
  } catch (...) {
    return NewOrtStatus(ORT_FAIL, "EpGraphSupportInfo_AddNodesToFuse: out of memory");
  }
  return nullptr;
}

const char* NodeComputeContextNodeName(const OrtNodeComputeContext* context) {
  return context ? context->node_name.c_str() : nullptr;
}

// ---- Kernel contexts ----------------------------------------------------------------------------

OrtStatus* KernelContextGetInputCount(const OrtKernelContext* c, size_t* out) {
  if (!c || !out) return NullArgument("KernelContext_GetInputCount");
  *out = c->input_map ? c->input_map->size() : c->nx->num_inputs;
  return nullptr;
}
OrtStatus* KernelContextGetOutputCount(const OrtKernelContext* c, size_t* out) {
  if (!c || !out) return NullArgument("KernelContext_GetOutputCount");
  *out = c->nx->num_outputs;
  return nullptr;
}
OrtStatus* KernelContextGetInput(const OrtKernelContext* c, size_t index, const OrtValue** out) {
  if (!c || !out) return NullArgument("KernelContext_GetInput");
  const size_t count = c->input_map ? c->input_map->size() : c->nx->num_inputs;
  if (index >= count)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "KernelContext_GetInput: index out of range");
  const size_t i = c->input_map ? (*c->input_map)[index] : index;
  *out = reinterpret_cast<const OrtValue*>(i < c->nx->num_inputs ? c->nx->inputs[i] : nullptr);
  return nullptr;
}
OrtStatus* KernelContextGetOutput(OrtKernelContext* c, size_t index, const int64_t* dims,
                                  size_t rank, OrtValue** out) {
  if (!c || !out || (rank > 0 && !dims)) return NullArgument("KernelContext_GetOutput");
  *out = nullptr;
  if (index >= c->nx->num_outputs)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "KernelContext_GetOutput: index out of range");
  // Asking again for an output already made returns it (onnxruntime's kernels may do that).
  if (c->nx->outputs[index]) {
    *out = reinterpret_cast<OrtValue*>(c->nx->outputs[index].get());
    return nullptr;
  }
  NxValue* value = nullptr;
  NxStatus* s = GetHostApi()->KernelContext_AllocateOutput(c->nx, index, NX_TYPE_UNDEFINED, dims,
                                                           rank, &value);
  if (s != nullptr) {
    NxStatusCode code = NX_FAIL;
    std::string message;
    TakeStatus(s, code, message);
    return NewOrtStatus(ORT_FAIL, "KernelContext_GetOutput: " + message);
  }
  *out = reinterpret_cast<OrtValue*>(value);
  return nullptr;
}
OrtStatus* KernelContextGetLogger(const OrtKernelContext* c, const OrtLogger** out) {
  if (!c || !out) return NullArgument("KernelContext_GetLogger");
  *out = c->logger;
  return nullptr;
}

}  // namespace

std::optional<ExportedContext> TakeExportedContext(const NxEp* ep, const NxKernel* kernel) {
  if (ep == nullptr || kernel == nullptr || ep->GetName != &WrappedEpName ||
      kernel->Compute != &ComputeCompiledKernel)
    return std::nullopt;
  auto* k = const_cast<CompiledKernel*>(static_cast<const CompiledKernel*>(kernel));
  std::optional<ExportedContext> out = std::move(k->context);
  k->context.reset();
  return out;
}

NxStatus* CreateWrappedEp(WrappedFactory& factory, const NxEpCreateArgs* args, NxEp** out) {
  *out = nullptr;
  return CatchAsStatus([&] {
    auto ep = std::make_unique<WrappedEp>();
    ep->factory = &factory;
    ep->name = factory.name;
    if (args->session_config != nullptr)
      ep->options.config = *static_cast<const Config*>(args->session_config);
    ep->writes_context = ep->options.config.Get("ep.context_enable", "0") == "1";
    const Logger* session_logger = args->logger ? &args->logger->logger : nullptr;
    ep->logger = std::make_unique<OrtLogger>(
        OrtLogger{session_logger ? *session_logger : factory.logger->logger});
    // The EP devices the session selected, as the factory described them.
    auto add = [&](const OrtEpDevice& d) {
      ep->devices.push_back(AsOrt(d.plugin_device));
      ep->device_metadata.push_back(&d.metadata);
    };
    for (size_t i = 0; args->version >= 3 && i < args->num_devices; ++i) {
      const NxEpDevice* selected = args->devices[i];
      for (const auto& d : factory.ep_devices)
        if (selected != nullptr && d->device == selected->device) add(*d);
    }
    // Appended by name: every device the factory supports.
    if (ep->devices.empty())
      for (const auto& d : factory.ep_devices) add(*d);
    NXRT_CHECK(!ep->devices.empty(), NX_NOT_FOUND,
               factory.Context("has no EP device on this machine (it was offered no device it "
                               "supports), so it cannot create an EP"));
    OrtEp* ort = nullptr;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(factory.calls.get());
      status = factory.ort->CreateEp(factory.ort, ep->devices.data(), ep->device_metadata.data(),
                                     ep->devices.size(), &ep->options, ep->logger.get(), &ort);
    }
    ThrowIfOrtStatus(status, factory.Context("CreateEp failed"));
    NXRT_CHECK(ort != nullptr, NX_INVALID_PLUGIN, factory.Context("CreateEp returned no EP"));
    ep->ort = ort;
    // An EP compiles groups (Compile + ReleaseNodeComputeInfos), runs kernels from a registry
    // (level 24: GetKernelRegistry), or both.
    const bool compiles = ort->Compile != nullptr && ort->ReleaseNodeComputeInfos != nullptr;
    const bool has_kernels = ort->ort_version_supported >= 24 && ort->GetKernelRegistry != nullptr;
    auto release = [&] {
      ReleaseKernelRegistry(*ep);
      ReleaseDeviceAllocators(*ep);
      LibraryScope scope(factory.calls.get());
      factory.ort->ReleaseEp(factory.ort, ort);
    };
    if (ort->ort_version_supported < 23 || ort->GetName == nullptr ||
        ort->GetCapability == nullptr || (!compiles && !has_kernels)) {
      release();
      Throw(NX_INVALID_PLUGIN,
            factory.Context("CreateEp returned an EP without GetCapability, or with neither "
                            "Compile and ReleaseNodeComputeInfos nor GetKernelRegistry"));
    }
    try {
      LoadKernelRegistry(*ep);
    } catch (...) {
      release();
      throw;
    }
    if (ort->ort_version_supported >= 24 && ort->IsConcurrentRunSupported != nullptr) {
      bool supported = true;
      OrtStatus* concurrent = nullptr;
      {
        LibraryScope scope(factory.calls.get());
        concurrent = ort->IsConcurrentRunSupported(ort, &supported);
      }
      // An EP that cannot say is taken at its most careful.
      if (concurrent != nullptr) {
        FreeOrtStatus(concurrent);
        supported = false;
      }
      ep->serialize_runs = !supported;
    }
    NxEp& nx = *ep;
    nx = NxEp{};
    nx.version = 15;
    nx.GetName = &WrappedEpName;
    nx.GetCapability = &WrappedGetCapability;
    if (compiles) nx.CompileGroup = &WrappedCompileGroup;
    if (ep->kernels != nullptr) nx.GetKernelRegistry = &WrappedGetKernelRegistry;
    if (IsStreamAware(factory)) nx.CreateStream = &WrappedCreateStream;
    nx.OnRunStart = &WrappedOnRunStart;
    nx.OnRunEnd = &WrappedOnRunEnd;
    nx.PrefersChannelsLast = &WrappedPrefersChannelsLast;
    *out = ep.release();
  });
}

void ReleaseWrappedEp(WrappedFactory& factory, NxEp* nx) {
  if (nx == nullptr) return;
  std::unique_ptr<WrappedEp> ep(static_cast<WrappedEp*>(nx));
  ReleaseKernelRegistry(*ep);
  ReleaseDeviceAllocators(*ep);
  LibraryScope scope(factory.calls.get());
  if (!ep->compute_infos.empty())
    ep->ort->ReleaseNodeComputeInfos(ep->ort, ep->compute_infos.data(), ep->compute_infos.size());
  factory.ort->ReleaseEp(factory.ort, ep->ort);
}

void InstallEpAdapterApi(OrtApi& api, OrtEpApi& ep_api) {
  api.GetSessionConfigEntry = Slot(&GetSessionConfigEntry);
  api.HasSessionConfigEntry = Slot(&HasSessionConfigEntry);
  api.GetSessionOptionsConfigEntries = Slot(&GetSessionOptionsConfigEntries);
  api.GetRunConfigEntry = Slot(&GetRunConfigEntry);
  api.KernelContext_GetInputCount = Slot(&KernelContextGetInputCount);
  api.KernelContext_GetOutputCount = Slot(&KernelContextGetOutputCount);
  api.KernelContext_GetInput = Slot(&KernelContextGetInput);
  api.KernelContext_GetOutput = Slot(&KernelContextGetOutput);
  api.KernelContext_GetLogger = Slot(&KernelContextGetLogger);
  ep_api.EpGraphSupportInfo_AddNodesToFuse = Slot(&AddNodesToFuse);
  ep_api.NodeComputeContext_NodeName = Slot(&NodeComputeContextNodeName);
}

}  // namespace nxrt::ort
