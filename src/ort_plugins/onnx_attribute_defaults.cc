#include "ort_plugins/onnx_attribute_defaults.h"

#include <cstdlib>
#include <map>
#include <tuple>

#include "nxrt/nxrt_ep_api.h"
#include "ort_plugins/ort_kernel_registry.h"

namespace nxrt::ort {
namespace {

struct DefaultRow {
  const char* domain;
  const char* op_type;
  int since_version;
  const char* name;
  int type;  // AttributeProto's, the same numbers as NxAttributeType
  const char* value;
};

constexpr DefaultRow kRows[] = {
#define NXRT_ONNX_ATTR_DEFAULT(domain, op, since, name, type, value) \
  {domain, op, since, name, type, value},
#include "ort_plugins/onnx_attribute_defaults.inc"
#undef NXRT_ONNX_ATTR_DEFAULT
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Attribute ToAttribute(const DefaultRow& row) {
  Attribute a;
  a.name = row.name;
  a.type = row.type;
  const std::string v = row.value;
  switch (row.type) {
    case NX_ATTR_FLOAT:
      a.f = std::strtof(v.c_str(), nullptr);
      break;
    case NX_ATTR_INT:
      a.i = std::strtoll(v.c_str(), nullptr, 10);
      break;
    case NX_ATTR_STRING:
      a.s = v;
      break;
    case NX_ATTR_FLOATS:
      for (const std::string& x : SplitList(v)) a.floats.push_back(std::strtof(x.c_str(), nullptr));
      break;
    case NX_ATTR_INTS:
      for (const std::string& x : SplitList(v))
        a.ints.push_back(std::strtoll(x.c_str(), nullptr, 10));
      break;
    case NX_ATTR_STRINGS:
      a.strings = SplitList(v);
      break;
  }
  return a;
}

// (domain, op, since_version, attribute) -> default; built once, never freed (kernels keep
// pointers into it).
using DefaultMap = std::map<std::tuple<std::string, std::string, int, std::string>, Attribute>;

const DefaultMap& Defaults() {
  static const DefaultMap* map = [] {
    auto* m = new DefaultMap();
    for (const DefaultRow& row : kRows)
      m->emplace(std::make_tuple(row.domain, row.op_type, row.since_version, row.name),
                 ToAttribute(row));
    return m;
  }();
  return *map;
}

}  // namespace

const Attribute* SchemaDefaultAttribute(const std::string& domain, const std::string& op_type,
                                        int opset, const std::string& name) {
  // The schema in effect: the newest version not newer than the model's opset.
  int since = -1;
  for (const OnnxTypeParams& p : SchemaTypeParams(domain, op_type))
    if (p.since_version <= opset) since = p.since_version;
  if (since < 0) return nullptr;
  const DefaultMap& m = Defaults();
  auto it = m.find(std::make_tuple(domain, op_type, since, name));
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace nxrt::ort
