// nxrt.hpp: header-only C++ wrapper of the application C API (nxrt_c_api.h). RAII handles;
// errors become nxrt::Exception carrying the status code and message.
#ifndef NXRT_HPP_
#define NXRT_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nxrt_c_api.h"

namespace nxrt {
// Everything lives in an inline namespace (still nxrt::Env, nxrt::Session, ... to users): the
// runtime has internal types of the same names in namespace nxrt, and in a program linking both
// (the unit tests) the linker would merge their inline member functions (constructors,
// destructors, std::vector instantiations), one silently replacing the other.
inline namespace cxx_api {

class Exception : public std::runtime_error {
 public:
  Exception(NxStatusCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  NxStatusCode code() const { return code_; }

 private:
  NxStatusCode code_;
};

// Throws if `status` is an error (and releases it).
inline void Check(NxStatus* status) {
  if (status == nullptr) return;
  NxStatusCode code = NxStatus_GetCode(status);
  std::string message = NxStatus_GetMessage(status);
  NxStatus_Release(status);
  throw Exception(code, message);
}

namespace detail {
// Move-only owner of a C handle.
template <class T, void (*ReleaseFn)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* p) : p_(p) {}
  Handle(Handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  T* get() const { return p_; }
  T* release() { return std::exchange(p_, nullptr); }
  void reset() {
    if (p_) ReleaseFn(p_);
    p_ = nullptr;
  }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};
}  // namespace detail

using KeyValueList = std::vector<std::pair<std::string, std::string>>;

namespace detail {
template <class D, size_t (*CountFn)(const D*),
          bool (*GetFn)(const D*, size_t, const char**, const char**)>
KeyValueList Pairs(const D* d) {
  KeyValueList out;
  for (size_t i = 0; i < CountFn(d); ++i) {
    const char* k = nullptr;
    const char* v = nullptr;
    if (GetFn(d, i, &k, &v)) out.emplace_back(k, v);
  }
  return out;
}
}  // namespace detail

// A hardware device (borrowed view): discovered (Nx_GetHardwareDevice) or virtual.
class HardwareDevice {
 public:
  explicit HardwareDevice(const NxHardwareDevice* d) : d_(d) {}
  // Every device of this process, discovered once.
  static std::vector<HardwareDevice> All() {
    std::vector<HardwareDevice> out;
    for (size_t i = 0; i < Nx_GetHardwareDeviceCount(); ++i)
      out.emplace_back(Nx_GetHardwareDevice(i));
    return out;
  }
  const NxHardwareDevice* get() const { return d_; }
  NxDeviceType type() const { return NxHardwareDevice_GetType(d_); }
  std::string vendor() const { return NxHardwareDevice_GetVendor(d_); }
  uint32_t vendor_id() const { return NxHardwareDevice_GetVendorId(d_); }
  uint32_t device_id() const { return NxHardwareDevice_GetDeviceId(d_); }
  KeyValueList metadata() const {
    return detail::Pairs<NxHardwareDevice, NxHardwareDevice_GetMetadataCount,
                         NxHardwareDevice_GetMetadata>(d_);
  }
  // The value of `key`, or "" when absent.
  std::string metadata(const std::string& key) const {
    const char* v = NxHardwareDevice_GetMetadataValue(d_, key.c_str());
    return v ? v : "";
  }
  bool is_virtual() const { return metadata("is_virtual") == "1"; }

 private:
  const NxHardwareDevice* d_;
};

// An EP device (borrowed view; valid until its library is unregistered).
class EpDevice {
 public:
  explicit EpDevice(const NxEpDevice* d) : d_(d) {}
  const NxEpDevice* get() const { return d_; }
  std::string ep_name() const { return NxEpDevice_GetEpName(d_); }
  std::string ep_vendor() const { return NxEpDevice_GetEpVendor(d_); }
  std::string library() const { return NxEpDevice_GetLibraryName(d_); }
  HardwareDevice hardware() const { return HardwareDevice(NxEpDevice_GetHardwareDevice(d_)); }
  KeyValueList metadata() const {
    return detail::Pairs<NxEpDevice, NxEpDevice_GetMetadataCount, NxEpDevice_GetMetadata>(d_);
  }
  std::string metadata(const std::string& key) const {
    const char* v = NxEpDevice_GetMetadataValue(d_, key.c_str());
    return v ? v : "";
  }
  KeyValueList options() const {
    return detail::Pairs<NxEpDevice, NxEpDevice_GetOptionCount, NxEpDevice_GetOption>(d_);
  }
  const NxMemoryInfo* memory() const { return NxEpDevice_GetMemoryInfo(d_); }

 private:
  const NxEpDevice* d_;
};

// A request for virtual devices of `type` with target options (see NxVirtualDeviceRequest).
struct VirtualDeviceRequest {
  NxDeviceType type = NX_DEVICE_NPU;
  KeyValueList options;
};

class Env : public detail::Handle<NxEnv, NxEnv_Release> {
 public:
  explicit Env(NxLogLevel level = NX_LOG_WARNING, NxLogFn log_fn = nullptr, void* user = nullptr) {
    NxEnv* e = nullptr;
    Check(NxEnv_Create(level, log_fn, user, &e));
    *this = Env(e);
  }
  void RegisterEpLibrary(const std::string& name, const std::string& path) {
    Check(NxEnv_RegisterEpLibrary(get(), name.c_str(), path.c_str()));
  }
  // Registers a library and asks its factories for virtual devices.
  void RegisterEpLibrary(const std::string& name, const std::string& path,
                         const std::vector<VirtualDeviceRequest>& requests) {
    std::vector<std::vector<NxKeyValue>> kv(requests.size());
    std::vector<NxVirtualDeviceRequest> raw;
    for (size_t i = 0; i < requests.size(); ++i) {
      for (const auto& [k, v] : requests[i].options) kv[i].push_back({k.c_str(), v.c_str()});
      raw.push_back({requests[i].type, kv[i].data(), kv[i].size()});
    }
    Check(NxEnv_RegisterEpLibraryWithVirtualDevices(get(), name.c_str(), path.c_str(), raw.data(),
                                                    raw.size()));
  }
  // Every EP device of the env (registered libraries, then the default CPU EP).
  std::vector<EpDevice> ep_devices() const {
    size_t n = 0;
    Check(NxEnv_GetEpDeviceCount(get(), &n));
    std::vector<EpDevice> out;
    for (size_t i = 0; i < n; ++i) out.emplace_back(NxEnv_GetEpDevice(get(), i));
    return out;
  }
  void UnregisterEpLibrary(const std::string& name) {
    Check(NxEnv_UnregisterEpLibrary(get(), name.c_str()));
  }
  // Compiles `model_path` for the EPs `options` selects and writes it to `output_path` with
  // each exported group as an EPContext node (NxEnv_CompileModel); returns how many. `progress`
  // (may be empty) gets one line per group.
  inline size_t CompileModel(const std::string& model_path, const class SessionOptions* options,
                             const std::string& output_path,
                             uint32_t flags = NX_COMPILE_EMBED_PAYLOADS,
                             const std::function<void(const std::string&)>& progress = {});
  // Whether a compiled model's payloads for `device`'s EP run on it (NxEnv_GetModelCompatibility).
  NxCompatibility model_compatibility(const std::string& model_path, const EpDevice& device) {
    NxCompatibility c = NX_COMPATIBILITY_NOT_APPLICABLE;
    Check(NxEnv_GetModelCompatibility(get(), model_path.c_str(), device.get(), &c));
    return c;
  }
  // The memory the named EP computes in (host memory for CPU-like EPs).
  const NxMemoryInfo* ep_memory(const std::string& ep_name) {
    const NxMemoryInfo* m = nullptr;
    Check(NxEnv_GetEpMemoryInfo(get(), ep_name.c_str(), &m));
    return m;
  }
  // An env-wide counter by name (see NxEnv_GetStatistic).
  int64_t statistic(const std::string& key) const {
    int64_t v = 0;
    Check(NxEnv_GetStatistic(get(), key.c_str(), &v));
    return v;
  }

 private:
  explicit Env(NxEnv* e) : Handle(e) {}
};

class SessionOptions : public detail::Handle<NxSessionOptions, NxSessionOptions_Release> {
 public:
  SessionOptions() {
    NxSessionOptions* o = nullptr;
    Check(NxSessionOptions_Create(&o));
    *this = SessionOptions(o);
  }
  SessionOptions& SetIntraOpThreads(int n) {
    Check(NxSessionOptions_SetIntraOpThreads(get(), n));
    return *this;
  }
  SessionOptions& SetLogLevel(NxLogLevel level) {
    Check(NxSessionOptions_SetLogLevel(get(), level));
    return *this;
  }
  SessionOptions& SetOptimizationLevel(int level) {
    Check(NxSessionOptions_SetOptimizationLevel(get(), level));
    return *this;
  }
  SessionOptions& SetConfig(const std::string& key, const std::string& value) {
    Check(NxSessionOptions_SetConfig(get(), key.c_str(), value.c_str()));
    return *this;
  }
  SessionOptions& AppendEp(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& options = {}) {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : options) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    Check(NxSessionOptions_AppendEp(get(), name.c_str(), keys.data(), values.data(), keys.size()));
    return *this;
  }
  // One EP for some of its EP devices; `options` override the devices' defaults.
  SessionOptions& AppendEpDevices(const std::vector<EpDevice>& devices,
                                  const KeyValueList& options = {}) {
    std::vector<const NxEpDevice*> raw;
    for (const EpDevice& d : devices) raw.push_back(d.get());
    std::vector<NxKeyValue> kv;
    for (const auto& [k, v] : options) kv.push_back({k.c_str(), v.c_str()});
    Check(NxSessionOptions_AppendEpDevices(get(), raw.data(), raw.size(), kv.data(), kv.size()));
    return *this;
  }
  SessionOptions& SetEpSelectionPolicy(NxEpSelectionPolicy policy) {
    Check(NxSessionOptions_SetEpSelectionPolicy(get(), policy));
    return *this;
  }
  SessionOptions& SetEpSelectionCallback(NxEpSelectionFn fn, void* user) {
    Check(NxSessionOptions_SetEpSelectionCallback(get(), fn, user));
    return *this;
  }
  SessionOptions& SetFallback(NxFallbackMode mode) {
    Check(NxSessionOptions_SetFallback(get(), mode));
    return *this;
  }
  // At most `bytes` of tensor memory held by the session's runs (NxSessionOptions_SetMemoryLimit).
  SessionOptions& SetMemoryLimit(size_t bytes) {
    Check(NxSessionOptions_SetMemoryLimit(get(), bytes));
    return *this;
  }
  // Record a profile, written as Chrome trace JSON to `path` (see NxSessionOptions_SetProfileFile).
  SessionOptions& SetProfileFile(const std::string& path) {
    Check(NxSessionOptions_SetProfileFile(get(), path.c_str()));
    return *this;
  }

 private:
  explicit SessionOptions(NxSessionOptions* o) : Handle(o) {}
};

class Value : public detail::Handle<NxValue, NxValue_Release> {
 public:
  Value() = default;
  explicit Value(NxValue* v) : Handle(v) {}

