// 8-bit tensors for the quantized kernel tests (MatMulInteger, QLinearMatMul, ConvInteger): the
// values as int32 for the tests' reference arithmetic, random fills, and the same tensor as an
// initializer, a graph input or a run-time value.
#pragma once

#include <cstdint>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace nxrt::test {

inline int OnnxInt8Type(bool is_signed) {
  return is_signed ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
}

// 8-bit values stored as int32 for the test's arithmetic.
struct Int8Tensor {
  std::vector<int64_t> dims;
  std::vector<int32_t> values;
  bool is_signed = false;
};

inline Int8Tensor RandomInt8(std::vector<int64_t> dims, bool is_signed, std::mt19937& rng) {
  Int8Tensor t{std::move(dims), {}, is_signed};
  int64_t count = 1;
  for (int64_t d : t.dims) count *= d;
  std::uniform_int_distribution<int> dist(is_signed ? -128 : 0, is_signed ? 127 : 255);
  t.values.resize(static_cast<size_t>(count));
  for (auto& v : t.values) v = dist(rng);
  return t;
}

inline onnx::TensorProto ToProto(const std::string& name, const Int8Tensor& t) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(OnnxInt8Type(t.is_signed));
  for (int64_t d : t.dims) p.add_dims(d);
  std::string raw(t.values.size(), '\0');
  for (size_t i = 0; i < t.values.size(); ++i) raw[i] = static_cast<char>(t.values[i]);
  p.set_raw_data(raw);
  return p;
}

inline nxrt::Value ToValue(const Int8Tensor& t) {
  nxrt::Value v = nxrt::Value::Tensor(t.is_signed ? NX_TYPE_INT8 : NX_TYPE_UINT8, t.dims);
  auto* bytes = v.data<uint8_t>();
  for (size_t i = 0; i < t.values.size(); ++i) bytes[i] = static_cast<uint8_t>(t.values[i]);
  return v;
}

// A graph input of ONNX element type `type` and static `dims`.
inline void AddTensorInput(onnx::GraphProto* g, const std::string& name, int type,
                           const std::vector<int64_t>& dims) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

}  // namespace nxrt::test
