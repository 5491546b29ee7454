// Static type and shape inference (src/graph/shape_inference.cc), through the model loader: per
// op family what is inferred, what the model declares winning, and the malformed models that
// crashed ONNX 1.12's inference loading cleanly.
#include "graph/shape_inference.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>

#include "base/error.h"
#include "graph/known_integers.h"
#include "model/model.h"
#include "test_util.h"

namespace nxrt {
namespace {

constexpr int64_t kUnknown = -1;
const std::string kNoParam;

// Builds a model proto step by step; outputs are listed without a type so that what the test
// reads is inferred, not declared.
class Builder {
 public:
  explicit Builder(int opset = 17) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph()->set_name("test");
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }

  // dims: -1 is an unknown dim; `params` names symbolic dims (same length, "" for none).
  Builder& Input(const std::string& name, int elem, const std::vector<int64_t>& dims,
                 const std::vector<std::string>& params = {}) {
    AddValueInfo(graph()->add_input(), name, elem, dims, params);
    return *this;
  }
  Builder& InputNoShape(const std::string& name, int elem) {
    auto* vi = graph()->add_input();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  Builder& Ints(const std::string& name, const std::vector<int64_t>& values, bool scalar = false) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  Builder& Floats(const std::string& name, const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    *graph()->add_initializer() =
        test::MakeFloatTensor(name, dims, std::vector<float>(static_cast<size_t>(n), 0.5f));
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = graph()->add_node();
    *n = test::MakeNode(op, ins, outs);
    return *n;
  }
  Builder& Output(const std::string& name) {
    graph()->add_output()->set_name(name);
    return *this;
  }
  Builder& Declare(const std::string& name, int elem, std::optional<std::vector<int64_t>> dims) {
    auto* vi = graph()->add_value_info();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    if (dims) {
      t->mutable_shape();
      for (int64_t d : *dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return *this;
  }

  std::shared_ptr<Model> Load() {
    std::string bytes = test::Serialize(model_);
    return LoadModelFromBuffer(bytes.data(), bytes.size(), "");
  }

  static void AddValueInfo(onnx::ValueInfoProto* vi, const std::string& name, int elem,
                           const std::vector<int64_t>& dims,
                           const std::vector<std::string>& params = {}) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* shape = t->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (i < params.size() && !params[i].empty())
        d->set_dim_param(params[i]);
      else if (dims[i] != kUnknown)
        d->set_dim_value(dims[i]);  // even negative: malformed
    }
  }

 private:
  onnx::ModelProto model_;
};

void SetInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void SetInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void SetGraph(onnx::NodeProto& n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

const TypeInfo& TypeOf(const Model& m, const std::string& name) {
  int v = m.graph->FindValue(name);
  EXPECT_GE(v, 0) << name;
  static const TypeInfo none;
  return v < 0 ? none : m.graph->value(v).type;
}

void ExpectTensor(const Model& m, const std::string& name, NxElementType elem,
                  const std::vector<int64_t>& dims) {
  const TypeInfo& t = TypeOf(m, name);
  EXPECT_EQ(t.kind, NX_VALUE_TENSOR) << name;
  EXPECT_EQ(t.elem_type, elem) << name;
  EXPECT_TRUE(t.has_shape) << name;
  EXPECT_EQ(t.dims, dims) << name;
}

void ExpectTypeOnly(const Model& m, const std::string& name, NxElementType elem) {
  const TypeInfo& t = TypeOf(m, name);
  EXPECT_EQ(t.elem_type, elem) << name;
  EXPECT_FALSE(t.has_shape) << name;
}

void ExpectUnknown(const Model& m, const std::string& name) {
  ExpectTypeOnly(m, name, NX_TYPE_UNDEFINED);
}

// A malformed model either loads (whatever is off stays unknown) or is rejected cleanly.
std::shared_ptr<Model> LoadOrReject(Builder& b) {
  try {
    return b.Load();
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == NX_INVALID_MODEL || e.code() == NX_NOT_IMPLEMENTED) << e.what();
    return nullptr;
  }
}

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;

// ---- Elementwise ---------------------------------------------------------------------------

TEST(ShapeInference, UnaryKeepsTypeAndShape) {
  Builder b;
  b.Input("x", kFloat, {2, kUnknown}, {"", "seq"});
  b.Node("Relu", {"x"}, {"a"});
  b.Node("Sigmoid", {"a"}, {"b"});
  b.Node("Erf", {"b"}, {"c"});
  b.Node("Dropout", {"c"}, {"d"});
  b.Output("d");
  auto m = b.Load();
  for (const char* v : {"a", "b", "c", "d"}) ExpectTensor(*m, v, NX_TYPE_FLOAT, {2, kUnknown});
  EXPECT_EQ(TypeOf(*m, "d").dim_params, (std::vector<std::string>{"", "seq"}));
}

TEST(ShapeInference, BroadcastingAndComparisons) {
  Builder b;
  b.Input("x", kFloat, {2, 1, 4}).Input("y", kFloat, {3, 1}).Input("n", kFloat, {-1, 4}, {"N", ""});
  b.Input("c", kBool, {2, 1}).Input("i", kInt64, {1, 3}).Input("j", kInt64, {2, 3});
  b.Input("bad", kFloat, {4, 3}).Input("k", kInt64, {3, 1});
  b.Node("Add", {"x", "y"}, {"add"});
  b.Node("Mul", {"n", "n"}, {"mul"});
  b.Node("Less", {"x", "y"}, {"less"});
  b.Node("Where", {"c", "i", "j"}, {"where"});
  b.Node("Pow", {"x", "k"}, {"pow"});
  b.Node("Sub", {"y", "bad"}, {"mismatch"});  // 3 vs 4: invalid, no shape
  b.Node("Add", {"y", "k"}, {"mixed"});       // float + int64: no type
  b.Node("Sum", {"x", "y", "x"}, {"sum"});
  for (const char* o : {"add", "mul", "less", "where", "pow", "mismatch", "mixed", "sum"})
    b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "add", NX_TYPE_FLOAT, {2, 3, 4});
  ExpectTensor(*m, "mul", NX_TYPE_FLOAT, {kUnknown, 4});
  EXPECT_EQ(TypeOf(*m, "mul").dim_params[0], "N");
  ExpectTensor(*m, "less", NX_TYPE_BOOL, {2, 3, 4});
  ExpectTensor(*m, "where", NX_TYPE_INT64, {2, 3});
  ExpectTensor(*m, "pow", NX_TYPE_FLOAT, {2, 3, 4});
  ExpectTypeOnly(*m, "mismatch", NX_TYPE_FLOAT);
  ExpectUnknown(*m, "mixed");
  ExpectTensor(*m, "sum", NX_TYPE_FLOAT, {2, 3, 4});
}

TEST(ShapeInference, UnknownDimsBroadcastOnlyWhenCertain) {
  Builder b;
  b.Input("a", kFloat, {-1, 5}).Input("b", kFloat, {-1, 1}).Input("c", kFloat, {-1, 5}, {"N", ""});
  b.Node("Add", {"a", "b"}, {"ab"});  // ? vs ?: unknown
  b.Node("Add", {"b", "c"}, {"bc"});  // ? vs N: unknown (either may be 1)
  b.Output("ab").Output("bc");
  auto m = b.Load();
  ExpectTensor(*m, "ab", NX_TYPE_FLOAT, {kUnknown, 5});
  ExpectTensor(*m, "bc", NX_TYPE_FLOAT, {kUnknown, 5});
  EXPECT_EQ(TypeOf(*m, "bc").dim_params[0], "");
}

TEST(ShapeInference, CastAndShapeQueries) {
  Builder b(17);
  b.Input("x", kFloat, {2, 3, 4});
  SetInt(b.Node("Cast", {"x"}, {"to_int"}), "to", onnx::TensorProto::INT64);
  SetInt(b.Node("Cast", {"x"}, {"to_bad"}), "to", 999);
  SetInt(b.Node("Cast", {"x"}, {"to_zero"}), "to", 0);
  b.Node("CastLike", {"x", "to_int"}, {"like"});
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Size", {"x"}, {"size"});
  for (const char* o : {"to_int", "to_bad", "to_zero", "like", "shape", "size"}) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "to_int", NX_TYPE_INT64, {2, 3, 4});
  ExpectUnknown(*m, "to_bad");
  ExpectUnknown(*m, "to_zero");
  ExpectTensor(*m, "like", NX_TYPE_INT64, {2, 3, 4});
  ExpectTensor(*m, "shape", NX_TYPE_INT64, {3});
  ExpectTensor(*m, "size", NX_TYPE_INT64, {});
}