  static Value Tensor(NxElementType type, std::span<const int64_t> dims) {
    NxValue* v = nullptr;
    Check(NxValue_CreateTensor(type, dims.data(), dims.size(), &v));
    return Value(v);
  }
  // Wraps `data` without copying; the buffer must outlive the value.
  static Value WrapTensor(NxElementType type, std::span<const int64_t> dims, void* data,
                          size_t bytes) {
    NxValue* v = nullptr;
    Check(NxValue_CreateTensorWithData(type, dims.data(), dims.size(), data, bytes, &v));
    return Value(v);
  }
  // A sequence of copies of `elements` (host tensors of `element_type`).
  static Value Sequence(NxElementType element_type, const std::vector<const Value*>& elements) {
    std::vector<const NxValue*> raw;
    for (const Value* e : elements) raw.push_back(e->get());
    NxValue* v = nullptr;
    Check(NxValue_CreateSequence(element_type, raw.data(), raw.size(), &v));
    return Value(v);
  }
  // An optional holding a copy of `element`, or empty when it is null.
  static Value Optional(const Value* element) {
    NxValue* v = nullptr;
    Check(NxValue_CreateOptional(element ? element->get() : nullptr, &v));
    return Value(v);
  }
  // A tensor in `memory` (e.g. an EP's device memory, see Env::ep_memory).
  static Value InMemory(class Env& env, const NxMemoryInfo* memory, NxElementType type,
                        std::span<const int64_t> dims);
  static Value FromProto(NxValueKind kind, const void* data, size_t size) {
    NxValue* v = nullptr;
    Check(NxValue_CreateFromProto(kind, data, size, &v));
    return Value(v);
  }

