#include "base/key_values.h"

namespace nxrt {

const std::string* FindKey(const KeyValues& kv, const std::string& key) {
  for (const auto& [k, v] : kv)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace nxrt
