// QDQ folding (session/qdq_folding.h): quantize_static's QuantizeLinear/DequantizeLinear islands
// become quantized ops at session creation, with results within a quantization step of the
// unfolded graph's, and islands that cannot be folded keep their float ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nxrt/nxrt.hpp>
#include <random>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeNode;

template <class T>
onnx::TensorProto MakeIntTensor(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<T>& data, int type) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T)));
  return t;
}

constexpr float kXScale = 0.02f, kYScale = 0.05f, kAddScale = 0.06f;

// x[1,4,8,8] -> Q/DQ -> Conv(3x3, pad 1, per-channel int8 weights, int32 bias) -> Relu -> Q/DQ
//   -> Add(DQ(Q(x))) -> Q/DQ -> MaxPool(2x2) -> Q/DQ -> GlobalAveragePool -> Q/DQ -> y,
// the shape quantize_static writes. With `conv_output`, the convolution's float output is also
// a graph output (so that island must not fold).
std::string QdqModel(bool conv_output) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq");
  auto qdq = [&](const std::string& in, const std::string& scale, const std::string& out) {
    *g->add_node() = MakeNode("QuantizeLinear", {in, scale, "zp"}, {out + "_q"}, out + "_q");
    *g->add_node() = MakeNode("DequantizeLinear", {out + "_q", scale, "zp"}, {out}, out + "_dq");
  };
  qdq("x", "xs", "xd");
  auto wdq = MakeNode("DequantizeLinear", {"wq", "ws", "wzp"}, {"w"}, "w_dq");
  AddIntAttribute(&wdq, "axis", 0);
  *g->add_node() = wdq;
  auto bdq = MakeNode("DequantizeLinear", {"bq", "bs", "bzp"}, {"b"}, "b_dq");
  AddIntAttribute(&bdq, "axis", 0);
  *g->add_node() = bdq;
  auto conv = MakeNode("Conv", {"xd", "w", "b"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", {1, 1, 1, 1});
  *g->add_node() = conv;
  *g->add_node() = MakeNode("Relu", {"c"}, {"r"}, "relu");
  qdq("r", "ys", "rd");
  *g->add_node() = MakeNode("Add", {"rd", "xd"}, {"s"}, "add");
  qdq("s", "as", "sd");
  auto pool = MakeNode("MaxPool", {"sd"}, {"p"}, "pool");
  AddIntsAttribute(&pool, "kernel_shape", {2, 2});
  AddIntsAttribute(&pool, "strides", {2, 2});
  *g->add_node() = pool;
  qdq("p", "as", "pd");
  *g->add_node() = MakeNode("GlobalAveragePool", {"pd"}, {"gap"}, "gap");
  qdq("gap", "as", "y");

  std::mt19937 rng(5);
  std::uniform_int_distribution<int> wdist(-30, 30), bdist(-200, 200);
  std::vector<int8_t> wq(4 * 4 * 9), wzp(4, 0);
  std::vector<float> ws(4), bs(4);
  std::vector<int32_t> bq(4), bzp(4, 0);
  for (int8_t& v : wq) v = static_cast<int8_t>(wdist(rng));
  for (int c = 0; c < 4; ++c) {
    ws[c] = 0.01f * static_cast<float>(c + 1);
    bs[c] = kXScale * ws[c];
    bq[c] = bdist(rng);
  }
  *g->add_initializer() = MakeIntTensor("wq", {4, 4, 3, 3}, wq, onnx::TensorProto::INT8);
  *g->add_initializer() = MakeIntTensor("wzp", {4}, wzp, onnx::TensorProto::INT8);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ws", {4}, ws);
  *g->add_initializer() = MakeIntTensor("bq", {4}, bq, onnx::TensorProto::INT32);
  *g->add_initializer() = MakeIntTensor("bzp", {4}, bzp, onnx::TensorProto::INT32);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("bs", {4}, bs);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {kXScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ys", {}, {kYScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("as", {}, {kAddScale});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{0}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 4, 1, 1});
  if (conv_output) AddFloatValue(g->add_output(), "c", {1, 4, 8, 8});
  return m.SerializeAsString();
}

// x -> Q -> DQ -> Conv(1x1, per-tensor int8 weights) -> Q: the quantized tensor is the graph's
// output, so the NHWC convolution's result must be transposed back for it.
std::string QuantizedOutputModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_out");
  *g->add_node() = MakeNode("QuantizeLinear", {"x", "xs", "zp"}, {"xq"}, "xq");
  *g->add_node() = MakeNode("DequantizeLinear", {"xq", "xs", "zp"}, {"xd"}, "xd");
  *g->add_node() = MakeNode("DequantizeLinear", {"wq", "ws", "wzp"}, {"w"}, "wd");
  *g->add_node() = MakeNode("Conv", {"xd", "w"}, {"c"}, "conv");
  *g->add_node() = MakeNode("QuantizeLinear", {"c", "ys", "zp"}, {"y"}, "yq");
  std::vector<int8_t> wq(8 * 4);
  for (size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<int8_t>(int(i * 7 % 41) - 20);
  *g->add_initializer() = MakeIntTensor("wq", {8, 4, 1, 1}, wq, onnx::TensorProto::INT8);
  *g->add_initializer() = MakeIntTensor("wzp", {}, std::vector<int8_t>{0}, onnx::TensorProto::INT8);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ws", {}, {0.01f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {kXScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ys", {}, {kYScale});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{100}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  auto* y = g->add_output();
  y->set_name("y");
  auto* tt = y->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::UINT8);
  for (int64_t d : {1, 8, 8, 8}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return m.SerializeAsString();
}

std::vector<nxrt::Value> RunModel(const std::string& bytes, int level, size_t* nodes) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetOptimizationLevel(level).SetIntraOpThreads(1);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  *nodes = session.ep_node_count(0);
  std::vector<int64_t> dims = {1, 4, 8, 8};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.0f, 4.0f);
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = uniform(rng);
  return session.Run({"x"}, {&x});
}