TEST(ShapeInference, ShapeStartEndFromOpset15) {
  Builder b(15);
  b.Input("x", kFloat, {2, 3, 4, 5});
  SetInt(b.Node("Shape", {"x"}, {"tail"}), "start", 1);
  auto& n = b.Node("Shape", {"x"}, {"last"});
  SetInt(n, "start", -1);
  SetInt(n, "end", 100);
  auto& e = b.Node("Shape", {"x"}, {"empty"});
  SetInt(e, "start", 3);
  SetInt(e, "end", 1);
  b.Output("tail").Output("last").Output("empty");
  auto m = b.Load();
  ExpectTensor(*m, "tail", NX_TYPE_INT64, {3});
  ExpectTensor(*m, "last", NX_TYPE_INT64, {1});
  ExpectTensor(*m, "empty", NX_TYPE_INT64, {0});
}

// ---- Convolution and pooling ---------------------------------------------------------------

TEST(ShapeInference, ConvAndPools) {
  Builder b;
  b.Input("x", kFloat, {1, 3, 32, 33}).Floats("w", {8, 3, 3, 3}).Floats("bias", {8});
  auto& conv = b.Node("Conv", {"x", "w", "bias"}, {"conv"});
  SetInts(conv, "pads", {1, 1, 1, 1});
  SetInts(conv, "strides", {2, 2});
  auto& same = b.Node("Conv", {"x", "w"}, {"same"});
  SetString(same, "auto_pad", "SAME_UPPER");
  SetInts(same, "strides", {2, 2});
  auto& dil = b.Node("Conv", {"x", "w"}, {"dilated"});
  SetInts(dil, "dilations", {2, 3});
  auto& pool = b.Node("MaxPool", {"x"}, {"pool", "indices"});
  SetInts(pool, "kernel_shape", {3, 3});
  SetInts(pool, "strides", {2, 2});
  auto& ceil = b.Node("AveragePool", {"x"}, {"ceil"});
  SetInts(ceil, "kernel_shape", {2, 2});
  SetInts(ceil, "strides", {2, 2});
  SetInt(ceil, "ceil_mode", 1);
  b.Node("GlobalAveragePool", {"x"}, {"gap"});
  for (const char* o : {"conv", "same", "dilated", "pool", "indices", "ceil", "gap"}) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "conv", NX_TYPE_FLOAT, {1, 8, 16, 17});
  ExpectTensor(*m, "same", NX_TYPE_FLOAT, {1, 8, 16, 17});
  ExpectTensor(*m, "dilated", NX_TYPE_FLOAT, {1, 8, 28, 27});
  ExpectTensor(*m, "pool", NX_TYPE_FLOAT, {1, 3, 15, 16});
  ExpectTensor(*m, "indices", NX_TYPE_INT64, {1, 3, 15, 16});
  ExpectTensor(*m, "ceil", NX_TYPE_FLOAT, {1, 3, 16, 17});
  ExpectTensor(*m, "gap", NX_TYPE_FLOAT, {1, 3, 1, 1});
}

TEST(ShapeInference, ConvTransposeShape) {
  Builder b;
  b.Input("x", kFloat, {1, 4, 8, 8}).Floats("w", {4, 2, 3, 3});
  auto& ct = b.Node("ConvTranspose", {"x", "w"}, {"y"});
  SetInts(ct, "strides", {2, 2});
  SetInts(ct, "pads", {1, 1, 1, 1});
  SetInts(ct, "output_padding", {1, 1});
  SetInt(ct, "group", 1);
  auto& given = b.Node("ConvTranspose", {"x", "w"}, {"given"});
  SetInts(given, "output_shape", {20, 21});
  b.Output("y").Output("given");
  auto m = b.Load();
  ExpectTensor(*m, "y", NX_TYPE_FLOAT, {1, 2, 16, 16});
  ExpectTensor(*m, "given", NX_TYPE_FLOAT, {1, 2, 20, 21});
}

TEST(ShapeInference, BadWindowAttributesLeaveTheShapeUnknown) {
  Builder b;
  b.Input("x", kFloat, {1, 3, 8, 8}).Floats("w", {4, 3, 3, 3}).Floats("w3", {4, 3, 3});
  SetInts(b.Node("Conv", {"x", "w"}, {"zero_stride"}), "strides", {0, 1});
  SetInts(b.Node("Conv", {"x", "w"}, {"neg_pad"}), "pads", {-1, 0, 0, 0});
  SetInts(b.Node("Conv", {"x", "w"}, {"short_dil"}), "dilations", {1});
  SetString(b.Node("Conv", {"x", "w"}, {"bad_pad_mode"}), "auto_pad", "SOMETIMES");
  b.Node("Conv", {"x", "w3"}, {"rank_mismatch"});
  SetInt(b.Node("Conv", {"x", "w"}, {"zero_group"}), "group", 0);
  SetInt(b.Node("Conv", {"x", "w"}, {"group_mismatch"}), "group", 3);
  auto& big = b.Node("Conv", {"x", "w"}, {"kernel_too_big"});
  SetInts(big, "kernel_shape", {30, 30});
  auto& mp = b.Node("MaxPool", {"x"}, {"pool_zero_stride"});
  SetInts(mp, "kernel_shape", {2, 2});
  SetInts(mp, "strides", {0, 0});
  SetInts(b.Node("MaxPool", {"x"}, {"pool_no_kernel"}), "strides", {1, 1});
  auto& huge = b.Node("MaxPool", {"x"}, {"pool_huge"});
  SetInts(huge, "kernel_shape", {2, 2});
  SetInts(huge, "dilations", {std::numeric_limits<int64_t>::max(), 1});
  auto& ct = b.Node("ConvTranspose", {"x", "w3"}, {"ct_rank_mismatch"});
  SetInts(ct, "strides", {2, 2});
  const char* outs[] = {"zero_stride",      "neg_pad",        "short_dil",      "bad_pad_mode",
                        "rank_mismatch",    "zero_group",     "group_mismatch", "kernel_too_big",
                        "pool_zero_stride", "pool_no_kernel", "pool_huge",      "ct_rank_mismatch"};
  for (const char* o : outs) b.Output(o);
  auto m = b.Load();
  for (const char* o : outs) ExpectTypeOnly(*m, o, NX_TYPE_FLOAT);
}

