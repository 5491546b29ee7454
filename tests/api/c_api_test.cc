// The application API end to end (through the header-only C++ wrapper): running models on the
// default CPU EP, caller-owned buffers, input checks, and EP kernels that misbehave.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>

#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

std::string ReluModelBytes() {
  return nxrt::test::Serialize(
      MakeModel({MakeNode("Relu", {"x"}, {"y"}, "relu")}, {"x"}, {"y"}, {2, 3}));
}

std::string Lib(const std::string& name) {
  return std::string(NXRT_TEST_EP_DIR) + "/lib" + name + ".so";
}

template <class Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const nxrt::Exception& e) {
    return e.what();
  }
  return "";
}

TEST(CApi, RunsAModelWithCallerBuffers) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = ReluModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size());
  ASSERT_EQ(session.input_count(), 1u);
  EXPECT_EQ(session.input_name(0), "x");
  NxTypeInfo info = session.input_type(0);
  EXPECT_EQ(info.element_type, NX_TYPE_FLOAT);
  ASSERT_EQ(info.rank, 2u);

  float in[6] = {-1, 2, -3, 4, -5, 6};
  std::vector<int64_t> dims = {2, 3};
  nxrt::Value x = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, in, sizeof(in));
  EXPECT_EQ(x.data<float>(), in);  // no copy
  auto outs = session.Run({"x"}, {&x});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape(), dims);
  const float expected[6] = {0, 2, 0, 4, 0, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(outs[0].data<float>()[i], expected[i]);

  // Into a caller-owned output buffer.
  float out[6] = {};
  nxrt::Value y = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, out, sizeof(out));
  const char* in_name = "x";
  const char* out_name = "y";
  const NxValue* in_values[] = {x.get()};
  NxValue* out_values[] = {y.get()};
  nxrt::Check(NxSession_Run(session.get(), &in_name, in_values, 1, &out_name, 1, out_values));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], expected[i]);
}

TEST(CApi, ListsEveryValueWithItsStaticType) {
  nxrt::Env env(NX_LOG_ERROR);
  // y is declared; the intermediate value a is not: its type comes from the loader's inference.
  std::string bytes = nxrt::test::Serialize(
      MakeModel({MakeNode("Relu", {"x"}, {"a"}, "relu"), MakeNode("Neg", {"a"}, {"y"}, "neg")},
                {"x"}, {"y"}, {2, 3}));
  nxrt::Session session(env, bytes.data(), bytes.size());
  ASSERT_EQ(session.value_count(), 3u);
  bool saw_a = false;
  for (size_t i = 0; i < session.value_count(); ++i) {
    if (session.value_name(i) != "a") continue;
    saw_a = true;
    NxTypeInfo info = session.value_type(i);
    EXPECT_EQ(info.kind, NX_VALUE_TENSOR);
    EXPECT_EQ(info.element_type, NX_TYPE_FLOAT);
    ASSERT_TRUE(info.has_shape);
    ASSERT_EQ(info.rank, 2u);
    EXPECT_EQ(info.dims[0], 2);
    EXPECT_EQ(info.dims[1], 3);
  }
  EXPECT_TRUE(saw_a);
  EXPECT_EQ(NxSession_GetValueName(session.get(), 3), nullptr);
  NxTypeInfo info{};
  NxStatus* status = NxSession_GetValueTypeInfo(session.get(), 3, &info);
  EXPECT_EQ(NxStatus_GetCode(status), NX_INVALID_ARGUMENT);
  NxStatus_Release(status);
}

