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

// Declares the type of every value an EPContext node reads or writes that the model does not
// declare yet, as the session knew it: loaded again, the node's op says nothing about its outputs
// (onnxruntime plugins, for one, compile a group only for inputs of known shape).
void DeclareBoundaryTypes(onnx::GraphProto& g, const Graph& session_graph,
                          const std::set<std::string>& names) {
  std::set<std::string> declared;
  for (const auto& v : g.input()) declared.insert(v.name());
  for (const auto& v : g.output()) declared.insert(v.name());
  for (const auto& v : g.value_info()) declared.insert(v.name());
  for (const auto& t : g.initializer()) declared.insert(t.name());
  for (const std::string& name : names) {
    if (declared.count(name)) continue;
    const int index = session_graph.FindValue(name);
    if (index < 0) continue;
    const TypeInfo& t = session_graph.value(index).type;
    if (t.kind != NX_VALUE_TENSOR || t.elem_type == NX_TYPE_UNDEFINED) continue;
    onnx::ValueInfoProto* vi = g.add_value_info();
    vi->set_name(name);
    onnx::TypeProto_Tensor* tensor = vi->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(static_cast<int>(t.elem_type));  // ONNX's numbering
    if (!t.has_shape) continue;
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (size_t d = 0; d < t.dims.size(); ++d) {
      onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
      if (d < t.dim_params.size() && !t.dim_params[d].empty())
        dim->set_dim_param(t.dim_params[d]);
      else if (t.dims[d] >= 0)
        dim->set_dim_value(t.dims[d]);
    }
  }
}

// Drops what no node, subgraph or graph output reads any more: weights a compiled group took into
// its payload (an EP that dropped constant initializers from its inputs), whether they are
// initializers or Constant nodes. A value the graph lists as an input stays.
void DropUnread(onnx::GraphProto& g) {
  std::set<std::string> keep;
  for (const auto& o : g.output()) keep.insert(o.name());
  for (const auto& in : g.input()) keep.insert(in.name());
  bool changed = true;
  while (changed) {
    changed = false;
    std::set<std::string> read = keep;
    SubgraphReads(g, read);
    auto* nodes = g.mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      const onnx::NodeProto& n = nodes->Get(i);
      if (n.op_type() != "Constant" || !n.domain().empty()) continue;
      bool used = false;
      for (const auto& o : n.output()) used = used || read.count(o);
      if (used) continue;
      nodes->DeleteSubrange(i, 1);
      changed = true;
    }
    auto* inits = g.mutable_initializer();
    for (int i = inits->size() - 1; i >= 0; --i) {
      if (read.count(inits->Get(i).name())) continue;
      inits->DeleteSubrange(i, 1);
      changed = true;
    }
  }
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
  // onnxruntime's names for the same request, read by its plugin EPs (their Compile returns
  // EPContext nodes and writes their files next to the output model). The caller's own entries
  // win.
  options.config.entries.emplace("ep.context_enable", "1");
  options.config.entries.emplace("ep.context_file_path", request.output_path);
  options.config.entries.emplace("ep.context_embed_mode", request.external_payloads ? "0" : "1");
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
    std::string where;
    if (e.context_node) {
      // An onnxruntime plugin wrote the whole node (and any files it refers to) itself.
      ctx = *e.context_node;
      NXRT_CHECK(ctx.op_type() == "EPContext" && ctx.domain() == kContextDomain, NX_INVALID_PLUGIN,
                 "EP '" + e.ep + "' returned a node of type '" + ctx.domain() + ":" +
                     ctx.op_type() + "' for group " + e.name + ", not an EPContext node");
      const std::set<std::string> produced(ctx.output().begin(), ctx.output().end());
      for (const std::string& out : e.outputs)
        NXRT_CHECK(produced.count(out), NX_INVALID_PLUGIN,
                   "the EPContext node EP '" + e.ep + "' returned for group " + e.name +
                       " does not produce '" + out + "'");
      if (ctx.name().empty()) ctx.set_name(e.name);
      where = "as the EP wrote it";
    } else {
      ctx.set_name(e.name);
      ctx.set_op_type("EPContext");
      ctx.set_domain(kContextDomain);
      for (const std::string& in : e.inputs) ctx.add_input(in);
      for (const std::string& out : e.outputs) ctx.add_output(out);
      AddAttribute(ctx, "main_context", int64_t{1});
      AddAttribute(ctx, "source", e.ep);
      AddAttribute(ctx, "ep_sdk_version", e.ep_version);
      AddAttribute(ctx, "partition_name", e.name);
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
    }
    std::string names;
    for (int i : nodes) {
      const std::string& n = g.node(i).name();
      names += (names.empty() ? "" : ", ") + (n.empty() ? "#" + std::to_string(i) : n);
      removed[static_cast<size_t>(i)] = 1;
    }
    if (!e.context_node) AddAttribute(ctx, "notes", "replaces nodes: " + names);
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
               " nodes -> EPContext" +
               (e.context_node
                    ? " " + where
                    : ", payload " + std::to_string(e.payload.size()) + " bytes " + where));
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
    std::set<std::string> boundary;
    for (const ExportedGroup& e : compiled->exported()) {
      if (e.graph != &session.graph()) continue;
      boundary.insert(e.inputs.begin(), e.inputs.end());
      boundary.insert(e.outputs.begin(), e.outputs.end());
    }
    DeclareBoundaryTypes(g, session.graph(), boundary);
    DropUnread(g);
  }

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
