#include "graph/op_since_version.h"

#include <map>
#include <utility>
#include <vector>

namespace nxrt {
namespace {

struct OpVersions {
  const char* domain;
  const char* op_type;
  std::vector<int> since;
};

const std::map<std::pair<std::string, std::string>, std::vector<int>>& Table() {
  static const auto* table = [] {
    static const OpVersions kOps[] = {
#include "graph/op_since_versions.inc"
    };
    auto* t = new std::map<std::pair<std::string, std::string>, std::vector<int>>();
    for (const auto& op : kOps) (*t)[{op.domain, op.op_type}] = op.since;
    return t;
  }();
  return *table;
}

}  // namespace

int OpSinceVersion(const std::string& domain, const std::string& op_type, int opset) {
  auto it = Table().find({domain, op_type});
  if (it == Table().end()) return -1;
  int best = -1;
  for (int v : it->second)
    if (v <= opset) best = v;
  return best;
}

}  // namespace nxrt
