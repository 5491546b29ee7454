// The protobuf form of a model, for code that rewrites models (NxEnv_CompileModel): read with the
// same checks as the loader, without converting it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <memory>
#include <string>

namespace nxrt {

// Reads and parses a model file (NX_NOT_FOUND / NX_INVALID_ARGUMENT / NX_INVALID_MODEL).
std::shared_ptr<onnx::ModelProto> ReadModelProto(const std::string& path);
// Parses a model held in memory.
std::shared_ptr<onnx::ModelProto> ReadModelProto(const void* data, size_t size);
// The folder a model file's relative references (external data) resolve from ("." for none).
std::string ModelFolder(const std::string& path);

}  // namespace nxrt
