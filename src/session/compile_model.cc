#include "session/compile_model.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <set>

#include "base/error.h"
#include "model/model.h"
#include "model/model_proto.h"
#include "session/fused_groups.h"
#include "session/saved_groups.h"
#include "session/session.h"

namespace nxrt {
namespace {

constexpr const char* kContextDomain = "com.microsoft";

std::string CompatibilityKey(const std::string& ep) { return "ep_compatibility_info." + ep; }

bool HasExternalData(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return true;
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL) return true;
      if (a.has_g() && HasExternalData(a.g())) return true;
      for (const auto& sub : a.graphs())
        if (HasExternalData(sub)) return true;
    }
  }
  return false;
}

// Every name a node's subgraphs read (outer-scope values included), for ordering.
void SubgraphReads(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) out.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) SubgraphReads(a.g(), out);
      for (const auto& sub : a.graphs()) SubgraphReads(sub, out);
    }
  }
}

// Orders `nodes` so that every value is produced before it is read, keeping the given order
// wherever it already is (the earliest ready node first).
std::vector<onnx::NodeProto> SortNodes(std::vector<onnx::NodeProto> nodes) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].output())
      if (!o.empty()) producer[o] = i;
  std::vector<std::set<size_t>> deps(nodes.size());
  std::vector<std::vector<size_t>> readers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::string> reads(nodes[i].input().begin(), nodes[i].input().end());
    for (const auto& a : nodes[i].attribute()) {
      if (a.has_g()) SubgraphReads(a.g(), reads);
      for (const auto& sub : a.graphs()) SubgraphReads(sub, reads);
    }
    for (const std::string& r : reads) {
      auto it = producer.find(r);
      if (it != producer.end() && it->second != i && deps[i].insert(it->second).second)
        readers[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  std::vector<size_t> waiting(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    waiting[i] = deps[i].size();
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<onnx::NodeProto> out;
  out.reserve(nodes.size());
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    out.push_back(std::move(nodes[i]));
    for (size_t r : readers[i])
      if (--waiting[r] == 0) ready.push(r);
  }
  NXRT_CHECK(out.size() == nodes.size(), NX_RUNTIME_ERROR,
             "internal: the compiled model's nodes form a cycle");
  return out;
}

std::string FileSafe(const std::string& name) {
  std::string out;
  for (char c : name)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return out;
}

void AddAttribute(onnx::NodeProto& n, const char* name, const std::string& s) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(s);
}
void AddAttribute(onnx::NodeProto& n, const char* name, int64_t i) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(i);
}

void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  NXRT_CHECK(out.good(), NX_INVALID_ARGUMENT, path.string() + ": cannot write the file");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  NXRT_CHECK(out.good(), NX_INVALID_ARGUMENT, path.string() + ": writing the file failed");
}

}  // namespace