  NxValueKind kind() const { return NxValue_GetKind(get()); }
  NxElementType type() const { return NxValue_GetElementType(get()); }
  std::vector<int64_t> shape() const {
    const int64_t* dims = nullptr;
    size_t rank = 0;
    NxValue_GetShape(get(), &dims, &rank);
    return std::vector<int64_t>(dims, dims + rank);
  }
  size_t size() const { return NxValue_GetElementCount(get()); }
  const NxMemoryInfo* memory() const { return NxValue_GetMemoryInfo(get()); }
  // Copies this tensor's contents into `dst` (any memories).
  void CopyTo(class Env& env, Value& dst) const;
  template <class T>
  T* data() {
    return static_cast<T*>(NxValue_GetData(get()));
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(NxValue_GetConstData(get()));
  }
  std::string_view string(size_t i) const {
    size_t n = 0;
    const char* p = NxValue_GetString(get(), i, &n);
    return {p ? p : "", n};
  }
  void set_string(size_t i, std::string_view s) {
    Check(NxValue_SetString(get(), i, s.data(), s.size()));
  }
};

// What bounds a run: a terminate flag any thread may set, and a time limit (NxRunOptions).
class RunOptions : public detail::Handle<NxRunOptions, NxRunOptions_Release> {
 public:
  RunOptions() {
    NxRunOptions* o = nullptr;
    Check(NxRunOptions_Create(&o));
    *this = RunOptions(o);
  }
  // Thread-safe: stops every run using these options (they fail with NX_CANCELLED).
  RunOptions& SetTerminate(bool terminate) {
    Check(NxRunOptions_SetTerminate(get(), terminate));
    return *this;
  }
  // Time limit per run in seconds; 0 = none.
  RunOptions& SetTimeout(double seconds) {
    Check(NxRunOptions_SetTimeout(get(), seconds));
    return *this;
  }

