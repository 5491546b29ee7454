// Float16 models computed in float32 (src/session/float16_upcast.h): a model with float16
// weights, input and outputs (a convolution, a Constant, a ConstantOfShape, a Cast to float, an
// If whose branch reads a float16 value of the main graph) gives the same outputs, with the same
// float16 / float32 interface, as the node-by-node float16 path ("session.float16_as_float32"
// = "0"), to within float16 rounding; a model whose subgraph reads the float16 graph input by
// name is left as it is and still runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeNode;

// float32 -> float16 bits, round to nearest even (normal range and zero: enough for the test).
uint16_t ToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exponent = static_cast<int>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mantissa = x & 0x7fffffu;
  if ((x & 0x7fffffffu) == 0 || exponent <= 0) return static_cast<uint16_t>(sign);
  uint32_t h = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float FromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) return mantissa == 0 ? (sign ? -0.f : 0.f) : std::ldexp(float(mantissa), -24);
  const uint32_t bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

onnx::TensorProto HalfTensor(const std::string& name, const std::vector<int64_t>& dims,
                             const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : dims) t.add_dims(d);
  std::string raw(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = ToHalf(values[i]);
    std::memcpy(&raw[i * 2], &h, 2);
  }
  t.set_raw_data(raw);
  return t;
}

std::vector<float> Random(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// x [1, 16, 8, 8] float16 -> Conv (16 x 16 x 3 x 3 float16 weights, bias) -> Relu -> r;
// y = r * Constant(0.5) (float16 output), z = Cast(y, float) (float output), s =
// ConstantOfShape([1, 16], 0.25 float16) (output), b = If(true) { r + (x or r) } (float16
// output). With `branch_reads_input` the branch adds the graph input x (read by name).
std::string Model(bool branch_reads_input) {
  std::mt19937 rng(5);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("float16");
  constexpr int kHalf = onnx::TensorProto::FLOAT16;
  nxrt::test::AddTypedValue(g->add_input(), "x", kHalf, {1, 16, 8, 8});
  *g->add_initializer() = HalfTensor("w", {16, 16, 3, 3}, Random(2304, 0.1f, rng));
  *g->add_initializer() = HalfTensor("bias", {16}, Random(16, 0.1f, rng));
  auto conv = MakeNode("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "pads", {1, 1, 1, 1});
  *g->add_node() = conv;
  *g->add_node() = MakeNode("Relu", {"c"}, {"r"}, "relu");
  auto half = MakeNode("Constant", {}, {"half"}, "half");
  auto* value = half.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = HalfTensor("", {1}, {0.5f});
  *g->add_node() = half;
  *g->add_node() = MakeNode("Mul", {"r", "half"}, {"y"}, "mul");
  auto cast = MakeNode("Cast", {"y"}, {"z"}, "cast");
  AddIntAttribute(&cast, "to", onnx::TensorProto::FLOAT);
  *g->add_node() = cast;
  onnx::TensorProto shape;
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::INT64);
  shape.add_dims(2);
  shape.add_int64_data(1);
  shape.add_int64_data(16);
  *g->add_initializer() = shape;
  auto fill = MakeNode("ConstantOfShape", {"shape"}, {"s"}, "fill");
  auto* fv = fill.add_attribute();
  fv->set_name("value");
  fv->set_type(onnx::AttributeProto::TENSOR);
  *fv->mutable_t() = HalfTensor("", {1}, {0.25f});
  *g->add_node() = fill;
  onnx::TensorProto cond;
  cond.set_name("cond");
  cond.set_data_type(onnx::TensorProto::BOOL);
  cond.add_int32_data(1);
  *g->add_initializer() = cond;
  auto branch = [&](const std::string& name, const std::string& other) {
    onnx::GraphProto b;
    b.set_name(name);
    *b.add_node() = MakeNode("Add", {"r", other}, {name + "_out"}, name + "_add");
    nxrt::test::AddTypedValue(b.add_output(), name + "_out", kHalf, {});
    b.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    return b;
  };
  auto if_node = MakeNode("If", {"cond"}, {"b"}, "if");
  auto* then_attr = if_node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  *then_attr->mutable_g() = branch("then", branch_reads_input ? "x" : "r");
  auto* else_attr = if_node.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  *else_attr->mutable_g() = branch("else", "r");
  *g->add_node() = if_node;
  nxrt::test::AddTypedValue(g->add_output(), "y", kHalf, {1, 16, 8, 8});
  nxrt::test::AddTypedValue(g->add_output(), "z", onnx::TensorProto::FLOAT, {1, 16, 8, 8});
  nxrt::test::AddTypedValue(g->add_output(), "s", kHalf, {1, 16});
  nxrt::test::AddTypedValue(g->add_output(), "b", kHalf, {1, 16, 8, 8});
  return m.SerializeAsString();
}

// Whether the session said it computes the model in float32 (an info line of the pass).
bool g_upcast_logged = false;

void CollectLog(void* /*user*/, NxLogLevel /*level*/, const char* message) {
  if (std::string(message).find("float16 model in float32") != std::string::npos)
    g_upcast_logged = true;
}

std::vector<nxrt::Value> Run(const std::string& bytes, const char* upcast) {
  nxrt::Env env(NX_LOG_INFO, CollectLog, nullptr);
  nxrt::SessionOptions options;
  options.SetIntraOpThreads(1);
  options.SetConfig("session.float16_as_float32", upcast);
  options.SetLogLevel(NX_LOG_INFO);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  const std::vector<int64_t> dims = {1, 16, 8, 8};
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT16, dims);
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.f, 1.f);
  for (size_t i = 0; i < x.size(); ++i) x.data<uint16_t>()[i] = ToHalf(d(rng));
  return session.Run({"x"}, {&x});
}