size_t CompileModelToFile(Env& env, const CompileModelRequest& request, SessionOptions options,
                          const CompileProgress& progress) {
  NXRT_CHECK(!request.output_path.empty(), NX_INVALID_ARGUMENT, "no output path to compile to");
  const bool from_file = !request.model_path.empty();
  const std::filesystem::path out_path(request.output_path);
  std::filesystem::path out_dir = out_path.parent_path();
  if (out_dir.empty()) out_dir = ".";
  NXRT_CHECK(std::filesystem::is_directory(out_dir), NX_INVALID_ARGUMENT,
             out_dir.string() + ": the output folder does not exist");
  std::shared_ptr<onnx::ModelProto> proto =
      from_file ? ReadModelProto(request.model_path)
                : ReadModelProto(request.model_data, request.model_size);
  if (HasExternalData(proto->graph())) {
    // The copy refers to the same external files by relative path: only valid from their folder.
    NXRT_CHECK(from_file && std::filesystem::equivalent(ModelFolder(request.model_path), out_dir),
               NX_NOT_IMPLEMENTED,
               "the model keeps tensors in external data files: write the compiled model into the "
               "model's own folder so that it finds them");
  }

  // The written model keeps the input's nodes: no fusion or folding before placement.
  options.optimization_level = 0;
  options.export_compiled = true;
  options.profile_file.clear();
  std::shared_ptr<Model> model = from_file
                                     ? LoadModelFromFile(request.model_path)
                                     : LoadModelFromBuffer(request.model_data, request.model_size);
  Session session(env, model, options);
  const CompiledGroups* compiled = session.compiled_groups();
  NXRT_CHECK(compiled != nullptr, NX_RUNTIME_ERROR, "internal: the session compiled nothing");

  onnx::GraphProto& g = *proto->mutable_graph();
  std::map<std::string, int> producer;  // value -> node of the input model
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::vector<char> removed(static_cast<size_t>(g.node_size()), 0);
  std::map<int, onnx::NodeProto> context_at;         // first replaced node -> EPContext node
  std::map<std::string, std::string> compatibility;  // EP -> string
  size_t saved = 0;
  for (const ExportedGroup& e : compiled->exported()) {
    if (e.graph != &session.graph()) {
      if (progress)
        progress("group " + e.name + " (" + e.ep +
                 ") is inside a control-flow body: kept as "
                 "nodes (only main-graph groups are saved)");
      continue;
    }
    std::set<int> nodes;
    for (const std::string& v : e.node_outputs) {
      auto it = producer.find(v);
      NXRT_CHECK(it != producer.end(), NX_RUNTIME_ERROR,
                 "internal: group " + e.name + " produces '" + v +
                     "', which no node of the model "
                     "produces");
      nodes.insert(it->second);
    }
    NXRT_CHECK(!nodes.empty(), NX_RUNTIME_ERROR, "internal: group " + e.name + " has no nodes");
    auto [known, inserted] = compatibility.emplace(e.ep, e.compatibility);
    NXRT_CHECK(inserted || known->second == e.compatibility, NX_INVALID_PLUGIN,
               "EP '" + e.ep + "' gave two compatibility strings for one model ('" + known->second +
                   "' and '" + e.compatibility + "')");
    onnx::NodeProto ctx;
    ctx.set_name(e.name);
    ctx.set_op_type("EPContext");
    ctx.set_domain(kContextDomain);
    for (const std::string& in : e.inputs) ctx.add_input(in);
    for (const std::string& out : e.outputs) ctx.add_output(out);
    AddAttribute(ctx, "main_context", int64_t{1});
    AddAttribute(ctx, "source", e.ep);
    AddAttribute(ctx, "ep_sdk_version", e.ep_version);
    AddAttribute(ctx, "partition_name", e.name);
    std::string where;
    if (request.external_payloads) {
      const std::string file = FileSafe(out_path.stem().string() + "_" + e.name) + ".ctx";
      WriteFile(out_dir / file, e.payload);
      AddAttribute(ctx, "embed_mode", int64_t{0});
      AddAttribute(ctx, "ep_cache_context", file);
      where = "in " + file;
    } else {
      AddAttribute(ctx, "embed_mode", int64_t{1});
      AddAttribute(ctx, "ep_cache_context", e.payload);
      where = "embedded";
    }
    std::string names;
    for (int i : nodes) {
      const std::string& n = g.node(i).name();
      names += (names.empty() ? "" : ", ") + (n.empty() ? "#" + std::to_string(i) : n);
      removed[static_cast<size_t>(i)] = 1;
    }
    AddAttribute(ctx, "notes", "replaces nodes: " + names);
    if (request.keep_original_nodes) {
      auto* a = ctx.add_attribute();
      a->set_name(kOriginalNodesAttribute);
      a->set_type(onnx::AttributeProto::GRAPH);
      onnx::GraphProto* body = a->mutable_g();
      body->set_name(e.name + "_original_nodes");
      for (int i : nodes) *body->add_node() = g.node(i);
      for (const std::string& out : e.outputs) {
        onnx::ValueInfoProto* vi = body->add_output();
        vi->set_name(out);
        for (const auto& known : g.value_info())
          if (known.name() == out) *vi->mutable_type() = known.type();
        for (const auto& known : g.output())
          if (known.name() == out) *vi->mutable_type() = known.type();
      }
    }
    context_at[*nodes.begin()] = std::move(ctx);
    ++saved;
    if (progress)
      progress("group " + e.name + " on " + e.ep + ": " + std::to_string(nodes.size()) +
               " nodes -> EPContext, payload " + std::to_string(e.payload.size()) + " bytes " +
               where);
  }

  std::vector<onnx::NodeProto> kept;
  for (int i = 0; i < g.node_size(); ++i) {
    auto it = context_at.find(i);
    if (it != context_at.end()) kept.push_back(std::move(it->second));
    if (!removed[static_cast<size_t>(i)]) kept.push_back(g.node(i));
  }
  kept = SortNodes(std::move(kept));
  g.clear_node();
  for (auto& n : kept) *g.add_node() = std::move(n);

  if (saved > 0) {
    bool imported = false;
    for (const auto& op : proto->opset_import())
      imported = imported || op.domain() == kContextDomain;
    if (!imported) {
      auto* op = proto->add_opset_import();
      op->set_domain(kContextDomain);
      op->set_version(1);
    }
  }
  for (const auto& [ep, compat] : compatibility) {
    onnx::StringStringEntryProto* entry = nullptr;
    for (auto& p : *proto->mutable_metadata_props())
      if (p.key() == CompatibilityKey(ep)) entry = &p;
    if (entry == nullptr) entry = proto->add_metadata_props();
    entry->set_key(CompatibilityKey(ep));
    entry->set_value(compat);
  }
  NXRT_CHECK(proto->ByteSizeLong() <= static_cast<size_t>(INT32_MAX), NX_INVALID_ARGUMENT,
             "the compiled model is larger than 2 GiB: save the payloads in files (external)");
  std::string bytes;
  NXRT_CHECK(proto->SerializeToString(&bytes), NX_RUNTIME_ERROR,
             "the compiled model could not be serialized");
  WriteFile(out_path, bytes);
  return saved;
}

NxCompatibility ModelCompatibility(const std::string& model_path, const NxEpDevice& device) {
  std::shared_ptr<onnx::ModelProto> proto = ReadModelProto(model_path);
  for (const auto& p : proto->metadata_props()) {
    if (p.key() == CompatibilityKey(device.ep_name))
      return CheckContextCompatibility(*device.factory, {device.device}, p.value());
  }
  return NX_COMPATIBILITY_NOT_APPLICABLE;
}

}  // namespace nxrt
