// Ordered string pairs (EP metadata and options, profile event arguments). In base/ so that the
// profiler (base/profiler.h) and the device layer (devices/ep_device.h) share one type.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace nxrt {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// The value of `key` in `kv`, or nullptr.
const std::string* FindKey(const KeyValues& kv, const std::string& key);

}  // namespace nxrt