float At(const nxrt::Value& v, size_t i) {
  return v.type() == NX_TYPE_FLOAT16 ? FromHalf(v.data<uint16_t>()[i]) : v.data<float>()[i];
}

// `upcast`: whether the pass should rewrite the model.
void ExpectSameOutputs(const std::string& bytes, bool upcast) {
  g_upcast_logged = false;
  const std::vector<nxrt::Value> up = Run(bytes, "1");
  EXPECT_EQ(g_upcast_logged, upcast);
  g_upcast_logged = false;
  const std::vector<nxrt::Value> per_node = Run(bytes, "0");
  EXPECT_FALSE(g_upcast_logged);
  ASSERT_EQ(up.size(), 4u);
  ASSERT_EQ(per_node.size(), 4u);
  const NxElementType want_types[] = {NX_TYPE_FLOAT16, NX_TYPE_FLOAT, NX_TYPE_FLOAT16,
                                      NX_TYPE_FLOAT16};
  for (size_t o = 0; o < up.size(); ++o) {
    SCOPED_TRACE("output " + std::to_string(o));
    EXPECT_EQ(up[o].type(), want_types[o]);
    EXPECT_EQ(up[o].shape(), per_node[o].shape());
    ASSERT_EQ(up[o].size(), per_node[o].size());
    float largest = 0.f;
    for (size_t i = 0; i < up[o].size(); ++i) {
      const float a = At(up[o], i), b = At(per_node[o], i);
      largest = std::max(largest, std::fabs(b));
      // The per-node path rounds to float16 after every op: a few float16 steps apart.
      EXPECT_NEAR(a, b, 4e-3f * std::max(1.f, std::fabs(b))) << "element " << i;
    }
    EXPECT_GT(largest, 0.1f);  // not all zero
  }
  for (size_t i = 0; i < up[2].size(); ++i) EXPECT_EQ(At(up[2], i), 0.25f);
}

TEST(Float16Upcast, Float16ModelMatchesTheNodeByNodeFloat16Path) {
  ExpectSameOutputs(Model(false), true);
}

TEST(Float16Upcast, ASubgraphReadingTheFloat16InputKeepsTheModelAsItIs) {
  ExpectSameOutputs(Model(true), false);
}

}  // namespace
