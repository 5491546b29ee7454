// nxrt._nxrt: the Python extension under the `nxrt` package (python/nxrt/), a thin layer over
// the C++ wrapper of the C API (include/nxrt/nxrt.hpp). The package's Python code gives it the
// onnxruntime-shaped surface; this module only moves data and errors across:
//   - inputs arrive as a contiguous byte view of the caller's numpy array plus element type and
//     shape, and are wrapped without copying (NxValue_CreateTensorWithData);
//   - tensor outputs leave as a byte array over the runtime's own buffer (no copy either): the
//     array owns the NxValue and releases it when numpy lets go;
//   - the GIL is released while a model runs, so Python threads run sessions in parallel;
//   - an nxrt::Exception becomes the Python exception of its status code (nxrt.Error family).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nxrt/nxrt_ep_api.h>

#include <cstring>
#include <memory>
#include <nxrt/nxrt.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

// Python exception classes per NxStatusCode (index = code), created at import.
PyObject* g_errors[NX_CANCELLED + 1] = {};

// Argument checks of the binding: an nxrt.InvalidArgument with `message`.
#define NXRT_PY_REQUIRE(cond, message)                                  \
  do {                                                                  \
    if (!(cond)) throw nxrt::Exception(NX_INVALID_ARGUMENT, (message)); \
  } while (0)

// Bytes of `count` elements of a non-string type (4-bit types two to a byte).
size_t StorageBytes(NxElementType type, size_t count) {
  switch (static_cast<int>(type)) {
    case 2:
    case 3:
    case 9:
    case 17:
    case 18:
    case 19:
    case 20:
    case 24:  // 8-bit ints, bool, float8
      return count;
    case 4:
    case 5:
    case 10:
    case 16:  // 16-bit ints, float16, bfloat16
      return 2 * count;
    case 1:
    case 6:
    case 12:  // float, int32, uint32
      return 4 * count;
    case 7:
    case 11:
    case 13:
    case 14:  // int64, double, uint64, complex64
      return 8 * count;
    case 15:  // complex128
      return 16 * count;
    case 21:
    case 22:
    case 23:  // uint4, int4, float4
      return (count + 1) / 2;
    default:
      throw nxrt::Exception(NX_NOT_IMPLEMENTED, std::string("no numpy form for element type ") +
                                                    Nx_ElementTypeName(type));
  }
}

nb::dict ToDict(const nxrt::KeyValueList& pairs) {
  nb::dict d;
  for (const auto& [k, v] : pairs) d[nb::str(k.c_str())] = nb::str(v.c_str());
  return d;
}

nxrt::KeyValueList FromDict(const nb::dict& d) {
  nxrt::KeyValueList out;
  for (auto [k, v] : d) out.emplace_back(nb::str(k).c_str(), nb::str(v).c_str());
  return out;
}

// The Python view of one output value (see python/nxrt/_convert.py):
//   ("tensor", element_type, shape, uint8 array over the value's bytes)
//   ("strings", shape, [str, ...])
//   ("sequence", [item, ...]) / ("optional", item or None)
nb::object ValueToPython(nxrt::Value value);

nb::object BorrowedToPython(const NxValue* v) {
  // Elements of sequences and optionals are borrowed from their container: copy them out.
  const NxValueKind kind = NxValue_GetKind(v);
  if (kind == NX_VALUE_SEQUENCE) {
    nb::list items;
    for (size_t i = 0; i < NxValue_GetSequenceLength(v); ++i)
      items.append(BorrowedToPython(NxValue_GetSequenceElement(v, i)));
    return nb::make_tuple("sequence", items);
  }
  if (kind == NX_VALUE_OPTIONAL) {
    const NxValue* inner = NxValue_GetOptionalValue(v);
    return nb::make_tuple("optional", inner ? BorrowedToPython(inner) : nb::none());
  }
  const int64_t* dims = nullptr;
  size_t rank = 0;
  NxValue_GetShape(v, &dims, &rank);
  std::vector<int64_t> shape(dims, dims + rank);
  const NxElementType type = NxValue_GetElementType(v);
  const size_t count = NxValue_GetElementCount(v);
  if (type == NX_TYPE_STRING) {
    nb::list strings;
    for (size_t i = 0; i < count; ++i) {
      size_t n = 0;
      const char* s = NxValue_GetString(v, i, &n);
      strings.append(nb::bytes(s, n));
    }
    return nb::make_tuple("strings", shape, strings);
  }
  const size_t bytes = StorageBytes(type, count);
  auto* copy = new uint8_t[bytes > 0 ? bytes : 1];
  if (bytes > 0) std::memcpy(copy, NxValue_GetConstData(v), bytes);
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  size_t extent[1] = {bytes};
  return nb::make_tuple("tensor", static_cast<int>(type), shape,
                        nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(copy, 1, extent, owner));
}

