#include "test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

namespace nxrt::test {

onnx::ModelProto MakeModel(const std::vector<onnx::NodeProto>& nodes,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<int64_t>& shape, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("test");
  for (const auto& n : nodes) *g->add_node() = n;
  auto add_vi = [&](onnx::ValueInfoProto* vi, const std::string& name) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  for (const auto& i : inputs) add_vi(g->add_input(), i);
  for (const auto& o : outputs) add_vi(g->add_output(), o);
  return m;
}

onnx::NodeProto MakeNode(const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name.empty() ? op + "_" + (outputs.empty() ? "" : outputs[0]) : name);
  for (const auto& i : inputs) n.add_input(i);
  for (const auto& o : outputs) n.add_output(o);
  return n;
}

onnx::TensorProto MakeFloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

void AddFloatValue(onnx::ValueInfoProto* vi, const std::string& name,
                   const std::vector<int64_t>& dims) {
  AddTypedValue(vi, name, onnx::TensorProto::FLOAT, dims);
}

void AddTypedValue(onnx::ValueInfoProto* vi, const std::string& name, int type,
                   const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

void AddStringAttribute(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void AddIntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void AddIntsAttribute(onnx::NodeProto* node, const std::string& name,
                      const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

std::string Serialize(const onnx::ModelProto& model) { return model.SerializeAsString(); }

std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "nxrt";
  const auto process_dir =
      std::filesystem::temp_directory_path() / ("nxrt_test_" + std::to_string(::getpid()));
  // Removed when the process exits normally: ctest runs each test in a process of its own, and
  // every one used to leave its folder behind (a thousand per CI run).
  static const struct RemoveAtExit {
    std::filesystem::path path;
    ~RemoveAtExit() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove_at_exit{process_dir};
  auto dir = process_dir / name;
  // Emptied on the first call of each test in this process: an earlier process with the same id
  // may have left files there (a fifo or symlink that then cannot be created again).
  static std::mutex mu;
  static std::set<std::string> emptied;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (emptied.insert(name).second) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string WriteTempFile(const std::string& relative_path, const std::string& bytes) {
  auto path = std::filesystem::path(TempDir()) / relative_path;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

}  // namespace nxrt::test

namespace {
// The unit tests link the runtime statically, so "next to libnxrt" means next to the test
// binary; point the runtime at the CPU EP in the build's lib folder unless told otherwise.
const bool kCpuEpPathSet = [] {
  setenv("NXRT_CPU_EP_LIBRARY", NXRT_CPU_EP_PATH, /*overwrite=*/0);
  return true;
}();
}  // namespace
