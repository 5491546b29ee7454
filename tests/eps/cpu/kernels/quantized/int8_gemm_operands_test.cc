// The session option that picks the 8-bit product's path (int8_gemm_core.h, KernelInt8GemmPath):
// "ep.cpu.amx" is 0 or 1, and anything else stops session creation with a message naming it.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <string>

#include "test_util.h"

namespace {

// X [3, 4] float -> DynamicQuantizeLinear -> MatMulInteger with a constant uint8 W [4, 4] ->
// Cast to float: one 8-bit product on the CPU EP's blocked GEMM.
std::string QuantizedMatMulModel() {
  onnx::ModelProto model = nxrt::test::MakeModel(
      {nxrt::test::MakeNode("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}),
       nxrt::test::MakeNode("MatMulInteger", {"xq", "w", "xz"}, {"y32"}),
       nxrt::test::MakeNode("Cast", {"y32"}, {"y"})},
      {"x"}, {"y"}, {3, 4});
  onnx::NodeProto* cast = model.mutable_graph()->mutable_node(2);
  nxrt::test::AddIntAttribute(cast, "to", onnx::TensorProto::FLOAT);
  onnx::TensorProto* w = model.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT8);
  w->add_dims(4);
  w->add_dims(4);
  std::string bytes(16, '\0');
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<char>(i * 13 % 256);
  w->set_raw_data(bytes);
  return nxrt::test::Serialize(model);
}

TEST(Int8GemmOption, AmxZeroAndOneAreAccepted) {
  const std::string bytes = QuantizedMatMulModel();
  nxrt::Env env(NX_LOG_ERROR);
  for (const char* value : {"0", "1"}) {
    nxrt::SessionOptions options;
    options.SetConfig("ep.cpu.amx", value);
    EXPECT_NO_THROW(nxrt::Session(env, bytes.data(), bytes.size(), &options)) << value;
  }
}

TEST(Int8GemmOption, AnyOtherAmxValueIsAClearError) {
  const std::string bytes = QuantizedMatMulModel();
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetConfig("ep.cpu.amx", "yes");
  try {
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    FAIL() << "amx='yes' was accepted";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("amx='yes' is not 0 or 1"), std::string::npos) << e.what();
  }
}

}  // namespace
