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

// x[1,4,8,8] -> Q/DQ -> GELU written out as quantize_static leaves it (Div by a Constant,
// Erf, Q/DQ, Add DQ(Q(Constant 1)), Q/DQ, Mul by x's DQ, Q/DQ, Mul by a Constant 0.5, Q/DQ) ->
// SiLU (Sigmoid, Q/DQ, Mul by its own input) -> Q/DQ -> y: every island is a function of Q(x)
// alone, so the folding leaves Q(x), one com.nxrt TableLookup and DQ(y). uint8 activations with
// zero point 128, or int8 with zero point 0.
std::string ElementwiseQdqModel(bool int8) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_elementwise");
  const std::string zp = "zp";
  auto qdq = [&](const std::string& in, float scale, const std::string& out) {
    const std::string s = out + "_scale";
    *g->add_initializer() = nxrt::test::MakeFloatTensor(s, {}, {scale});
    *g->add_node() = MakeNode("QuantizeLinear", {in, s, zp}, {out + "_q"}, out + "_q");
    *g->add_node() = MakeNode("DequantizeLinear", {out + "_q", s, zp}, {out}, out + "_dq");
  };
  auto constant = [&](const std::string& name, float v) {
    auto c = MakeNode("Constant", {}, {name}, name);
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = nxrt::test::MakeFloatTensor(name, {}, {v});
    *g->add_node() = c;
  };
  qdq("x", 0.03f, "xd");
  constant("sqrt2", 1.41421356f);
  constant("one", 1.0f);
  constant("half", 0.5f);
  qdq("one", 1.0f / 100.0f, "one_d");
  *g->add_node() = MakeNode("Div", {"xd", "sqrt2"}, {"d"}, "div");
  *g->add_node() = MakeNode("Erf", {"d"}, {"e"}, "erf");
  qdq("e", 1.0f / 120.0f, "ed");
  *g->add_node() = MakeNode("Add", {"ed", "one_d"}, {"a"}, "add1");
  qdq("a", 2.0f / 120.0f, "ad");
  *g->add_node() = MakeNode("Mul", {"xd", "ad"}, {"m"}, "mul_x");
  qdq("m", 0.06f, "md");
  *g->add_node() = MakeNode("Mul", {"md", "half"}, {"h"}, "mul_half");
  qdq("h", 0.03f, "hd");
  *g->add_node() = MakeNode("Sigmoid", {"hd"}, {"s"}, "sigmoid");
  qdq("s", 1.0f / 250.0f, "sd");
  *g->add_node() = MakeNode("Mul", {"hd", "sd"}, {"silu"}, "silu");
  qdq("silu", 0.03f, "y");
  if (int8) {
    *g->add_initializer() = MakeIntTensor(zp, {}, std::vector<int8_t>{0}, onnx::TensorProto::INT8);
  } else {
    *g->add_initializer() =
        MakeIntTensor(zp, {}, std::vector<uint8_t>{128}, onnx::TensorProto::UINT8);
  }
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 4, 8, 8});
  return m.SerializeAsString();
}

std::vector<nxrt::Value> RunModel(const std::string& bytes, int level, size_t* nodes,
                                  float low = 0.0f, float high = 4.0f,
                                  std::vector<int64_t> dims = {1, 4, 8, 8}, int threads = 1) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetOptimizationLevel(level).SetIntraOpThreads(threads);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  *nodes = session.ep_node_count(0);
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(low, high);
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