TEST(CApi, ReportsModelInfoMetadataAndSymbolicDims) {
  nxrt::Env env(NX_LOG_ERROR);
  onnx::ModelProto m = MakeModel({MakeNode("Relu", {"x"}, {"y"}, "relu")}, {"x"}, {"y"}, {2, 3});
  m.set_producer_name("tester");
  m.set_producer_version("1.2");
  m.set_domain("ai.test");
  m.set_model_version(42);
  m.set_doc_string("model words");
  m.mutable_graph()->set_name("g1");
  m.mutable_graph()->set_doc_string("graph words");
  auto* prop = m.add_metadata_props();
  prop->set_key("b_key");
  prop->set_value("2");
  prop = m.add_metadata_props();
  prop->set_key("a_key");
  prop->set_value("1");
  for (auto* vi : {m.mutable_graph()->mutable_input(0), m.mutable_graph()->mutable_output(0)})
    vi->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("n");
  const std::string bytes = nxrt::test::Serialize(m);
  nxrt::Session session(env, bytes.data(), bytes.size());
  EXPECT_EQ(session.model_info("producer_name"), "tester");
  EXPECT_EQ(session.model_info("producer_version"), "1.2");
  EXPECT_EQ(session.model_info("domain"), "ai.test");
  EXPECT_EQ(session.model_info("version"), "42");
  EXPECT_EQ(session.model_info("description"), "model words");
  EXPECT_EQ(session.model_info("graph_name"), "g1");
  EXPECT_EQ(session.model_info("graph_description"), "graph words");
  EXPECT_EQ(session.model_info("ir_version"), std::to_string(m.ir_version()));
  EXPECT_EQ(NxSession_GetModelInfo(session.get(), "no_such_key"), nullptr);
  EXPECT_EQ(session.custom_metadata(), (nxrt::KeyValueList{{"a_key", "1"}, {"b_key", "2"}}));
  const char *key = nullptr, *value = nullptr;
  EXPECT_FALSE(NxSession_GetCustomMetadata(session.get(), 2, &key, &value));
  EXPECT_EQ(session.input_dim_name(0, 0), "n");
  EXPECT_EQ(session.output_dim_name(0, 0), "n");
  EXPECT_EQ(session.output_dim_name(0, 1), "");
  EXPECT_STREQ(NxSession_GetOutputDimName(session.get(), 5, 0), "");
}

TEST(CApi, SequenceAndOptionalValuesHoldCopies) {
  std::vector<float> a = {1, 2, 3}, b = {4};
  auto ta = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, std::vector<int64_t>{3}, a.data(), 12);
  auto tb = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, std::vector<int64_t>{1}, b.data(), 4);
  nxrt::Value seq = nxrt::Value::Sequence(NX_TYPE_FLOAT, {&ta, &tb});
  a[0] = 99;  // the sequence copied the caller's buffer
  ASSERT_EQ(NxValue_GetKind(seq.get()), NX_VALUE_SEQUENCE);
  ASSERT_EQ(NxValue_GetSequenceLength(seq.get()), 2u);
  EXPECT_EQ(NxValue_GetElementType(seq.get()), NX_TYPE_FLOAT);
  const NxValue* first = NxValue_GetSequenceElement(seq.get(), 0);
  EXPECT_EQ(static_cast<const float*>(NxValue_GetConstData(first))[0], 1.0f);
  nxrt::Value empty_seq = nxrt::Value::Sequence(NX_TYPE_INT64, {});
  EXPECT_EQ(NxValue_GetSequenceLength(empty_seq.get()), 0u);

  nxrt::Value opt = nxrt::Value::Optional(&seq);
  ASSERT_TRUE(NxValue_OptionalHasValue(opt.get()));
  EXPECT_EQ(NxValue_GetSequenceLength(NxValue_GetOptionalValue(opt.get())), 2u);
  nxrt::Value none = nxrt::Value::Optional(nullptr);
  EXPECT_FALSE(NxValue_OptionalHasValue(none.get()));

  auto ints = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{2});
  EXPECT_THROW(nxrt::Value::Sequence(NX_TYPE_FLOAT, {&ta, &ints}), nxrt::Exception);
  EXPECT_THROW(nxrt::Value::Optional(&none), nxrt::Exception);  // no optional of an optional
  NxValue* out = nullptr;
  NxStatus* st = NxValue_CreateSequence(NX_TYPE_FLOAT, nullptr, 2, &out);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
  const NxValue* holes[] = {ta.get(), nullptr};
  st = NxValue_CreateSequence(NX_TYPE_FLOAT, holes, 2, &out);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
}

