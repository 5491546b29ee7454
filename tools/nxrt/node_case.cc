#include "nxrt/node_case.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace nxrt::cli {
namespace {

namespace fs = std::filesystem;

NxValueKind KindOf(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return NX_VALUE_SEQUENCE;
  if (t.has_optional_type()) return NX_VALUE_OPTIONAL;
  return NX_VALUE_TENSOR;
}

void CollectOps(const onnx::GraphProto& g, std::set<std::string>& ops) {
  for (const auto& n : g.node()) {
    ops.insert((n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") +
               n.op_type());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectOps(a.g(), ops);
      for (const auto& sg : a.graphs()) CollectOps(sg, ops);
    }
  }
}

}  // namespace

std::vector<fs::path> FindNodeCases(const std::vector<std::string>& dirs) {
  std::vector<fs::path> cases;
  for (const std::string& d : dirs) {
    fs::path dir(d);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Exception(NX_NOT_FOUND, d + ": not a folder");
    if (fs::exists(dir / "model.onnx", ec)) {
      cases.push_back(dir);
      continue;
    }
    std::vector<fs::path> sub;
    for (const auto& entry :
         fs::directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec)) {
      if (fs::is_directory(entry.path(), ec) && fs::exists(entry.path() / "model.onnx", ec))
        sub.push_back(entry.path());
    }
    std::sort(sub.begin(), sub.end());
    cases.insert(cases.end(), sub.begin(), sub.end());
  }
  return cases;
}

std::string ReadWholeFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

NodeCase ReadNodeCase(const fs::path& dir) {
  NodeCase c;
  c.dir = dir;
  c.model_bytes = ReadWholeFile(dir / "model.onnx");
  if (!c.model.ParseFromString(c.model_bytes))
    throw Exception(NX_INVALID_MODEL, "model.onnx does not parse");
  CollectOps(c.model.graph(), c.ops);
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) throw Exception(NX_NOT_FOUND, "no test_data_set_* folder");

  std::set<std::string> initializers;
  for (const auto& t : c.model.graph().initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& i : c.model.graph().input())
    if (!initializers.count(i.name())) inputs.push_back(&i);

  for (const fs::path& ds : sets) {
    NodeDataSet set;
    set.name = ds.filename().string();
    for (size_t i = 0;; ++i) {
      fs::path file = ds / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(file, ec)) break;
      if (i >= inputs.size())
        throw Exception(NX_INVALID_ARGUMENT, "more input files than model inputs");
      std::string bytes = ReadWholeFile(file);
      set.inputs.push_back(Value::FromProto(KindOf(inputs[i]->type()), bytes.data(), bytes.size()));
      set.input_names.push_back(inputs[i]->name());
    }
    const auto& outputs = c.model.graph().output();
    for (size_t i = 0;; ++i) {
      fs::path file = ds / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(file, ec)) break;
      if (static_cast<int>(i) >= outputs.size())
        throw Exception(NX_INVALID_ARGUMENT, "more output files than model outputs");
      const auto& out = outputs.Get(static_cast<int>(i));
      std::string bytes = ReadWholeFile(file);
      set.expected.push_back(Value::FromProto(KindOf(out.type()), bytes.data(), bytes.size()));
      set.output_names.push_back(out.name());
    }
    if (set.output_names.empty()) throw Exception(NX_INVALID_ARGUMENT, "no output files");
    c.data_sets.push_back(std::move(set));
  }
  return c;
}

}  // namespace nxrt::cli
