#include "model/tensor_proto.h"

#include <cstring>

#include "base/element_type.h"
#include "base/error.h"

namespace nxrt {
namespace {

[[noreturn]] void Bad(const onnx::TensorProto& proto, const std::string& reason) {
  Throw(NX_INVALID_MODEL, "tensor '" + proto.name() + "': " + reason);
}

template <class Field>
void CheckCount(const onnx::TensorProto& proto, const Field& field, size_t expected,
                const char* field_name) {
  if (static_cast<size_t>(field.size()) != expected) {
    Bad(proto, std::string(field_name) + " has " + std::to_string(field.size()) +
                   " values, the shape needs " + std::to_string(expected));
  }
}

// Copies typed fields (int32_data / int64_data / ...) element by element, narrowing to T.
template <class T, class Field>
void CopyTyped(const Field& field, void* out) {
  T* dst = static_cast<T*>(out);
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

// How many values the typed field of `type` must hold for `n` elements, and that field's size.
// Checked before the tensor is allocated: a 100-byte model may declare 10^12 elements.
void CheckTypedFieldCount(const onnx::TensorProto& proto, NxElementType type, size_t n) {
  switch (type) {
    case NX_TYPE_FLOAT:
      return CheckCount(proto, proto.float_data(), n, "float_data");
    case NX_TYPE_COMPLEX64:
      return CheckCount(proto, proto.float_data(), n * 2, "float_data");
    case NX_TYPE_DOUBLE:
      return CheckCount(proto, proto.double_data(), n, "double_data");
    case NX_TYPE_COMPLEX128:
      return CheckCount(proto, proto.double_data(), n * 2, "double_data");
    case NX_TYPE_INT64:
      return CheckCount(proto, proto.int64_data(), n, "int64_data");
    case NX_TYPE_UINT64:
    case NX_TYPE_UINT32:
      return CheckCount(proto, proto.uint64_data(), n, "uint64_data");
    case NX_TYPE_INT4:
    case NX_TYPE_UINT4:
    case NX_TYPE_FLOAT4E2M1:
      return CheckCount(proto, proto.int32_data(), (n + 1) / 2, "int32_data");
    case NX_TYPE_INT2:
    case NX_TYPE_UINT2:
      return CheckCount(proto, proto.int32_data(), (n + 3) / 4, "int32_data");
    case NX_TYPE_STRING:
      return CheckCount(proto, proto.string_data(), n, "string_data");
    default:
      return CheckCount(proto, proto.int32_data(), n, "int32_data");
  }
}

void FillFromTypedFields(const onnx::TensorProto& proto, Value& v) {
  const size_t n = v.count;
  switch (v.type) {
    case NX_TYPE_FLOAT:
      CheckCount(proto, proto.float_data(), n, "float_data");
      if (n) std::memcpy(v.data, proto.float_data().data(), n * 4);
      break;
    case NX_TYPE_COMPLEX64:
      CheckCount(proto, proto.float_data(), n * 2, "float_data");
      if (n) std::memcpy(v.data, proto.float_data().data(), n * 8);
      break;
    case NX_TYPE_DOUBLE:
      CheckCount(proto, proto.double_data(), n, "double_data");
      if (n) std::memcpy(v.data, proto.double_data().data(), n * 8);
      break;
    case NX_TYPE_COMPLEX128:
      CheckCount(proto, proto.double_data(), n * 2, "double_data");
      if (n) std::memcpy(v.data, proto.double_data().data(), n * 16);
      break;
    case NX_TYPE_INT64:
      CheckCount(proto, proto.int64_data(), n, "int64_data");
      if (n) std::memcpy(v.data, proto.int64_data().data(), n * 8);
      break;
    case NX_TYPE_UINT64:
      CheckCount(proto, proto.uint64_data(), n, "uint64_data");
      if (n) std::memcpy(v.data, proto.uint64_data().data(), n * 8);
      break;
    case NX_TYPE_UINT32:
      CheckCount(proto, proto.uint64_data(), n, "uint64_data");
      CopyTyped<uint32_t>(proto.uint64_data(), v.data);
      break;
    case NX_TYPE_INT32:
      CheckCount(proto, proto.int32_data(), n, "int32_data");
      CopyTyped<int32_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_INT16:
      CheckCount(proto, proto.int32_data(), n, "int32_data");
      CopyTyped<int16_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_UINT16:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
      CheckCount(proto, proto.int32_data(), n, "int32_data");
      CopyTyped<uint16_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_INT8:
      CheckCount(proto, proto.int32_data(), n, "int32_data");
      CopyTyped<int8_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_UINT8:
    case NX_TYPE_BOOL:
    case NX_TYPE_FLOAT8E4M3FN:
    case NX_TYPE_FLOAT8E4M3FNUZ:
    case NX_TYPE_FLOAT8E5M2:
    case NX_TYPE_FLOAT8E5M2FNUZ:
    case NX_TYPE_FLOAT8E8M0:
      CheckCount(proto, proto.int32_data(), n, "int32_data");
      CopyTyped<uint8_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_INT4:
    case NX_TYPE_UINT4:
    case NX_TYPE_FLOAT4E2M1:
      // Packed: each int32_data entry holds one byte of two 4-bit values.
      CheckCount(proto, proto.int32_data(), (n + 1) / 2, "int32_data");
      CopyTyped<uint8_t>(proto.int32_data(), v.data);
      break;
    case NX_TYPE_INT2:
    case NX_TYPE_UINT2:
      // Packed: each int32_data entry holds one byte of four 2-bit values.
      CheckCount(proto, proto.int32_data(), (n + 3) / 4, "int32_data");
      CopyTyped<uint8_t>(proto.int32_data(), v.data);
      break;
    default:
      Bad(proto, std::string("unsupported element type ") + ElementTypeName(v.type));
  }
}

}  // namespace

ValuePtr TensorFromProto(const onnx::TensorProto& proto, ExternalDataResolver* external,
                         const std::shared_ptr<void>& keep_alive) {
  if (!proto.has_data_type() || !IsKnownElementType(proto.data_type())) {
    Bad(proto, "unknown element type " + std::to_string(proto.data_type()));
  }
  auto type = static_cast<NxElementType>(proto.data_type());
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    if (d < 0) Bad(proto, "negative dimension in shape " + ShapeString(dims));
  size_t count = 0;
  try {
    count = ElementCount(dims);
  } catch (const Error&) {
    Bad(proto, "shape " + ShapeString(dims) + " is too large");
  }

  if (type == NX_TYPE_STRING) {
    if (proto.data_location() == onnx::TensorProto::EXTERNAL)
      Bad(proto, "string tensors cannot be external");
    CheckCount(proto, proto.string_data(), count, "string_data");
    ValuePtr v = MakeTensor(type, dims);
    for (size_t i = 0; i < count; ++i) v->strings[i] = proto.string_data(static_cast<int>(i));
    return v;
  }

  const size_t bytes = StorageBytes(type, count);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : proto.external_data()) {
      try {
        if (kv.key() == "location")
          location = kv.value();
        else if (kv.key() == "offset")
          offset = std::stoll(kv.value());
        else if (kv.key() == "length")
          length = std::stoll(kv.value());
      } catch (const std::exception&) {
        Bad(proto, "external data entry '" + kv.key() + "' is not a number: '" + kv.value() + "'");
      }
    }
    if (external == nullptr) Bad(proto, "external data is not allowed here");
    auto span = external->Read(proto.name(), location, offset, length);
    if (span.size != bytes) {
      Bad(proto, "external data has " + std::to_string(span.size) + " bytes, the shape " +
                     ShapeString(dims) + " of " + ElementTypeName(type) + " needs " +
                     std::to_string(bytes));
    }
    size_t align = ElementSize(type) ? ElementSize(type) : 1;
    if (reinterpret_cast<uintptr_t>(span.data) % align == 0) {
      return WrapTensor(type, dims, const_cast<uint8_t*>(span.data), span.keep_alive);
    }
    ValuePtr v = MakeTensor(type, dims);
    if (bytes) std::memcpy(v->data, span.data, bytes);
    return v;
  }

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != bytes) {
      Bad(proto, "raw_data has " + std::to_string(raw.size()) + " bytes, the shape " +
                     ShapeString(dims) + " of " + ElementTypeName(type) + " needs " +
                     std::to_string(bytes));
    }
    size_t align = ElementSize(type) ? ElementSize(type) : 1;
    if (keep_alive && bytes >= 4096 && reinterpret_cast<uintptr_t>(raw.data()) % align == 0) {
      return WrapTensor(type, dims, const_cast<char*>(raw.data()), keep_alive);
    }
    ValuePtr v = MakeTensor(type, dims);
    if (bytes) std::memcpy(v->data, raw.data(), bytes);
    return v;
  }

  if (count > 0) CheckTypedFieldCount(proto, type, count);
  ValuePtr v = MakeTensor(type, dims);
  FillFromTypedFields(proto, *v);
  return v;
}

