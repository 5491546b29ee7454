// The application C API: thin translations to Env, Session and Value.
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "base/profiler.h"
#include "controlflow/control_flow.h"
#include "devices/hardware_device.h"
#include "model/tensor_proto.h"
#include "nxrt/nxrt_c_api.h"
#include "ort_plugins/ort_plugin_library.h"
#include "session/compile_model.h"
#include "session/env.h"
#include "session/ep_selection.h"
#include "session/session.h"

struct NxEnv {
  std::unique_ptr<nxrt::Env> env;
};

struct NxSessionOptions {
  nxrt::SessionOptions options;
};

struct NxAssignmentReport {
  nxrt::AssignmentReport report;
};

struct NxRunOptions {
  std::atomic<bool> terminate{false};
  double timeout_seconds = 0;
};

struct NxSession {
  std::unique_ptr<nxrt::Session> session;
  std::vector<size_t> ep_node_counts;
  std::string model_version, ir_version;  // NxSession_GetModelInfo's decimal strings
  NxAssignmentReport report;  // the session's placement report, as the C API hands it out
};

using nxrt::CatchAsStatus;
using nxrt::MakeStatus;

namespace {
// The host table's CreateIfKernel, CreateLoopKernel, CreateScanKernel and CreateSequenceMapKernel
// reach controlflow/ through slots (plugins/control_flow_slots.h) that a layer above it fills:
// here, when the library is loaded, before any env or session exists.
[[maybe_unused]] const bool control_flow_registered = (nxrt::RegisterControlFlowKernels(), true);
}  // namespace

