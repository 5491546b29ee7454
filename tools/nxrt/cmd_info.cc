// nxrt info MODEL: inputs, outputs, opsets and operator counts, read from the file itself so it
// works for models this runtime cannot run.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <onnx/onnx_pb.h>

#include <nxrt/nxrt.hpp>

#include "nxrt/commands.h"

namespace nxrt::cli {
namespace {

std::string TypeText(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "sequence<" + TypeText(t.sequence_type().elem_type()) + ">";
  if (t.has_optional_type()) return "optional<" + TypeText(t.optional_type().elem_type()) + ">";
  if (!t.has_tensor_type()) return "?";
  std::string s = Nx_ElementTypeName(static_cast<NxElementType>(t.tensor_type().elem_type()));
  if (!t.tensor_type().has_shape()) return s + "[?]";
  s += "[";
  int i = 0;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (i++) s += ",";
    s += d.has_dim_value() ? std::to_string(d.dim_value()) : (d.has_dim_param() ? d.dim_param() : "?");
  }
  return s + "]";
}

void CountOps(const onnx::GraphProto& g, std::map<std::string, int>& counts) {
  for (const auto& n : g.node()) {
    std::string key = (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") + n.op_type();
    ++counts[key];
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CountOps(a.g(), counts);
      for (const auto& sg : a.graphs()) CountOps(sg, counts);
    }
  }
}

}  // namespace

int InfoCommand(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') throw UsageError("usage: nxrt info MODEL");
  const std::string& path = args[0];
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Exception(NX_NOT_FOUND, path + ": no such model file");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > INT32_MAX || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      !model.has_graph()) {
    throw Exception(NX_INVALID_MODEL, path + ": not a valid ONNX model (the protobuf data is truncated or corrupt)");
  }
  std::printf("model: %s\n", path.c_str());
  std::printf("ir_version: %lld  producer: %s %s\n", static_cast<long long>(model.ir_version()),
              model.producer_name().c_str(), model.producer_version().c_str());
  std::printf("opsets:");
  for (const auto& o : model.opset_import()) {
    std::printf(" %s=%lld", o.domain().empty() ? "ai.onnx" : o.domain().c_str(), static_cast<long long>(o.version()));
  }
  std::printf("\n");
  std::map<std::string, bool> init;
  for (const auto& t : model.graph().initializer()) init[t.name()] = true;
  std::printf("inputs:\n");
  for (const auto& i : model.graph().input()) {
    if (init.count(i.name())) continue;
    std::printf("  %s: %s\n", i.name().c_str(), TypeText(i.type()).c_str());
  }
  std::printf("outputs:\n");
  for (const auto& o : model.graph().output()) std::printf("  %s: %s\n", o.name().c_str(), TypeText(o.type()).c_str());
  std::printf("initializers: %d\n", model.graph().initializer_size());
  std::map<std::string, int> counts;
  CountOps(model.graph(), counts);
  int total = 0;
  for (const auto& [op, n] : counts) total += n;
  std::printf("operators (%d nodes):\n", total);
  for (const auto& [op, n] : counts) std::printf("  %-28s %d\n", op.c_str(), n);
  return 0;
}

}  // namespace nxrt::cli
