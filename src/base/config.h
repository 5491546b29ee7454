// Read-only string key/value configuration (session options, EP options). The struct behind the
// opaque NxConfig handle of the plugin ABI.
#pragma once

#include <map>
#include <string>

namespace nxrt {

struct Config {
  std::map<std::string, std::string> entries;

  const std::string* Find(const std::string& key) const {
    auto it = entries.find(key);
    return it == entries.end() ? nullptr : &it->second;
  }
  std::string Get(const std::string& key, const std::string& fallback) const {
    const std::string* v = Find(key);
    return v ? *v : fallback;
  }
};

}  // namespace nxrt