 private:
  explicit RunOptions(NxRunOptions* o) : Handle(o) {}
};

struct AssignmentReport;

class Session : public detail::Handle<NxSession, NxSession_Release> {
 public:
  Session(Env& env, const std::string& path, const SessionOptions* options = nullptr) {
    NxSession* s = nullptr;
    Check(
        NxSession_CreateFromFile(env.get(), path.c_str(), options ? options->get() : nullptr, &s));
    *this = Session(s);
  }
  Session(Env& env, const void* data, size_t size, const SessionOptions* options = nullptr) {
    NxSession* s = nullptr;
    Check(
        NxSession_CreateFromBuffer(env.get(), data, size, options ? options->get() : nullptr, &s));
    *this = Session(s);
  }

  size_t input_count() const { return NxSession_GetInputCount(get()); }
  size_t output_count() const { return NxSession_GetOutputCount(get()); }
  std::string input_name(size_t i) const { return NxSession_GetInputName(get(), i); }
  std::string output_name(size_t i) const { return NxSession_GetOutputName(get(), i); }
  NxTypeInfo input_type(size_t i) const {
    NxTypeInfo info{};
    Check(NxSession_GetInputTypeInfo(get(), i, &info));
    return info;
  }
  NxTypeInfo output_type(size_t i) const {
    NxTypeInfo info{};
    Check(NxSession_GetOutputTypeInfo(get(), i, &info));
    return info;
  }
  std::string input_dim_name(size_t i, size_t dim) const {
    return NxSession_GetInputDimName(get(), i, dim);
  }
  std::string output_dim_name(size_t i, size_t dim) const {
    return NxSession_GetOutputDimName(get(), i, dim);
  }
  // Model-level facts ("producer_name", "graph_name", "version", ... see NxSession_GetModelInfo);
  // "" for an unknown key.
  std::string model_info(const std::string& key) const {
    const char* v = NxSession_GetModelInfo(get(), key.c_str());
    return v ? v : "";
  }
  // The model's metadata_props.
  KeyValueList custom_metadata() const {
    return detail::Pairs<NxSession, NxSession_GetCustomMetadataCount, NxSession_GetCustomMetadata>(
        get());
  }
  // Every value of the main graph with its static type (declared or inferred at load).
  size_t value_count() const { return NxSession_GetValueCount(get()); }
  std::string value_name(size_t i) const {
    const char* name = NxSession_GetValueName(get(), i);
    return name ? name : "";
  }
  NxTypeInfo value_type(size_t i) const {
    NxTypeInfo info{};
    Check(NxSession_GetValueTypeInfo(get(), i, &info));
    return info;
  }