namespace {

#define NX_REQUIRE(ptr) \
  if ((ptr) == nullptr) \
  return MakeStatus(NX_INVALID_ARGUMENT, std::string(__func__) + ": " #ptr " is null")

// profiling: the model was parsed before the session (and its profiler) existed
void RecordLoad(nxrt::Session& s, uint64_t begin_ns, uint64_t end_ns, nxrt::KeyValues args) {
  if (nxrt::Profiler* p = s.profiler())
    p->AddSessionEvent("load", begin_ns, end_ns, std::move(args));
}

NxSession* WrapSession(std::unique_ptr<nxrt::Session> s) {
  auto* out = new NxSession();
  out->session = std::move(s);
  out->model_version = std::to_string(out->session->model().model_version);
  out->ir_version = std::to_string(out->session->model().ir_version);
  out->report.report = out->session->assignment_report();
  out->ep_node_counts.assign(out->session->ep_count(), 0);
  for (size_t n = 0; n < out->session->graph().nodes.size(); ++n)
    ++out->ep_node_counts[static_cast<size_t>(out->session->node_ep(n))];
  return out;
}

NxStatus* FillTypeInfo(const nxrt::ValueDef& def, NxTypeInfo* info) {
  NX_REQUIRE(info);
  info->kind = def.type.kind;
  info->element_type = def.type.elem_type;
  info->has_shape = def.type.has_shape;
  info->dims = def.type.dims.data();
  info->rank = def.type.dims.size();
  return nullptr;
}

}  // namespace

namespace {
// A copy of a host tensor or sequence that shares nothing with `v` (callers' buffers may go).
nxrt::ValuePtr CopyHostValue(const NxValue& v) {
  if (v.kind == NX_VALUE_SEQUENCE) {
    auto out = std::make_shared<NxValue>();
    out->kind = NX_VALUE_SEQUENCE;
    out->sequence_type = v.sequence_type;
    for (const auto& e : v.elements) out->elements.push_back(CopyHostValue(*e));
    return out;
  }
  NXRT_CHECK(v.kind == NX_VALUE_TENSOR, NX_INVALID_ARGUMENT, "an optional cannot hold an optional");
  NXRT_CHECK(nxrt::IsHostReadable(v), NX_INVALID_ARGUMENT,
             "sequence and optional elements must be host tensors, got one in device memory");
  nxrt::ValuePtr out = nxrt::MakeTensor(v.type, v.dims);
  if (v.type == NX_TYPE_STRING)
    out->strings = v.strings;
  else if (const size_t bytes = nxrt::TensorBytes(v); bytes > 0)
    std::memcpy(out->data, v.data, bytes);
  return out;
}
}  // namespace

extern "C" {

NxStatusCode NxStatus_GetCode(const NxStatus* status) {
  if (status == nullptr) return NX_OK;
  return nxrt::IsHostStatus(status) ? status->code : NX_FAIL;
}
const char* NxStatus_GetMessage(const NxStatus* status) {
  if (status == nullptr) return "";
  return nxrt::IsHostStatus(status) ? status->message.c_str() : "(not a status nxrt created)";
}
void NxStatus_Release(NxStatus* status) { nxrt::FreeStatus(status); }
NxStatus* NxStatus_Create(NxStatusCode code, const char* message) {
  return nxrt::NewStatus(code, message ? message : "");
}
const char* Nx_GetVersionString(void) { return "0.1.0"; }
const char* Nx_ElementTypeName(NxElementType type) { return nxrt::ElementTypeName(type); }

// ---- Env ----
NxStatus* NxEnv_Create(NxLogLevel level, NxLogFn log_fn, void* log_user, NxEnv** env) {
  NX_REQUIRE(env);
  return CatchAsStatus([&] {
    nxrt::Logger::Sink sink = nxrt::Logger::StderrSink();
    if (log_fn != nullptr) {
      sink = [log_fn, log_user](NxLogLevel l, const std::string& m) {
        log_fn(log_user, l, m.c_str());
      };
    }
    *env = new NxEnv{std::make_unique<nxrt::Env>(nxrt::Logger(level, sink))};
  });
}
void NxEnv_Release(NxEnv* env) { delete env; }
NxStatus* NxEnv_RegisterEpLibrary(NxEnv* env, const char* name, const char* path) {
  NX_REQUIRE(env);
  NX_REQUIRE(name);
  NX_REQUIRE(path);
  return CatchAsStatus([&] { env->env->RegisterLibrary(name, path); });
}
NxStatus* NxEnv_RegisterEpLibraryWithVirtualDevices(NxEnv* env, const char* name, const char* path,
                                                    const NxVirtualDeviceRequest* requests,
                                                    size_t num_requests) {
  NX_REQUIRE(env);
  NX_REQUIRE(name);
  NX_REQUIRE(path);
  if (num_requests > 0 && requests == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT, "virtual device requests are null");
  return CatchAsStatus([&] {
    std::vector<nxrt::VirtualDeviceRequest> reqs;
    for (size_t i = 0; i < num_requests; ++i) {
      const NxVirtualDeviceRequest& r = requests[i];
      NXRT_CHECK(nxrt::RawEnum(r.type) >= NX_DEVICE_CPU && nxrt::RawEnum(r.type) <= NX_DEVICE_OTHER,
                 NX_INVALID_ARGUMENT,
                 "virtual device request " + std::to_string(i) + " has an unknown device type");
      NXRT_CHECK(r.num_options == 0 || r.options != nullptr, NX_INVALID_ARGUMENT,
                 "virtual device request " + std::to_string(i) + " has null options");
      nxrt::VirtualDeviceRequest req;
      req.type = r.type;
      for (size_t k = 0; k < r.num_options; ++k) {
        NXRT_CHECK(r.options[k].key && r.options[k].value, NX_INVALID_ARGUMENT,
                   "virtual device request " + std::to_string(i) + " has a null option");
        req.options.emplace_back(r.options[k].key, r.options[k].value);
      }
      reqs.push_back(std::move(req));
    }
    env->env->RegisterLibrary(name, path, reqs);
  });
}
NxStatus* NxEnv_UnregisterEpLibrary(NxEnv* env, const char* name) {
  NX_REQUIRE(env);
  NX_REQUIRE(name);
  return CatchAsStatus([&] { env->env->UnregisterLibrary(name); });
}

// ---- EP devices ----
NxStatus* NxEnv_GetEpDeviceCount(NxEnv* env, size_t* count) {
  NX_REQUIRE(env);
  NX_REQUIRE(count);
  return CatchAsStatus([&] { *count = env->env->EpDevices().size(); });
}
const NxEpDevice* NxEnv_GetEpDevice(NxEnv* env, size_t index) {
  if (env == nullptr) return nullptr;
  try {
    auto all = env->env->EpDevices();
    return index < all.size() ? all[index] : nullptr;
  } catch (...) {
    return nullptr;
  }
}
const char* NxEpDevice_GetEpName(const NxEpDevice* d) { return d ? d->ep_name.c_str() : ""; }
const char* NxEpDevice_GetEpVendor(const NxEpDevice* d) { return d ? d->ep_vendor.c_str() : ""; }
const char* NxEpDevice_GetLibraryName(const NxEpDevice* d) {
  return d ? d->library_name.c_str() : "";
}
const NxHardwareDevice* NxEpDevice_GetHardwareDevice(const NxEpDevice* d) {
  return d ? d->device : nullptr;
}
size_t NxEpDevice_GetMetadataCount(const NxEpDevice* d) { return d ? d->metadata.size() : 0; }
bool NxEpDevice_GetMetadata(const NxEpDevice* d, size_t index, const char** key,
                            const char** value) {
  if (d == nullptr || index >= d->metadata.size()) return false;
  if (key) *key = d->metadata[index].first.c_str();
  if (value) *value = d->metadata[index].second.c_str();
  return true;
}
const char* NxEpDevice_GetMetadataValue(const NxEpDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  const std::string* v = nxrt::FindKey(d->metadata, key);
  return v ? v->c_str() : nullptr;
}
size_t NxEpDevice_GetOptionCount(const NxEpDevice* d) { return d ? d->options.size() : 0; }
bool NxEpDevice_GetOption(const NxEpDevice* d, size_t index, const char** key, const char** value) {
  if (d == nullptr || index >= d->options.size()) return false;
  if (key) *key = d->options[index].first.c_str();
  if (value) *value = d->options[index].second.c_str();
  return true;
}
const NxMemoryInfo* NxEpDevice_GetMemoryInfo(const NxEpDevice* d) {
  const NxMemoryInfo* m = d ? d->factory->MemoryFor(d->device) : nullptr;  // ABI 12: per device
  return m ? m : nxrt::HostMemory();
}

// ---- Session options ----
NxStatus* NxSessionOptions_Create(NxSessionOptions** options) {
  NX_REQUIRE(options);
  return CatchAsStatus([&] { *options = new NxSessionOptions(); });
}
void NxSessionOptions_Release(NxSessionOptions* options) { delete options; }
NxStatus* NxSessionOptions_SetIntraOpThreads(NxSessionOptions* options, int threads) {
  NX_REQUIRE(options);
  if (threads < 0 || threads > 1024)
    return MakeStatus(NX_INVALID_ARGUMENT, "thread count must be in [0, 1024]");
  options->options.intra_op_threads = threads;
  return nullptr;
}
NxStatus* NxSessionOptions_SetLogLevel(NxSessionOptions* options, NxLogLevel level) {
  NX_REQUIRE(options);
  if (nxrt::RawEnum(level) < NX_LOG_VERBOSE || nxrt::RawEnum(level) > NX_LOG_FATAL)
    return MakeStatus(NX_INVALID_ARGUMENT, "unknown log level");
  options->options.log_level = level;
  return nullptr;
}
NxStatus* NxSessionOptions_SetOptimizationLevel(NxSessionOptions* options, int level) {
  NX_REQUIRE(options);
  if (level < 0 || level > 2)
    return MakeStatus(NX_INVALID_ARGUMENT, "optimization level must be 0, 1 or 2");
  options->options.optimization_level = level;
  return nullptr;
}
NxStatus* NxSessionOptions_SetConfig(NxSessionOptions* options, const char* key,
                                     const char* value) {
  NX_REQUIRE(options);
  NX_REQUIRE(key);
  NX_REQUIRE(value);
  return CatchAsStatus([&] { options->options.config.entries[key] = value; });
}
NxStatus* NxSessionOptions_AppendEp(NxSessionOptions* options, const char* ep_name,
                                    const char* const* keys, const char* const* values, size_t n) {
  NX_REQUIRE(options);
  NX_REQUIRE(ep_name);
  if (n > 0 && (keys == nullptr || values == nullptr))
    return MakeStatus(NX_INVALID_ARGUMENT, "EP option keys/values are null");
  return CatchAsStatus([&] {
    nxrt::EpRequest req;
    req.name = ep_name;
    for (size_t i = 0; i < n; ++i) {
      NXRT_CHECK(keys[i] && values[i], NX_INVALID_ARGUMENT, "an EP option key or value is null");
      req.options[keys[i]] = values[i];
    }
    options->options.eps.push_back(std::move(req));
  });
}

NxStatus* NxSessionOptions_AppendEpDevices(NxSessionOptions* options,
                                           const NxEpDevice* const* devices, size_t num_devices,
                                           const NxKeyValue* ep_options, size_t num_ep_options) {
  NX_REQUIRE(options);
  NX_REQUIRE(devices);
  if (num_devices == 0) return MakeStatus(NX_INVALID_ARGUMENT, "no EP device to append");
  if (num_ep_options > 0 && ep_options == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT, "EP options are null");
  return CatchAsStatus([&] {
    nxrt::EpRequest req;
    for (size_t i = 0; i < num_devices; ++i) {
      NXRT_CHECK(devices[i] != nullptr, NX_INVALID_ARGUMENT, "an EP device is null");
      req.devices.push_back(devices[i]);
    }
    for (size_t i = 0; i < num_ep_options; ++i) {
      NXRT_CHECK(ep_options[i].key && ep_options[i].value, NX_INVALID_ARGUMENT,
                 "an EP option key or value is null");
      req.options[ep_options[i].key] = ep_options[i].value;
    }
    options->options.eps.push_back(std::move(req));
  });
}
NxStatus* NxSessionOptions_SetEpSelectionPolicy(NxSessionOptions* options,
                                                NxEpSelectionPolicy policy) {
  NX_REQUIRE(options);
  if (nxrt::RawEnum(policy) < NX_POLICY_PREFER_CPU || nxrt::RawEnum(policy) > NX_POLICY_MIN_POWER)
    return MakeStatus(NX_INVALID_ARGUMENT, "unknown EP selection policy");
  options->options.policy = policy;
  options->options.selector = nullptr;
  return nullptr;
}
const char* Nx_EpSelectionPolicyName(NxEpSelectionPolicy policy) {
  const int raw = nxrt::RawEnum(policy);
  if (raw < NX_POLICY_PREFER_CPU || raw > NX_POLICY_MIN_POWER) return "unknown";
  return nxrt::PolicyName(policy);
}
NxStatus* NxSessionOptions_SetEpSelectionCallback(NxSessionOptions* options, NxEpSelectionFn fn,
                                                  void* user) {
  NX_REQUIRE(options);
  NX_REQUIRE(fn);
  return CatchAsStatus([&] {
    options->options.policy.reset();
    options->options.selector = [fn, user](const std::vector<const NxEpDevice*>& devices,
                                           const nxrt::KeyValues& metadata) {
      std::vector<NxKeyValue> md;
      for (const auto& [k, v] : metadata) md.push_back({k.c_str(), v.c_str()});
      std::vector<const NxEpDevice*> selected(std::max<size_t>(devices.size(), 1), nullptr);
      size_t n = 0;
      nxrt::ThrowIfStatus(fn(user, devices.data(), devices.size(), md.data(), md.size(),
                             selected.data(), selected.size(), &n),
                          "the EP selection callback failed");
      NXRT_CHECK(n <= selected.size(), NX_INVALID_ARGUMENT,
                 "the EP selection callback chose more EP devices than it had room for");
      selected.resize(n);
      return selected;
    };
  });
}
NxStatus* NxSessionOptions_SetProfileFile(NxSessionOptions* options, const char* path) {
  NX_REQUIRE(options);
  NX_REQUIRE(path);
  return CatchAsStatus([&] { options->options.profile_file = path; });
}
NxStatus* NxSessionOptions_SetFallback(NxSessionOptions* options, NxFallbackMode mode) {
  NX_REQUIRE(options);
  if (nxrt::RawEnum(mode) < NX_FALLBACK_ALLOW || nxrt::RawEnum(mode) > NX_FALLBACK_FORBID)
    return MakeStatus(NX_INVALID_ARGUMENT, "unknown fallback mode");
  options->options.fallback = mode;
  return nullptr;
}

// ---- Sessions ----
NxStatus* NxSession_CreateFromFile(NxEnv* env, const char* model_path,
                                   const NxSessionOptions* options, NxSession** session) {
  NX_REQUIRE(env);
  NX_REQUIRE(model_path);
  NX_REQUIRE(session);
  return CatchAsStatus([&] {
    nxrt::SessionOptions defaults;
    env->env->PreloadDefaultCpu();  // its start-up work overlaps the model load
    const uint64_t load_begin = nxrt::Profiler::NowNs();  // profiling
    auto model = nxrt::LoadModelFromFile(model_path);
    const uint64_t load_end = nxrt::Profiler::NowNs();  // profiling
    auto s =
        std::make_unique<nxrt::Session>(*env->env, model, options ? options->options : defaults);
    RecordLoad(*s, load_begin, load_end, {{"path", model_path}});
    *session = WrapSession(std::move(s));
  });
}
NxStatus* NxSession_CreateFromBuffer(NxEnv* env, const void* data, size_t size,
                                     const NxSessionOptions* options, NxSession** session) {
  NX_REQUIRE(env);
  NX_REQUIRE(data);
  NX_REQUIRE(session);
  return CatchAsStatus([&] {
    nxrt::SessionOptions defaults;
    env->env->PreloadDefaultCpu();  // its start-up work overlaps the model load
    const uint64_t load_begin = nxrt::Profiler::NowNs();  // profiling
    auto model = nxrt::LoadModelFromBuffer(data, size);
    const uint64_t load_end = nxrt::Profiler::NowNs();  // profiling
    auto s =
        std::make_unique<nxrt::Session>(*env->env, model, options ? options->options : defaults);
    RecordLoad(*s, load_begin, load_end, {{"bytes", std::to_string(size)}});
    *session = WrapSession(std::move(s));
  });
}
void NxSession_Release(NxSession* session) { delete session; }
NxStatus* NxSession_EndProfiling(NxSession* session) {
  NX_REQUIRE(session);
  return CatchAsStatus([&] { session->session->EndProfiling(); });
}

size_t NxSession_GetInputCount(const NxSession* s) {
  return s ? s->session->graph().inputs.size() : 0;
}
size_t NxSession_GetOutputCount(const NxSession* s) {
  return s ? s->session->graph().outputs.size() : 0;
}
const char* NxSession_GetInputName(const NxSession* s, size_t i) {
  if (!s || i >= s->session->graph().inputs.size()) return nullptr;
  return s->session->graph().value(s->session->graph().inputs[i]).name.c_str();
}
const char* NxSession_GetOutputName(const NxSession* s, size_t i) {
  if (!s || i >= s->session->graph().outputs.size()) return nullptr;
  return s->session->graph().value(s->session->graph().outputs[i]).name.c_str();
}
NxStatus* NxSession_GetInputTypeInfo(const NxSession* s, size_t i, NxTypeInfo* info) {
  NX_REQUIRE(s);
  const auto& g = s->session->graph();
  if (i >= g.inputs.size()) return MakeStatus(NX_INVALID_ARGUMENT, "input index out of range");
  return FillTypeInfo(g.value(g.inputs[i]), info);
}
NxStatus* NxSession_GetOutputTypeInfo(const NxSession* s, size_t i, NxTypeInfo* info) {
  NX_REQUIRE(s);
  const auto& g = s->session->graph();
  if (i >= g.outputs.size()) return MakeStatus(NX_INVALID_ARGUMENT, "output index out of range");
  return FillTypeInfo(g.value(g.outputs[i]), info);
}
namespace {
// Symbolic name of dimension `dim` of graph value values[i] ("" when out of range or fixed).
const char* DimName(const nxrt::Graph& g, const std::vector<int>& values, size_t i, size_t dim) {
  if (i >= values.size()) return "";
  const auto& params = g.value(values[i]).type.dim_params;
  return dim < params.size() ? params[dim].c_str() : "";
}
}  // namespace

const char* NxSession_GetInputDimName(const NxSession* s, size_t i, size_t dim) {
  return s ? DimName(s->session->graph(), s->session->graph().inputs, i, dim) : "";
}
const char* NxSession_GetOutputDimName(const NxSession* s, size_t i, size_t dim) {
  return s ? DimName(s->session->graph(), s->session->graph().outputs, i, dim) : "";
}
const char* NxSession_GetModelInfo(const NxSession* s, const char* key) {
  if (!s || !key) return nullptr;
  const nxrt::Model& m = s->session->model();
  const std::string_view k = key;
  if (k == "producer_name") return m.producer_name.c_str();
  if (k == "producer_version") return m.producer_version.c_str();
  if (k == "domain") return m.domain.c_str();
  if (k == "description") return m.doc_string.c_str();
  if (k == "graph_name") return m.graph->name.c_str();
  if (k == "graph_description") return m.graph_doc_string.c_str();
  if (k == "version") return s->model_version.c_str();
  if (k == "ir_version") return s->ir_version.c_str();
  return nullptr;
}
size_t NxSession_GetCustomMetadataCount(const NxSession* s) {
  return s ? s->session->model().metadata.size() : 0;
}
bool NxSession_GetCustomMetadata(const NxSession* s, size_t index, const char** key,
                                 const char** value) {
  if (!s || index >= s->session->model().metadata.size()) return false;
  auto it = std::next(s->session->model().metadata.begin(), static_cast<std::ptrdiff_t>(index));
  if (key) *key = it->first.c_str();
  if (value) *value = it->second.c_str();
  return true;
}
size_t NxSession_GetValueCount(const NxSession* s) {
  return s ? s->session->graph().values.size() : 0;
}
const char* NxSession_GetValueName(const NxSession* s, size_t i) {
  if (!s || i >= s->session->graph().values.size()) return nullptr;
  return s->session->graph().values[i].name.c_str();
}
NxStatus* NxSession_GetValueTypeInfo(const NxSession* s, size_t i, NxTypeInfo* info) {
  NX_REQUIRE(s);
  const auto& g = s->session->graph();
  if (i >= g.values.size()) return MakeStatus(NX_INVALID_ARGUMENT, "value index out of range");
  return FillTypeInfo(g.values[i], info);
}

NxStatus* NxSessionOptions_SetMemoryLimit(NxSessionOptions* options, size_t bytes) {
  NX_REQUIRE(options);
  options->options.memory_limit = bytes;
  return nullptr;
}

NxStatus* NxRunOptions_Create(NxRunOptions** options) {
  NX_REQUIRE(options);
  return CatchAsStatus([&] { *options = new NxRunOptions(); });
}

void NxRunOptions_Release(NxRunOptions* options) { delete options; }

NxStatus* NxRunOptions_SetTerminate(NxRunOptions* options, bool terminate) {
  NX_REQUIRE(options);
  options->terminate.store(terminate, std::memory_order_relaxed);
  return nullptr;
}

NxStatus* NxRunOptions_SetTimeout(NxRunOptions* options, double seconds) {
  NX_REQUIRE(options);
  if (!std::isfinite(seconds) || seconds < 0) {
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "NxRunOptions_SetTimeout: the time limit must be a finite number of seconds "
                      ">= 0 (0 = none)");
  }
  options->timeout_seconds = seconds;
  return nullptr;
}

NxStatus* NxSession_Run(NxSession* session, const char* const* input_names,
                        const NxValue* const* inputs, size_t num_inputs,
                        const char* const* output_names, size_t num_outputs, NxValue** outputs) {
  return NxSession_RunWithOptions(session, nullptr, input_names, inputs, num_inputs, output_names,
                                  num_outputs, outputs);
}

NxStatus* NxSession_RunWithOptions(NxSession* session, const NxRunOptions* run_options,
                                   const char* const* input_names, const NxValue* const* inputs,
                                   size_t num_inputs, const char* const* output_names,
                                   size_t num_outputs, NxValue** outputs) {
  return NxSession_RunWithOutputMemories(session, run_options, input_names, inputs, num_inputs,
                                         output_names, num_outputs, nullptr, outputs);
}

NxStatus* NxSession_RunWithOutputMemories(NxSession* session, const NxRunOptions* run_options,
                                          const char* const* input_names,
                                          const NxValue* const* inputs, size_t num_inputs,
                                          const char* const* output_names, size_t num_outputs,
                                          const NxMemoryInfo* const* output_memories,
                                          NxValue** outputs) {
  NX_REQUIRE(session);
  if (num_inputs > 0 && (input_names == nullptr || inputs == nullptr)) {
    return MakeStatus(NX_INVALID_ARGUMENT, "NxSession_Run: input names or values are null");
  }
  if (num_outputs > 0 && outputs == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT, "NxSession_Run: outputs is null");
  return CatchAsStatus([&] {
    const auto& g = session->session->graph();
    // The call's own vectors are reused by the next call on this thread, so a steady-state run
    // allocates nothing here but the output values it hands out (none when outputs are bound).
    // A run started from inside a run on this thread (a kernel running another session) gets
    // fresh ones.
    struct CallBuffers {
      std::vector<std::string_view> in_names, out_names;
      std::vector<const NxMemoryInfo*> memories;
      std::vector<nxrt::ValuePtr> results;
      bool busy = false;
    };
    thread_local CallBuffers reused;
    CallBuffers fresh;
    CallBuffers& buffers = reused.busy ? fresh : reused;
    buffers.busy = true;
    struct Release {
      CallBuffers& b;
      ~Release() {
        b.results.clear();
        b.busy = false;
      }
    } release{buffers};
    buffers.in_names.clear();
    buffers.out_names.clear();
    for (size_t i = 0; i < num_inputs; ++i) {
      NXRT_CHECK(input_names[i] != nullptr, NX_INVALID_ARGUMENT,
                 "input name " + std::to_string(i) + " is null");
      buffers.in_names.emplace_back(input_names[i]);
    }
    if (output_names == nullptr) {
      NXRT_CHECK(num_outputs == g.outputs.size(), NX_INVALID_ARGUMENT,
                 "without output names, num_outputs must equal the model's output count (" +
                     std::to_string(g.outputs.size()) + ")");
      for (int o : g.outputs) buffers.out_names.emplace_back(g.value(o).name);
    } else {
      for (size_t i = 0; i < num_outputs; ++i) {
        NXRT_CHECK(output_names[i] != nullptr, NX_INVALID_ARGUMENT,
                   "output name " + std::to_string(i) + " is null");
        buffers.out_names.emplace_back(output_names[i]);
      }
    }
    if (num_outputs == 0) return;
    nxrt::RunLimits limits;
    if (run_options != nullptr) {
      limits.terminate = &run_options->terminate;
      limits.timeout_seconds = run_options->timeout_seconds;
    }
    if (output_memories != nullptr) {
      // The runtime compares interned descriptions; the caller's may be its own copies.
      buffers.memories.assign(num_outputs, nullptr);
      for (size_t i = 0; i < num_outputs; ++i) {
        if (output_memories[i] != nullptr)
          buffers.memories[i] = nxrt::InternMemoryInfo(*output_memories[i]);
      }
      limits.output_memories = buffers.memories;
    }
    // Caller-provided outputs are bound: kernels write straight into them where they can.
    session->session->Run(buffers.in_names, std::span<const nxrt::Value* const>(inputs, num_inputs),
                          buffers.out_names, std::span<nxrt::Value* const>(outputs, num_outputs),
                          limits, buffers.results);
    for (size_t i = 0; i < num_outputs; ++i) {
      if (outputs[i] == nullptr) outputs[i] = new NxValue(*buffers.results[i]);
    }
  });
}

NxStatus* NxSession_GetStatistic(const NxSession* session, const char* key, int64_t* value) {
  NX_REQUIRE(session);
  NX_REQUIRE(key);
  NX_REQUIRE(value);
  const nxrt::SessionStats& st = session->session->stats();
  const std::pair<const char*, size_t> table[] = {
      {"copies", st.copies},
      {"copies.outputs", st.output_copies},
      {"streams", st.streams},
      {"initializers.uploaded", st.initializer_uploads},
      {"initializers.released", st.initializers_released},
      {"initializers.released_bytes", st.initializer_bytes_released},
      {"prepack.calls", st.prepack_calls},
      {"prepack.weights", st.prepacked_weights},
      {"prepack.shared_hits", st.prepack_shared_hits},
      {"nodes.folded", session->session->folded_nodes()},
  };
  for (const auto& [name, v] : table) {
    if (std::strcmp(name, key) == 0) {
      *value = static_cast<int64_t>(v);
      return nullptr;
    }
  }
  // "ep.<EP name>.<key>": a counter the EP keeps (NxEp::GetStatistic).
  const std::string k = key;
  const nxrt::Session& s = *session->session;
  for (size_t i = 0; i < s.ep_count(); ++i) {
    const std::string prefix = "ep." + s.ep_name(i) + ".";
    if (k.size() <= prefix.size() || k.compare(0, prefix.size(), prefix) != 0) continue;
    return CatchAsStatus([&] {
      if (!s.ep_statistic(i, k.substr(prefix.size()), value)) {
        nxrt::Throw(NX_NOT_FOUND, "EP '" + s.ep_name(i) + "' keeps no statistic '" +
                                      k.substr(prefix.size()) + "'");
      }
    });
  }
  return MakeStatus(NX_NOT_FOUND, std::string("unknown session statistic '") + key + "'");
}

size_t NxSession_GetEpCount(const NxSession* s) { return s ? s->session->ep_count() : 0; }
const char* NxSession_GetEpName(const NxSession* s, size_t i) {
  return s && i < s->session->ep_count() ? s->session->ep_name(i).c_str() : nullptr;
}
size_t NxSession_GetEpNodeCount(const NxSession* s, size_t i) {
  return s && i < s->ep_node_counts.size() ? s->ep_node_counts[i] : 0;
}

size_t NxSession_GetEpDeviceCount(const NxSession* s, size_t ep) {
  return s && ep < s->session->ep_count() ? s->session->ep_devices(ep).size() : 0;
}
const NxEpDevice* NxSession_GetEpDevice(const NxSession* s, size_t ep, size_t device) {
  if (s == nullptr || ep >= s->session->ep_count()) return nullptr;
  const auto& d = s->session->ep_devices(ep);
  return device < d.size() ? d[device] : nullptr;
}

// ---- Placement report ----
namespace {
const nxrt::AssignmentReport* ReportOf(const NxAssignmentReport* r) {
  return r != nullptr ? &r->report : nullptr;
}
const nxrt::AssignedSubgraph* SubgraphOf(const NxAssignmentReport* r, size_t i) {
  const nxrt::AssignmentReport* report = ReportOf(r);
  return report != nullptr && i < report->subgraphs.size() ? &report->subgraphs[i] : nullptr;
}
}  // namespace

const NxAssignmentReport* NxSession_GetAssignmentReport(const NxSession* s) {
  return s != nullptr ? &s->report : nullptr;
}

NxStatus* NxEnv_PlanPlacementFromFile(NxEnv* env, const char* model_path,
                                      const NxSessionOptions* options,
                                      NxAssignmentReport** report) {
  NX_REQUIRE(env);
  NX_REQUIRE(model_path);
  NX_REQUIRE(report);
  return CatchAsStatus([&] {
    nxrt::SessionOptions defaults;
    auto model = nxrt::LoadModelFromFile(model_path);
    *report = new NxAssignmentReport{
        nxrt::Session::PlanPlacement(*env->env, model, options ? options->options : defaults)};
  });
}

NxStatus* NxEnv_PlanPlacementFromBuffer(NxEnv* env, const void* data, size_t size,
                                        const NxSessionOptions* options,
                                        NxAssignmentReport** report) {
  NX_REQUIRE(env);
  NX_REQUIRE(data);
  NX_REQUIRE(report);
  return CatchAsStatus([&] {
    nxrt::SessionOptions defaults;
    auto model = nxrt::LoadModelFromBuffer(data, size);
    *report = new NxAssignmentReport{
        nxrt::Session::PlanPlacement(*env->env, model, options ? options->options : defaults)};
  });
}

void NxAssignmentReport_Release(NxAssignmentReport* report) { delete report; }

size_t NxAssignmentReport_GetSubgraphCount(const NxAssignmentReport* r) {
  return ReportOf(r) ? ReportOf(r)->subgraphs.size() : 0;
}
const char* NxAssignmentReport_GetSubgraphGraph(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->graph.c_str() : nullptr;
}
const char* NxAssignmentReport_GetSubgraphEpName(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->ep_name.c_str() : nullptr;
}
const char* NxAssignmentReport_GetSubgraphKind(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->kind.c_str() : nullptr;
}
const char* NxAssignmentReport_GetSubgraphStream(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->stream.c_str() : nullptr;
}
size_t NxAssignmentReport_GetSubgraphDeviceCount(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->devices.size() : 0;
}
const NxHardwareDevice* NxAssignmentReport_GetSubgraphDevice(const NxAssignmentReport* r, size_t i,
                                                             size_t d) {
  const auto* sg = SubgraphOf(r, i);
  return sg && d < sg->devices.size() ? sg->devices[d] : nullptr;
}
size_t NxAssignmentReport_GetSubgraphNodeCount(const NxAssignmentReport* r, size_t i) {
  const auto* sg = SubgraphOf(r, i);
  return sg ? sg->nodes.size() : 0;
}
NxStatus* NxAssignmentReport_GetSubgraphNode(const NxAssignmentReport* r, size_t i, size_t n,
                                             const char** name, const char** domain,
                                             const char** op_type) {
  const auto* sg = SubgraphOf(r, i);
  if (sg == nullptr || n >= sg->nodes.size())
    return MakeStatus(NX_INVALID_ARGUMENT, "NxAssignmentReport_GetSubgraphNode: out of range");
  if (name) *name = sg->nodes[n].name.c_str();
  if (domain) *domain = sg->nodes[n].domain.c_str();
  if (op_type) *op_type = sg->nodes[n].op_type.c_str();
  return nullptr;
}
size_t NxAssignmentReport_GetFallbackCount(const NxAssignmentReport* r) {
  return ReportOf(r) ? ReportOf(r)->fallbacks.size() : 0;
}
NxStatus* NxAssignmentReport_GetFallback(const NxAssignmentReport* r, size_t i,
                                         NxFallbackInfo* info) {
  NX_REQUIRE(info);
  const nxrt::AssignmentReport* report = ReportOf(r);
  if (report == nullptr || i >= report->fallbacks.size())
    return MakeStatus(NX_INVALID_ARGUMENT, "NxAssignmentReport_GetFallback: out of range");
  const nxrt::NodeFallback& f = report->fallbacks[i];
  info->graph = f.graph.c_str();
  info->node_name = f.node.name.c_str();
  info->node_domain = f.node.domain.c_str();
  info->node_op_type = f.node.op_type.c_str();
  info->preferred_ep = f.preferred_ep.c_str();
  info->reason = static_cast<NxFallbackReason>(f.kind);
  info->reason_name = nxrt::FallbackKindName(f.kind);
  info->detail = f.detail.c_str();
  info->assigned_ep = f.assigned_ep.c_str();
  return nullptr;
}
namespace {
const nxrt::ReportNode* ReportNodeOf(const NxAssignmentReport* r, size_t sg, size_t node) {
  const auto* s = SubgraphOf(r, sg);
  return s && node < s->nodes.size() ? &s->nodes[node] : nullptr;
}
}  // namespace
size_t NxAssignmentReport_GetNodeInputCount(const NxAssignmentReport* r, size_t sg, size_t node) {
  const auto* n = ReportNodeOf(r, sg, node);
  return n ? n->inputs.size() : 0;
}
const char* NxAssignmentReport_GetNodeInput(const NxAssignmentReport* r, size_t sg, size_t node,
                                            size_t i) {
  const auto* n = ReportNodeOf(r, sg, node);
  return n && i < n->inputs.size() ? n->inputs[i].c_str() : nullptr;
}
size_t NxAssignmentReport_GetNodeOutputCount(const NxAssignmentReport* r, size_t sg, size_t node) {
  const auto* n = ReportNodeOf(r, sg, node);
  return n ? n->outputs.size() : 0;
}
const char* NxAssignmentReport_GetNodeOutput(const NxAssignmentReport* r, size_t sg, size_t node,
                                             size_t i) {
  const auto* n = ReportNodeOf(r, sg, node);
  return n && i < n->outputs.size() ? n->outputs[i].c_str() : nullptr;
}
size_t NxAssignmentReport_GetCopyCount(const NxAssignmentReport* r) {
  return ReportOf(r) ? ReportOf(r)->copies.size() : 0;
}
NxStatus* NxAssignmentReport_GetCopy(const NxAssignmentReport* r, size_t i, const char** graph,
                                     const char** value, const char** from_ep, const char** to_ep) {
  const nxrt::AssignmentReport* report = ReportOf(r);
  if (report == nullptr || i >= report->copies.size())
    return MakeStatus(NX_INVALID_ARGUMENT, "NxAssignmentReport_GetCopy: out of range");
  const nxrt::ReportCopy& c = report->copies[i];
  if (graph) *graph = c.graph.c_str();
  if (value) *value = c.value.c_str();
  if (from_ep) *from_ep = c.from_ep.c_str();
  if (to_ep) *to_ep = c.to_ep.c_str();
  return nullptr;
}
NxStatus* NxAssignmentReport_GetCopyMemories(const NxAssignmentReport* r, size_t i,
                                             const char** from_memory, const char** to_memory) {
  const nxrt::AssignmentReport* report = ReportOf(r);
  if (report == nullptr || i >= report->copies.size())
    return MakeStatus(NX_INVALID_ARGUMENT, "NxAssignmentReport_GetCopyMemories: out of range");
  const nxrt::ReportCopy& c = report->copies[i];
  if (from_memory) *from_memory = c.from_memory.c_str();
  if (to_memory) *to_memory = c.to_memory.c_str();
  return nullptr;
}

// ---- Hardware devices ----
size_t Nx_GetHardwareDeviceCount(void) {
  try {
    return nxrt::ProcessHardware().size();
  } catch (...) {
    return 0;
  }
}
const NxHardwareDevice* Nx_GetHardwareDevice(size_t index) {
  const auto& all = nxrt::ProcessHardware();
  return index < all.size() ? &all[index] : nullptr;
}
NxDeviceType NxHardwareDevice_GetType(const NxHardwareDevice* d) {
  return d ? d->type : NX_DEVICE_OTHER;
}
const char* NxHardwareDevice_GetVendor(const NxHardwareDevice* d) {
  return d ? d->vendor.c_str() : "";
}
uint32_t NxHardwareDevice_GetVendorId(const NxHardwareDevice* d) { return d ? d->vendor_id : 0; }
uint32_t NxHardwareDevice_GetDeviceId(const NxHardwareDevice* d) { return d ? d->device_id : 0; }
size_t NxHardwareDevice_GetMetadataCount(const NxHardwareDevice* d) {
  return d ? d->metadata.size() : 0;
}
bool NxHardwareDevice_GetMetadata(const NxHardwareDevice* d, size_t index, const char** key,
                                  const char** value) {
  if (d == nullptr || index >= d->metadata.size()) return false;
  if (key) *key = d->metadata[index].first.c_str();
  if (value) *value = d->metadata[index].second.c_str();
  return true;
}
const char* NxHardwareDevice_GetMetadataValue(const NxHardwareDevice* d, const char* key) {
  if (d == nullptr || key == nullptr) return nullptr;
  for (const auto& [k, v] : d->metadata)
    if (k == key) return v.c_str();
  return nullptr;
}

// ---- Memory ----
NxStatus* NxEnv_GetStatistic(const NxEnv* env, const char* key, int64_t* value) {
  NX_REQUIRE(env);
  NX_REQUIRE(key);
  NX_REQUIRE(value);
  nxrt::Env& e = *env->env;
  std::string k = key;
  if (k == "prepack.shared_weights")
    *value = static_cast<int64_t>(e.prepack_store().entries());
  else if (k == "prepack.shared_bytes")
    *value = static_cast<int64_t>(e.prepack_store().bytes());
  else if (k == "prepack.bytes_in_use")
    *value = static_cast<int64_t>(e.prepack_allocator()->bytes_in_use());
  else if (k.rfind("ep.", 0) == 0 && k.rfind('.') > 3) {
    // "ep.<EP name>.<counter>": EP names may hold dots, the counter does not.
    const size_t dot = k.rfind('.');
    const std::string ep = k.substr(3, dot - 3), counter = k.substr(dot + 1);
    const nxrt::EpFactory* f = e.FindFactory(ep);
    if (f == nullptr) {
      e.PreloadDefaultCpu();  // the CPU EP's library loads on first use
      f = e.FindFactory(ep);
    }
    if (f == nullptr) return MakeStatus(NX_NOT_FOUND, "no registered EP named '" + ep + "'");
    if (counter == "abi_version")
      *value = static_cast<int64_t>(f->raw->version);
    else if (counter == "device_blocks_alive")
      *value = static_cast<int64_t>(f->live_device_blocks());
    else if (counter == "ort_api_level" && nxrt::ort::IsWrappedFactory(f->raw))
      *value = static_cast<int64_t>(nxrt::ort::OrtApiLevelOf(f->raw));
    else if (counter == "ort_unimplemented_calls" && nxrt::ort::IsWrappedFactory(f->raw)) {
      int64_t total = 0;
      for (const auto& [slot, n] : nxrt::ort::UnimplementedCallCounts(f->raw))
        total += static_cast<int64_t>(n);
      *value = total;
    } else
      return MakeStatus(NX_NOT_FOUND, "unknown env statistic '" + k + "'");
  } else
    return MakeStatus(NX_NOT_FOUND, "unknown env statistic '" + k + "'");
  return nullptr;
}

NxStatus* NxEnv_GetEpMemoryInfo(NxEnv* env, const char* ep_name, const NxMemoryInfo** memory) {
  NX_REQUIRE(env);
  NX_REQUIRE(ep_name);
  NX_REQUIRE(memory);
  return CatchAsStatus([&] {
    nxrt::EpFactory* f = env->env->FindFactory(ep_name);
    if (f == nullptr) {
      nxrt::EpFactory* cpu = env->env->DefaultCpuFactory();
      if (strcasecmp(cpu->name.c_str(), ep_name) == 0) f = cpu;
    }
    NXRT_CHECK(f != nullptr, NX_NOT_FOUND, std::string("no registered EP named '") + ep_name + "'");
    *memory = f->memory ? f->memory : nxrt::HostMemory();
  });
}

NxStatus* NxEnv_CompileModel(NxEnv* env, const char* model_path, const NxSessionOptions* options,
                             const char* output_path, uint32_t flags, NxProgressFn progress,
                             void* progress_user, size_t* groups_saved) {
  NX_REQUIRE(env);
  NX_REQUIRE(model_path);
  NX_REQUIRE(output_path);
  if ((flags & ~(NX_COMPILE_EXTERNAL_PAYLOADS | NX_COMPILE_KEEP_ORIGINAL_NODES)) != 0)
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "NxEnv_CompileModel: unknown flags " + std::to_string(flags));
  return CatchAsStatus([&] {
    nxrt::CompileModelRequest request;
    request.model_path = model_path;
    request.output_path = output_path;
    request.external_payloads = (flags & NX_COMPILE_EXTERNAL_PAYLOADS) != 0;
    request.keep_original_nodes = (flags & NX_COMPILE_KEEP_ORIGINAL_NODES) != 0;
    env->env->PreloadDefaultCpu();
    const size_t saved = nxrt::CompileModelToFile(
        *env->env, request, options ? options->options : nxrt::SessionOptions(),
        [&](const std::string& line) {
          if (progress != nullptr) progress(progress_user, line.c_str());
        });
    if (groups_saved != nullptr) *groups_saved = saved;
  });
}