// The numpy dtype (as DLPack describes it) of an element type, when numpy has one.
bool NumpyDtype(NxElementType type, nb::dlpack::dtype* out) {
  using nb::dlpack::dtype_code;
  auto set = [&](dtype_code code, int bits) {
    *out = nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
    return true;
  };
  switch (type) {
    case NX_TYPE_FLOAT:
      return set(dtype_code::Float, 32);
    case NX_TYPE_DOUBLE:
      return set(dtype_code::Float, 64);
    case NX_TYPE_FLOAT16:
      return set(dtype_code::Float, 16);
    case NX_TYPE_INT8:
      return set(dtype_code::Int, 8);
    case NX_TYPE_INT16:
      return set(dtype_code::Int, 16);
    case NX_TYPE_INT32:
      return set(dtype_code::Int, 32);
    case NX_TYPE_INT64:
      return set(dtype_code::Int, 64);
    case NX_TYPE_UINT8:
      return set(dtype_code::UInt, 8);
    case NX_TYPE_UINT16:
      return set(dtype_code::UInt, 16);
    case NX_TYPE_UINT32:
      return set(dtype_code::UInt, 32);
    case NX_TYPE_UINT64:
      return set(dtype_code::UInt, 64);
    case NX_TYPE_BOOL:
      return set(dtype_code::Bool, 8);
    case NX_TYPE_COMPLEX64:
      return set(dtype_code::Complex, 64);
    case NX_TYPE_COMPLEX128:
      return set(dtype_code::Complex, 128);
    default:
      return false;
  }
}

// A tensor output as a numpy array over the runtime's own buffer (the array owns the value), or
// for types numpy lacks (bfloat16, float8, 4-bit) and for strings, sequences and optionals the
// tuple form the package converts.
nb::object ValueToPython(nxrt::Value value) {
  const NxValueKind kind = NxValue_GetKind(value.get());
  const NxElementType type = NxValue_GetElementType(value.get());
  if (kind != NX_VALUE_TENSOR || type == NX_TYPE_STRING) return BorrowedToPython(value.get());
  const int64_t* dims = nullptr;
  size_t rank = 0;
  NxValue_GetShape(value.get(), &dims, &rank);
  nb::dlpack::dtype dtype;
  if (!NumpyDtype(type, &dtype)) {
    std::vector<int64_t> shape(dims, dims + rank);
    const size_t bytes = StorageBytes(type, NxValue_GetElementCount(value.get()));
    NxValue* raw = value.release();
    nb::capsule owner(raw, [](void* p) noexcept { NxValue_Release(static_cast<NxValue*>(p)); });
    static uint8_t empty = 0;
    void* data = NxValue_GetData(raw);
    size_t extent[1] = {bytes};
    return nb::make_tuple(
        "tensor", static_cast<int>(type), shape,
        nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(data ? data : &empty, 1, extent, owner));
  }
  std::vector<size_t> shape(dims, dims + rank);
  NxValue* raw = value.release();
  nb::capsule owner(raw, [](void* p) noexcept { NxValue_Release(static_cast<NxValue*>(p)); });
  static uint8_t empty[16] = {};
  void* data = NxValue_GetData(raw);
  return nb::ndarray<nb::numpy>(data ? data : empty, rank, shape.data(), owner, nullptr, dtype)
      .cast();
}

// The element type of a buffer-protocol format ("f", "<i8", "?", ...) and item size, or
// NX_TYPE_UNDEFINED when the package's Python path must convert the value.
NxElementType TypeOfFormat(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return NX_TYPE_UINT8;
  if (*format == '<' || *format == '=' || *format == '@') ++format;
  const std::string f = format;
  if (f == "f") return NX_TYPE_FLOAT;
  if (f == "d") return NX_TYPE_DOUBLE;
  if (f == "e") return NX_TYPE_FLOAT16;
  if (f == "?") return NX_TYPE_BOOL;
  if (f == "b") return NX_TYPE_INT8;
  if (f == "B") return NX_TYPE_UINT8;
  if (f == "Zf") return NX_TYPE_COMPLEX64;
  if (f == "Zd") return NX_TYPE_COMPLEX128;
  const bool is_signed = f == "h" || f == "i" || f == "l" || f == "q";
  const bool is_unsigned = f == "H" || f == "I" || f == "L" || f == "Q";
  if (!is_signed && !is_unsigned) return NX_TYPE_UNDEFINED;
  switch (itemsize) {
    case 2:
      return is_signed ? NX_TYPE_INT16 : NX_TYPE_UINT16;
    case 4:
      return is_signed ? NX_TYPE_INT32 : NX_TYPE_UINT32;
    case 8:
      return is_signed ? NX_TYPE_INT64 : NX_TYPE_UINT64;
    default:
      return NX_TYPE_UNDEFINED;
  }
}

