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
#ifndef NXRT_EP_HPP_
#define NXRT_EP_HPP_

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
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
#define NXRT_EP_ENFORCE(cond, message)                                         \
  do {                                                                         \
    if (!(cond)) ::nxrt::ep::Fail(NX_INVALID_ARGUMENT, std::string(message)); \
  } while (0)

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
    case NX_TYPE_FLOAT: return "float";
    case NX_TYPE_UINT8: return "uint8";
    case NX_TYPE_INT8: return "int8";
    case NX_TYPE_UINT16: return "uint16";
    case NX_TYPE_INT16: return "int16";
    case NX_TYPE_INT32: return "int32";
    case NX_TYPE_INT64: return "int64";
    case NX_TYPE_STRING: return "string";
    case NX_TYPE_BOOL: return "bool";
    case NX_TYPE_FLOAT16: return "float16";
    case NX_TYPE_DOUBLE: return "double";
    case NX_TYPE_UINT32: return "uint32";
    case NX_TYPE_UINT64: return "uint64";
    case NX_TYPE_COMPLEX64: return "complex64";
    case NX_TYPE_COMPLEX128: return "complex128";
    case NX_TYPE_BFLOAT16: return "bfloat16";
    case NX_TYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case NX_TYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case NX_TYPE_FLOAT8E5M2: return "float8e5m2";
    case NX_TYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case NX_TYPE_UINT4: return "uint4";
    case NX_TYPE_INT4: return "int4";
    case NX_TYPE_FLOAT4E2M1: return "float4e2m1";
    default: return "undefined";
  }
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
  std::optional<ConstTensor> attr_tensor(const char* name) const {
    const NxAttribute* a = attr(name);
    if (!a) return std::nullopt;
    return ConstTensor(Host().Attribute_GetTensor(a));
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

 private:
  const NxKernelInfo* info_;
};

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
  // Input i; throws if it is absent (use has_input or optional_input for optional inputs).
  ConstTensor input(size_t i) const {
    const NxValue* v = i < input_count() ? Host().KernelContext_GetInput(ctx_, i) : nullptr;
    if (v == nullptr) Fail(NX_INVALID_ARGUMENT, "required input " + std::to_string(i) + " is missing");
    return ConstTensor(v);
  }
  std::optional<ConstTensor> optional_input(size_t i) const {
    if (!has_input(i)) return std::nullopt;
    return ConstTensor(Host().KernelContext_GetInput(ctx_, i));
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
  int threads() const { return Host().KernelContext_GetThreadCount(ctx_); }

 private:
  NxKernelContext* ctx_;
};

// ---- Kernels ----------------------------------------------------------------------------------

// Base class of a C++ kernel. Constructed once per node per session.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Compute(KernelContext& ctx) = 0;
};

namespace detail {
struct KernelBox {
  NxKernel base;  // first member: the host sees a NxKernel*
  std::unique_ptr<Kernel> impl;
};
inline NxStatus* BoxCompute(NxKernel* self, NxKernelContext* ctx) {
  auto* box = reinterpret_cast<KernelBox*>(self);
  return Guard([&] {
    KernelContext context(ctx);
    box->impl->Compute(context);
  });
}
inline void BoxRelease(NxKernel* self) { delete reinterpret_cast<KernelBox*>(self); }

template <class K>
NxStatus* CreateBoxed(void* /*state*/, const NxKernelInfo* info, NxKernel** out) {
  return Guard([&] {
    KernelInfo kernel_info(info);
    auto box = std::make_unique<KernelBox>();
    box->base.version = NXRT_EP_API_VERSION;
    box->base.Compute = &BoxCompute;
    box->base.Release = &BoxRelease;
    box->impl = std::make_unique<K>(kernel_info);
    *out = &box.release()->base;
  });
}
}  // namespace detail

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
    constraints_.push_back({std::move(name), std::move(types), std::move(inputs), std::move(outputs)});
    return *this;
  }

  // Add the definition with a C++ kernel class K constructible from const KernelInfo&.
  template <class K>
  void Build(NxKernelRegistry* registry) const {
    BuildRaw(registry, &detail::CreateBoxed<K>, nullptr);
  }

  // Add the definition with a raw C create function.
  void BuildRaw(NxKernelRegistry* registry, NxKernelCreateFn create, void* state) const {
    std::vector<NxTypeConstraint> cs;
    for (const auto& c : constraints_) {
      cs.push_back({c.name.c_str(), c.types.data(), c.types.size(), c.inputs.data(),
                    c.inputs.size(), c.outputs.data(), c.outputs.size()});
    }
    NxKernelDef def{};
    def.version = NXRT_EP_API_VERSION;
    def.op_type = op_type_.c_str();
    def.domain = domain_.c_str();
    def.since_version_start = start_;
    def.since_version_end = end_;
    def.type_constraints = cs.data();
    def.num_type_constraints = cs.size();
    def.create = create;
    def.create_state = state;
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
};

}  // namespace nxrt::ep

#endif  // NXRT_EP_HPP_
