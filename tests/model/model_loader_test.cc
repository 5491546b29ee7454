// The loader's bad-input catalogue: every malformed model gives a clear error, never a crash.
#include "model/model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "base/error.h"
#include "test_util.h"

namespace nxrt {
namespace {

using test::MakeModel;
using test::MakeNode;

// Expects loading `path` to throw an Error whose message contains every fragment.
void ExpectLoadError(const std::string& path, std::initializer_list<std::string> fragments) {
  try {
    LoadModelFromFile(path);
    FAIL() << "loading " << path << " should have failed";
  } catch (const Error& e) {
    std::string message = e.what();
    for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << message;
  }
}

TEST(ModelLoader, LoadsAValidModel) {
  auto m = MakeModel({MakeNode("Relu", {"x"}, {"y"}, "relu1")}, {"x"}, {"y"}, {2, 3});
  auto path = test::WriteTempFile("ok.onnx", test::Serialize(m));
  auto model = LoadModelFromFile(path);
  ASSERT_EQ(model->graph->nodes.size(), 1u);
  EXPECT_EQ(model->graph->nodes[0].op_type, "Relu");
  EXPECT_EQ(model->graph->nodes[0].opset, 17);
  EXPECT_EQ(model->graph->inputs.size(), 1u);
}

TEST(ModelLoader, MissingFileNamesThePath) { ExpectLoadError("/nonexistent/model.onnx", {"/nonexistent/model.onnx", "no such"}); }

TEST(ModelLoader, TruncatedFile) {
  auto m = MakeModel({MakeNode("Relu", {"x"}, {"y"})}, {"x"}, {"y"}, {2, 3});
  m.mutable_graph()->add_initializer()->CopyFrom(test::MakeFloatTensor("w", {64}, std::vector<float>(64, 1.0f)));
  std::string bytes = test::Serialize(m);
  // Every cut point must give an error or a valid model, never a crash.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    auto path = test::WriteTempFile("cut.onnx", bytes.substr(0, cut));
    try {
      LoadModelFromFile(path);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.onnx"), std::string::npos) << e.what();
    }
  }
  auto path = test::WriteTempFile("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  ExpectLoadError(path, {"truncated.onnx"});
}

TEST(ModelLoader, RandomBytes) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto path = test::WriteTempFile("random.onnx", bytes);
    try {
      LoadModelFromFile(path);
      ADD_FAILURE() << "random bytes loaded as a model (trial " << trial << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("random.onnx"), std::string::npos) << e.what();
    }
  }
}

TEST(ModelLoader, MissingInitializerNamesNodeAndValue) {
  auto m = MakeModel({MakeNode("Add", {"x", "bias"}, {"y"}, "add_bias")}, {"x"}, {"y"}, {2});
  auto path = test::WriteTempFile("missing_init.onnx", test::Serialize(m));
  ExpectLoadError(path, {"missing_init.onnx", "add_bias", "'bias'"});
}

TEST(ModelLoader, CycleIsRejected) {
  auto m = MakeModel({MakeNode("Add", {"x", "b"}, {"a"}, "first"), MakeNode("Relu", {"a"}, {"b"}, "second")},
                     {"x"}, {"b"}, {2});
  auto path = test::WriteTempFile("cycle.onnx", test::Serialize(m));
  ExpectLoadError(path, {"cycle"});
}

TEST(ModelLoader, DuplicateOutputIsRejected) {
  auto m = MakeModel({MakeNode("Relu", {"x"}, {"y"}, "one"), MakeNode("Relu", {"x"}, {"y"}, "two")}, {"x"}, {"y"}, {2});
  auto path = test::WriteTempFile("dup.onnx", test::Serialize(m));
  ExpectLoadError(path, {"two", "already produced", "one"});
}

TEST(ModelLoader, NodesAreSortedTopologically) {
  auto m = MakeModel({MakeNode("Relu", {"a"}, {"y"}, "late"), MakeNode("Relu", {"x"}, {"a"}, "early")}, {"x"}, {"y"}, {2});
  auto path = test::WriteTempFile("order.onnx", test::Serialize(m));
  auto model = LoadModelFromFile(path);
  EXPECT_EQ(model->graph->nodes[0].name, "early");
  EXPECT_EQ(model->graph->nodes[1].name, "late");
}

TEST(ModelLoader, InitializerDataSizeMismatch) {
  auto m = MakeModel({MakeNode("Add", {"x", "w"}, {"y"})}, {"x"}, {"y"}, {4});
  *m.mutable_graph()->add_initializer() = test::MakeFloatTensor("w", {4}, {1, 2, 3});  // 3 values for 4
  auto path = test::WriteTempFile("short_init.onnx", test::Serialize(m));
  ExpectLoadError(path, {"'w'", "float_data has 3 values"});
}

