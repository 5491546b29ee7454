// nxrt info MODEL: inputs, outputs, opsets and operator counts, read from the file itself so it
// works for models this runtime cannot run. --values also loads the model with the runtime (CPU EP)
// and lists every value of the main graph with its static type, declared or inferred.
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

// "float[1,?,224]" (rank known), "float" (rank unknown), "?" (nothing known).
std::string StaticTypeText(const NxTypeInfo& t) {
  std::string s = t.element_type == NX_TYPE_UNDEFINED ? "?" : Nx_ElementTypeName(t.element_type);
  if (t.kind == NX_VALUE_SEQUENCE) return "sequence<" + s + ">";
  if (t.kind == NX_VALUE_OPTIONAL) return "optional<" + s + ">";
  if (!t.has_shape) return s;
  s += "[";
  for (size_t d = 0; d < t.rank; ++d) {
    if (d) s += ",";
    s += t.dims[d] >= 0 ? std::to_string(t.dims[d]) : "?";
  }
  return s + "]";
}

// Static types as the runtime sees them after loading (what shape inference found), sorted by
// name so runs compare line by line. The model's own element types: a float16 model is not
// retyped to the float32 it runs in (src/session/float16_upcast.h).
void PrintValues(const std::string& path) {
  Env env(NX_LOG_ERROR);
  SessionOptions options;
  options.SetConfig("session.float16_as_float32", "0");
  Session session(env, path, &options);
  std::map<std::string, std::string> lines;
  for (size_t i = 0; i < session.value_count(); ++i)
    lines[session.value_name(i)] = StaticTypeText(session.value_type(i));
  std::printf("values (%zu):\n", lines.size());
  for (const auto& [name, type] : lines) std::printf("  %s: %s\n", name.c_str(), type.c_str());
}

// EPContext nodes (groups compiled ahead of time, `nxrt compile`): name, EP, where the payload
// is, and what the EP said it needs (model metadata "ep_compatibility_info.<EP>").
void PrintContexts(const onnx::ModelProto& model) {
  std::vector<const onnx::NodeProto*> contexts;
  for (const auto& n : model.graph().node())
    if (n.op_type() == "EPContext" && n.domain() == "com.microsoft") contexts.push_back(&n);
  if (contexts.empty()) return;
  std::printf("compiled groups (%zu EPContext nodes):\n", contexts.size());
  for (const onnx::NodeProto* n : contexts) {
    std::string source, file;
    int64_t embed = 1, bytes = 0;
    for (const auto& a : n->attribute()) {
      if (a.name() == "source") source = a.s();
      if (a.name() == "embed_mode") embed = a.i();
      if (a.name() == "ep_cache_context") {
        file = a.s();
        bytes = static_cast<int64_t>(a.s().size());
      }
    }
    std::string compatibility = "(none given)";
    for (const auto& p : model.metadata_props())
      if (p.key() == "ep_compatibility_info." + source) compatibility = p.value();
    const std::string where = embed == 0 ? "payload in " + file
                                         : "payload embedded, " + std::to_string(bytes) + " bytes";
    std::printf("  %s: ep %s, %s, compatibility %s\n",
                n->name().empty() ? "(unnamed)" : n->name().c_str(),
                source.empty() ? "(no source)" : source.c_str(), where.c_str(),
                compatibility.c_str());
  }
}

}  // namespace

int InfoCommand(const std::vector<std::string>& args) {
  const bool values = args.size() == 2 && args[1] == "--values";
  if ((args.size() != 1 && !values) || args[0].empty() || args[0][0] == '-')
    throw UsageError("usage: nxrt info MODEL [--values]");
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
  PrintContexts(model);
  if (values) PrintValues(path);
  return 0;
}

}  // namespace nxrt::cli
