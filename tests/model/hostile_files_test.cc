// Files that are not what they claim: a FIFO or folder where a model or its external data should
// be (must not block, must say what it is), and a model nested deeper than protobuf accepts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "model/model.h"
#include "test_util.h"

namespace nxrt {
namespace {

using test::MakeModel;
using test::MakeNode;

std::string LoadError(const std::string& path) {
  try {
    LoadModelFromFile(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HostileFiles, AFolderAsModelPathSaysItIsAFolder) {
  const std::string dir = test::TempDir() + "/a_folder.onnx";
  std::filesystem::create_directories(dir);
  const std::string m = LoadError(dir);
  EXPECT_NE(m.find("is a folder, not a model file"), std::string::npos) << m;
}

TEST(HostileFiles, AFifoAsModelPathFailsAtOnce) {
  const std::string fifo = test::TempDir() + "/pipe.onnx";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = LoadError(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_NE(m.find("is not a regular file"), std::string::npos) << m;
}

TEST(HostileFiles, AMissingModelStillSaysNoSuchFile) {
  const std::string m = LoadError(test::TempDir() + "/absent.onnx");
  EXPECT_NE(m.find("no such model file"), std::string::npos) << m;
}

TEST(HostileFiles, AFifoAsExternalDataDoesNotBlock) {
  auto model = MakeModel({MakeNode("Add", {"x", "w"}, {"y"})}, {"x"}, {"y"}, {4});
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  const std::string path = test::WriteTempFile("fifo_ext/model.onnx", test::Serialize(model));
  const std::string fifo = test::TempDir() + "/fifo_ext/weights.bin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = LoadError(path);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_NE(m.find("'weights.bin' is not a regular file"), std::string::npos) << m;
}

// If nodes whose then-branch holds the next If, `depth` levels deep.
onnx::GraphProto NestedIfs(int depth) {
  onnx::GraphProto g;
  g.set_name("level" + std::to_string(depth));
  auto* out = g.add_output();
  out->set_name("y");
  if (depth == 0) {
    *g.add_node() = MakeNode("Identity", {"x"}, {"y"});
    return g;
  }
  auto node = MakeNode("If", {"c"}, {"y"});
  auto* then_branch = node.add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  *then_branch->mutable_g() = NestedIfs(depth - 1);
  auto* else_branch = node.add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  *else_branch->mutable_g() = NestedIfs(0);
  *g.add_node() = node;
  return g;
}

TEST(HostileFiles, AModelNestedTooDeepSaysSoInsteadOfCorrupt) {
  auto model = MakeModel({}, {"x"}, {"y"}, {1});
  *model.mutable_graph() = NestedIfs(150);
  const std::string path = test::WriteTempFile("deep.onnx", test::Serialize(model));
  const std::string m = LoadError(path);
  EXPECT_NE(m.find("nested deeper than 100 levels"), std::string::npos) << m;
  // Really damaged bytes still say so.
  std::string bytes =
      test::Serialize(MakeModel({MakeNode("Relu", {"x"}, {"y"})}, {"x"}, {"y"}, {2}));
  const std::string broken = test::WriteTempFile("broken.onnx", bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(LoadError(broken).find("truncated or corrupt"), std::string::npos);
}

}  // namespace
}  // namespace nxrt