  // Runs with named inputs; returns the named outputs (all outputs when `outputs` is empty).
  std::vector<Value> Run(const std::vector<std::string>& input_names,
                         const std::vector<const Value*>& inputs,
                         std::vector<std::string> outputs = {}) {
    return Run(nullptr, input_names, inputs, std::move(outputs));
  }
  // The same, bounded by `run_options` (terminate flag, time limit).
  std::vector<Value> Run(const RunOptions& run_options, const std::vector<std::string>& input_names,
                         const std::vector<const Value*>& inputs,
                         std::vector<std::string> outputs = {}) {
    return Run(run_options.get(), input_names, inputs, std::move(outputs));
  }
  // The same, with output i handed over in `memories[i]` (null = host memory; see
  // NxSession_RunWithOutputMemories): an output produced there stays there, with no copy.
  std::vector<Value> RunToMemories(const RunOptions* run_options,
                                   const std::vector<std::string>& input_names,
                                   const std::vector<const Value*>& inputs,
                                   std::vector<std::string> outputs,
                                   const std::vector<const NxMemoryInfo*>& memories) {
    if (outputs.empty())
      for (size_t i = 0; i < output_count(); ++i) outputs.push_back(output_name(i));
    if (memories.size() != outputs.size())
      throw Exception(NX_INVALID_ARGUMENT, "RunToMemories: one memory per output");
    return Run(run_options ? run_options->get() : nullptr, input_names, inputs, std::move(outputs),
               memories.data());
  }

 private:
  std::vector<Value> Run(const NxRunOptions* run_options,
                         const std::vector<std::string>& input_names,
                         const std::vector<const Value*>& inputs, std::vector<std::string> outputs,
                         const NxMemoryInfo* const* memories = nullptr) {
    if (outputs.empty())
      for (size_t i = 0; i < output_count(); ++i) outputs.push_back(output_name(i));
    std::vector<const char*> in_names, out_names;
    std::vector<const NxValue*> in_values;
    for (size_t i = 0; i < input_names.size(); ++i) {
      in_names.push_back(input_names[i].c_str());
      in_values.push_back(inputs[i]->get());
    }
    for (const auto& n : outputs) out_names.push_back(n.c_str());
    std::vector<NxValue*> raw(outputs.size(), nullptr);
    Check(NxSession_RunWithOutputMemories(get(), run_options, in_names.data(), in_values.data(),
                                          in_values.size(), out_names.data(), out_names.size(),
                                          memories, raw.data()));
    std::vector<Value> result;
    for (NxValue* v : raw) result.emplace_back(v);
    return result;
  }

 public:
  // Runs with outputs bound to caller tensors (`outputs[i]`, host or device memory) where given;
  // NULL slots are filled with new host values.
  void RunInto(const std::vector<std::string>& input_names, const std::vector<const Value*>& inputs,
               const std::vector<std::string>& output_names, std::vector<Value>& outputs) {
    std::vector<const char*> in_names, out_names;
    std::vector<const NxValue*> in_values;
    for (size_t i = 0; i < input_names.size(); ++i) {
      in_names.push_back(input_names[i].c_str());
      in_values.push_back(inputs[i]->get());
    }
    for (const auto& n : output_names) out_names.push_back(n.c_str());
    outputs.resize(output_names.size());
    std::vector<NxValue*> raw;
    for (Value& v : outputs) raw.push_back(v.get());
    Check(NxSession_Run(get(), in_names.data(), in_values.data(), in_values.size(),
                        out_names.data(), out_names.size(), raw.data()));
    for (size_t i = 0; i < outputs.size(); ++i)
      if (!outputs[i]) outputs[i] = Value(raw[i]);
  }

