// The since-version of a node's operator: the newest opset <= the model's import in which the
// operator's definition changed (from the ONNX schemas, generated into op_since_versions.inc).
#pragma once

#include <string>

namespace nxrt {

// -1 when the operator is unknown (custom domains, or newer than the table) or the import is
// older than the operator's first version.
int OpSinceVersion(const std::string& domain, const std::string& op_type, int opset);

}  // namespace nxrt