TEST(QdqFolding, FoldedGraphMatchesQdqGraph) {
  const std::string bytes = QdqModel(false);
  size_t plain_nodes = 0, folded_nodes = 0;
  auto a = RunModel(bytes, 0, &plain_nodes);
  auto b = RunModel(bytes, 1, &folded_nodes);
  EXPECT_EQ(plain_nodes, 17u);
  // Q(x), Transpose to NHWC, QLinearConv+Relu, QLinearAdd, MaxPool on uint8 NHWC (com.nxrt),
  // QLinearGlobalAveragePool (channels_last), Transpose back of its 1x1 result, DQ(y).
  EXPECT_EQ(folded_nodes, 8u);
  ASSERT_EQ(a[0].shape(), b[0].shape());
  for (size_t i = 0; i < a[0].size(); ++i) {
    // Integer and float arithmetic may round a tie differently: a step per requantization.
    EXPECT_NEAR(a[0].data<float>()[i], b[0].data<float>()[i], 2.5f * kAddScale) << i;
  }
}

TEST(QdqFolding, ConvWhoseFloatOutputIsReadElsewhereStaysFloat) {
  const std::string bytes = QdqModel(true);
  size_t plain_nodes = 0, folded_nodes = 0;
  auto a = RunModel(bytes, 0, &plain_nodes);
  auto b = RunModel(bytes, 1, &folded_nodes);
  EXPECT_GT(folded_nodes, 8u);
  ASSERT_EQ(a.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    ASSERT_EQ(a[o].shape(), b[o].shape());
    for (size_t i = 0; i < a[o].size(); ++i)
      EXPECT_NEAR(a[o].data<float>()[i], b[o].data<float>()[i], 2.5f * kAddScale) << o << " " << i;
  }
}

TEST(QdqFolding, QuantizedGraphOutputIsTransposedBack) {
  const std::string bytes = QuantizedOutputModel();
  size_t plain_nodes = 0, folded_nodes = 0;
  auto a = RunModel(bytes, 0, &plain_nodes);
  auto b = RunModel(bytes, 1, &folded_nodes);
  // Q(x), Transpose to NHWC, QLinearConv, Transpose back to the output.
  EXPECT_EQ(folded_nodes, 4u);
  ASSERT_EQ(a[0].shape(), b[0].shape());
  for (size_t i = 0; i < a[0].size(); ++i)
    EXPECT_NEAR(a[0].data<uint8_t>()[i], b[0].data<uint8_t>()[i], 1) << i;
}

}  // namespace
