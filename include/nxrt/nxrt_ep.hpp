// nxrt_ep.hpp: header-only C++ SDK for EP authors, on top of nxrt_ep_api.h.
//
// It absorbs the boilerplate of the C ABI: C++ exceptions become NxStatus in one place, host
// objects get small value wrappers, and a kernel is a class with a constructor (reads attributes
// once per session) and Compute (runs the node). Nothing here is required: a plugin may use the
// C ABI directly.
//
// Use: call nxrt::ep::SetHost(host) first thing in NxrtCreateEpFactories; then write kernels as
//   class MyAdd : public nxrt::ep::Kernel {
//    public:
//     explicit MyAdd(const nxrt::ep::KernelInfo& info) { ... read attributes ... }
//     void Compute(nxrt::ep::KernelContext& ctx) override { ... }
//   };
// and register them with nxrt::ep::KernelDefBuilder("Add").Versions(14).Build<MyAdd>(registry).
// A kernel that pre-packs constant weights derives from PrePackingKernel instead (see there).
// Sequences and optionals (ABI version 4): a kernel whose definition sets ValueKinds() reads such
// inputs through KernelContext::input_value (a ValueView) and produces them with
// SetOutputSequence / SetOutputOptional / SetOutputValue; tensors it creates for them come from
// KernelContext::CreateTensor.
// Allocator, DataTransferBase and MemoryInfo help an EP that brings its own memory.
#ifndef NXRT_EP_HPP_
#define NXRT_EP_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "nxrt_ep_api.h"