NxStatus* NxEnv_GetModelCompatibility(NxEnv* env, const char* model_path, const NxEpDevice* device,
                                      NxCompatibility* result) {
  NX_REQUIRE(env);
  NX_REQUIRE(model_path);
  NX_REQUIRE(device);
  NX_REQUIRE(result);
  return CatchAsStatus([&] { *result = nxrt::ModelCompatibility(model_path, *device); });
}

NxStatus* NxEnv_CreateTensorInMemory(NxEnv* env, const NxMemoryInfo* memory, NxElementType type,
                                     const int64_t* dims, size_t rank, NxValue** value) {
  NX_REQUIRE(env);
  NX_REQUIRE(memory);
  NX_REQUIRE(value);
  if (rank > 0 && dims == nullptr) return MakeStatus(NX_INVALID_ARGUMENT, "dims is null");
  return CatchAsStatus([&] {
    NXRT_CHECK(nxrt::IsKnownElementType(type), NX_INVALID_ARGUMENT, "unknown element type");
    auto v = env->env->AllocateTensor(type, std::span<const int64_t>(dims, rank),
                                      nxrt::InternMemoryInfo(*memory));
    *value = new NxValue(*v);
  });
}

NxStatus* NxEnv_CopyTensors(NxEnv* env, const NxValue* const* src, NxValue* const* dst,
                            size_t count) {
  NX_REQUIRE(env);
  if (count > 0 && (src == nullptr || dst == nullptr))
    return MakeStatus(NX_INVALID_ARGUMENT, "NxEnv_CopyTensors: null array");
  return CatchAsStatus([&] {
    for (size_t i = 0; i < count; ++i) {
      NXRT_CHECK(src[i] != nullptr && dst[i] != nullptr, NX_INVALID_ARGUMENT,
                 "NxEnv_CopyTensors: tensor " + std::to_string(i) + " is null");
      env->env->CopyTensor(*src[i], *dst[i]);
    }
  });
}