// x[1,4,8,8] -> Q/DQ -> Conv 1x1 (4 -> 8) -> Q/DQ -> Split into halves (each Q/DQ with the
// same parameters) -> Conv 1x1 (4 -> 4) on the second half -> Q/DQ (another scale) -> Concat of
// the halves and the conv's output -> Q/DQ -> y[1,12,8,8]: YOLO's C2f block as quantize_static
// writes it. Folded: Split on the 8-bit tensor, QLinearConcat, both NHWC between the convs.
std::string SplitConcatQdqModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_c2f");
  auto qdq = [&](const std::string& in, const std::string& scale, const std::string& out) {
    *g->add_node() = MakeNode("QuantizeLinear", {in, scale, "zp"}, {out + "_q"}, out + "_q");
    *g->add_node() = MakeNode("DequantizeLinear", {out + "_q", scale, "zp"}, {out}, out + "_dq");
  };
  auto conv = [&](const std::string& in, const std::string& w, int64_t cout, int64_t cin,
                  const std::string& out, int seed) {
    std::vector<int8_t> wq(static_cast<size_t>(cout * cin));
    for (size_t i = 0; i < wq.size(); ++i)
      wq[i] = static_cast<int8_t>(int((i + seed) * 7 % 41) - 20);
    *g->add_initializer() = MakeIntTensor(w + "q", {cout, cin, 1, 1}, wq, onnx::TensorProto::INT8);
    *g->add_node() = MakeNode("DequantizeLinear", {w + "q", "ws", "wzp"}, {w}, w + "_dq");
    *g->add_node() = MakeNode("Conv", {in, w}, {out}, out);
  };
  qdq("x", "xs", "xd");
  conv("xd", "w1", 8, 4, "c1", 1);
  qdq("c1", "ys", "c1d");
  auto split = MakeNode("Split", {"c1d", "halves"}, {"a", "b"}, "split");
  AddIntAttribute(&split, "axis", 1);
  *g->add_node() = split;
  qdq("a", "ys", "ad");
  qdq("b", "ys", "bd");
  conv("bd", "w2", 4, 4, "c2", 5);
  qdq("c2", "zs", "c2d");
  auto concat = MakeNode("Concat", {"ad", "bd", "c2d"}, {"cat"}, "concat");
  AddIntAttribute(&concat, "axis", 1);
  *g->add_node() = concat;
  qdq("cat", "cs", "y");
  *g->add_initializer() =
      MakeIntTensor("halves", {2}, std::vector<int64_t>{4, 4}, onnx::TensorProto::INT64);
  *g->add_initializer() = MakeIntTensor("wzp", {}, std::vector<int8_t>{0}, onnx::TensorProto::INT8);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ws", {}, {0.01f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {kXScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ys", {}, {kYScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("zs", {}, {0.03f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("cs", {}, {kAddScale});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{10}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 12, 8, 8});
  return m.SerializeAsString();
}

TEST(QdqFolding, SplitAndConcatRunOnBytesInNhwc) {
  const std::string bytes = SplitConcatQdqModel();
  size_t plain_nodes = 0, folded_nodes = 0;
  auto a = RunModel(bytes, 0, &plain_nodes, -1.0f, 3.0f);
  auto b = RunModel(bytes, 1, &folded_nodes, -1.0f, 3.0f);
  // Q(x), Transpose to NHWC, QLinearConv, Split, QLinearConv, QLinearConcat, Transpose back,
  // DQ(y).
  EXPECT_EQ(folded_nodes, 8u);
  ASSERT_EQ(a[0].shape(), b[0].shape());
  for (size_t i = 0; i < a[0].size(); ++i)
    EXPECT_NEAR(a[0].data<float>()[i], b[0].data<float>()[i], 1.01f * kAddScale) << i;
}

// x[1,16,H,W] -> Q/DQ -> Conv (per-channel int8 weights, int32 bias) -> Relu -> Q/DQ -> y.
struct BandCase {
  const char* name;
  int64_t h, w, k, stride, dilation;
  std::vector<int64_t> pads;  // top, left, bottom, right
};