namespace nxrt::ep {

// ---- Host table -------------------------------------------------------------------------------

inline const NxHostApi*& HostSlot() {
  static const NxHostApi* host = nullptr;
  return host;
}
inline void SetHost(const NxHostApi* host) { HostSlot() = host; }
inline const NxHostApi& Host() { return *HostSlot(); }

// ---- Profiling clock (host ABI version 6; 0 on older hosts) ----------------------------------
inline uint64_t ProfilerNowNs() { return Host().version >= 6 ? Host().Profiler_NowNs() : 0; }

// ---- Errors -----------------------------------------------------------------------------------

// Thrown inside a plugin; converted to an NxStatus at the ABI boundary by the adapters below.
class Error : public std::runtime_error {
 public:
  Error(NxStatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  NxStatusCode code() const { return code_; }

 private:
  NxStatusCode code_;
};

[[noreturn]] inline void Fail(NxStatusCode code, const std::string& message) {
  throw Error(code, message);
}

// NXRT_EP_ENFORCE(cond, "message " + std::to_string(x)): invalid-argument error unless cond.
#define NXRT_EP_ENFORCE(cond, message)                                        \
  do {                                                                        \
    if (!(cond)) ::nxrt::ep::Fail(NX_INVALID_ARGUMENT, std::string(message)); \
  } while (0)

// Members added in a later ABI version may only be read when the host has them: an older host's
// table simply ends before them.
inline void RequireHostVersion(uint32_t version, const char* what) {
  if (Host().version < version) {
    Fail(NX_NOT_IMPLEMENTED, std::string(what) + " needs host ABI version " +
                                 std::to_string(version) + ", the host has version " +
                                 std::to_string(Host().version));
  }
}

inline const char* ValueKindName(NxValueKind kind) {
  switch (kind) {
    case NX_VALUE_TENSOR:
      return "tensor";
    case NX_VALUE_SEQUENCE:
      return "sequence";
    case NX_VALUE_OPTIONAL:
      return "optional";
    default:
      return "unknown value";
  }
}

// Runs `fn` and turns any exception into a status (NULL on success).
template <class Fn>
NxStatus* Guard(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return Host().CreateStatus(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return Host().CreateStatus(NX_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Host().CreateStatus(NX_RUNTIME_ERROR, e.what());
  } catch (...) {
    return Host().CreateStatus(NX_RUNTIME_ERROR, "unknown exception in EP");
  }
}

// Throws if a host call returned an error status.
inline void ThrowIfError(NxStatus* status) {
  if (status == nullptr) return;
  std::string message = Host().Status_GetMessage(status);
  NxStatusCode code = Host().Status_GetCode(status);
  Host().ReleaseStatus(status);
  throw Error(code, message);
}

// ---- Element types ----------------------------------------------------------------------------

inline const char* ElementTypeName(NxElementType type) {
  switch (type) {
    case NX_TYPE_FLOAT:
      return "float";
    case NX_TYPE_UINT8:
      return "uint8";
    case NX_TYPE_INT8:
      return "int8";
    case NX_TYPE_UINT16:
      return "uint16";
    case NX_TYPE_INT16:
      return "int16";
    case NX_TYPE_INT32:
      return "int32";
    case NX_TYPE_INT64:
      return "int64";
    case NX_TYPE_STRING:
      return "string";
    case NX_TYPE_BOOL:
      return "bool";
    case NX_TYPE_FLOAT16:
      return "float16";
    case NX_TYPE_DOUBLE:
      return "double";
    case NX_TYPE_UINT32:
      return "uint32";
    case NX_TYPE_UINT64:
      return "uint64";
    case NX_TYPE_COMPLEX64:
      return "complex64";
    case NX_TYPE_COMPLEX128:
      return "complex128";
    case NX_TYPE_BFLOAT16:
      return "bfloat16";
    case NX_TYPE_FLOAT8E4M3FN:
      return "float8e4m3fn";
    case NX_TYPE_FLOAT8E4M3FNUZ:
      return "float8e4m3fnuz";
    case NX_TYPE_FLOAT8E5M2:
      return "float8e5m2";
    case NX_TYPE_FLOAT8E5M2FNUZ:
      return "float8e5m2fnuz";
    case NX_TYPE_UINT4:
      return "uint4";
    case NX_TYPE_INT4:
      return "int4";
    case NX_TYPE_FLOAT4E2M1:
      return "float4e2m1";
    case NX_TYPE_FLOAT8E8M0:
      return "float8e8m0";
    case NX_TYPE_UINT2:
      return "uint2";
    case NX_TYPE_INT2:
      return "int2";
    default:
      return "undefined";
  }
}

// Bytes of `count` elements of `type` (sub-byte types round up; 0 for strings).
inline size_t ElementBytes(NxElementType type, size_t count) {
  switch (type) {
    case NX_TYPE_FLOAT:
    case NX_TYPE_INT32:
    case NX_TYPE_UINT32:
      return 4 * count;
    case NX_TYPE_UINT8:
    case NX_TYPE_INT8:
    case NX_TYPE_BOOL:
    case NX_TYPE_FLOAT8E4M3FN:
    case NX_TYPE_FLOAT8E4M3FNUZ:
    case NX_TYPE_FLOAT8E5M2:
    case NX_TYPE_FLOAT8E5M2FNUZ:
    case NX_TYPE_FLOAT8E8M0:
      return count;
    case NX_TYPE_UINT16:
    case NX_TYPE_INT16:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
      return 2 * count;
    case NX_TYPE_INT64:
    case NX_TYPE_UINT64:
    case NX_TYPE_DOUBLE:
    case NX_TYPE_COMPLEX64:
      return 8 * count;
    case NX_TYPE_COMPLEX128:
      return 16 * count;
    case NX_TYPE_UINT4:
    case NX_TYPE_INT4:
    case NX_TYPE_FLOAT4E2M1:
      return (count + 1) / 2;
    case NX_TYPE_UINT2:
    case NX_TYPE_INT2:
      return (count + 3) / 4;
    default:
      return 0;
  }
}

// Whether two memory descriptions name the same memory.
inline bool SameMemory(const NxMemoryInfo* a, const NxMemoryInfo* b) {
  return Host().MemoryInfo_AreEqual(a, b);
}

// ---- Values -----------------------------------------------------------------------------------

// A read-only tensor borrowed from the host.
class ConstTensor {
 public:
  ConstTensor() = default;
  explicit ConstTensor(const NxValue* value) : value_(value) {}

  bool valid() const { return value_ != nullptr; }
  const NxValue* handle() const { return value_; }
  NxValueKind kind() const { return Host().Value_GetKind(value_); }
  NxElementType type() const { return Host().Value_GetElementType(value_); }
  std::span<const int64_t> shape() const {
    const int64_t* dims = nullptr;
    size_t rank = 0;
    Host().Value_GetShape(value_, &dims, &rank);
    return {dims, rank};
  }
  std::vector<int64_t> shape_vector() const {
    auto s = shape();
    return {s.begin(), s.end()};
  }
  size_t rank() const { return shape().size(); }
  int64_t dim(size_t i) const { return shape()[i]; }
  size_t size() const { return Host().Value_GetElementCount(value_); }
  const void* raw() const { return Host().Value_GetData(value_); }
  // Where the data lives (host memory, or an EP's device memory).
  const NxMemoryInfo* memory() const { return Host().Value_GetMemoryInfo(value_); }
  size_t bytes() const;
  template <class T>
  const T* data() const {
    return static_cast<const T*>(Host().Value_GetData(value_));
  }
  std::string_view string(size_t index) const {
    size_t n = 0;
    const char* p = Host().Value_GetString(value_, index, &n);
    return {p, n};
  }

 protected:
  const NxValue* value_ = nullptr;
};

inline size_t ConstTensor::bytes() const { return ElementBytes(type(), size()); }

// A tensor the kernel allocated as an output; writable.
class Tensor : public ConstTensor {
 public:
  Tensor() = default;
  explicit Tensor(NxValue* value) : ConstTensor(value), mutable_(value) {}
  NxValue* mutable_handle() const { return mutable_; }
  void* mutable_raw() const { return Host().Value_GetData(mutable_); }
  template <class T>
  T* data() const {
    return static_cast<T*>(Host().Value_GetData(mutable_));
  }
  void set_string(size_t index, std::string_view s) const {
    ThrowIfError(Host().Value_SetString(mutable_, index, s.data(), s.size()));
  }

 private:
  NxValue* mutable_ = nullptr;
};

// A value of any kind (tensor, sequence of tensors, optional) borrowed from the host, as a kernel
// whose definition accepts sequences or optionals (KernelDefBuilder::ValueKinds) receives it.
// The accessors of one kind fail with a message when the value is of another kind. The tensors
// inside are shared between values: read them, never write them.
class ValueView {
 public:
  ValueView() = default;
  explicit ValueView(const NxValue* value) : value_(value) {}

  // False for an omitted input.
  bool valid() const { return value_ != nullptr; }
  const NxValue* handle() const { return value_; }
  NxValueKind kind() const { return Host().Value_GetKind(checked()); }
  bool is_tensor() const { return kind() == NX_VALUE_TENSOR; }
  bool is_sequence() const { return kind() == NX_VALUE_SEQUENCE; }
  bool is_optional() const { return kind() == NX_VALUE_OPTIONAL; }
  // The element type: the tensor's, the sequence's elements', or that of the optional's tensor
  // (or sequence elements).
  NxElementType type() const { return Host().Value_GetElementType(checked()); }

  // Tensors.
  ConstTensor tensor() const {
    expect(NX_VALUE_TENSOR);
    return ConstTensor(value_);
  }

  // Sequences.
  size_t sequence_length() const {
    expect(NX_VALUE_SEQUENCE);
    return Host().Value_GetSequenceLength(value_);
  }
  ConstTensor element(size_t i) const {
    const size_t n = sequence_length();
    if (i >= n) {
      Fail(NX_INVALID_ARGUMENT, "sequence element " + std::to_string(i) +
                                    " is out of range for a sequence of length " +
                                    std::to_string(n));
    }
    return ConstTensor(Host().Value_GetSequenceElement(value_, i));
  }
  // All element handles, in order (for SetOutputSequence).
  std::vector<const NxValue*> elements() const {
    std::vector<const NxValue*> out(sequence_length());
    for (size_t i = 0; i < out.size(); ++i) out[i] = Host().Value_GetSequenceElement(value_, i);
    return out;
  }

  // Optionals.
  bool has_value() const {
    expect(NX_VALUE_OPTIONAL);
    return Host().Value_OptionalHasValue(value_);
  }
  // The optional's value (a tensor or a sequence); fails for an empty optional.
  ValueView optional_value() const {
    if (!has_value()) Fail(NX_INVALID_ARGUMENT, "the optional value is empty");
    return ValueView(Host().Value_GetOptionalValue(value_));
  }

 private:
  const NxValue* checked() const {
    if (value_ == nullptr) Fail(NX_INVALID_ARGUMENT, "the value is missing (an omitted input)");
    return value_;
  }
  void expect(NxValueKind want) const {
    RequireHostVersion(4, "sequence and optional values");
    const NxValueKind got = kind();
    if (got != want) {
      Fail(NX_INVALID_ARGUMENT,
           std::string("expected a ") + ValueKindName(want) + ", got a " + ValueKindName(got));
    }
  }
  const NxValue* value_ = nullptr;
};

// ---- Graph view -------------------------------------------------------------------------------

class ValueInfoView {
 public:
  explicit ValueInfoView(const NxValueInfo* value) : value_(value) {}
  bool present() const { return value_ != nullptr; }
  const char* name() const { return Host().ValueInfo_GetName(value_); }
  NxValueKind kind() const { return Host().ValueInfo_GetKind(value_); }
  NxElementType type() const {
    return value_ ? Host().ValueInfo_GetElementType(value_) : NX_TYPE_UNDEFINED;
  }
  // The static shape if the rank is known (symbolic dimensions are -1).
  std::optional<std::vector<int64_t>> shape() const {
    const int64_t* dims = nullptr;
    size_t rank = 0;
    if (value_ == nullptr || !Host().ValueInfo_GetShape(value_, &dims, &rank)) return std::nullopt;
    return std::vector<int64_t>(dims, dims + rank);
  }
  // The initializer behind this value, if it is a constant.
  std::optional<ConstTensor> constant() const {
    const NxValue* v = value_ ? Host().ValueInfo_GetConstant(value_) : nullptr;
    if (v == nullptr) return std::nullopt;
    return ConstTensor(v);
  }

 private:
  const NxValueInfo* value_;
};

// What a TYPE_PROTO attribute names (Optional's `type`): the value kind, and the element type of
// the tensor (or of the tensors inside the sequence).
struct ValueTypeInfo {
  NxValueKind kind;
  NxElementType element_type;
};

class NodeView {
 public:
  explicit NodeView(const NxNode* node) : node_(node) {}
  const NxNode* handle() const { return node_; }
  std::string name() const { return Host().Node_GetName(node_); }
  std::string op_type() const { return Host().Node_GetOpType(node_); }
  std::string domain() const { return Host().Node_GetDomain(node_); }
  int opset() const { return Host().Node_GetOpsetVersion(node_); }
  int since_version() const { return Host().Node_GetSinceVersion(node_); }
  size_t input_count() const { return Host().Node_GetInputCount(node_); }
  size_t output_count() const { return Host().Node_GetOutputCount(node_); }
  ValueInfoView input(size_t i) const {
    return ValueInfoView(i < input_count() ? Host().Node_GetInput(node_, i) : nullptr);
  }
  ValueInfoView output(size_t i) const {
    return ValueInfoView(i < output_count() ? Host().Node_GetOutput(node_, i) : nullptr);
  }
  bool has_input(size_t i) const { return input(i).present(); }
  NxElementType input_type(size_t i) const { return input(i).type(); }
  NxElementType output_type(size_t i) const { return output(i).type(); }
  // Constant value of input i (an initializer), if it is one.
  std::optional<ConstTensor> constant_input(size_t i) const { return input(i).constant(); }

  const NxAttribute* attr(const char* name) const { return Host().Node_GetAttribute(node_, name); }
  bool has_attr(const char* name) const { return attr(name) != nullptr; }

  int64_t attr_int(const char* name, int64_t fallback) const {
    const NxAttribute* a = attr(name);
    return a ? Host().Attribute_GetInt(a) : fallback;
  }
  int64_t attr_int(const char* name) const { return Host().Attribute_GetInt(require(name)); }
  float attr_float(const char* name, float fallback) const {
    const NxAttribute* a = attr(name);
    return a ? Host().Attribute_GetFloat(a) : fallback;
  }
  float attr_float(const char* name) const { return Host().Attribute_GetFloat(require(name)); }
  std::string attr_string(const char* name, const std::string& fallback) const {
    const NxAttribute* a = attr(name);
    if (!a) return fallback;
    size_t n = 0;
    const char* p = Host().Attribute_GetString(a, &n);
    return std::string(p, n);
  }
  std::vector<int64_t> attr_ints(const char* name, std::vector<int64_t> fallback = {}) const {
    const NxAttribute* a = attr(name);
    if (!a) return fallback;
    size_t n = 0;
    const int64_t* p = Host().Attribute_GetInts(a, &n);
    return std::vector<int64_t>(p, p + n);
  }
  std::vector<float> attr_floats(const char* name, std::vector<float> fallback = {}) const {
    const NxAttribute* a = attr(name);
    if (!a) return fallback;
    size_t n = 0;
    const float* p = Host().Attribute_GetFloats(a, &n);
    return std::vector<float>(p, p + n);
  }
  std::vector<std::string> attr_strings(const char* name) const {
    std::vector<std::string> out;
    const NxAttribute* a = attr(name);
    if (!a) return out;
    size_t count = Host().Attribute_GetStringCount(a);
    for (size_t i = 0; i < count; ++i) {
      size_t n = 0;
      const char* p = Host().Attribute_GetStringAt(a, i, &n);
      out.emplace_back(p, n);
    }
    return out;
  }
  // A TENSOR attribute, or std::nullopt when the node does not have it. An attribute of that name
  // that holds no tensor (a malformed model: `value` with only `s` set) is an error, not a
  // tensor wrapping NULL.
  std::optional<ConstTensor> attr_tensor(const char* name) const {
    const NxAttribute* a = attr(name);
    if (!a) return std::nullopt;
    const NxValue* t = Host().Attribute_GetTensor(a);
    if (t == nullptr)
      Fail(NX_INVALID_MODEL, describe() + ": attribute '" + name + "' is not a tensor");
    return ConstTensor(t);
  }

  std::vector<ConstTensor> attr_tensors(const char* name) const {
    std::vector<ConstTensor> out;
    const NxAttribute* a = attr(name);
    if (!a) return out;
    for (size_t i = 0, n = Host().Attribute_GetTensorCount(a); i < n; ++i) {
      const NxValue* t = Host().Attribute_GetTensorAt(a, i);
      if (t == nullptr)
        Fail(NX_INVALID_MODEL, describe() + ": attribute '" + name + "' holds a null tensor");
      out.emplace_back(t);
    }
    return out;
  }
  // A TYPE_PROTO attribute (ABI version 4), or std::nullopt when the node does not have it.
  std::optional<ValueTypeInfo> attr_type(const char* name) const {
    const NxAttribute* a = attr(name);
    if (!a) return std::nullopt;
    RequireHostVersion(4, "TYPE_PROTO attributes");
    ValueTypeInfo info{NX_VALUE_TENSOR, NX_TYPE_UNDEFINED};
    if (!Host().Attribute_GetTypeInfo(a, &info.kind, &info.element_type)) {
      Fail(NX_INVALID_MODEL, describe() + ": attribute '" + name + "' is not a type");
    }
    return info;
  }
  // Subgraph of a GRAPH attribute, or NULL.
  const NxGraph* attr_graph(const char* name) const {
    const NxAttribute* a = attr(name);
    return a ? Host().Attribute_GetGraph(a) : nullptr;
  }
  std::vector<const NxGraph*> attr_graphs(const char* name) const {
    std::vector<const NxGraph*> out;
    const NxAttribute* a = attr(name);
    if (!a) return out;
    for (size_t i = 0, n = Host().Attribute_GetGraphCount(a); i < n; ++i)
      out.push_back(Host().Attribute_GetGraphAt(a, i));
    return out;
  }

  // "Conv 'conv1'" for messages.
  std::string describe() const { return op_type() + " node '" + name() + "'"; }

 private:
  const NxAttribute* require(const char* name) const {
    const NxAttribute* a = attr(name);
    if (!a) Fail(NX_INVALID_MODEL, describe() + ": missing required attribute '" + name + "'");
    return a;
  }
  const NxNode* node_;
};

// What a kernel constructor receives.
class KernelInfo : public NodeView {
 public:
  explicit KernelInfo(const NxKernelInfo* info)
      : NodeView(Host().KernelInfo_GetNode(info)), info_(info) {}
  // A session configuration entry, or `fallback`.
  std::string config(const char* key, const std::string& fallback = "") const {
    const char* v = Host().Config_Get(Host().KernelInfo_GetConfig(info_), key);
    return v ? std::string(v) : fallback;
  }
  // The EP this kernel belongs to (cast to the plugin's own EP type).
  NxEp* ep() const { return Host().KernelInfo_GetEp(info_); }
  // The memory the kernel's inputs and outputs live in by default (its device's memory).
  const NxMemoryInfo* memory() const { return Host().KernelInfo_GetMemoryInfo(info_); }
  // The hardware device the node runs on (ABI 12; null before, or for an EP without EP
  // devices).
  const NxHardwareDevice* hardware_device() const {
    return Host().version >= 12 ? Host().KernelInfo_GetHardwareDevice(info_) : nullptr;
  }
  const NxKernelInfo* handle() const { return info_; }

 private:
  const NxKernelInfo* info_;
};

namespace detail {
// The NxKernelContext of the Compute running on this thread (set by the SDK around Compute).
inline NxKernelContext*& CurrentContextSlot() {
  thread_local NxKernelContext* current = nullptr;
  return current;
}
}  // namespace detail

// The context of the Compute running on this thread, or null (outside Compute, and on the
// pool's worker threads inside a parallel_for chunk). Lets helpers deep inside a kernel reach
// the session's threads without passing the context down.
inline NxKernelContext* CurrentKernelContext() { return detail::CurrentContextSlot(); }

// What Compute receives.
class KernelContext {
 public:
  explicit KernelContext(NxKernelContext* ctx) : ctx_(ctx) {}
  NxKernelContext* handle() const { return ctx_; }
  size_t input_count() const { return Host().KernelContext_GetInputCount(ctx_); }
  size_t output_count() const { return Host().KernelContext_GetOutputCount(ctx_); }
  bool has_input(size_t i) const {
    return i < input_count() && Host().KernelContext_GetInput(ctx_, i) != nullptr;
  }
  // Input i as a tensor; throws if it is absent (use has_input or optional_input for optional
  // inputs) or not a tensor (a sequence or optional: use input_value).
  ConstTensor input(size_t i) const {
    const NxValue* v = i < input_count() ? Host().KernelContext_GetInput(ctx_, i) : nullptr;
    if (v == nullptr)
      Fail(NX_INVALID_ARGUMENT, "required input " + std::to_string(i) + " is missing");
    return ConstTensor(ExpectTensor(v, i));
  }
  std::optional<ConstTensor> optional_input(size_t i) const {
    if (!has_input(i)) return std::nullopt;
    return ConstTensor(ExpectTensor(Host().KernelContext_GetInput(ctx_, i), i));
  }
  // Input i of any kind; an invalid view (valid() false) when the input is omitted.
  ValueView input_value(size_t i) const {
    return ValueView(i < input_count() ? Host().KernelContext_GetInput(ctx_, i) : nullptr);
  }
  // Allocate output i with `dims`; the element type defaults to the node's declared type.
  Tensor output(size_t i, std::span<const int64_t> dims,
                NxElementType type = NX_TYPE_UNDEFINED) const {
    NxValue* v = nullptr;
    ThrowIfError(Host().KernelContext_AllocateOutput(ctx_, i, type, dims.data(), dims.size(), &v));
    return Tensor(v);
  }
  Tensor output(size_t i, std::initializer_list<int64_t> dims,
                NxElementType type = NX_TYPE_UNDEFINED) const {
    return output(i, std::span<const int64_t>(dims.begin(), dims.size()), type);
  }
  // A tensor to put into a sequence or optional output (ABI version 4), in the kernel's memory or
  // in host memory; contents undefined. The context owns it until it is handed to an output with
  // one of the SetOutput calls below, and frees it when Compute returns otherwise.
  Tensor CreateTensor(NxElementType type, std::span<const int64_t> dims, bool host = false) const {
    RequireHostVersion(4, "KernelContext::CreateTensor");
    NxValue* v = nullptr;
    ThrowIfError(Host().KernelContext_CreateTensor(ctx_, type, dims.data(), dims.size(), host, &v));
    return Tensor(v);
  }
  Tensor CreateTensor(NxElementType type, std::initializer_list<int64_t> dims,
                      bool host = false) const {
    return CreateTensor(type, std::span<const int64_t>(dims.begin(), dims.size()), host);
  }
  // Output i becomes a sequence of these tensors (inputs, elements of input sequences, optional
  // values or CreateTensor results; shared, not copied). `element_type` matters when empty.
  void SetOutputSequence(size_t i, NxElementType element_type,
                         std::span<const NxValue* const> elements) const {
    RequireHostVersion(4, "KernelContext::SetOutputSequence");
    ThrowIfError(Host().KernelContext_SetOutputSequence(ctx_, i, element_type, elements.data(),
                                                        elements.size()));
  }
  // Output i becomes an optional holding `value` (a tensor or sequence), or an empty one for
  // nullptr.
  void SetOutputOptional(size_t i, const NxValue* value) const {
    RequireHostVersion(4, "KernelContext::SetOutputOptional");
    ThrowIfError(Host().KernelContext_SetOutputOptional(ctx_, i, value));
  }
  // Output i becomes `value` itself (any kind), shared.
  void SetOutputValue(size_t i, const NxValue* value) const {
    RequireHostVersion(4, "KernelContext::SetOutputValue");
    ThrowIfError(Host().KernelContext_SetOutputValue(ctx_, i, value));
  }

  int threads() const { return Host().KernelContext_GetThreadCount(ctx_); }
  // The stream to queue this Compute's work on (ABI 13), or null: then finish before returning
  // (see NxHostApi::KernelContext_GetStream for what queued work may touch).
  NxStream* stream() const {
    return Host().version >= 13 ? Host().KernelContext_GetStream(ctx_) : nullptr;
  }
  // Scratch memory valid until Compute returns (the kernel's memory, or host memory).
  void* scratch(size_t bytes, bool host = false) const {
    void* p = nullptr;
    ThrowIfError(Host().KernelContext_GetScratch(ctx_, bytes, host, &p));
    return p;
  }
  // fn(begin, end) over [0, total) on the session's threads, in chunks of at least `grain`.
  // If fn throws, the remaining chunks are skipped and the first exception is rethrown here
  // (it never crosses the C ABI).
  template <class Fn>
  void parallel_for(size_t total, size_t grain, Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    struct Job {
      F* fn = nullptr;
      std::atomic<bool> failed{false};
      std::exception_ptr error;
      std::mutex mu;
    } job;
    job.fn = &fn;
    auto trampoline = [](void* user, size_t begin, size_t end) {
      Job& j = *static_cast<Job*>(user);
      if (j.failed.load(std::memory_order_relaxed)) return;
      try {
        (*j.fn)(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(j.mu);
        if (!j.error) j.error = std::current_exception();
        j.failed.store(true, std::memory_order_relaxed);
      }
    };
    ThrowIfError(Host().KernelContext_ParallelFor(ctx_, total, grain, trampoline, &job));
    if (job.error) std::rethrow_exception(job.error);
  }

  // ---- Profiling (host ABI version 6; a no-op on older hosts) ----
  // Whether this run is profiled: time the kernel's own phases only then.
  bool IsProfiling() const { return Host().version >= 6 && Host().KernelContext_IsProfiling(ctx_); }
  // Adds an event of the EP to the run's profile: [begin_ns, end_ns] on ProfilerNowNs(), with
  // key/value args (copied). Nothing happens when the run is not profiled.
  void AddProfileEvent(const std::string& name, uint64_t begin_ns, uint64_t end_ns,
                       const std::vector<std::pair<std::string, std::string>>& args = {}) const {
    if (Host().version < 6) return;
    if (Host().version < 14) {
      std::vector<NxKeyValue> kv;
      for (const auto& [k, v] : args) kv.push_back({k.c_str(), v.c_str()});
      Host().KernelContext_AddProfileEvent(ctx_, name.c_str(), begin_ns, end_ns, kv.data(),
                                           kv.size());
      return;
    }
    // The versioned pairs (ABI version 14): an array of pointers to entries.
    std::vector<NxKeyValue2> kv;
    std::vector<const NxKeyValue2*> pointers;
    kv.reserve(args.size());
    for (const auto& [k, v] : args) kv.push_back({NXRT_EP_API_VERSION, k.c_str(), v.c_str()});
    for (const NxKeyValue2& entry : kv) pointers.push_back(&entry);
    Host().KernelContext_AddProfileEvent2(ctx_, name.c_str(), begin_ns, end_ns, pointers.data(),
                                          pointers.size());
  }
  // ---- end profiling ----

  // ---- Stopping runs (host ABI version 7; always false on older hosts) ----
  // Whether the run must stop (terminate flag or time limit): poll it in the outer loop of
  // work that can run long, and throw (any error) when it says true.
  bool ShouldStop() const { return Host().version >= 7 && Host().KernelContext_ShouldStop(ctx_); }
  // Throws when the run must stop; `what` names the kernel in the message.
  void ThrowIfShouldStop(const char* what) const {
    if (ShouldStop()) throw std::runtime_error(std::string(what) + ": the run was stopped");
  }

 private:
  // Tensor accessors on a sequence or optional would read an empty shape and no data: refuse
  // clearly instead (only kernels that set ValueKinds ever see one).
  static const NxValue* ExpectTensor(const NxValue* v, size_t i) {
    const NxValueKind kind = Host().Value_GetKind(v);
    if (kind != NX_VALUE_TENSOR) {
      Fail(NX_INVALID_ARGUMENT, "input " + std::to_string(i) + " is a " + ValueKindName(kind) +
                                    ", not a tensor (read it with input_value)");
    }
    return v;
  }
  NxKernelContext* ctx_;
};

// ---- Memory -----------------------------------------------------------------------------------

// A host- or EP-provided allocator as PrePackWeight receives it.
class Allocator {
 public:
  explicit Allocator(NxAllocator* a) : a_(a) {}
  NxAllocator* handle() const { return a_; }
  const NxMemoryInfo* memory() const { return a_->GetMemoryInfo(a_); }
  void* Alloc(size_t bytes) const {
    void* p = a_->Alloc(a_, bytes);
    if (p == nullptr && bytes > 0)
      Fail(NX_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes");
    return p;
  }
  void Free(void* p) const { a_->Free(a_, p); }

 private:
  NxAllocator* a_;
};

// A block from an Allocator, freed on destruction unless released.
class Block {
 public:
  Block() = default;
  Block(Allocator alloc, size_t bytes)
      : alloc_(alloc.handle()), p_(alloc.Alloc(bytes)), bytes_(bytes) {}
  Block(Block&& o) noexcept : alloc_(o.alloc_), p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  Block& operator=(Block&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = o.alloc_;
      p_ = o.p_;
      bytes_ = o.bytes_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~Block() { reset(); }
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return bytes_; }
  void* release() {
    void* p = p_;
    p_ = nullptr;
    return p;
  }
  void reset() {
    if (p_ && alloc_) alloc_->Free(alloc_, p_);
    p_ = nullptr;
  }

 private:
  NxAllocator* alloc_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Where PrePack offers packed buffers for sharing between sessions.
class PrePackCache {
 public:
  explicit PrePackCache(NxPrePackCache* cache) : cache_(cache) {}
  // Sharing is offered (the weight's memory is host-accessible and the host shares packings).
  bool available() const { return cache_ != nullptr; }
  // Hands the blocks to the host (on success they are released from `blocks`); the kernel then
  // receives the canonical copy through UseSharedPrePacked.
  void Store(std::vector<Block>& blocks) const {
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    for (Block& b : blocks) {
      ptrs.push_back(b.get());
      sizes.push_back(b.size());
    }
    ThrowIfError(Host().PrePackCache_Store(cache_, ptrs.data(), sizes.data(), ptrs.size()));
    for (Block& b : blocks) b.release();
  }

 private:
  NxPrePackCache* cache_;
};

// ---- Kernels ----------------------------------------------------------------------------------

// Base class of a C++ kernel. Constructed once per node per session.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Compute(KernelContext& ctx) = 0;
};

// A kernel that pre-packs constant weights (see NxKernel::PrePackWeight for the contract).
class PrePackingKernel : public Kernel {
 public:
  // Called once per session for each constant input. Return false to decline. To own the
  // packing, keep Blocks from `allocator`. To share it, when cache.available(), pack into
  // Blocks, cache.Store(blocks) and return true; UseSharedPrePacked then delivers the
  // canonical buffers. After returning true, Compute receives no tensor for that input.
  virtual bool PrePack(const ConstTensor& weight, size_t input_index, Allocator allocator,
                       const PrePackCache& cache) = 0;
  // The shared packing for `input_index` (host-owned; valid for the kernel's lifetime).
  virtual void UseSharedPrePacked(size_t input_index, std::span<const void* const> buffers,
                                  std::span<const size_t> sizes) {
    Fail(NX_NOT_IMPLEMENTED, "this kernel does not use shared packed weights");
  }
};

namespace detail {
struct KernelBox {
  NxKernel base{};  // first member: the host sees a NxKernel*
  std::unique_ptr<Kernel> impl;
};
inline NxStatus* BoxCompute(NxKernel* self, NxKernelContext* ctx) {
  auto* box = reinterpret_cast<KernelBox*>(self);
  // Restored afterwards: a control-flow kernel's body runs nested Computes on this thread.
  NxKernelContext* const previous = CurrentContextSlot();
  CurrentContextSlot() = ctx;
  NxStatus* status = Guard([&] {
    KernelContext context(ctx);
    box->impl->Compute(context);
  });
  CurrentContextSlot() = previous;
  return status;
}
inline void BoxRelease(NxKernel* self) { delete reinterpret_cast<KernelBox*>(self); }
inline NxStatus* BoxPrePack(NxKernel* self, const NxValue* weight, size_t input_index,
                            NxAllocator* allocator, NxPrePackCache* cache, bool* packed) {
  auto* box = reinterpret_cast<KernelBox*>(self);
  return Guard([&] {
    *packed =
        static_cast<PrePackingKernel*>(box->impl.get())
            ->PrePack(ConstTensor(weight), input_index, Allocator(allocator), PrePackCache(cache));
  });
}
inline NxStatus* BoxUseShared(NxKernel* self, size_t input_index, const void* const* buffers,
                              const size_t* sizes, size_t count) {
  auto* box = reinterpret_cast<KernelBox*>(self);
  return Guard([&] {
    static_cast<PrePackingKernel*>(box->impl.get())
        ->UseSharedPrePacked(input_index, {buffers, count}, {sizes, count});
  });
}

template <class K>
NxStatus* CreateBoxed(void* /*state*/, const NxKernelInfo* info, NxKernel** out) {
  return Guard([&] {
    KernelInfo kernel_info(info);
    auto box = std::make_unique<KernelBox>();
    box->base.version = NXRT_EP_API_VERSION;
    box->base.Compute = &BoxCompute;
    box->base.Release = &BoxRelease;
    if constexpr (std::is_base_of_v<PrePackingKernel, K>) {
      box->base.PrePackWeight = &BoxPrePack;
      box->base.UseSharedPrePackedWeight = &BoxUseShared;
    }
    box->impl = std::make_unique<K>(kernel_info);
    *out = &box.release()->base;
  });
}
}  // namespace detail

// ---- Compiled groups (ABI version 6) ------------------------------------------------------------

// Hands a C++ kernel to the host as an NxKernel, e.g. what NxEp::CompileGroup returns. The host
// releases it (deleting `kernel`) when the session ends.
inline NxKernel* BoxKernel(std::unique_ptr<Kernel> kernel) {
  auto box = std::make_unique<detail::KernelBox>();
  box->base.version = NXRT_EP_API_VERSION;
  box->base.Compute = &detail::BoxCompute;
  box->base.Release = &detail::BoxRelease;
  box->impl = std::move(kernel);
  return &box.release()->base;
}

// The C++ kernel inside an NxKernel that BoxKernel made: NxEp::ExportCompiledGroup (version 9)
// gets back the kernel CompileGroup returned and reads what to save from it.
inline Kernel* UnboxKernel(const NxKernel* kernel) {
  return reinterpret_cast<const detail::KernelBox*>(kernel)->impl.get();
}

// From GetCapability: claim `nodes` as one group to compile; `device` (one of the EP's hardware
// devices, or null for its first) is the device that runs it.
inline void AddFusedGroup(NxCapability* capability, std::span<const NxNode* const> nodes,
                          const NxHardwareDevice* device = nullptr) {
  RequireHostVersion(6, "fused groups");
  NxFusionOptions options{};
  options.version = NXRT_EP_API_VERSION;
  options.hardware_device = device;
  ThrowIfError(Host().Capability_AddFusedGroup(capability, nodes.data(), nodes.size(), &options));
}

// From GetCapability: claim one node for the EP's kernel on `device` (one of the EP's hardware
// devices; null for its first). Before ABI 12 only the first device exists for kernel nodes.
inline void AddNode(NxCapability* capability, const NxNode* node,
                    const NxHardwareDevice* device = nullptr) {
  if (device == nullptr) {
    ThrowIfError(Host().Capability_AddNode(capability, node));
    return;
  }
  RequireHostVersion(12, "a device per kernel node");
  NxNodeOptions options{};
  options.version = NXRT_EP_API_VERSION;
  options.hardware_device = device;
  ThrowIfError(Host().Capability_AddNodeWithOptions(capability, node, &options));
}

// Builds one NxKernelDef and adds it to a registry.
class KernelDefBuilder {
 public:
  explicit KernelDefBuilder(std::string op_type, std::string domain = "")
      : op_type_(std::move(op_type)), domain_(std::move(domain)) {}

  // Opset range [start, end]; end defaults to "and later".
  KernelDefBuilder& Versions(int start, int end = std::numeric_limits<int32_t>::max()) {
    start_ = start;
    end_ = end;
    return *this;
  }
  // Constrain inputs/outputs (indices; -1 = all) to the given element types.
  KernelDefBuilder& Constraint(std::string name, std::vector<NxElementType> types,
                               std::vector<int32_t> inputs, std::vector<int32_t> outputs = {}) {
    constraints_.push_back(
        {std::move(name), std::move(types), std::move(inputs), std::move(outputs)});
    return *this;
  }

  // Input i is read on the host (delivered in host memory even on a device EP).
  KernelDefBuilder& HostInput(int32_t i) {
    host_inputs_.push_back(i);
    return *this;
  }
  // Output o is written in host memory.
  KernelDefBuilder& HostOutput(int32_t o) {
    host_outputs_.push_back(o);
    return *this;
  }
  // Output `output` is input `input` unchanged (the host may hand the input buffer out).
  KernelDefBuilder& Alias(int32_t input, int32_t output) {
    aliases_.push_back({NXRT_EP_API_VERSION, input, output});
    return *this;
  }
  // Output `output` may be computed over input `input`.
  KernelDefBuilder& MayInplace(int32_t input, int32_t output) {
    inplace_.push_back({NXRT_EP_API_VERSION, input, output});
    return *this;
  }
  // The value kinds the kernel accepts besides tensors, as NX_KIND_* bits (ABI version 4): a node
  // with sequence or optional inputs/outputs only matches a definition that accepts them.
  KernelDefBuilder& ValueKinds(uint32_t kinds) {
    value_kinds_ = kinds;
    return *this;
  }

  // Add the definition with a C++ kernel class K constructible from const KernelInfo&.
  template <class K>
  void Build(NxKernelRegistry* registry) const {
    BuildRaw(registry, &detail::CreateBoxed<K>, nullptr);
  }

  // Add the definition with a raw C create function.
  // The lists go in their versioned form (ABI version 14: arrays of pointers to entries).
  void BuildRaw(NxKernelRegistry* registry, NxKernelCreateFn create, void* state) const {
    std::vector<NxTypeConstraint2> cs;
    for (const auto& c : constraints_) {
      cs.push_back({NXRT_EP_API_VERSION, c.name.c_str(), c.types.data(), c.types.size(),
                    c.inputs.data(), c.inputs.size(), c.outputs.data(), c.outputs.size()});
    }
    const auto cs_ptrs = Pointers(cs);
    const auto alias_ptrs = Pointers(aliases_);
    const auto inplace_ptrs = Pointers(inplace_);
    NxKernelDef def{};
    def.version = NXRT_EP_API_VERSION;
    def.op_type = op_type_.c_str();
    def.domain = domain_.c_str();
    def.since_version_start = start_;
    def.since_version_end = end_;
    def.type_constraints2 = cs_ptrs.data();
    def.num_type_constraints2 = cs_ptrs.size();
    def.create = create;
    def.create_state = state;
    def.host_inputs = host_inputs_.data();
    def.num_host_inputs = host_inputs_.size();
    def.host_outputs = host_outputs_.data();
    def.num_host_outputs = host_outputs_.size();
    def.aliases2 = alias_ptrs.data();
    def.num_aliases2 = alias_ptrs.size();
    def.may_inplace2 = inplace_ptrs.data();
    def.num_may_inplace2 = inplace_ptrs.size();
    def.value_kinds = value_kinds_;
    ThrowIfError(Host().KernelRegistry_Add(registry, &def));
  }

 private:
  struct ConstraintSpec {
    std::string name;
    std::vector<NxElementType> types;
    std::vector<int32_t> inputs;
    std::vector<int32_t> outputs;
  };
  std::string op_type_;
  std::string domain_;
  int start_ = 1;
  int end_ = std::numeric_limits<int32_t>::max();
  std::vector<ConstraintSpec> constraints_;
  std::vector<int32_t> host_inputs_;
  std::vector<int32_t> host_outputs_;
  std::vector<NxIoPair2> aliases_;
  std::vector<NxIoPair2> inplace_;
  uint32_t value_kinds_ = 0;  // tensors only

  template <class T>
  static std::vector<const T*> Pointers(const std::vector<T>& entries) {
    std::vector<const T*> out;
    out.reserve(entries.size());
    for (const T& entry : entries) out.push_back(&entry);
    return out;
  }
};

// ---- Devices (ABI version 3) -----------------------------------------------------------------
// Views of the hardware devices a factory is offered (GetSupportedDevices) and of the EP devices
// a session chose (NxEpCreateArgs::devices), and helpers that build the key/value arrays the
// device calls take. They call the version 3 members of the host table: use them only with a
// host whose version is 3 or later (a host that hands out devices is one).
//
// Metadata lookups return std::optional<std::string>: std::nullopt when the key is absent, which
// is not the same as a key present with an empty value. metadata_or() gives a fallback instead.

// A hardware device (discovered or virtual), borrowed from the host until the library is
// unregistered.
class HardwareDeviceView {
 public:
  explicit HardwareDeviceView(const NxHardwareDevice* device) : device_(device) {}
  const NxHardwareDevice* handle() const { return device_; }
  NxDeviceType type() const { return Host().HardwareDevice_GetType(device_); }
  std::string vendor() const {
    const char* v = Host().HardwareDevice_GetVendor(device_);
    return v ? v : "";
  }
  uint32_t vendor_id() const { return Host().HardwareDevice_GetVendorId(device_); }
  uint32_t device_id() const { return Host().HardwareDevice_GetDeviceId(device_); }
  // The value of metadata `key` ("pci_bus_id", "discrete", "arch", ...), or std::nullopt.
  std::optional<std::string> metadata(const char* key) const {
    const char* v = Host().HardwareDevice_GetMetadataValue(device_, key);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
  std::string metadata_or(const char* key, const std::string& fallback) const {
    return metadata(key).value_or(fallback);
  }
  // Every metadata entry, in the host's order.
  std::vector<std::pair<std::string, std::string>> all_metadata() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0, n = Host().HardwareDevice_GetMetadataCount(device_); i < n; ++i) {
      const char* key = nullptr;
      const char* value = nullptr;
      if (Host().HardwareDevice_GetMetadata(device_, i, &key, &value) && key != nullptr)
        out.emplace_back(key, value ? value : "");
    }
    return out;
  }
  // A device an EP factory created on the application's request (the host sets is_virtual).
  bool is_virtual() const { return metadata_or("is_virtual", "") == "1"; }
  // Whether this is a virtual device created by the EP named `ep_name` (the host sets
  // discovered_by to the creating EP's name). Real devices name discovery sources instead.
  bool is_virtual_from(std::string_view ep_name) const {
    return is_virtual() && metadata_or("discovered_by", "") == ep_name;
  }

 private:
  const NxHardwareDevice* device_;
};

// An EP device (this EP on one hardware device) as NxEpCreateArgs::devices lists it; borrowed
// for the EP's lifetime.
class EpDeviceView {
 public:
  explicit EpDeviceView(const NxEpDevice* device) : device_(device) {}
  const NxEpDevice* handle() const { return device_; }
  HardwareDeviceView hardware() const {
    return HardwareDeviceView(Host().EpDevice_GetHardwareDevice(device_));
  }
  // The EP metadata value of `key` (what GetSupportedDevices added, plus the host's "version"
  // and "library_path"), or std::nullopt.
  std::optional<std::string> metadata(const char* key) const {
    const char* v = Host().EpDevice_GetMetadataValue(device_, key);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
  std::string metadata_or(const char* key, const std::string& fallback) const {
    return metadata(key).value_or(fallback);
  }

 private:
  const NxEpDevice* device_;
};

// The EP devices a session chose, from NxEpCreateArgs: empty for a host older than version 3
// (whose args have no device members) and for an EP appended by name without EP devices.
inline std::vector<EpDeviceView> EpDevicesOf(const NxEpCreateArgs* args) {
  std::vector<EpDeviceView> out;
  if (args == nullptr || args->version < 3 || args->devices == nullptr) return out;
  for (size_t i = 0; i < args->num_devices; ++i) out.emplace_back(args->devices[i]);
  return out;
}

// Key/value pairs that own their strings, for EP metadata, default options and virtual-device
// metadata. data()/size() give the NxKeyValue array the version 3 host calls take, versioned()
// the array of NxKeyValue2 pointers the version 14 ones take; both point into this object and
// stay valid until the next Set.
class KeyValues {
 public:
  KeyValues() = default;
  KeyValues(std::initializer_list<std::pair<std::string, std::string>> entries) {
    for (const auto& [key, value] : entries) Set(key, value);
  }
  KeyValues(const KeyValues& other) : entries_(other.entries_) { Rebuild(); }
  KeyValues& operator=(const KeyValues& other) {
    entries_ = other.entries_;
    Rebuild();
    return *this;
  }
  // Adds `key`, or replaces its value.
  KeyValues& Set(const std::string& key, const std::string& value) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const auto& entry) { return entry.first == key; });
    if (it != entries_.end())
      it->second = value;
    else
      entries_.emplace_back(key, value);
    Rebuild();  // strings may have moved
    return *this;
  }
  const NxKeyValue* data() const { return view_.empty() ? nullptr : view_.data(); }
  const NxKeyValue2* const* versioned() const {
    return pointers2_.empty() ? nullptr : pointers2_.data();
  }
  size_t size() const { return view_.size(); }

 private:
  void Rebuild() {
    view_.clear();
    view2_.clear();
    pointers2_.clear();
    for (const auto& [key, value] : entries_) {
      view_.push_back({key.c_str(), value.c_str()});
      view2_.push_back({NXRT_EP_API_VERSION, key.c_str(), value.c_str()});
    }
    for (const NxKeyValue2& entry : view2_) pointers2_.push_back(&entry);
  }
  std::vector<std::pair<std::string, std::string>> entries_;
  std::vector<NxKeyValue> view_;               // points into entries_
  std::vector<NxKeyValue2> view2_;             // points into entries_
  std::vector<const NxKeyValue2*> pointers2_;  // points into view2_
};

// The value of `key` in a borrowed NxKeyValue array (the options of CreateVirtualDevices), or
// std::nullopt.
inline std::optional<std::string> FindKeyValue(const NxKeyValue* entries, size_t count,
                                               std::string_view key) {
  for (size_t i = 0; i < count; ++i) {
    if (entries[i].key != nullptr && key == entries[i].key)
      return std::string(entries[i].value ? entries[i].value : "");
  }
  return std::nullopt;
}
// The same for the versioned pairs (the options of CreateVirtualDevices2).
inline std::optional<std::string> FindKeyValue(const NxKeyValue2* const* entries, size_t count,
                                               std::string_view key) {
  for (size_t i = 0; entries != nullptr && i < count; ++i) {
    if (entries[i] != nullptr && entries[i]->key != nullptr && key == entries[i]->key)
      return std::string(entries[i]->value ? entries[i]->value : "");
  }
  return std::nullopt;
}

// GetSupportedDevices: the EP supports `device`, with this metadata and these default options.
inline void AddEpDevice(NxEpDeviceList* list, const NxHardwareDevice* device,
                        const KeyValues& metadata = {}, const KeyValues& default_options = {}) {
  if (Host().version < 14) {
    ThrowIfError(Host().EpDeviceList_Add(list, device, metadata.data(), metadata.size(),
                                         default_options.data(), default_options.size()));
    return;
  }
  ThrowIfError(Host().EpDeviceList_Add2(list, device, metadata.versioned(), metadata.size(),
                                        default_options.versioned(), default_options.size()));
}

// CreateVirtualDevices(2): add one virtual device (the host adds is_virtual and discovered_by).
inline void AddVirtualDevice(NxVirtualDeviceList* list, NxDeviceType type,
                             const std::string& vendor, uint32_t vendor_id, uint32_t device_id,
                             const KeyValues& metadata = {}) {
  if (Host().version < 14) {
    ThrowIfError(Host().VirtualDeviceList_Add(list, type, vendor.c_str(), vendor_id, device_id,
                                              metadata.data(), metadata.size()));
    return;
  }
  ThrowIfError(Host().VirtualDeviceList_Add2(list, type, vendor.c_str(), vendor_id, device_id,
                                             metadata.versioned(), metadata.size()));
}

}  // namespace nxrt::ep

#endif  // NXRT_EP_HPP_