// Buffers borrowed from the caller's arrays for one run.
class BorrowedBuffers {
 public:
  BorrowedBuffers() = default;
  BorrowedBuffers(const BorrowedBuffers&) = delete;
  BorrowedBuffers& operator=(const BorrowedBuffers&) = delete;
  ~BorrowedBuffers() {
    for (Py_buffer& b : buffers_) PyBuffer_Release(&b);
  }
  // The value over `obj`'s memory when it is a C-contiguous buffer of a type nxrt knows.
  std::optional<nxrt::Value> Wrap(PyObject* obj) {
    if (!PyObject_CheckBuffer(obj)) return std::nullopt;
    Py_buffer view{};
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND) != 0) {
      PyErr_Clear();
      return std::nullopt;
    }
    const NxElementType type = TypeOfFormat(view.format, view.itemsize);
    if (type == NX_TYPE_UNDEFINED) {
      PyBuffer_Release(&view);
      return std::nullopt;
    }
    std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
    static uint8_t empty[16] = {};
    buffers_.push_back(view);
    return nxrt::Value::WrapTensor(type, shape, view.len > 0 ? view.buf : empty,
                                   static_cast<size_t>(view.len));
  }

 private:
  std::vector<Py_buffer> buffers_;
};

// One input as the package hands it over: ("tensor", element_type, shape, contiguous uint8
// ndarray of its bytes), ("strings", shape, [bytes, ...]), ("sequence", element_type, [spec,
// ...]) or ("optional", spec or None). A tensor's ndarray must outlive the run (the caller keeps
// it); sequences and optionals hold copies.
nxrt::Value InputFromPython(const nb::tuple& spec) {
  const std::string kind = nb::cast<std::string>(spec[0]);
  if (kind == "tensor") {
    const auto type = static_cast<NxElementType>(nb::cast<int>(spec[1]));
    const auto shape = nb::cast<std::vector<int64_t>>(spec[2]);
    auto bytes =
        nb::cast<nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(spec[3]);
    static uint8_t empty = 0;
    void* data = bytes.size() > 0 ? bytes.data() : &empty;
    return nxrt::Value::WrapTensor(type, shape, data, bytes.size());
  }
  if (kind == "strings") {
    const auto shape = nb::cast<std::vector<int64_t>>(spec[1]);
    nxrt::Value v = nxrt::Value::Tensor(NX_TYPE_STRING, shape);
    nb::list items = nb::cast<nb::list>(spec[2]);
    for (size_t i = 0; i < items.size(); ++i) {
      nb::bytes b = nb::cast<nb::bytes>(items[i]);
      v.set_string(i, std::string_view(b.c_str(), b.size()));
    }
    return v;
  }
  if (kind == "sequence") {  // ("sequence", element_type, [tensor spec, ...])
    const auto type = static_cast<NxElementType>(nb::cast<int>(spec[1]));
    nb::list items = nb::cast<nb::list>(spec[2]);
    std::vector<nxrt::Value> elements;
    for (size_t i = 0; i < items.size(); ++i)
      elements.push_back(InputFromPython(nb::cast<nb::tuple>(items[i])));
    std::vector<const nxrt::Value*> pointers;
    for (const nxrt::Value& e : elements) pointers.push_back(&e);
    return nxrt::Value::Sequence(type, pointers);
  }
  if (kind == "optional") {  // ("optional", spec or None)
    if (spec[1].is_none()) return nxrt::Value::Optional(nullptr);
    nxrt::Value inner = InputFromPython(nb::cast<nb::tuple>(spec[1]));
    return nxrt::Value::Optional(&inner);
  }
  throw nxrt::Exception(NX_INVALID_ARGUMENT, "unsupported input kind '" + kind + "'");
}

nb::dict DeviceToDict(const nxrt::HardwareDevice& d) {
  nb::dict out;
  out["type"] = static_cast<int>(d.type());
  out["vendor"] = d.vendor();
  out["vendor_id"] = d.vendor_id();
  out["device_id"] = d.device_id();
  out["metadata"] = ToDict(d.metadata());
  return out;
}