std::string QdqConvModel(const BandCase& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_conv_bands");
  constexpr int64_t kIn = 16, kOut = 32;
  *g->add_node() = MakeNode("QuantizeLinear", {"x", "xs", "zp"}, {"xq"}, "xq");
  *g->add_node() = MakeNode("DequantizeLinear", {"xq", "xs", "zp"}, {"xd"}, "xd");
  auto wdq = MakeNode("DequantizeLinear", {"wq", "ws", "wzp"}, {"w"}, "wd");
  AddIntAttribute(&wdq, "axis", 0);
  *g->add_node() = wdq;
  auto bdq = MakeNode("DequantizeLinear", {"bq", "bs", "bzp"}, {"b"}, "bd");
  AddIntAttribute(&bdq, "axis", 0);
  *g->add_node() = bdq;
  auto conv = MakeNode("Conv", {"xd", "w", "b"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", c.pads);
  AddIntsAttribute(&conv, "strides", {c.stride, c.stride});
  AddIntsAttribute(&conv, "dilations", {c.dilation, c.dilation});
  *g->add_node() = conv;
  *g->add_node() = MakeNode("Relu", {"c"}, {"r"}, "relu");
  *g->add_node() = MakeNode("QuantizeLinear", {"r", "ys", "zp"}, {"rq"}, "rq");
  *g->add_node() = MakeNode("DequantizeLinear", {"rq", "ys", "zp"}, {"y"}, "rd");
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> wdist(-40, 40), bdist(-300, 300);
  std::vector<int8_t> wq(static_cast<size_t>(kOut * kIn * c.k * c.k)), wzp(kOut, 0);
  for (int8_t& v : wq) v = static_cast<int8_t>(wdist(rng));
  std::vector<float> ws(kOut), bs(kOut);
  std::vector<int32_t> bq(kOut), bzp(kOut, 0);
  for (int64_t o = 0; o < kOut; ++o) {
    ws[o] = 0.002f * static_cast<float>(o % 5 + 1);
    bs[o] = kXScale * ws[o];
    bq[o] = bdist(rng);
  }
  *g->add_initializer() = MakeIntTensor("wq", {kOut, kIn, c.k, c.k}, wq, onnx::TensorProto::INT8);
  *g->add_initializer() = MakeIntTensor("wzp", {kOut}, wzp, onnx::TensorProto::INT8);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ws", {kOut}, ws);
  *g->add_initializer() = MakeIntTensor("bq", {kOut}, bq, onnx::TensorProto::INT32);
  *g->add_initializer() = MakeIntTensor("bzp", {kOut}, bzp, onnx::TensorProto::INT32);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("bs", {kOut}, bs);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {kXScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ys", {}, {kYScale});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{7}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {1, kIn, c.h, c.w});
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

// Folded int8 convolutions split between threads in bands of output rows (qconv_dnnl.h): every
// thread count gives the one-thread result bit for bit, for halos from 1x1 to dilated 3x3 and
// 5x5, strides 1 and 2, symmetric and one-sided padding, and bands that start or end inside
// the padding; and the folded result stays within a step of the unfolded float graph.
TEST(QdqFolding, ConvBandsOverThreadsEqualOneThread) {
  const BandCase cases[] = {
      {"3x3 pad 1", 25, 23, 3, 1, 1, {1, 1, 1, 1}},
      {"5x5 stride 2 pad 2", 31, 29, 5, 2, 1, {2, 2, 2, 2}},
      {"3x3 dilation 2", 20, 21, 3, 1, 2, {2, 2, 2, 2}},
      {"1x1", 40, 40, 1, 1, 1, {0, 0, 0, 0}},
      {"3x3 stride 2 pads at the end", 24, 26, 3, 2, 1, {0, 0, 1, 1}},
      {"3x3 no padding", 18, 30, 3, 1, 1, {0, 0, 0, 0}},
  };
  for (const BandCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string bytes = QdqConvModel(c);
    const std::vector<int64_t> dims = {1, 16, c.h, c.w};
    size_t nodes = 0;
    auto one = RunModel(bytes, 1, &nodes, -1.0f, 4.0f, dims, 1);
    auto plain = RunModel(bytes, 0, &nodes, -1.0f, 4.0f, dims, 1);
    ASSERT_EQ(one[0].shape(), plain[0].shape());
    for (size_t i = 0; i < one[0].size(); ++i)
      ASSERT_NEAR(one[0].data<float>()[i], plain[0].data<float>()[i], 1.01f * kYScale) << i;
    for (int threads : {2, 3, 8}) {
      auto many = RunModel(bytes, 1, &nodes, -1.0f, 4.0f, dims, threads);
      ASSERT_EQ(many[0].shape(), one[0].shape());
      EXPECT_EQ(
          std::memcmp(many[0].data<float>(), one[0].data<float>(), one[0].size() * sizeof(float)),
          0)
          << threads << " threads";
    }
  }
}

TEST(QdqFolding, ElementwiseIslandsOfOneTensorBecomeOneTable) {
  for (bool int8 : {false, true}) {
    SCOPED_TRACE(int8 ? "int8" : "uint8");
    const std::string bytes = ElementwiseQdqModel(int8);
    size_t plain_nodes = 0, folded_nodes = 0;
    // Inputs over the whole quantized range (+-3.8) and past it (saturation).
    auto a = RunModel(bytes, 0, &plain_nodes, -4.5f, 4.5f);
    auto b = RunModel(bytes, 1, &folded_nodes, -4.5f, 4.5f);
    EXPECT_EQ(plain_nodes, 23u);  // the Constants are initializers once loaded
    EXPECT_EQ(folded_nodes, 3u);  // Q(x), TableLookup, DQ(y)
    ASSERT_EQ(a[0].shape(), b[0].shape());
    size_t exact = 0;
    for (size_t i = 0; i < a[0].size(); ++i) {
      const float pa = a[0].data<float>()[i], pb = b[0].data<float>()[i];
      // The unfolded graph's Erf and Sigmoid are float approximations: a value on a rounding
      // tie of one requantization may land a step away, and move later steps by as much.
      EXPECT_NEAR(pa, pb, 2.5f * 0.03f) << i;
      exact += pa == pb;
    }
    EXPECT_GE(exact, a[0].size() * 9 / 10);
  }
}

// The same function of the same input, folded or not, in a wider graph: the table's output is
// also a graph output (it must stay a value of its own), and a float op that reads a folded
// island's float value keeps the island unfolded.
TEST(QdqFolding, TableIslandReadByAFloatOpStaysFloat) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_sigmoid");
  *g->add_node() = MakeNode("QuantizeLinear", {"x", "xs", "zp"}, {"xq"}, "xq");
  *g->add_node() = MakeNode("DequantizeLinear", {"xq", "xs", "zp"}, {"xd"}, "xd");
  *g->add_node() = MakeNode("Sigmoid", {"xd"}, {"s"}, "sigmoid");
  *g->add_node() = MakeNode("QuantizeLinear", {"s", "ss", "zp"}, {"sq"}, "sq");
  *g->add_node() = MakeNode("DequantizeLinear", {"sq", "ss", "zp"}, {"y"}, "sd");
  *g->add_node() = MakeNode("Tanh", {"xd"}, {"t"}, "tanh");  // float only: stays
  *g->add_node() = MakeNode("Relu", {"t"}, {"z"}, "relu");
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {0.02f});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ss", {}, {1.0f / 255.0f});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{100}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "y", {1, 4, 8, 8});
  AddFloatValue(g->add_output(), "z", {1, 4, 8, 8});
  const std::string bytes = m.SerializeAsString();
  size_t plain_nodes = 0, folded_nodes = 0;
  auto a = RunModel(bytes, 0, &plain_nodes, -3.0f, 3.0f);
  auto b = RunModel(bytes, 1, &folded_nodes, -3.0f, 3.0f);
  // Q(x), DQ(x) for the Tanh, TableLookup (the Sigmoid island), DQ(y), Tanh, Relu.
  EXPECT_EQ(folded_nodes, 6u);
  for (size_t o = 0; o < 2; ++o)
    for (size_t i = 0; i < a[o].size(); ++i)
      EXPECT_NEAR(a[o].data<float>()[i], b[o].data<float>()[i], 1.01f / 255.0f) << o << " " << i;
}

// x[3, 40] -> Q/DQ -> Gemm(transB = 1, per-output-channel int8 weights [24, 40], int32 bias in
// the product's scale) [-> Q/DQ] -> y: torch's Linear as quantize_static writes it. The Gemm
// becomes one com.microsoft QGemm (8-bit output when a Q follows, float otherwise).
std::string QdqGemmModel(bool quantized_output) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("qdq_gemm");
  *g->add_node() = MakeNode("QuantizeLinear", {"x", "xs", "zp"}, {"xq"}, "xq");
  *g->add_node() = MakeNode("DequantizeLinear", {"xq", "xs", "zp"}, {"xd"}, "xd");
  auto wdq = MakeNode("DequantizeLinear", {"wq", "ws", "wzp"}, {"w"}, "w_dq");
  AddIntAttribute(&wdq, "axis", 0);
  *g->add_node() = wdq;
  auto bdq = MakeNode("DequantizeLinear", {"bq", "bs", "bzp"}, {"b"}, "b_dq");
  AddIntAttribute(&bdq, "axis", 0);
  *g->add_node() = bdq;
  auto gemm = MakeNode("Gemm", {"xd", "w", "b"}, {quantized_output ? "g" : "y"}, "gemm");
  AddIntAttribute(&gemm, "transB", 1);
  *g->add_node() = gemm;
  if (quantized_output) {
    *g->add_node() = MakeNode("QuantizeLinear", {"g", "ys", "zp"}, {"gq"}, "gq");
    *g->add_node() = MakeNode("DequantizeLinear", {"gq", "ys", "zp"}, {"y"}, "gd");
  }
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> wdist(-60, 60), bdist(-500, 500);
  std::vector<int8_t> wq(24 * 40), wzp(24, 0);
  std::vector<float> ws(24), bs(24);
  std::vector<int32_t> bq(24), bzp(24, 0);
  for (int8_t& v : wq) v = static_cast<int8_t>(wdist(rng));
  for (int c = 0; c < 24; ++c) {
    ws[c] = 0.002f * static_cast<float>(c + 1);
    bs[c] = kXScale * ws[c];
    bq[c] = bdist(rng);
  }
  *g->add_initializer() = MakeIntTensor("wq", {24, 40}, wq, onnx::TensorProto::INT8);
  *g->add_initializer() = MakeIntTensor("wzp", {24}, wzp, onnx::TensorProto::INT8);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ws", {24}, ws);
  *g->add_initializer() = MakeIntTensor("bq", {24}, bq, onnx::TensorProto::INT32);
  *g->add_initializer() = MakeIntTensor("bzp", {24}, bzp, onnx::TensorProto::INT32);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("bs", {24}, bs);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("xs", {}, {kXScale});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("ys", {}, {kYScale});
  *g->add_initializer() =
      MakeIntTensor("zp", {}, std::vector<uint8_t>{0}, onnx::TensorProto::UINT8);
  AddFloatValue(g->add_input(), "x", {3, 40});
  AddFloatValue(g->add_output(), "y", {3, 24});
  return m.SerializeAsString();
}

TEST(QdqFolding, GemmOfQuantizedOperandsBecomesQGemm) {
  for (bool quantized_output : {true, false}) {
    SCOPED_TRACE(quantized_output ? "quantized output" : "float output");
    const std::string bytes = QdqGemmModel(quantized_output);
    size_t plain_nodes = 0, folded_nodes = 0;
    auto a = RunModel(bytes, 0, &plain_nodes, 0.0f, 4.0f, {3, 40});
    auto b = RunModel(bytes, 1, &folded_nodes, 0.0f, 4.0f, {3, 40});
    EXPECT_EQ(plain_nodes, quantized_output ? 7u : 5u);
    // Q(x), QGemm [, DQ(y)].
    EXPECT_EQ(folded_nodes, quantized_output ? 3u : 2u);
    ASSERT_EQ(a[0].shape(), b[0].shape());
    // The exact int32 product against float arithmetic on the dequantized operands: equal to
    // float rounding, or a step where a requantization rounds a tie differently.
    const float tolerance = quantized_output ? 1.01f * kYScale : 1e-3f;
    for (size_t i = 0; i < a[0].size(); ++i)
      EXPECT_NEAR(a[0].data<float>()[i], b[0].data<float>()[i], tolerance) << i;
  }
}

}  // namespace
