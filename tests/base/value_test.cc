#include "base/value.h"

#include <gtest/gtest.h>

#include "base/element_type.h"
#include "base/error.h"
#include "model/tensor_proto.h"

namespace nxrt {
namespace {

TEST(Value, EveryElementTypeCanBeStored) {
  for (int t = NX_TYPE_FLOAT; t <= NX_TYPE_INT2; ++t) {
    auto type = static_cast<NxElementType>(t);
    auto v = MakeTensor(type, std::vector<int64_t>{2, 3});
    EXPECT_EQ(v->count, 6u) << ElementTypeName(type);
    EXPECT_STRNE(ElementTypeName(type), "undefined");
    if (type == NX_TYPE_STRING) {
      EXPECT_EQ(v->strings.size(), 6u);
    } else {
      ASSERT_NE(v->data, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data) % 64, 0u);
      // 6 elements: 3 bytes at two per byte, 2 bytes at four per byte.
      const size_t packed = ElementsPerByte(type) == 4 ? 2u : 3u;
      EXPECT_EQ(TensorBytes(*v), IsSubByteType(type) ? packed : 6u * ElementSize(type))
          << ElementTypeName(type);
    }
  }
  EXPECT_EQ(ElementSize(NX_TYPE_FLOAT8E8M0), 1u);
  EXPECT_EQ(StorageBytes(NX_TYPE_INT2, 5), 2u);
  EXPECT_EQ(StorageBytes(NX_TYPE_UINT2, 8), 2u);
  EXPECT_FALSE(IsKnownElementType(NX_TYPE_INT2 + 1));
}

TEST(Value, ATensorLargerThanTheMachineIsAClearErrorWithoutTouchingMemory) {
  // 2^48 floats = 1 PiB: below the 2^56-byte cap on sizes, above any machine's memory. Where
  // the kernel overcommits, aligned_alloc could succeed and the zero fill then page in forever.
  try {
    MakeTensor(NX_TYPE_FLOAT, std::vector<int64_t>{int64_t{1} << 48});
    FAIL() << "a 1 PiB tensor was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), NX_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find("more than this machine has"), std::string::npos)
        << e.what();
  }
}

TEST(Value, ScalarsAndEmptyTensors) {
  auto scalar = MakeTensor(NX_TYPE_FLOAT, {});
  EXPECT_EQ(scalar->count, 1u);
  auto empty = MakeTensor(NX_TYPE_INT64, std::vector<int64_t>{3, 0});
  EXPECT_EQ(empty->count, 0u);
}

TEST(Value, NegativeAndOverflowingShapesAreRejected) {
  EXPECT_THROW(MakeTensor(NX_TYPE_FLOAT, std::vector<int64_t>{-1}), Error);
  EXPECT_THROW(MakeTensor(NX_TYPE_FLOAT, std::vector<int64_t>{1LL << 40, 1LL << 40}), Error);
  EXPECT_THROW(MakeTensor(static_cast<NxElementType>(99), std::vector<int64_t>{1}), Error);
}

TEST(Value, TensorProtoRoundTripsEveryTypedField) {
  onnx::TensorProto t;
  t.set_name("h");
  t.set_data_type(onnx::TensorProto::FLOAT16);
  t.add_dims(2);
  t.add_int32_data(0x3c00);  // 1.0
  t.add_int32_data(0xc000);  // -2.0
  auto v = TensorFromProto(t, nullptr, nullptr);
  EXPECT_EQ(v->type, NX_TYPE_FLOAT16);
  EXPECT_EQ(static_cast<uint16_t*>(v->data)[1], 0xc000);

  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::STRING);
  s.add_dims(2);
  s.add_string_data("a");
  s.add_string_data("bc");
  auto sv = TensorFromProto(s, nullptr, nullptr);
  EXPECT_EQ(sv->strings[1], "bc");

  onnx::TensorProto u;
  u.set_data_type(onnx::TensorProto::UINT32);
  u.add_dims(1);
  u.add_uint64_data(4000000000u);
  EXPECT_EQ(static_cast<uint32_t*>(TensorFromProto(u, nullptr, nullptr)->data)[0], 4000000000u);

  onnx::TensorProto i4;
  i4.set_data_type(22);  // INT4 (newer than the Debian onnx.proto)
  i4.add_dims(3);
  i4.set_raw_data(std::string("\x21\x03", 2));
  auto iv = TensorFromProto(i4, nullptr, nullptr);
  EXPECT_EQ(TensorBytes(*iv), 2u);
}

TEST(Value, SequenceAndOptionalProtos) {
  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (int i = 0; i < 3; ++i) {
    auto* t = seq.add_tensor_values();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(i);
  }
  std::string bytes = seq.SerializeAsString();
  auto v = ValueFromProtoBytes(NX_VALUE_SEQUENCE, bytes.data(), bytes.size());
  EXPECT_EQ(v->kind, NX_VALUE_SEQUENCE);
  EXPECT_EQ(v->elements.size(), 3u);
  EXPECT_EQ(v->sequence_type, NX_TYPE_INT64);

  onnx::OptionalProto opt;
  opt.set_elem_type(onnx::OptionalProto::UNDEFINED);
  bytes = opt.SerializeAsString();
  auto o = ValueFromProtoBytes(NX_VALUE_OPTIONAL, bytes.data(), bytes.size());
  EXPECT_EQ(o->kind, NX_VALUE_OPTIONAL);
  EXPECT_FALSE(o->contained);
}

}  // namespace
}  // namespace nxrt