nb::dict NodeToDict(const nxrt::AssignedNode& n) {
  nb::dict out;
  out["name"] = n.name;
  out["domain"] = n.domain;
  out["op_type"] = n.op_type;
  out["inputs"] = n.inputs;
  out["outputs"] = n.outputs;
  return out;
}

nb::dict ReportToDict(const nxrt::AssignmentReport& r) {
  nb::list subgraphs, fallbacks, copies;
  for (const auto& sg : r.subgraphs) {
    nb::dict d;
    d["graph"] = sg.graph;
    d["ep_name"] = sg.ep_name;
    d["kind"] = sg.kind;
    nb::list devices, nodes;
    for (const auto& dev : sg.devices) devices.append(DeviceToDict(dev));
    for (const auto& n : sg.nodes) nodes.append(NodeToDict(n));
    d["devices"] = devices;
    d["nodes"] = nodes;
    d["stream"] = sg.stream;
    subgraphs.append(d);
  }
  for (const auto& f : r.fallbacks) {
    nb::dict d;
    d["graph"] = f.graph;
    d["node"] = NodeToDict(f.node);
    d["preferred_ep"] = f.preferred_ep;
    d["reason"] = f.reason_name;
    d["detail"] = f.detail;
    d["assigned_ep"] = f.assigned_ep;
    fallbacks.append(d);
  }
  for (const auto& c : r.copies) {
    nb::dict d;
    d["graph"] = c.graph;
    d["value"] = c.value;
    d["from_ep"] = c.from_ep;
    d["to_ep"] = c.to_ep;
    d["from_memory"] = c.from_memory;
    d["to_memory"] = c.to_memory;
    copies.append(d);
  }
  nb::dict out;
  out["subgraphs"] = subgraphs;
  out["fallbacks"] = fallbacks;
  out["copies"] = copies;
  return out;
}

nb::dict TypeInfoToDict(const NxTypeInfo& info, const std::vector<std::string>& dim_names) {
  nb::dict d;
  d["kind"] = static_cast<int>(info.kind);
  d["element_type"] = static_cast<int>(info.element_type);
  nb::object shape = nb::none();
  if (info.has_shape) {
    nb::list dims;
    for (size_t i = 0; i < info.rank; ++i) {
      if (info.dims[i] >= 0)
        dims.append(info.dims[i]);
      else if (i < dim_names.size() && !dim_names[i].empty())
        dims.append(dim_names[i]);
      else
        dims.append(nb::none());
    }
    shape = dims;
  }
  d["shape"] = shape;
  return d;
}

// Models come as a path or as bytes; the bytes are borrowed for the call only.
std::unique_ptr<nxrt::Session> OpenSession(nxrt::Env& env, const nb::object& model,
                                           const nxrt::SessionOptions* options) {
  if (nb::isinstance<nb::bytes>(model)) {
    nb::bytes b = nb::cast<nb::bytes>(model);
    const char* data = b.c_str();
    const size_t size = b.size();
    nb::gil_scoped_release unlocked;
    return std::make_unique<nxrt::Session>(env, data, size, options);
  }
  const std::string path = nb::cast<std::string>(nb::str(model));
  nb::gil_scoped_release unlocked;
  return std::make_unique<nxrt::Session>(env, path, options);
}

// A memory description (borrowed from the runtime for the process lifetime).
struct PyMemory {
  const NxMemoryInfo* info = nullptr;
};

// The distinct memories of the registered EP devices, host memory first.
std::vector<PyMemory> MemoriesOf(nxrt::Env& env) {
  std::vector<PyMemory> out;
  auto same = [](const NxMemoryInfo* a, const NxMemoryInfo* b) {
    return a->device_type == b->device_type && a->vendor_id == b->vendor_id &&
           a->device_id == b->device_id && a->kind == b->kind;
  };
  for (const nxrt::EpDevice& d : env.ep_devices()) {
    const NxMemoryInfo* m = d.memory();
    if (m == nullptr) continue;
    bool seen = false;
    for (const PyMemory& o : out) seen = seen || same(o.info, m);
    if (seen) continue;
    if (m->device_type == NX_DEVICE_CPU && m->kind == NX_MEMORY_HOST_ACCESSIBLE)
      out.insert(out.begin(), PyMemory{m});
    else
      out.push_back(PyMemory{m});
  }
  return out;
}

// A value the package holds on to (nxrt.OrtValue): a tensor in host or device memory, or what a
// run produced. `keep` is the Python object whose memory a wrapped host tensor borrows.
struct PyValue {
  nxrt::Value value;
  nb::object keep;
};

bool IsHost(const NxMemoryInfo* m) { return m == nullptr || m->kind == NX_MEMORY_HOST_ACCESSIBLE; }