  size_t ep_count() const { return NxSession_GetEpCount(get()); }
  std::string ep_name(size_t i) const { return NxSession_GetEpName(get(), i); }
  size_t ep_node_count(size_t i) const { return NxSession_GetEpNodeCount(get(), i); }
  // The EP devices EP `i` runs on.
  std::vector<EpDevice> ep_devices(size_t i) const {
    std::vector<EpDevice> out;
    for (size_t d = 0; d < NxSession_GetEpDeviceCount(get(), i); ++d)
      out.emplace_back(NxSession_GetEpDevice(get(), i, d));
    return out;
  }
  // A set-up counter by name (see NxSession_GetStatistic), e.g. "copies".
  int64_t statistic(const std::string& key) const {
    int64_t v = 0;
    Check(NxSession_GetStatistic(get(), key.c_str(), &v));
    return v;
  }
  // Where every node runs and why nodes left the preferred EP (see NxAssignmentReport).
  inline struct AssignmentReport assignment_report() const;
  // Writes the profile file now and stops recording (see NxSession_EndProfiling).
  void EndProfiling() { Check(NxSession_EndProfiling(get())); }

 private:
  explicit Session(NxSession* s) : Handle(s) {}
};

// ---- Placement report (a copy of NxAssignmentReport's contents) ----
struct AssignedNode {
  std::string name, domain, op_type;
  std::vector<std::string> inputs, outputs;  // value names ("" = an omitted optional one)
};
struct AssignedSubgraph {
  std::string graph;  // "" = main graph; else the control-flow body's path
  std::string ep_name;
  std::string kind;  // "kernels" or "fused"
  std::vector<HardwareDevice> devices;
  std::vector<AssignedNode> nodes;
  std::string stream;  // the stream its kernels are queued on; "" = synchronous (ABI 13)
};
struct NodeFallback {
  std::string graph;
  AssignedNode node;
  std::string preferred_ep;
  NxFallbackReason reason = NX_FALLBACK_NO_KERNEL;
  std::string reason_name, detail;
  std::string assigned_ep;  // "" when no EP can run it (dry run only)
};
// A value crossing from one memory to another (see NxAssignmentReport_GetCopy).
struct ReportCopy {
  std::string graph;  // "" = main graph; else the control-flow body's path
  std::string value;
  std::string from_ep;  // "" = a graph input, initializer or outer-scope value (host memory)
  std::string to_ep;    // "" = a graph output (delivered to the host)
  std::string from_memory, to_memory;  // "SimDevice (npu 1, device memory)"
};
struct AssignmentReport {
  std::vector<AssignedSubgraph> subgraphs;
  std::vector<NodeFallback> fallbacks;
  std::vector<ReportCopy> copies;

