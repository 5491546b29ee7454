// Tensors read from a model: a hostile shape must neither allocate what the data does not back
// nor wrap a size computation around to a small buffer.
#include "model/tensor_proto.h"

#include <gtest/gtest.h>

#include <chrono>

#include "base/element_type.h"
#include "base/error.h"
#include "base/value.h"

namespace nxrt {
namespace {

onnx::TensorProto Declared(onnx::TensorProto::DataType type, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

std::string ErrorOf(const onnx::TensorProto& t) {
  try {
    TensorFromProto(t, nullptr, nullptr);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TensorProto, TypedFieldsAreCountedBeforeTheTensorIsAllocated) {
  // 2^31 floats (8 GiB) declared, 3 given: fails at once, without allocating 8 GiB.
  auto t = Declared(onnx::TensorProto::FLOAT, {1 << 16, 1 << 15});
  t.add_float_data(1);
  t.add_float_data(2);
  t.add_float_data(3);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string message = ErrorOf(t);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  EXPECT_NE(message.find("float_data has 3 values, the shape needs 2147483648"), std::string::npos)
      << message;
}

TEST(TensorProto, AShapeWhoseByteSizeWrapsAroundIsRejected) {
  // 2^62 floats are 2^64 bytes: computed naively that is 0 bytes, which empty raw_data matches.
  auto t = Declared(onnx::TensorProto::FLOAT, {int64_t{1} << 62});
  t.set_raw_data("");
  EXPECT_NE(ErrorOf(t), "");
  auto c = Declared(onnx::TensorProto::COMPLEX64, {int64_t{1} << 62, 2});
  EXPECT_NE(ErrorOf(c), "");
  EXPECT_THROW(StorageBytes(NX_TYPE_DOUBLE, size_t{1} << 61), Error);
  EXPECT_THROW(MakeTensor(NX_TYPE_FLOAT, std::vector<int64_t>{int64_t{1} << 62}), Error);
  EXPECT_EQ(StorageBytes(NX_TYPE_INT4, 5), 3u);
  EXPECT_EQ(StorageBytes(NX_TYPE_FLOAT, 5), 20u);
}

TEST(TensorProto, MatchingTypedFieldsStillLoad) {
  auto t = Declared(onnx::TensorProto::INT64, {2});
  t.add_int64_data(7);
  t.add_int64_data(-1);
  ValuePtr v = TensorFromProto(t, nullptr, nullptr);
  EXPECT_EQ(static_cast<const int64_t*>(v->data)[1], -1);
  // uint4 (22) is newer than Debian's onnx 1.12 protobuf enum.
  auto u = Declared(static_cast<onnx::TensorProto::DataType>(NX_TYPE_UINT4), {3});
  u.add_int32_data(0x21);
  u.add_int32_data(0x03);
  EXPECT_EQ(TensorFromProto(u, nullptr, nullptr)->count, 3u);
}

TEST(TensorProto, TwoBitIntegersAndE8M0Load) {
  // int2: 6 elements are 2 packed bytes, one int32_data entry per byte.
  auto i2 = Declared(static_cast<onnx::TensorProto::DataType>(NX_TYPE_INT2), {6});
  i2.add_int32_data(0xE4);  // elements 0, 1, -2, -1
  i2.add_int32_data(0x01);
  ValuePtr v = TensorFromProto(i2, nullptr, nullptr);
  EXPECT_EQ(v->count, 6u);
  EXPECT_EQ(TensorBytes(*v), 2u);
  EXPECT_EQ(static_cast<const uint8_t*>(v->data)[0], 0xE4);
  // One entry too few for the shape is a clear error, not a short read.
  auto short_u2 = Declared(static_cast<onnx::TensorProto::DataType>(NX_TYPE_UINT2), {9});
  short_u2.add_int32_data(0xFF);
  short_u2.add_int32_data(0xFF);
  EXPECT_NE(ErrorOf(short_u2).find("int32_data has 2 values, the shape needs 3"), std::string::npos)
      << ErrorOf(short_u2);
  auto raw = Declared(static_cast<onnx::TensorProto::DataType>(NX_TYPE_UINT2), {5});
  raw.set_raw_data(std::string("\x1b\x02", 2));
  EXPECT_EQ(TensorBytes(*TensorFromProto(raw, nullptr, nullptr)), 2u);
  auto e8 = Declared(static_cast<onnx::TensorProto::DataType>(NX_TYPE_FLOAT8E8M0), {2});
  e8.add_int32_data(127);
  e8.add_int32_data(0xFF);
  ValuePtr e = TensorFromProto(e8, nullptr, nullptr);
  EXPECT_EQ(static_cast<const uint8_t*>(e->data)[0], 127);
  EXPECT_EQ(static_cast<const uint8_t*>(e->data)[1], 0xFF);
}

}  // namespace
}  // namespace nxrt