// The Python view of a value (the tuple forms of ValueToPython), always a copy: device tensors
// come to the host first.
nb::object CopyToPython(nxrt::Env& env, const nxrt::Value& v) {
  if (NxValue_GetKind(v.get()) == NX_VALUE_TENSOR && !IsHost(v.memory())) {
    nxrt::Value host = nxrt::Value::Tensor(v.type(), v.shape());
    v.CopyTo(env, host);
    return ValueToPython(std::move(host));
  }
  return BorrowedToPython(v.get());
}

// A value from the package's tuple form of an array: wrapped without a copy in host memory, or
// copied into `memory` when that is an EP's device memory.
PyValue ValueFromSpec(nxrt::Env& env, const nb::tuple& spec, const PyMemory* memory) {
  nxrt::Value host = InputFromPython(spec);
  if (memory == nullptr || IsHost(memory->info)) return PyValue{std::move(host), spec};
  NXRT_PY_REQUIRE(NxValue_GetKind(host.get()) == NX_VALUE_TENSOR && host.type() != NX_TYPE_STRING,
                  "only numeric tensors can live in device memory");
  nxrt::Value dev = nxrt::Value::InMemory(env, memory->info, host.type(), host.shape());
  host.CopyTo(env, dev);
  return PyValue{std::move(dev), nb::none()};
}

class PySession {
 public:
  PySession(nxrt::Env& env, const nb::object& model, const nxrt::SessionOptions* options)
      : session_(OpenSession(env, model, options)) {}

  nb::list Inputs() const { return Describe(true); }
  nb::list Outputs() const { return Describe(false); }

  // `feed` maps input names to arrays; values that are not C-contiguous buffers of a known type
  // (lists, strings, non-contiguous or bfloat16 arrays) go through `convert(value)`, which
  // returns the tuple form InputFromPython reads (and the object it borrows from).
  nb::list Run(const std::vector<std::string>& output_names, const nb::dict& feed,
               const nb::callable& convert, const nxrt::RunOptions* run_options) {
    BorrowedBuffers borrowed;
    std::vector<nxrt::Value> values;
    std::vector<std::string> input_names;
    std::vector<nb::object> converted;  // keeps converted arrays alive for the run
    values.reserve(feed.size());
    for (auto [key, value] : feed) {
      input_names.push_back(nb::cast<std::string>(key));
      std::optional<nxrt::Value> v = borrowed.Wrap(value.ptr());
      if (!v) {
        nb::object spec = convert(value);
        converted.push_back(spec);
        v = InputFromPython(nb::cast<nb::tuple>(spec));
      }
      values.push_back(std::move(*v));
    }
    std::vector<const nxrt::Value*> pointers;
    for (const nxrt::Value& v : values) pointers.push_back(&v);
    std::vector<nxrt::Value> results;
    {
      nb::gil_scoped_release unlocked;
      results = run_options ? session_->Run(*run_options, input_names, pointers, output_names)
                            : session_->Run(input_names, pointers, output_names);
    }
    nb::list out;
    for (nxrt::Value& v : results) out.append(ValueToPython(std::move(v)));
    return out;
  }