TEST(CApi, BadInputsGiveClearErrors) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = ReluModelBytes();
  nxrt::Session session(env, bytes.data(), bytes.size());
  std::vector<int64_t> good = {2, 3}, bad = {3, 2};
  nxrt::Value wrong_shape = nxrt::Value::Tensor(NX_TYPE_FLOAT, bad);
  EXPECT_NE(ErrorOf([&] {
              session.Run({"x"}, {&wrong_shape});
            }).find("has shape [3,2], the model expects [2,3]"),
            std::string::npos);
  nxrt::Value wrong_type = nxrt::Value::Tensor(NX_TYPE_INT64, good);
  EXPECT_NE(ErrorOf([&] {
              session.Run({"x"}, {&wrong_type});
            }).find("element type int64, the model expects float"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { session.Run({}, {}); }).find("input 'x' was not given"),
            std::string::npos);
  nxrt::Value ok = nxrt::Value::Tensor(NX_TYPE_FLOAT, good);
  EXPECT_NE(ErrorOf([&] { session.Run({"nope"}, {&ok}); }).find("'nope' is not an input"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { session.Run({"x"}, {&ok}, {"nope"}); }).find("'nope' is not an output"),
            std::string::npos);
  // A too-small wrapped buffer is refused up front.
  float tiny[2];
  EXPECT_NE(ErrorOf([&] {
              nxrt::Value::WrapTensor(NX_TYPE_FLOAT, good, tiny, sizeof(tiny));
            }).find("needs 24"),
            std::string::npos);
  // Still usable.
  EXPECT_EQ(session.Run({"x"}, {&ok}).size(), 1u);
}

TEST(CApi, MalformedModelsFailSessionCreation) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string junk = "definitely not a model";
  EXPECT_NE(
      ErrorOf([&] { nxrt::Session(env, junk.data(), junk.size()); }).find("not a valid ONNX model"),
      std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              nxrt::Session(env, std::string("/no/such/model.onnx"));
            }).find("no such model file"),
            std::string::npos);
  auto m = MakeModel({MakeNode("NoSuchOp", {"x"}, {"y"}, "mystery")}, {"x"}, {"y"}, {2});
  std::string bytes = nxrt::test::Serialize(m);
  std::string err = ErrorOf([&] { nxrt::Session(env, bytes.data(), bytes.size()); });
  EXPECT_NE(err.find("no EP can run NoSuchOp node 'mystery'"), std::string::npos) << err;
  EXPECT_NE(err.find("CPU: no kernel for op NoSuchOp"), std::string::npos) << err;
}

TEST(CApi, MisbehavingKernelsGiveClearErrorsAndTheSessionStaysUsable) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("misbehaving", Lib("nxrt_test_failing_kernel_ep"));
  struct Case {
    const char* op;
    const char* fragment;
  } cases[] = {{"Relu", "Relu kernel failed on purpose"},
               {"Abs", "allocated output 0 twice"},
               {"Neg", "as int32 but the model declares float"}};
  for (const Case& c : cases) {
    std::string bytes =
        nxrt::test::Serialize(MakeModel({MakeNode(c.op, {"x"}, {"y"}, "n")}, {"x"}, {"y"}, {2}));
    nxrt::SessionOptions options;
    options.AppendEp("Misbehaving");
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    ASSERT_EQ(session.ep_name(0), "Misbehaving");
    EXPECT_EQ(session.ep_node_count(0), 1u);
    std::vector<int64_t> dims = {2};
    float bad_in[2] = {-1, 2}, good_in[2] = {3, -4};
    nxrt::Value bad = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, bad_in, sizeof(bad_in));
    nxrt::Value good = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, good_in, sizeof(good_in));
    std::string err = ErrorOf([&] { session.Run({"x"}, {&bad}); });
    EXPECT_NE(err.find(c.fragment), std::string::npos) << c.op << ": " << err;
    EXPECT_NE(err.find("EP Misbehaving"), std::string::npos) << err;
    auto outs = session.Run({"x"}, {&good});  // the session stays usable
    ASSERT_EQ(outs.size(), 1u);
    // While this session lives, its library cannot be unregistered.
    EXPECT_NE(ErrorOf([&] {
                env.UnregisterEpLibrary("misbehaving");
              }).find("still used by 1 live session"),
              std::string::npos);
  }
  env.UnregisterEpLibrary("misbehaving");
}

}  // namespace