// ---- Normalisation and linear algebra ------------------------------------------------------

TEST(ShapeInference, Normalisation) {
  Builder b;
  b.Input("x", kFloat, {2, 3, 4}).Floats("s", {3}).Floats("bb", {3}).Floats("mean", {3});
  b.Floats("var", {3}).Floats("ln_s", {4});
  b.Node("BatchNormalization", {"x", "s", "bb", "mean", "var"}, {"bn"});
  b.Node("InstanceNormalization", {"x", "s", "bb"}, {"in"});
  b.Node("LayerNormalization", {"x", "ln_s"}, {"ln"});
  SetInt(b.Node("LayerNormalization", {"x", "ln_s"}, {"ln_bad"}), "axis", 5);
  SetInt(b.Node("LayerNormalization", {"x", "ln_s"}, {"ln_bad_neg"}), "axis", -4);
  SetInt(b.Node("Softmax", {"x"}, {"sm"}), "axis", 1);
  for (const char* o : {"bn", "in", "ln", "ln_bad", "ln_bad_neg", "sm"}) b.Output(o);
  auto m = b.Load();
  for (const char* o : {"bn", "in", "ln", "sm"}) ExpectTensor(*m, o, NX_TYPE_FLOAT, {2, 3, 4});
  ExpectUnknown(*m, "ln_bad");
  ExpectUnknown(*m, "ln_bad_neg");
}

TEST(ShapeInference, GemmAndMatMul) {
  Builder b;
  b.Input("a", kFloat, {3, 4}).Input("bt", kFloat, {5, 3});
  b.Input("p", kFloat, {2, 1, 3, 4}).Input("q", kFloat, {5, 4, 6}).Input("v", kFloat, {4});
  b.Input("r", kFloat, {4, 6}).Input("bad", kFloat, {5, 6});
  auto& gemm = b.Node("Gemm", {"a", "bt"}, {"gemm"});
  SetInt(gemm, "transA", 1);
  SetInt(gemm, "transB", 1);
  b.Node("MatMul", {"p", "q"}, {"batched"});
  b.Node("MatMul", {"v", "r"}, {"vec_mat"});
  b.Node("MatMul", {"r", "v"}, {"bad_k"});  // [4,6] x [4]: 6 != 4
  b.Node("MatMul", {"a", "bad"}, {"bad_k2"});
  b.Node("MatMul", {"p", "v"}, {"mat_vec"});
  for (const char* o : {"gemm", "batched", "vec_mat", "bad_k", "bad_k2", "mat_vec"}) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "gemm", NX_TYPE_FLOAT, {4, 5});
  ExpectTensor(*m, "batched", NX_TYPE_FLOAT, {2, 5, 3, 6});
  ExpectTensor(*m, "vec_mat", NX_TYPE_FLOAT, {6});
  ExpectTypeOnly(*m, "bad_k", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "bad_k2", NX_TYPE_FLOAT);
  ExpectTensor(*m, "mat_vec", NX_TYPE_FLOAT, {2, 1, 3});
}

// ---- Shape manipulation --------------------------------------------------------------------

TEST(ShapeInference, FlattenReshapeTranspose) {
  Builder b(14);
  b.Input("x", kFloat, {2, 3, 4}).Input("dyn", kInt64, {2});
  b.Ints("s1", {0, -1}).Ints("s2", {-1, 0}).Ints("two_neg", {-1, -1}).Ints("wrong", {5, 5});
  b.Ints("zero", {0, 24});
  SetInt(b.Node("Flatten", {"x"}, {"flat"}), "axis", 2);
  SetInt(b.Node("Flatten", {"x"}, {"flat0"}), "axis", 0);
  SetInt(b.Node("Flatten", {"x"}, {"flat_bad"}), "axis", 4);
  b.Node("Reshape", {"x", "s1"}, {"r1"});
  b.Node("Reshape", {"x", "s2"}, {"r2"});
  b.Node("Reshape", {"x", "two_neg"}, {"r_two_neg"});
  b.Node("Reshape", {"x", "wrong"}, {"r_wrong"});
  b.Node("Reshape", {"x", "dyn"}, {"r_dyn"});
  SetInt(b.Node("Reshape", {"x", "zero"}, {"r_allowzero"}), "allowzero", 1);
  b.Node("Transpose", {"x"}, {"t_default"});
  SetInts(b.Node("Transpose", {"x"}, {"t"}), "perm", {1, 0, 2});
  SetInts(b.Node("Transpose", {"x"}, {"t_bad"}), "perm", {1, 1, 2});
  const char* outs[] = {"flat",    "flat0", "flat_bad",    "r1",        "r2", "r_two_neg",
                        "r_wrong", "r_dyn", "r_allowzero", "t_default", "t",  "t_bad"};
  for (const char* o : outs) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "flat", NX_TYPE_FLOAT, {6, 4});
  ExpectTensor(*m, "flat0", NX_TYPE_FLOAT, {1, 24});
  ExpectUnknown(*m, "flat_bad");
  ExpectTensor(*m, "r1", NX_TYPE_FLOAT, {2, 12});
  ExpectTensor(*m, "r2", NX_TYPE_FLOAT, {8, 3});
  ExpectTypeOnly(*m, "r_two_neg", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "r_wrong", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "r_dyn", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "r_allowzero", NX_TYPE_FLOAT);  // a real 0: 0 elements != 24
  ExpectTensor(*m, "t_default", NX_TYPE_FLOAT, {4, 3, 2});
  ExpectTensor(*m, "t", NX_TYPE_FLOAT, {3, 2, 4});
  ExpectTypeOnly(*m, "t_bad", NX_TYPE_FLOAT);
}