  // A run over values the package holds (nxrt.OrtValue): `bound[i]` (None or a value) receives
  // output i in place, `memories[i]` (None = host) names where an unbound output comes back.
  // Returns the new values (None where bound).
  nb::list RunValues(const std::vector<std::string>& output_names,
                     const std::vector<std::string>& input_names, const nb::list& inputs,
                     const nb::list& memories, const nb::list& bound,
                     const nxrt::RunOptions* run_options) {
    NXRT_PY_REQUIRE(inputs.size() == input_names.size(), "one value per input name");
    NXRT_PY_REQUIRE(memories.size() == output_names.size() && bound.size() == output_names.size(),
                    "one memory and one bound slot per output name");
    std::vector<const char*> in_names, out_names;
    std::vector<const NxValue*> in_values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_names.push_back(input_names[i].c_str());
      in_values.push_back(nb::cast<PyValue&>(inputs[i]).value.get());
    }
    std::vector<const NxMemoryInfo*> mems;
    std::vector<NxValue*> outs;
    for (size_t i = 0; i < output_names.size(); ++i) {
      out_names.push_back(output_names[i].c_str());
      mems.push_back(memories[i].is_none() ? nullptr : nb::cast<PyMemory&>(memories[i]).info);
      outs.push_back(bound[i].is_none() ? nullptr : nb::cast<PyValue&>(bound[i]).value.get());
    }
    std::vector<bool> was_bound;
    for (NxValue* o : outs) was_bound.push_back(o != nullptr);
    NxStatus* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = NxSession_RunWithOutputMemories(
          session_->get(), run_options ? run_options->get() : nullptr, in_names.data(),
          in_values.data(), in_values.size(), out_names.data(), out_names.size(), mems.data(),
          outs.data());
    }
    nxrt::Check(status);
    nb::list out;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (was_bound[i])
        out.append(nb::none());
      else
        out.append(nb::cast(PyValue{nxrt::Value(outs[i]), nb::none()}));
    }
    return out;
  }

  std::vector<std::string> Eps() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < session_->ep_count(); ++i) out.push_back(session_->ep_name(i));
    return out;
  }
  nb::list EpNodeCounts() const {
    nb::list out;
    for (size_t i = 0; i < session_->ep_count(); ++i)
      out.append(nb::make_tuple(session_->ep_name(i), session_->ep_node_count(i)));
    return out;
  }
  nb::dict ModelMeta() const {
    nb::dict d;
    for (const char* key : {"producer_name", "producer_version", "domain", "description",
                            "graph_name", "graph_description", "version", "ir_version"})
      d[key] = session_->model_info(key);
    d["custom_metadata_map"] = ToDict(session_->custom_metadata());
    return d;
  }
  nb::dict Report() const { return ReportToDict(session_->assignment_report()); }
  int64_t Statistic(const std::string& key) const { return session_->statistic(key); }
  void EndProfiling() { session_->EndProfiling(); }

 private:
  // Name, kind, element type and shape (symbolic dims by name) of every input or output.
  nb::list Describe(bool inputs) const {
    nb::list out;
    const size_t count = inputs ? session_->input_count() : session_->output_count();
    for (size_t i = 0; i < count; ++i) {
      const NxTypeInfo info = inputs ? session_->input_type(i) : session_->output_type(i);
      std::vector<std::string> names;
      for (size_t d = 0; d < info.rank; ++d)
        names.push_back(inputs ? session_->input_dim_name(i, d) : session_->output_dim_name(i, d));
      nb::dict t = TypeInfoToDict(info, names);
      t["name"] = inputs ? session_->input_name(i) : session_->output_name(i);
      out.append(t);
    }
    return out;
  }

  std::unique_ptr<nxrt::Session> session_;
};

nb::list EpDevicesOf(nxrt::Env& env) {
  nb::list out;
  const std::vector<nxrt::EpDevice> devices = env.ep_devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    const nxrt::EpDevice& d = devices[i];
    nb::dict e;
    e["index"] = i;
    e["ep_name"] = d.ep_name();
    e["ep_vendor"] = d.ep_vendor();
    e["library"] = d.library();
    e["device"] = DeviceToDict(d.hardware());
    e["metadata"] = ToDict(d.metadata());
    e["options"] = ToDict(d.options());
    e["memory"] = d.memory() ? nb::cast(PyMemory{d.memory()}) : nb::none();
    out.append(e);
  }
  return out;
}

}  // namespace