const NxMemoryInfo* NxValue_GetMemoryInfo(const NxValue* value) {
  return value ? nxrt::MemoryOf(*value) : nxrt::HostMemory();
}

// ---- Values ----
NxStatus* NxValue_CreateTensor(NxElementType type, const int64_t* dims, size_t rank,
                               NxValue** value) {
  NX_REQUIRE(value);
  if (rank > 0 && dims == nullptr) return MakeStatus(NX_INVALID_ARGUMENT, "dims is null");
  return CatchAsStatus([&] {
    auto v = nxrt::MakeTensor(type, std::span<const int64_t>(dims, rank));
    *value = new NxValue(*v);
  });
}
NxStatus* NxValue_CreateTensorWithData(NxElementType type, const int64_t* dims, size_t rank,
                                       void* data, size_t size, NxValue** value) {
  NX_REQUIRE(value);
  if (rank > 0 && dims == nullptr) return MakeStatus(NX_INVALID_ARGUMENT, "dims is null");
  return CatchAsStatus([&] {
    NXRT_CHECK(nxrt::IsKnownElementType(type), NX_INVALID_ARGUMENT, "unknown element type");
    std::span<const int64_t> shape(dims, rank);
    size_t need = nxrt::StorageBytes(type, nxrt::ElementCount(shape));
    NXRT_CHECK(
        size >= need, NX_INVALID_ARGUMENT,
        "buffer has " + std::to_string(size) + " bytes, the tensor needs " + std::to_string(need));
    NXRT_CHECK(data != nullptr || need == 0, NX_INVALID_ARGUMENT, "data is null");
    auto v = nxrt::WrapTensor(type, shape, data, nullptr);
    *value = new NxValue(*v);
  });
}
NxStatus* NxValue_CreateFromProto(NxValueKind kind, const void* data, size_t size,
                                  NxValue** value) {
  NX_REQUIRE(value);
  if (size > 0) NX_REQUIRE(data);
  return CatchAsStatus([&] { *value = new NxValue(*nxrt::ValueFromProtoBytes(kind, data, size)); });
}

