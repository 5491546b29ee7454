// Helpers to build small ONNX models in tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace nxrt::test {

// A model with opset 17 and the given nodes; inputs/outputs are float tensors of `shape`.
onnx::ModelProto MakeModel(const std::vector<onnx::NodeProto>& nodes,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<int64_t>& shape, int opset = 17);
onnx::NodeProto MakeNode(const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "");
// A float initializer.
onnx::TensorProto MakeFloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values);
// A float graph input or output of static shape `dims`.
void AddFloatValue(onnx::ValueInfoProto* vi, const std::string& name,
                   const std::vector<int64_t>& dims);
// A graph input or output of element type `type` (onnx::TensorProto's) and static shape `dims`.
void AddTypedValue(onnx::ValueInfoProto* vi, const std::string& name, int type,
                   const std::vector<int64_t>& dims);
// A string attribute on a node.
void AddStringAttribute(onnx::NodeProto* node, const std::string& name, const std::string& value);
// Integer attributes on a node.
void AddIntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value);
void AddIntsAttribute(onnx::NodeProto* node, const std::string& name,
                      const std::vector<int64_t>& values);
std::string Serialize(const onnx::ModelProto& model);
// Writes bytes to a fresh file under a per-test temporary folder and returns its path.
std::string WriteTempFile(const std::string& relative_path, const std::string& bytes);
std::string TempDir();

}  // namespace nxrt::test