TEST(ModelLoader, UnknownDomainIsRejected) {
  auto node = MakeNode("Frobnicate", {"x"}, {"y"}, "f");
  node.set_domain("com.example");
  auto m = MakeModel({node}, {"x"}, {"y"}, {2});
  auto path = test::WriteTempFile("domain.onnx", test::Serialize(m));
  ExpectLoadError(path, {"Frobnicate", "com.example"});
}

onnx::ModelProto ModelWithExternalWeight(const std::string& location, int64_t offset, int64_t length) {
  auto m = MakeModel({MakeNode("Add", {"x", "w"}, {"y"})}, {"x"}, {"y"}, {4});
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  return m;
}

TEST(ModelLoader, ExternalDataLoadsFromTheModelFolder) {
  std::string weights(16, '\0');
  float values[4] = {1, 2, 3, 4};
  std::memcpy(weights.data(), values, 16);
  test::WriteTempFile("ext/weights.bin", weights);
  auto path = test::WriteTempFile("ext/model.onnx", test::Serialize(ModelWithExternalWeight("weights.bin", 0, 16)));
  auto model = LoadModelFromFile(path);
  const auto& w = model->graph->value(model->graph->FindValue("w"));
  ASSERT_TRUE(w.initializer);
  EXPECT_EQ(static_cast<const float*>(w.initializer->data)[3], 4.0f);
}

TEST(ModelLoader, ExternalDataPathTraversalIsRejected) {
  auto path = test::WriteTempFile("trav/model.onnx", test::Serialize(ModelWithExternalWeight("../../etc/passwd", 0, 16)));
  ExpectLoadError(path, {"'w'", "../../etc/passwd", "leaves the model's folder"});
}

TEST(ModelLoader, ExternalDataAbsolutePathIsRejected) {
  auto path = test::WriteTempFile("abs/model.onnx", test::Serialize(ModelWithExternalWeight("/etc/passwd", 0, 16)));
  ExpectLoadError(path, {"absolute location"});
}

TEST(ModelLoader, ExternalDataSymlinkOutsideIsRejected) {
  auto dir = test::TempDir();
  std::filesystem::create_directories(dir + "/link");
  std::error_code ec;
  std::filesystem::create_symlink("/etc/passwd", dir + "/link/weights.bin", ec);
  auto path = test::WriteTempFile("link/model.onnx", test::Serialize(ModelWithExternalWeight("weights.bin", 0, 16)));
  ExpectLoadError(path, {"outside the model's folder"});
}

TEST(ModelLoader, ExternalDataOffsetPastEndIsRejected) {
  test::WriteTempFile("off/weights.bin", std::string(16, '\0'));
  auto path = test::WriteTempFile("off/model.onnx", test::Serialize(ModelWithExternalWeight("weights.bin", 8, 16)));
  ExpectLoadError(path, {"exceeds the size"});
  auto path2 = test::WriteTempFile("off/model2.onnx", test::Serialize(ModelWithExternalWeight("weights.bin", 100, -1)));
  ExpectLoadError(path2, {"past the end"});
}

TEST(ModelLoader, ExternalDataMissingFileIsRejected) {
  auto path = test::WriteTempFile("nofile/model.onnx", test::Serialize(ModelWithExternalWeight("absent.bin", 0, 16)));
  ExpectLoadError(path, {"cannot open", "absent.bin"});
}

TEST(ModelLoader, ExternalDataFromBufferIsRejected) {
  std::string bytes = test::Serialize(ModelWithExternalWeight("weights.bin", 0, 16));
  EXPECT_THROW(LoadModelFromBuffer(bytes.data(), bytes.size()), Error);
}

TEST(ModelLoader, ConstantNodesBecomeInitializers) {
  auto c = MakeNode("Constant", {}, {"k"}, "const");
  auto* a = c.add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(1.5f);
  a->add_floats(2.5f);
  auto m = MakeModel({c, MakeNode("Add", {"x", "k"}, {"y"})}, {"x"}, {"y"}, {2});
  auto path = test::WriteTempFile("const.onnx", test::Serialize(m));
  auto model = LoadModelFromFile(path);
  ASSERT_EQ(model->graph->nodes.size(), 1u);
  const auto& k = model->graph->value(model->graph->FindValue("k"));
  ASSERT_TRUE(k.initializer);
  EXPECT_EQ(k.initializer->count, 2u);
}

}  // namespace
}  // namespace nxrt