TEST(ShapeInference, SqueezeUnsqueezeAcrossOpsets) {
  {
    Builder b(13);
    b.Input("x", kFloat, {2, 1, 3})
        .Input("u", kFloat, {-1, 1})
        .Ints("ax", {1})
        .Ints("uax", {0, -1});
    b.Node("Squeeze", {"x", "ax"}, {"sq"});
    b.Node("Squeeze", {"x"}, {"sq_all"});
    b.Node("Squeeze", {"u"}, {"sq_unknown"});  // the ? might be 1
    b.Node("Unsqueeze", {"x", "uax"}, {"unsq"});
    b.Output("sq").Output("sq_all").Output("sq_unknown").Output("unsq");
    auto m = b.Load();
    ExpectTensor(*m, "sq", NX_TYPE_FLOAT, {2, 3});
    ExpectTensor(*m, "sq_all", NX_TYPE_FLOAT, {2, 3});
    ExpectTypeOnly(*m, "sq_unknown", NX_TYPE_FLOAT);
    ExpectTensor(*m, "unsq", NX_TYPE_FLOAT, {1, 2, 1, 3, 1});
  }
  {
    Builder b(11);
    b.Input("x", kFloat, {2, 1, 3});
    SetInts(b.Node("Squeeze", {"x"}, {"sq"}), "axes", {-2});
    SetInts(b.Node("Unsqueeze", {"x"}, {"unsq"}), "axes", {0});
    SetInts(b.Node("Unsqueeze", {"x"}, {"unsq_dup"}), "axes", {0, 0});
    SetInts(b.Node("Squeeze", {"x"}, {"sq_not_one"}), "axes", {0});
    b.Output("sq").Output("unsq").Output("unsq_dup").Output("sq_not_one");
    auto m = b.Load();
    ExpectTensor(*m, "sq", NX_TYPE_FLOAT, {2, 3});
    ExpectTensor(*m, "unsq", NX_TYPE_FLOAT, {1, 2, 1, 3});
    ExpectTypeOnly(*m, "unsq_dup", NX_TYPE_FLOAT);
    ExpectTypeOnly(*m, "sq_not_one", NX_TYPE_FLOAT);
  }
}

TEST(ShapeInference, ConcatGatherSliceSplit) {
  Builder b(13);
  b.Input("x", kFloat, {2, 3}).Input("y", kFloat, {2, 5}).Input("d", kFloat, {10, 20});
  b.Input("idx", kInt64, {2, 3});
  b.Ints("starts", {1, -5}).Ints("ends", {std::numeric_limits<int64_t>::max(), -1});
  b.Ints("axes", {0, 1}).Ints("steps", {2, 1});
  b.Ints("rstart", {-1}).Ints("rend", {std::numeric_limits<int64_t>::min()}).Ints("rstep", {-1});
  b.Ints("zstep", {0}).Ints("split", {1, 4});
  SetInt(b.Node("Concat", {"x", "y"}, {"cat"}), "axis", -1);
  SetInt(b.Node("Concat", {"x", "y"}, {"cat_bad"}), "axis", 0);
  b.Node("Gather", {"d", "idx"}, {"gather"});
  SetInt(b.Node("Gather", {"d", "idx"}, {"gather1"}), "axis", 1);
  b.Node("Slice", {"d", "starts", "ends", "axes", "steps"}, {"slice"});
  b.Node("Slice", {"d", "rstart", "rend", "", "rstep"}, {"rev"});
  b.Node("Slice", {"d", "rstart", "rend", "", "zstep"}, {"zero_step"});
  SetInt(b.Node("Split", {"y", "split"}, {"s0", "s1"}), "axis", 1);
  b.Node("Split", {"d"}, {"e0", "e1"});
  const char* outs[] = {"cat",       "cat_bad", "gather", "gather1", "slice", "rev",
                        "zero_step", "s0",      "s1",     "e0",      "e1"};
  for (const char* o : outs) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "cat", NX_TYPE_FLOAT, {2, 8});
  ExpectTypeOnly(*m, "cat_bad", NX_TYPE_FLOAT);
  ExpectTensor(*m, "gather", NX_TYPE_FLOAT, {2, 3, 20});
  ExpectTensor(*m, "gather1", NX_TYPE_FLOAT, {10, 2, 3});
  ExpectTensor(*m, "slice", NX_TYPE_FLOAT, {5, 4});
  ExpectTensor(*m, "rev", NX_TYPE_FLOAT, {10, 20});
  ExpectTypeOnly(*m, "zero_step", NX_TYPE_FLOAT);
  ExpectTensor(*m, "s0", NX_TYPE_FLOAT, {2, 1});
  ExpectTensor(*m, "s1", NX_TYPE_FLOAT, {2, 4});
  ExpectTensor(*m, "e0", NX_TYPE_FLOAT, {5, 20});
  ExpectTensor(*m, "e1", NX_TYPE_FLOAT, {5, 20});
}

TEST(ShapeInference, SliceWithComputedBoundsPadResize) {
  Builder b(13);
  b.Input("x", kFloat, {2, 3, 4}).Input("end", kInt64, {1});
  b.Ints("zero", {0}).Ints("axis1", {1}).Ints("pads", {0, 1, 0, 0, 2, -1});
  b.Floats("roi", {0}).Floats("scales", {3}).Ints("sizes", {4, 6, 8});
  b.Node("Slice", {"x", "zero", "end", "axis1"}, {"slice_axis"});
  b.Node("Slice", {"x", "zero", "end"}, {"slice_any"});
  b.Node("Pad", {"x", "pads"}, {"pad"});
  b.Node("Pad", {"x", "end"}, {"pad_dyn"});
  b.Node("Resize", {"x", "", "", "sizes"}, {"resize_sizes"});
  b.Node("Resize", {"x", "roi", "scales"}, {"resize_scales"});
  for (const char* o :
       {"slice_axis", "slice_any", "pad", "pad_dyn", "resize_sizes", "resize_scales"})
    b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "slice_axis", NX_TYPE_FLOAT, {2, kUnknown, 4});
  ExpectTensor(*m, "slice_any", NX_TYPE_FLOAT, {kUnknown, kUnknown, kUnknown});
  ExpectTensor(*m, "pad", NX_TYPE_FLOAT, {2, 6, 3});
  ExpectTensor(*m, "pad_dyn", NX_TYPE_FLOAT, {kUnknown, kUnknown, kUnknown});
  ExpectTensor(*m, "resize_sizes", NX_TYPE_FLOAT, {4, 6, 8});
  ExpectTensor(*m, "resize_scales", NX_TYPE_FLOAT, {1, 1, 2});  // floor(in * 0.5)
}

// ---- Known integer contents (graph/known_integers.h) ----------------------------------------

std::optional<std::vector<int64_t>> KnownValues(const Model& m, const std::string& name) {
  const KnownIntegerTable known = KnownIntegerValues(*m.graph);
  const int v = m.graph->FindValue(name);
  if (v < 0 || !known[static_cast<size_t>(v)]) return std::nullopt;
  return known[static_cast<size_t>(v)]->values;
}