  static AssignmentReport From(const NxAssignmentReport* r) {
    AssignmentReport out;
    for (size_t i = 0; i < NxAssignmentReport_GetSubgraphCount(r); ++i) {
      AssignedSubgraph sg;
      sg.graph = NxAssignmentReport_GetSubgraphGraph(r, i);
      sg.ep_name = NxAssignmentReport_GetSubgraphEpName(r, i);
      sg.kind = NxAssignmentReport_GetSubgraphKind(r, i);
      sg.stream = NxAssignmentReport_GetSubgraphStream(r, i);
      for (size_t d = 0; d < NxAssignmentReport_GetSubgraphDeviceCount(r, i); ++d)
        sg.devices.emplace_back(NxAssignmentReport_GetSubgraphDevice(r, i, d));
      for (size_t n = 0; n < NxAssignmentReport_GetSubgraphNodeCount(r, i); ++n) {
        const char *name = nullptr, *domain = nullptr, *op = nullptr;
        Check(NxAssignmentReport_GetSubgraphNode(r, i, n, &name, &domain, &op));
        AssignedNode node{name, domain, op, {}, {}};
        for (size_t k = 0; k < NxAssignmentReport_GetNodeInputCount(r, i, n); ++k)
          node.inputs.emplace_back(NxAssignmentReport_GetNodeInput(r, i, n, k));
        for (size_t k = 0; k < NxAssignmentReport_GetNodeOutputCount(r, i, n); ++k)
          node.outputs.emplace_back(NxAssignmentReport_GetNodeOutput(r, i, n, k));
        sg.nodes.push_back(std::move(node));
      }
      out.subgraphs.push_back(std::move(sg));
    }
    for (size_t i = 0; i < NxAssignmentReport_GetFallbackCount(r); ++i) {
      NxFallbackInfo f{};
      Check(NxAssignmentReport_GetFallback(r, i, &f));
      out.fallbacks.push_back({f.graph,
                               {f.node_name, f.node_domain, f.node_op_type, {}, {}},
                               f.preferred_ep,
                               f.reason,
                               f.reason_name,
                               f.detail,
                               f.assigned_ep});
    }
    for (size_t i = 0; i < NxAssignmentReport_GetCopyCount(r); ++i) {
      const char *graph = nullptr, *value = nullptr, *from = nullptr, *to = nullptr;
      Check(NxAssignmentReport_GetCopy(r, i, &graph, &value, &from, &to));
      const char *from_memory = nullptr, *to_memory = nullptr;
      Check(NxAssignmentReport_GetCopyMemories(r, i, &from_memory, &to_memory));
      out.copies.push_back({graph, value, from, to, from_memory, to_memory});
    }
    return out;
  }
};

inline AssignmentReport Session::assignment_report() const {
  return AssignmentReport::From(NxSession_GetAssignmentReport(get()));
}

// Dry run: the placement a session with these options would make, without creating kernels.
inline AssignmentReport PlanPlacement(Env& env, const std::string& path,
                                      const SessionOptions* options = nullptr) {
  NxAssignmentReport* r = nullptr;
  Check(
      NxEnv_PlanPlacementFromFile(env.get(), path.c_str(), options ? options->get() : nullptr, &r));
  std::unique_ptr<NxAssignmentReport, void (*)(NxAssignmentReport*)> hold(
      r, &NxAssignmentReport_Release);
  return AssignmentReport::From(r);
}
inline AssignmentReport PlanPlacement(Env& env, const void* data, size_t size,
                                      const SessionOptions* options = nullptr) {
  NxAssignmentReport* r = nullptr;
  Check(
      NxEnv_PlanPlacementFromBuffer(env.get(), data, size, options ? options->get() : nullptr, &r));
  std::unique_ptr<NxAssignmentReport, void (*)(NxAssignmentReport*)> hold(
      r, &NxAssignmentReport_Release);
  return AssignmentReport::From(r);
}

inline Value Value::InMemory(Env& env, const NxMemoryInfo* memory, NxElementType type,
                             std::span<const int64_t> dims) {
  NxValue* v = nullptr;
  Check(NxEnv_CreateTensorInMemory(env.get(), memory, type, dims.data(), dims.size(), &v));
  return Value(v);
}

inline size_t Env::CompileModel(const std::string& model_path, const SessionOptions* options,
                                const std::string& output_path, uint32_t flags,
                                const std::function<void(const std::string&)>& progress) {
  size_t saved = 0;
  NxProgressFn relay = [](void* user, const char* line) {
    (*static_cast<const std::function<void(const std::string&)>*>(user))(line);
  };
  Check(NxEnv_CompileModel(get(), model_path.c_str(), options ? options->get() : nullptr,
                           output_path.c_str(), flags, progress ? relay : nullptr,
                           const_cast<std::function<void(const std::string&)>*>(&progress),
                           &saved));
  return saved;
}

inline void Value::CopyTo(Env& env, Value& dst) const {
  const NxValue* src = get();
  NxValue* d = dst.get();
  Check(NxEnv_CopyTensors(env.get(), &src, &d, 1));
}

}  // namespace cxx_api
}  // namespace nxrt

#endif  // NXRT_HPP_
