// The default values ONNX schemas give attributes. onnxruntime adds them to every node before
// kernels are made, so a plugin kernel reads Gather's "axis" or MaxPool's "auto_pad" even when
// the model leaves it out; nxrt's kernel infos answer the same way.
#pragma once

#include <string>

#include "graph/graph.h"

namespace nxrt::ort {

// The default of attribute `name` in the schema of (domain, op_type) in effect at opset
// `opset`; null when that schema has no such default (or nxrt's table does not know the op).
const Attribute* SchemaDefaultAttribute(const std::string& domain, const std::string& op_type,
                                        int opset, const std::string& name);

}  // namespace nxrt::ort