NB_MODULE(_nxrt, m) {
  m.doc() = "nxrt's C API for the nxrt package (use `import nxrt`).";

  // Exceptions: nxrt.Error and one subclass per status code.
  static const char* kNames[] = {
      "Ok",           "Fail",          "InvalidArgument",  "NotFound",    "NotImplemented",
      "InvalidModel", "InvalidPlugin", "RuntimeException", "OutOfMemory", "Cancelled"};
  PyObject* base = PyErr_NewException("nxrt.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(base);
  for (int code = NX_FAIL; code <= NX_CANCELLED; ++code) {
    const std::string name = std::string("nxrt.") + kNames[code];
    g_errors[code] = PyErr_NewException(name.c_str(), base, nullptr);
    m.attr(kNames[code]) = nb::handle(g_errors[code]);
  }
  g_errors[NX_OK] = base;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const nxrt::Exception& e) {
      const int code = e.code() >= NX_FAIL && e.code() <= NX_CANCELLED ? e.code() : NX_FAIL;
      PyErr_SetString(g_errors[code], e.what());
    }
  });

  m.def("version", [] { return std::string(Nx_GetVersionString()); });
  m.def("abi_version", [] {
    nb::dict d;
    d["c_api"] = NXRT_C_API_VERSION;
    d["ep_api"] = NXRT_EP_API_VERSION;
    return d;
  });
  m.def("element_type_name",
        [](int type) { return std::string(Nx_ElementTypeName(static_cast<NxElementType>(type))); });
  m.def("hardware_devices", [] {
    nb::list out;
    for (const nxrt::HardwareDevice& d : nxrt::HardwareDevice::All()) out.append(DeviceToDict(d));
    return out;
  });

  nb::class_<nxrt::Env>(m, "Env")
      .def("__init__",
           [](nxrt::Env* self, int level) { new (self) nxrt::Env(static_cast<NxLogLevel>(level)); })
      .def("register_ep_library",
           [](nxrt::Env& env, const std::string& name, const std::string& path) {
             env.RegisterEpLibrary(name, path);
           })
      .def("register_ep_library_with_virtual_devices",
           [](nxrt::Env& env, const std::string& name, const std::string& path,
              const std::vector<std::pair<int, nb::dict>>& requests) {
             std::vector<nxrt::VirtualDeviceRequest> raw;
             for (const auto& [type, options] : requests)
               raw.push_back({static_cast<NxDeviceType>(type), FromDict(options)});
             env.RegisterEpLibrary(name, path, raw);
           })
      .def("unregister_ep_library",
           [](nxrt::Env& env, const std::string& name) { env.UnregisterEpLibrary(name); })
      .def("ep_devices", &EpDevicesOf)
      .def("memories", &MemoriesOf)
      .def(
          "compile_model",
          [](nxrt::Env& env, const std::string& model, const nxrt::SessionOptions* options,
             const std::string& output, uint32_t flags) {
            nb::gil_scoped_release unlocked;
            return env.CompileModel(model, options, output, flags);
          },
          nb::arg("model"), nb::arg("options").none(), nb::arg("output"), nb::arg("flags"))
      .def("model_compatibility",
           [](nxrt::Env& env, const std::string& model, size_t ep_device) {
             const std::vector<nxrt::EpDevice> all = env.ep_devices();
             NXRT_PY_REQUIRE(ep_device < all.size(), "no EP device " + std::to_string(ep_device));
             return static_cast<int>(env.model_compatibility(model, all[ep_device]));
           })
      .def("ep_memory", [](nxrt::Env& env,
                           const std::string& ep_name) { return PyMemory{env.ep_memory(ep_name)}; })
      .def("statistic", &nxrt::Env::statistic)
      .def(
          "plan_placement",
          [](nxrt::Env& env, const nb::object& model, const nxrt::SessionOptions* options) {
            if (nb::isinstance<nb::bytes>(model)) {
              nb::bytes b = nb::cast<nb::bytes>(model);
              return ReportToDict(nxrt::PlanPlacement(env, b.c_str(), b.size(), options));
            }
            return ReportToDict(
                nxrt::PlanPlacement(env, nb::cast<std::string>(nb::str(model)), options));
          },
          nb::arg("model"), nb::arg("options").none());

  nb::class_<nxrt::SessionOptions>(m, "SessionOptions")
      .def(nb::init<>())
      .def("set_intra_op_threads", [](nxrt::SessionOptions& o, int n) { o.SetIntraOpThreads(n); })
      .def("set_log_level", [](nxrt::SessionOptions& o,
                               int level) { o.SetLogLevel(static_cast<NxLogLevel>(level)); })
      .def("set_optimization_level",
           [](nxrt::SessionOptions& o, int level) { o.SetOptimizationLevel(level); })
      .def("set_config", [](nxrt::SessionOptions& o, const std::string& key,
                            const std::string& value) { o.SetConfig(key, value); })
      .def("append_ep", [](nxrt::SessionOptions& o, const std::string& name,
                           const nb::dict& options) { o.AppendEp(name, FromDict(options)); })
      .def("append_ep_devices",
           [](nxrt::SessionOptions& o, nxrt::Env& env, const std::vector<size_t>& indices,
              const nb::dict& options) {
             const std::vector<nxrt::EpDevice> all = env.ep_devices();
             std::vector<nxrt::EpDevice> chosen;
             for (size_t i : indices) {
               if (i >= all.size())
                 throw nxrt::Exception(NX_INVALID_ARGUMENT, "no EP device " + std::to_string(i));
               chosen.push_back(all[i]);
             }
             o.AppendEpDevices(chosen, FromDict(options));
           })
      .def("set_ep_selection_policy",
           [](nxrt::SessionOptions& o, int policy) {
             o.SetEpSelectionPolicy(static_cast<NxEpSelectionPolicy>(policy));
           })
      .def("set_fallback", [](nxrt::SessionOptions& o,
                              int mode) { o.SetFallback(static_cast<NxFallbackMode>(mode)); })
      .def("set_profile_file",
           [](nxrt::SessionOptions& o, const std::string& path) { o.SetProfileFile(path); })
      .def("set_memory_limit",
           [](nxrt::SessionOptions& o, size_t bytes) { o.SetMemoryLimit(bytes); });

  nb::class_<nxrt::RunOptions>(m, "RunOptions")
      .def(nb::init<>())
      .def("set_terminate", [](nxrt::RunOptions& o, bool t) { o.SetTerminate(t); })
      .def("set_timeout", [](nxrt::RunOptions& o, double s) { o.SetTimeout(s); });

  nb::class_<PyMemory>(m, "MemoryInfo")
      .def_prop_ro("name", [](const PyMemory& m) { return std::string(m.info->name); })
      .def_prop_ro("device_type",
                   [](const PyMemory& m) { return static_cast<int>(m.info->device_type); })
      .def_prop_ro("vendor_id", [](const PyMemory& m) { return m.info->vendor_id; })
      .def_prop_ro("device_id", [](const PyMemory& m) { return m.info->device_id; })
      .def_prop_ro("host_accessible", [](const PyMemory& m) { return IsHost(m.info); });

  nb::class_<PyValue>(m, "Value")
      .def_static(
          "from_spec",
          [](nxrt::Env& env, const nb::tuple& spec, const PyMemory* memory) {
            return ValueFromSpec(env, spec, memory);
          },
          nb::arg("env"), nb::arg("spec"), nb::arg("memory").none())
      .def_static(
          "in_memory",
          [](nxrt::Env& env, const PyMemory& memory, int type, const std::vector<int64_t>& shape) {
            return PyValue{
                nxrt::Value::InMemory(env, memory.info, static_cast<NxElementType>(type), shape),
                nb::none()};
          })
      .def_static("over_address",
                  [](int type, const std::vector<int64_t>& shape, uintptr_t address) {
                    NXRT_PY_REQUIRE(address != 0, "buffer_ptr is 0");
                    const auto t = static_cast<NxElementType>(type);
                    size_t count = 1;
                    for (int64_t d : shape) count *= static_cast<size_t>(d < 0 ? 0 : d);
                    return PyValue{
                        nxrt::Value::WrapTensor(t, shape, reinterpret_cast<void*>(address),
                                                StorageBytes(t, count)),
                        nb::none()};
                  })
      .def_prop_ro(
          "kind", [](const PyValue& v) { return static_cast<int>(NxValue_GetKind(v.value.get())); })
      .def_prop_ro("element_type",
                   [](const PyValue& v) { return static_cast<int>(v.value.type()); })
      .def_prop_ro("shape", [](const PyValue& v) { return v.value.shape(); })
      .def_prop_ro("memory",
                   [](const PyValue& v) -> std::optional<PyMemory> {
                     const NxMemoryInfo* m = v.value.memory();
                     if (m == nullptr) return std::nullopt;
                     return PyMemory{m};
                   })
      .def_prop_ro(
          "data_ptr",
          [](PyValue& v) { return reinterpret_cast<uintptr_t>(NxValue_GetData(v.value.get())); })
      .def_prop_ro("has_value",
                   [](const PyValue& v) {
                     return NxValue_GetKind(v.value.get()) != NX_VALUE_OPTIONAL ||
                            NxValue_OptionalHasValue(v.value.get());
                   })
      .def("to_python", [](const PyValue& v, nxrt::Env& env) { return CopyToPython(env, v.value); })
      .def("copy_from", [](PyValue& v, nxrt::Env& env, const nb::tuple& spec) {
        nxrt::Value host = InputFromPython(spec);
        NXRT_PY_REQUIRE(host.type() == v.value.type() && host.shape() == v.value.shape(),
                        "the array's element type and shape must match the value's");
        host.CopyTo(env, v.value);
      });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<nxrt::Env&, const nb::object&, const nxrt::SessionOptions*>(), nb::arg("env"),
           nb::arg("model"), nb::arg("options").none(), nb::keep_alive<1, 2>())
      .def("inputs", &PySession::Inputs)
      .def("outputs", &PySession::Outputs)
      .def("run", &PySession::Run, nb::arg("output_names"), nb::arg("feed"), nb::arg("convert"),
           nb::arg("run_options").none())
      .def("run_values", &PySession::RunValues, nb::arg("output_names"), nb::arg("input_names"),
           nb::arg("inputs"), nb::arg("memories"), nb::arg("bound"), nb::arg("run_options").none())
      .def("eps", &PySession::Eps)
      .def("ep_node_counts", &PySession::EpNodeCounts)
      .def("model_meta", &PySession::ModelMeta)
      .def("assignment_report", &PySession::Report)
      .def("statistic", &PySession::Statistic)
      .def("end_profiling", &PySession::EndProfiling);
}