ValuePtr TensorTakingProtoData(onnx::TensorProto& proto, ExternalDataResolver* external) {
  const bool movable = proto.has_data_type() && IsKnownElementType(proto.data_type()) &&
                       proto.data_type() != NX_TYPE_STRING &&
                       proto.data_location() != onnx::TensorProto::EXTERNAL &&
                       proto.has_raw_data() && proto.raw_data().size() >= 4096;
  if (!movable) return TensorFromProto(proto, external, nullptr);
  // Validate on the proto as it is (the same checks and messages), then take the bytes.
  ValuePtr checked = TensorFromProto(proto, external, std::make_shared<int>(0));
  if (checked->data != proto.raw_data().data()) return checked;  // it copied (misaligned bytes)
  // Moving a heap-allocated std::string keeps its buffer, so the data pointer stays valid.
  auto owned = std::make_shared<std::string>(std::move(*proto.mutable_raw_data()));
  proto.clear_raw_data();
  return WrapTensor(checked->type, checked->dims, owned->data(), owned);
}

ValuePtr SequenceFromProto(const onnx::SequenceProto& proto) {
  auto v = std::make_shared<Value>();
  v->kind = NX_VALUE_SEQUENCE;
  switch (proto.elem_type()) {
    case onnx::SequenceProto::TENSOR:
    case onnx::SequenceProto::UNDEFINED:
      for (const auto& t : proto.tensor_values())
        v->elements.push_back(TensorFromProto(t, nullptr, nullptr));
      if (!v->elements.empty()) v->sequence_type = v->elements.front()->type;
      break;
    case onnx::SequenceProto::SEQUENCE:
      for (const auto& s : proto.sequence_values()) v->elements.push_back(SequenceFromProto(s));
      break;
    case onnx::SequenceProto::OPTIONAL:
      for (const auto& o : proto.optional_values()) v->elements.push_back(OptionalFromProto(o));
      break;
    default:
      Throw(NX_NOT_IMPLEMENTED, "sequence '" + proto.name() + "': element kind " +
                                    std::to_string(proto.elem_type()) + " is not supported");
  }
  return v;
}