NxStatus* NxValue_CreateSequence(NxElementType element_type, const NxValue* const* elements,
                                 size_t count, NxValue** value) {
  NX_REQUIRE(value);
  if (count > 0) NX_REQUIRE(elements);
  return CatchAsStatus([&] {
    NXRT_CHECK(nxrt::IsKnownElementType(element_type), NX_INVALID_ARGUMENT,
               "unknown element type for a sequence");
    auto seq = std::make_unique<NxValue>();
    seq->kind = NX_VALUE_SEQUENCE;
    seq->sequence_type = element_type;
    for (size_t i = 0; i < count; ++i) {
      NXRT_CHECK(elements[i] != nullptr, NX_INVALID_ARGUMENT,
                 "sequence element " + std::to_string(i) + " is null");
      NXRT_CHECK(elements[i]->kind == NX_VALUE_TENSOR && elements[i]->type == element_type,
                 NX_INVALID_ARGUMENT,
                 "sequence element " + std::to_string(i) + " is not a tensor of " +
                     nxrt::ElementTypeName(element_type));
      seq->elements.push_back(CopyHostValue(*elements[i]));
    }
    *value = seq.release();
  });
}
NxStatus* NxValue_CreateOptional(const NxValue* element, NxValue** value) {
  NX_REQUIRE(value);
  return CatchAsStatus([&] {
    auto opt = std::make_unique<NxValue>();
    opt->kind = NX_VALUE_OPTIONAL;
    if (element != nullptr) opt->contained = CopyHostValue(*element);
    *value = opt.release();
  });
}
void NxValue_Release(NxValue* value) { delete value; }