// torch's F.interpolate(x, size=...) and view(): sizes and shapes computed from Shape nodes of
// statically shaped tensors give their consumers static shapes.
TEST(KnownIntegers, ShapeComputationsGiveResizeAndReshapeStaticShapes) {
  Builder b(13);
  b.Input("x", kFloat, {1, 8, 6, 4});
  b.Ints("zero", {0}).Ints("two", {2}).Ints("hw", {12, 8}).Ints("one", {1}, true);
  b.Ints("axes0", {0}).Ints("minus1", {-1}).Ints("lead", {1});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Slice", {"s", "zero", "two"}, {"nc"});
  SetInt(b.Node("Concat", {"nc", "hw"}, {"sizes"}), "axis", 0);
  b.Node("Resize", {"x", "", "", "sizes"}, {"up"});
  b.Node("Gather", {"s", "one"}, {"c"});  // a scalar
  b.Node("Unsqueeze", {"c", "axes0"}, {"c1"});
  auto& cat = b.Node("Concat", {"lead", "c1", "minus1"}, {"target"});
  SetInt(cat, "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"flat"});
  b.Output("up").Output("flat");
  auto m = b.Load();
  ExpectTensor(*m, "up", NX_TYPE_FLOAT, {1, 8, 12, 8});
  ExpectTensor(*m, "flat", NX_TYPE_FLOAT, {1, 8, 24});
  EXPECT_EQ(KnownValues(*m, "s"), (std::vector<int64_t>{1, 8, 6, 4}));
  EXPECT_EQ(KnownValues(*m, "sizes"), (std::vector<int64_t>{1, 8, 12, 8}));
  EXPECT_EQ(KnownValues(*m, "c"), (std::vector<int64_t>{8}));
  EXPECT_EQ(KnownValues(*m, "target"), (std::vector<int64_t>{1, 8, -1}));
}

// The rules compute exactly what the kernels would, or nothing: negative and backward slices,
// Gather with negative indices, exact division only, casts that fit, overflow, and neither
// symbolic dims nor graph inputs are known.
TEST(KnownIntegers, RulesAreExactOrUnknown) {
  Builder b(13);
  b.Input("x", kFloat, {2, 3, 10, 7}).Input("y", kFloat, {-1, 3}, {"n", ""});
  b.Input("fed", kInt64, {2});  // values only the caller knows
  b.Ints("m1", {-1}).Ints("m4", {-4}).Ints("big", {100}).Ints("step_back", {-2});
  b.Ints("first", {0}).Ints("idx", {-1, 0}).Ints("four", {4}, true).Ints("three", {3}, true);
  b.Ints("huge", {int64_t{1} << 62}, true).Ints("zero_axis", {0});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Slice", {"s", "m1", "m4", "zero_axis", "step_back"}, {"back"});  // [7, 3]
  b.Node("Slice", {"s", "first", "big"}, {"all"});
  b.Node("Gather", {"s", "idx"}, {"picked"});  // [7, 2]
  b.Node("Gather", {"s", "four"}, {"out_of_range"});
  b.Node("Div", {"back", "three"}, {"div_positive"});  // truncating = flooring: 2, 1
  b.Node("Sub", {"picked", "three"}, {"sub"});         // [4, -1]
  b.Node("Div", {"sub", "three"}, {"div_negative"});   // -1 / 3: trunc and floor disagree
  b.Node("Mul", {"s", "huge"}, {"overflow"});
  auto& to32 = b.Node("Cast", {"s"}, {"s32"});
  SetInt(to32, "to", onnx::TensorProto::INT32);
  auto& big32 = b.Node("Cast", {"overflow_src"}, {"big32"});
  SetInt(big32, "to", onnx::TensorProto::INT32);
  b.Ints("overflow_src", {int64_t{1} << 40});
  b.Node("Max", {"picked", "three"}, {"max"});
  b.Node("Shape", {"y"}, {"symbolic"});
  b.Node("Add", {"fed", "three"}, {"from_fed"});
  for (const char* o : {"back", "all", "picked", "out_of_range", "div_positive", "sub",
                        "div_negative", "overflow", "s32", "big32", "max", "symbolic", "from_fed"})
    b.Output(o);
  auto m = b.Load();
  EXPECT_EQ(KnownValues(*m, "back"), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(KnownValues(*m, "all"), (std::vector<int64_t>{2, 3, 10, 7}));
  EXPECT_EQ(KnownValues(*m, "picked"), (std::vector<int64_t>{7, 2}));
  EXPECT_EQ(KnownValues(*m, "out_of_range"), std::nullopt);
  EXPECT_EQ(KnownValues(*m, "div_positive"), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(KnownValues(*m, "sub"), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(KnownValues(*m, "div_negative"), std::nullopt);
  EXPECT_EQ(KnownValues(*m, "overflow"), std::nullopt);
  EXPECT_EQ(KnownValues(*m, "s32"), (std::vector<int64_t>{2, 3, 10, 7}));
  EXPECT_EQ(KnownValues(*m, "big32"), std::nullopt);
  EXPECT_EQ(KnownValues(*m, "max"), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(KnownValues(*m, "symbolic"), std::nullopt);
  EXPECT_EQ(KnownValues(*m, "from_fed"), std::nullopt);
}

TEST(ShapeInference, UnevenSplitWithNumOutputsFromOpset18) {
  Builder b(18);
  b.Input("x", kFloat, {7, 2});
  SetInt(b.Node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", 3);
  b.Output("a").Output("b").Output("c");
  auto m = b.Load();
  ExpectTensor(*m, "a", NX_TYPE_FLOAT, {3, 2});
  ExpectTensor(*m, "b", NX_TYPE_FLOAT, {3, 2});
  ExpectTensor(*m, "c", NX_TYPE_FLOAT, {1, 2});
}

TEST(ShapeInference, ExpandTileConstantOfShapeRange) {
  Builder b(17);
  b.Input("x", kFloat, {3, 1}).Ints("to", {2, 1, 4}).Ints("reps", {2, 5}).Ints("dims", {2, 3});
  b.Ints("start", {0}, true).Ints("limit", {10}, true).Ints("delta", {3}, true);
  b.Ints("back", {-2}, true);
  b.Node("Expand", {"x", "to"}, {"expand"});
  b.Node("Tile", {"x", "reps"}, {"tile"});
  b.Node("ConstantOfShape", {"dims"}, {"zeros"});
  auto& cos = b.Node("ConstantOfShape", {"dims"}, {"ints"});
  auto* value = cos.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int32_data(7);
  b.Node("Range", {"start", "limit", "delta"}, {"range"});
  b.Node("Range", {"limit", "start", "back"}, {"range_down"});
  for (const char* o : {"expand", "tile", "zeros", "ints", "range", "range_down"}) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "expand", NX_TYPE_FLOAT, {2, 3, 4});
  ExpectTensor(*m, "tile", NX_TYPE_FLOAT, {6, 5});
  ExpectTensor(*m, "zeros", NX_TYPE_FLOAT, {2, 3});
  ExpectTensor(*m, "ints", NX_TYPE_INT32, {2, 3});
  ExpectTensor(*m, "range", NX_TYPE_INT64, {4});
  ExpectTensor(*m, "range_down", NX_TYPE_INT64, {5});
}

TEST(ShapeInference, ReductionsAcrossOpsets) {
  {
    Builder b(17);
    b.Input("x", kFloat, {2, 3, 4}).Ints("axes", {1});
    auto& mean = b.Node("ReduceMean", {"x"}, {"mean"});
    SetInts(mean, "axes", {1});
    SetInt(mean, "keepdims", 0);
    b.Node("ReduceMax", {"x"}, {"all"});
    b.Node("ReduceSum", {"x", "axes"}, {"sum"});  // input axes from opset 13
    SetInt(b.Node("ReduceSum", {"x"}, {"noop"}), "noop_with_empty_axes", 1);
    SetInts(b.Node("ReduceMin", {"x"}, {"bad"}), "axes", {3});
    auto& am = b.Node("ArgMax", {"x"}, {"argmax"});
    SetInt(am, "axis", 1);
    SetInt(am, "keepdims", 0);
    for (const char* o : {"mean", "all", "sum", "noop", "bad", "argmax"}) b.Output(o);
    auto m = b.Load();
    ExpectTensor(*m, "mean", NX_TYPE_FLOAT, {2, 4});
    ExpectTensor(*m, "all", NX_TYPE_FLOAT, {1, 1, 1});
    ExpectTensor(*m, "sum", NX_TYPE_FLOAT, {2, 1, 4});
    ExpectTensor(*m, "noop", NX_TYPE_FLOAT, {2, 3, 4});
    ExpectTypeOnly(*m, "bad", NX_TYPE_FLOAT);
    ExpectTensor(*m, "argmax", NX_TYPE_INT64, {2, 4});
  }
  {
    Builder b(18);  // axes became an input for every reduction
    b.Input("x", kFloat, {2, 3, 4}).Ints("axes", {-1});
    b.Node("ReduceMax", {"x", "axes"}, {"max"});
    b.Output("max");
    auto m = b.Load();
    ExpectTensor(*m, "max", NX_TYPE_FLOAT, {2, 3, 1});
  }
}

TEST(ShapeInference, TopKNonZeroQuantizationRecurrent) {
  Builder b(13);
  b.Input("x", kFloat, {3, 5}).Ints("k", {2});
  auto* zp = b.graph()->add_initializer();
  zp->set_name("zp");
  zp->set_data_type(onnx::TensorProto::INT8);
  zp->add_int32_data(0);
  auto* sc = b.graph()->add_initializer();
  sc->set_name("scale");
  sc->set_data_type(onnx::TensorProto::FLOAT);
  sc->add_float_data(0.1f);
  b.Node("TopK", {"x", "k"}, {"values", "indices"});
  b.Node("NonZero", {"x"}, {"nz"});
  b.Node("QuantizeLinear", {"x", "scale", "zp"}, {"q"});
  b.Node("QuantizeLinear", {"x", "scale"}, {"q_default"});
  b.Node("DequantizeLinear", {"q", "scale", "zp"}, {"dq"});
  b.Input("seq", kFloat, {4, 1, 5}).Floats("W", {1, 12, 5}).Floats("R", {1, 12, 3});
  b.Node("GRU", {"seq", "W", "R"}, {"Y", "Y_h"});
  for (const char* o : {"values", "indices", "nz", "q", "q_default", "dq", "Y", "Y_h"}) b.Output(o);
  auto m = b.Load();
  ExpectTensor(*m, "values", NX_TYPE_FLOAT, {3, 2});
  ExpectTensor(*m, "indices", NX_TYPE_INT64, {3, 2});
  ExpectTensor(*m, "nz", NX_TYPE_INT64, {2, kUnknown});
  ExpectTensor(*m, "q", NX_TYPE_INT8, {3, 5});
  ExpectTensor(*m, "q_default", NX_TYPE_UINT8, {3, 5});
  ExpectTensor(*m, "dq", NX_TYPE_FLOAT, {3, 5});
  ExpectTypeOnly(*m, "Y", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "Y_h", NX_TYPE_FLOAT);
}

// ---- Declared types win ----------------------------------------------------------------------

TEST(ShapeInference, DeclaredTypesAndShapesWin) {
  Builder b;
  b.Input("x", kFloat, {2, 3});
  b.Node("Relu", {"x"}, {"wrong_type"});
  b.Node("Relu", {"x"}, {"type_only"});
  b.Node("Relu", {"x"}, {"other_shape"});
  b.Declare("wrong_type", onnx::TensorProto::FLOAT16, std::nullopt);
  b.Declare("type_only", kFloat, std::nullopt);
  b.Declare("other_shape", kFloat, std::vector<int64_t>{6});
  b.Output("wrong_type").Output("type_only").Output("other_shape");
  auto m = b.Load();
  ExpectTypeOnly(*m, "wrong_type", NX_TYPE_FLOAT16);  // the file's word, however wrong
  ExpectTensor(*m, "type_only", NX_TYPE_FLOAT, {2, 3});
  ExpectTensor(*m, "other_shape", NX_TYPE_FLOAT, {6});
}

TEST(ShapeInference, NewerOpsetsAreInferredToo) {
  Builder b(21);
  b.Input("x", kFloat, {1, 3, 8, 8}).Floats("w", {4, 3, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"});
  b.Node("Relu", {"c"}, {"r"});
  b.Output("r");
  auto m = b.Load();
  ExpectTensor(*m, "c", NX_TYPE_FLOAT, {1, 4, 8, 8});
  ExpectTensor(*m, "r", NX_TYPE_FLOAT, {1, 4, 8, 8});
}

TEST(ShapeInference, UnknownOpsAndDomainsInferNothing) {
  Builder b;
  auto* ms = b.model().add_opset_import();
  ms->set_domain("com.example");
  ms->set_version(1);
  b.Input("x", kFloat, {2});
  b.Node("NoSuchOp", {"x"}, {"a"});
  b.Node("Relu", {"x"}, {"b"}).set_domain("com.example");
  b.Node("Relu", {"a"}, {"c"});  // input of unknown type: nothing
  b.Output("a").Output("b").Output("c");
  auto m = b.Load();
  ExpectUnknown(*m, "a");
  ExpectUnknown(*m, "b");
  ExpectUnknown(*m, "c");
}

// ---- Checked arithmetic ----------------------------------------------------------------------

TEST(ShapeInference, HugeAndNegativeDimsDoNotOverflow) {
  const int64_t big = int64_t{1} << 40;
  Builder b;
  b.Input("x", kFloat, {big, big, 2}).Input("neg", kFloat, {-5, 3});
  b.Ints("reps", {big, big, 1}).Ints("huge", {std::numeric_limits<int64_t>::max(), -1});
  b.Node("Flatten", {"x"}, {"flat"});             // 2^80 elements in the outer dim
  b.Node("Tile", {"x", "reps"}, {"tile"});        // 2^80 again
  b.Node("Reshape", {"x", "huge"}, {"reshape"});  // product overflows
  b.Node("Relu", {"neg"}, {"neg_relu"});          // a negative declared dim is unknown
  SetInt(b.Node("Concat", {"x", "x"}, {"cat"}), "axis", 0);
  b.Output("flat").Output("tile").Output("reshape").Output("neg_relu").Output("cat");
  auto m = b.Load();
  ExpectTensor(*m, "flat", NX_TYPE_FLOAT, {big, big * 2});
  ExpectTypeOnly(*m, "tile", NX_TYPE_FLOAT);
  ExpectTypeOnly(*m, "reshape", NX_TYPE_FLOAT);
  ExpectTensor(*m, "neg_relu", NX_TYPE_FLOAT, {kUnknown, 3});
  ExpectTensor(*m, "cat", NX_TYPE_FLOAT, {2 * big, big, 2});
}

// ---- Subgraphs -------------------------------------------------------------------------------

onnx::GraphProto IdentityBody(const std::string& name, const std::string& in,
                              const std::string& out) {
  onnx::GraphProto g;
  g.set_name(name);
  *g.add_node() = test::MakeNode("Identity", {in}, {out});
  g.add_output()->set_name(out);
  return g;
}

TEST(ShapeInference, IfBodiesSeeOuterTypesAndTypeTheOutputs) {
  Builder b;
  b.Input("x", kFloat, {2, 3}).Input("cond", kBool, {});
  b.Node("Relu", {"x"}, {"outer"});  // undeclared: typed by inference before the bodies
  auto& node = b.Node("If", {"cond"}, {"y"});
  SetGraph(node, "then_branch", IdentityBody("then", "outer", "t_out"));
  SetGraph(node, "else_branch", IdentityBody("else", "outer", "e_out"));
  b.Output("y");
  auto m = b.Load();
  ExpectTensor(*m, "y", NX_TYPE_FLOAT, {2, 3});
  const Node& ifn = m->graph->nodes.back();
  const Graph& then_g = *ifn.FindAttribute("then_branch")->graph;
  const TypeInfo& body_out = then_g.value(then_g.FindValue("t_out")).type;
  EXPECT_EQ(body_out.elem_type, NX_TYPE_FLOAT);
  EXPECT_EQ(body_out.dims, (std::vector<int64_t>{2, 3}));
}

TEST(ShapeInference, LoopTypesBodyInputsAndOutputs) {
  Builder b;
  b.Input("x", kFloat, {2}).Ints("trip", {3}, true);
  auto* cond = b.graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  onnx::GraphProto body;
  body.set_name("body");
  body.add_input()->set_name("i");  // undeclared: the spec fixes their types
  body.add_input()->set_name("c");
  body.add_input()->set_name("acc");
  *body.add_node() = test::MakeNode("Identity", {"c"}, {"c_out"});
  *body.add_node() = test::MakeNode("Add", {"acc", "x"}, {"acc_out"});
  *body.add_node() = test::MakeNode("Cast", {"i"}, {"i_float"});
  SetInt(*body.mutable_node(2), "to", onnx::TensorProto::FLOAT);
  for (const char* o : {"c_out", "acc_out", "i_float"}) body.add_output()->set_name(o);
  SetGraph(b.Node("Loop", {"trip", "cond", "x"}, {"final", "scanned"}), "body", body);
  b.Output("final").Output("scanned");
  auto m = b.Load();
  ExpectTypeOnly(*m, "final", NX_TYPE_FLOAT);
  ExpectTensor(*m, "scanned", NX_TYPE_FLOAT, {kUnknown});
  const Graph& g = *m->graph->nodes.back().FindAttribute("body")->graph;
  EXPECT_EQ(g.value(g.FindValue("i")).type.elem_type, NX_TYPE_INT64);
  EXPECT_EQ(g.value(g.FindValue("c")).type.elem_type, NX_TYPE_BOOL);
  EXPECT_EQ(g.value(g.FindValue("acc_out")).type.elem_type, NX_TYPE_FLOAT);
}

// ---- Models that crashed ONNX 1.12's shape inference (found by fuzzing) -----------------------

TEST(ShapeInferenceCrashes, LayerNormAxisOutsideTheRank) {
  Builder b;
  b.Input("x", kFloat, {2, 3}).Floats("s", {3});
  SetInt(b.Node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"}), "axis", 7);
  b.Output("y");
  auto m = LoadOrReject(b);
  if (m) ExpectUnknown(*m, "y");
}

TEST(ShapeInferenceCrashes, ConvTransposeWeightRankMismatch) {
  Builder b;
  b.Input("x", kFloat, {1, 2, 4, 4}).Floats("w", {2, 2});
  SetInts(b.Node("ConvTranspose", {"x", "w"}, {"y"}), "strides", {1, 1});
  b.Output("y");
  auto m = LoadOrReject(b);
  if (m) ExpectTypeOnly(*m, "y", NX_TYPE_FLOAT);
}

TEST(ShapeInferenceCrashes, Scan8WithoutNumScanInputs) {
  Builder b(8);
  b.Input("state", kFloat, {1, 2}).Input("xs", kFloat, {1, 3, 2});
  onnx::GraphProto body;
  body.set_name("body");
  Builder::AddValueInfo(body.add_input(), "s", kFloat, {2});
  Builder::AddValueInfo(body.add_input(), "x", kFloat, {2});
  *body.add_node() = test::MakeNode("Add", {"s", "x"}, {"s_out"});
  *body.add_node() = test::MakeNode("Identity", {"s_out"}, {"y"});
  body.add_output()->set_name("s_out");
  body.add_output()->set_name("y");
  SetGraph(b.Node("Scan", {"", "state", "xs"}, {"final", "ys"}), "body", body);
  b.Output("final").Output("ys");
  auto m = LoadOrReject(b);
  if (m) {
    ExpectUnknown(*m, "final");
    ExpectUnknown(*m, "ys");
  }
}

TEST(ShapeInferenceCrashes, RecurrentOpsWithOddShapes) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    Builder b;
    b.Input("x", kFloat, {4, 2}).Input("w", kFloat, {2, 0, 9, 9}).Input("r", kFloat, {7});
    auto& n = b.Node(op, {"x", "w", "r"}, {"y", "y_h"});
    SetInt(n, "hidden_size", -3);
    SetString(n, "direction", "sideways");
    b.Output("y").Output("y_h");
    auto m = LoadOrReject(b);
    if (m) ExpectTypeOnly(*m, "y", NX_TYPE_FLOAT);
  }
}

TEST(ShapeInferenceCrashes, PoolAndConvWithZeroStride) {
  Builder b;
  b.Input("x", kFloat, {1, 1, 5, 5}).Floats("w", {1, 1, 2, 2});
  auto& mp = b.Node("MaxPool", {"x"}, {"p"});
  SetInts(mp, "kernel_shape", {2, 2});
  SetInts(mp, "strides", {0, 0});
  SetInts(b.Node("Conv", {"x", "w"}, {"c"}), "strides", {0, 0});
  auto& ap = b.Node("AveragePool", {"x"}, {"a"});
  SetInts(ap, "kernel_shape", {2, 2});
  SetInts(ap, "strides", {1, 0});
  SetString(ap, "auto_pad", "SAME_UPPER");
  b.Output("p").Output("c").Output("a");
  auto m = LoadOrReject(b);
  if (m) {
    for (const char* o : {"p", "c", "a"}) ExpectTypeOnly(*m, o, NX_TYPE_FLOAT);
  }
}

TEST(ShapeInferenceCrashes, LoopBodyConstantShorterThanItsShape) {
  Builder b;
  b.Ints("trip", {2}, true);
  auto* cond = b.graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  onnx::GraphProto body;
  body.set_name("body");
  Builder::AddValueInfo(body.add_input(), "i", kInt64, {});
  Builder::AddValueInfo(body.add_input(), "c", kBool, {});
  auto* k = body.add_node();
  *k = test::MakeNode("Constant", {}, {"k"});
  auto* value = k->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1000000);
  value->mutable_t()->add_float_data(1.0f);  // one value for a million
  *body.add_node() = test::MakeNode("Identity", {"c"}, {"c_out"});
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("k");
  SetGraph(b.Node("Loop", {"trip", "cond"}, {"ks"}), "body", body);
  b.Output("ks");
  LoadOrReject(b);
}

TEST(ShapeInferenceCrashes, MalformedAttributesOfEveryKind) {
  // Attributes of the wrong type for the rules that read them: nothing inferred, no throw.
  Builder b(13);
  b.Input("x", kFloat, {2, 3});
  SetString(b.Node("Cast", {"x"}, {"cast"}), "to", "float");
  SetString(b.Node("Flatten", {"x"}, {"flat"}), "axis", "1");
  SetInt(b.Node("Transpose", {"x"}, {"tr"}), "perm", 1);
  SetInts(b.Node("Concat", {"x", "x"}, {"cat"}), "axis", {0});
  SetInt(b.Node("Gather", {"x", "x"}, {"gather"}), "axis", -3);
  b.Output("cast").Output("flat").Output("tr").Output("cat").Output("gather");
  auto m = LoadOrReject(b);
  if (m) {
    ExpectUnknown(*m, "cast");
    ExpectUnknown(*m, "flat");
    ExpectTypeOnly(*m, "tr", NX_TYPE_FLOAT);
    ExpectTypeOnly(*m, "cat", NX_TYPE_FLOAT);
    ExpectTypeOnly(*m, "gather", NX_TYPE_FLOAT);
  }
}

// Random nodes of every op the inference knows, with inputs of odd ranks and extreme dims and
// attributes with extreme values: every model loads or is rejected cleanly (run it under the
// sanitizers to catch overflow and out-of-bounds reads).
TEST(ShapeInferenceCrashes, RandomNodesWithExtremeAttributes) {
  const char* ops[] = {"Relu",
                       "Add",
                       "Where",
                       "Cast",
                       "Shape",
                       "Conv",
                       "ConvTranspose",
                       "MaxPool",
                       "AveragePool",
                       "GlobalAveragePool",
                       "BatchNormalization",
                       "LayerNormalization",
                       "Gemm",
                       "MatMul",
                       "Flatten",
                       "Reshape",
                       "Transpose",
                       "Squeeze",
                       "Unsqueeze",
                       "Concat",
                       "Softmax",
                       "ReduceMean",
                       "ReduceSum",
                       "Gather",
                       "Slice",
                       "Split",
                       "Expand",
                       "Pad",
                       "Resize",
                       "QuantizeLinear",
                       "DequantizeLinear",
                       "ConstantOfShape",
                       "Range",
                       "Tile",
                       "TopK",
                       "ArgMax",
                       "NonZero",
                       "Einsum",
                       "LSTM",
                       "GRU",
                       "RNN",
                       "Identity",
                       "Dropout",
                       "PRelu"};
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t extremes[] = {0, 1, -1, 2, 3, -2, big, -big - 1, int64_t{1} << 40, 1000000};
  const char* int_attrs[] = {"axis",
                             "group",
                             "keepdims",
                             "to",
                             "allowzero",
                             "start",
                             "end",
                             "k",
                             "transA",
                             "transB",
                             "ceil_mode",
                             "num_outputs",
                             "noop_with_empty_axes",
                             "hidden_size",
                             "num_scan_inputs"};
  const char* ints_attrs[] = {"axes",           "perm",      "strides", "pads",
                              "kernel_shape",   "dilations", "split",   "output_shape",
                              "output_padding", "starts",    "ends"};
  std::mt19937_64 rng(1234);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int loaded = 0;
  for (int round = 0; round < 1500; ++round) {
    Builder b(static_cast<int>(7 + pick(15)));  // opsets 7..21
    for (int i = 0; i < 3; ++i) {
      std::vector<int64_t> dims(pick(6));
      for (int64_t& d : dims)
        d = pick(4) == 0 ? kUnknown : extremes[pick(4)] + static_cast<int64_t>(pick(5));
      b.Input("x" + std::to_string(i), pick(5) == 0 ? kInt64 : kFloat, dims);
    }
    std::vector<int64_t> values(pick(6));
    for (int64_t& v : values) v = extremes[pick(std::size(extremes))];
    b.Ints("c", values, values.size() == 1 && pick(2) == 0);
    std::vector<std::string> ins;
    for (size_t i = 0, n = 1 + pick(5); i < n; ++i) {
      size_t which = pick(5);
      ins.push_back(which < 3 ? "x" + std::to_string(which) : which == 3 ? "c" : "");
    }
    const char* op = ops[pick(std::size(ops))];
    auto& node = b.Node(op, ins, {"y0", "y1"});
    for (size_t a = 0, n = pick(4); a < n; ++a) {
      if (pick(2) == 0) {
        SetInt(node, int_attrs[pick(std::size(int_attrs))], extremes[pick(std::size(extremes))]);
      } else {
        std::vector<int64_t> v(pick(7));
        for (int64_t& x : v) x = extremes[pick(std::size(extremes))];
        SetInts(node, ints_attrs[pick(std::size(ints_attrs))], v);
      }
    }
    if (pick(4) == 0) SetString(node, "auto_pad", pick(2) ? "SAME_LOWER" : "VALID");
    // Duplicate attribute names are rejected by the loader: keep only the first of each.
    auto* attrs = node.mutable_attribute();
    for (int i = attrs->size() - 1; i >= 0; --i) {
      bool dup = false;
      for (int j = 0; j < i; ++j) dup = dup || attrs->Get(j).name() == attrs->Get(i).name();
      if (dup) attrs->DeleteSubrange(i, 1);
    }
    b.Output("y0");
    if (LoadOrReject(b)) ++loaded;
  }
  EXPECT_GT(loaded, 500);  // most are structurally fine: the inference itself saw them
}

}  // namespace
}  // namespace nxrt