ValuePtr OptionalFromProto(const onnx::OptionalProto& proto) {
  auto v = std::make_shared<Value>();
  v->kind = NX_VALUE_OPTIONAL;
  switch (proto.elem_type()) {
    case onnx::OptionalProto::UNDEFINED:
      break;
    case onnx::OptionalProto::TENSOR:
      v->contained = TensorFromProto(proto.tensor_value(), nullptr, nullptr);
      break;
    case onnx::OptionalProto::SEQUENCE:
      v->contained = SequenceFromProto(proto.sequence_value());
      break;
    case onnx::OptionalProto::OPTIONAL:
      v->contained = OptionalFromProto(proto.optional_value());
      break;
    default:
      Throw(NX_NOT_IMPLEMENTED, "optional '" + proto.name() + "': element kind " +
                                    std::to_string(proto.elem_type()) + " is not supported");
  }
  return v;
}

ValuePtr ValueFromProtoBytes(NxValueKind kind, const void* data, size_t size) {
  NXRT_CHECK(size <= static_cast<size_t>(INT32_MAX), NX_INVALID_ARGUMENT,
             "proto larger than 2 GiB");
  const int n = static_cast<int>(size);
  switch (kind) {
    case NX_VALUE_TENSOR: {
      onnx::TensorProto proto;
      NXRT_CHECK(proto.ParseFromArray(data, n), NX_INVALID_ARGUMENT, "bytes are not a TensorProto");
      return TensorFromProto(proto, nullptr, nullptr);
    }
    case NX_VALUE_SEQUENCE: {
      onnx::SequenceProto proto;
      NXRT_CHECK(proto.ParseFromArray(data, n), NX_INVALID_ARGUMENT,
                 "bytes are not a SequenceProto");
      return SequenceFromProto(proto);
    }
    case NX_VALUE_OPTIONAL: {
      onnx::OptionalProto proto;
      NXRT_CHECK(proto.ParseFromArray(data, n), NX_INVALID_ARGUMENT,
                 "bytes are not an OptionalProto");
      return OptionalFromProto(proto);
    }
  }
  Throw(NX_INVALID_ARGUMENT, "unknown value kind");
}

}  // namespace nxrt
