// ONNX TensorProto / SequenceProto / OptionalProto -> nxrt values.
#pragma once

#include <memory>
#include <string>

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "base/value.h"
#include "model/external_data.h"

namespace nxrt {

// Converts a tensor. Raw data is borrowed without copying when `keep_alive` (owner of `proto`)
// is given; external data is resolved through `external` (may be null: then it is an error).
// Throws NX_INVALID_MODEL naming the tensor and the problem.
ValuePtr TensorFromProto(const onnx::TensorProto& proto, ExternalDataResolver* external,
                         const std::shared_ptr<void>& keep_alive);

// Like TensorFromProto, but large raw_data is moved out of `proto` into a buffer the tensor owns
// alone (no copy); `proto` is left without its data.
ValuePtr TensorTakingProtoData(onnx::TensorProto& proto, ExternalDataResolver* external);

ValuePtr SequenceFromProto(const onnx::SequenceProto& proto);
ValuePtr OptionalFromProto(const onnx::OptionalProto& proto);

// Parses serialized bytes as the proto matching `kind` (tensor, sequence or optional).
ValuePtr ValueFromProtoBytes(NxValueKind kind, const void* data, size_t size);

}  // namespace nxrt
