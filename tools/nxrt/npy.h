// Reading and writing NumPy .npy files (format 1.0-3.0, C order) as nxrt values.
#pragma once

#include <string>

#include <nxrt/nxrt.hpp>

namespace nxrt::cli {

// Loads FILE.npy; throws nxrt::Exception with the file name on any problem.
Value ReadNpy(const std::string& path);
// Writes a numeric or bool tensor.
void WriteNpy(const std::string& path, const Value& value);

}  // namespace nxrt::cli