NxValueKind NxValue_GetKind(const NxValue* v) { return v ? v->kind : NX_VALUE_TENSOR; }
NxElementType NxValue_GetElementType(const NxValue* v) {
  if (!v) return NX_TYPE_UNDEFINED;
  return v->kind == NX_VALUE_SEQUENCE ? v->sequence_type : v->type;
}
void NxValue_GetShape(const NxValue* v, const int64_t** dims, size_t* rank) {
  if (dims) *dims = v ? v->dims.data() : nullptr;
  if (rank) *rank = v ? v->dims.size() : 0;
}
size_t NxValue_GetElementCount(const NxValue* v) { return v ? v->count : 0; }
void* NxValue_GetData(NxValue* v) { return v && v->type != NX_TYPE_STRING ? v->data : nullptr; }
const void* NxValue_GetConstData(const NxValue* v) {
  return v && v->type != NX_TYPE_STRING ? v->data : nullptr;
}
const char* NxValue_GetString(const NxValue* v, size_t i, size_t* size) {
  if (!v || v->type != NX_TYPE_STRING || i >= v->strings.size()) {
    if (size) *size = 0;
    return nullptr;
  }
  if (size) *size = v->strings[i].size();
  return v->strings[i].data();
}
NxStatus* NxValue_SetString(NxValue* v, size_t i, const char* data, size_t size) {
  NX_REQUIRE(v);
  if (v->type != NX_TYPE_STRING) return MakeStatus(NX_INVALID_ARGUMENT, "not a string tensor");
  if (i >= v->strings.size()) return MakeStatus(NX_INVALID_ARGUMENT, "string index out of range");
  if (size > 0) NX_REQUIRE(data);
  return CatchAsStatus([&] { v->strings[i].assign(data ? data : "", size); });
}
size_t NxValue_GetSequenceLength(const NxValue* v) {
  return v && v->kind == NX_VALUE_SEQUENCE ? v->elements.size() : 0;
}
const NxValue* NxValue_GetSequenceElement(const NxValue* v, size_t i) {
  return v && v->kind == NX_VALUE_SEQUENCE && i < v->elements.size() ? v->elements[i].get()
                                                                     : nullptr;
}
bool NxValue_OptionalHasValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL && v->contained;
}
const NxValue* NxValue_GetOptionalValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL ? v->contained.get() : nullptr;
}

}  // extern "C"
