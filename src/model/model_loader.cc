#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/element_type.h"
#include "base/error.h"
#include "graph/shape_inference.h"
#include "model/model.h"
#include "model/model_proto.h"
#include "model/tensor_proto.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

// Everything the conversion of one model needs to carry around.
struct LoadContext {
  std::string source;
  ExternalDataResolver* external;
  std::shared_ptr<void> keep_alive;               // the ModelProto, for borrowed raw_data
  std::vector<std::shared_ptr<Graph>> subgraphs;  // finalized after their parents
};

std::string NormalizeDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

TypeInfo ConvertType(const onnx::TypeProto& type) {
  TypeInfo info;
  const onnx::TypeProto* t = &type;
  if (t->has_optional_type()) {
    info.kind = NX_VALUE_OPTIONAL;
    t = &t->optional_type().elem_type();
  }
  if (t->has_sequence_type()) {
    if (info.kind == NX_VALUE_TENSOR) info.kind = NX_VALUE_SEQUENCE;
    t = &t->sequence_type().elem_type();
  }
  if (t->has_tensor_type()) {
    const auto& tt = t->tensor_type();
    if (IsKnownElementType(tt.elem_type()))
      info.elem_type = static_cast<NxElementType>(tt.elem_type());
    if (tt.has_shape() && info.kind == NX_VALUE_TENSOR) {
      info.has_shape = true;
      for (const auto& d : tt.shape().dim()) {
        info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        info.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "");
      }
    }
  }
  return info;
}

std::shared_ptr<Graph> ConvertGraph(const onnx::GraphProto& proto,
                                    const std::map<std::string, int>& opsets, const Graph* parent,
                                    LoadContext& ctx);

Attribute ConvertAttribute(const onnx::AttributeProto& proto, const Graph& graph, LoadContext& ctx,
                           const std::string& node_desc) {
  Attribute a;
  a.name = proto.name();
  a.type = proto.type();
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT:
      a.f = proto.f();
      break;
    case onnx::AttributeProto::INT:
      a.i = proto.i();
      break;
    case onnx::AttributeProto::STRING:
      a.s = proto.s();
      break;
    case onnx::AttributeProto::FLOATS:
      a.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      a.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      a.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case onnx::AttributeProto::TENSOR:
      a.tensor = TensorFromProto(proto.t(), ctx.external, ctx.keep_alive);
      break;
    case onnx::AttributeProto::TENSORS:
      for (const auto& t : proto.tensors())
        a.tensors.push_back(TensorFromProto(t, ctx.external, ctx.keep_alive));
      break;
    case onnx::AttributeProto::GRAPH:
      a.graph = ConvertGraph(proto.g(), graph.opsets, &graph, ctx);
      break;
    case onnx::AttributeProto::GRAPHS:
      for (const auto& g : proto.graphs())
        a.graphs.push_back(ConvertGraph(g, graph.opsets, &graph, ctx));
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      a.type_info = ConvertType(proto.tp());
      break;
    case onnx::AttributeProto::TYPE_PROTOS:
      for (const auto& t : proto.type_protos()) a.type_infos.push_back(ConvertType(t));
      break;
    case onnx::AttributeProto::UNDEFINED:
      // Old exporters leave `type` unset: infer it from the one field that is filled.
      if (proto.has_f()) {
        a.type = NX_ATTR_FLOAT;
        a.f = proto.f();
      } else if (proto.has_i()) {
        a.type = NX_ATTR_INT;
        a.i = proto.i();
      } else if (proto.has_s()) {
        a.type = NX_ATTR_STRING;
        a.s = proto.s();
      } else if (proto.ints_size()) {
        a.type = NX_ATTR_INTS;
        a.ints.assign(proto.ints().begin(), proto.ints().end());
      } else if (proto.floats_size()) {
        a.type = NX_ATTR_FLOATS;
        a.floats.assign(proto.floats().begin(), proto.floats().end());
      } else
        Throw(NX_INVALID_MODEL,
              ctx.source + ": " + node_desc + ": attribute '" + proto.name() + "' has no type");
      break;
    default:
      Throw(NX_NOT_IMPLEMENTED, ctx.source + ": " + node_desc + ": attribute '" + proto.name() +
                                    "' has unsupported type " + std::to_string(proto.type()));
  }
  return a;
}

// Turns a Constant node into an initializer when its value is a plain attribute. Returns false
// for forms it leaves as a node (e.g. sparse_value).
bool FoldConstant(const onnx::NodeProto& node, Graph& graph, LoadContext& ctx) {
  if (node.op_type() != "Constant" || !NormalizeDomain(node.domain()).empty()) return false;
  if (node.output_size() != 1 || node.attribute_size() != 1) return false;
  const auto& a = node.attribute(0);
  ValuePtr v;
  if (a.name() == "value" && a.has_t()) {
    v = TensorFromProto(a.t(), ctx.external, ctx.keep_alive);
  } else if (a.name() == "value_float") {
    v = MakeTensor(NX_TYPE_FLOAT, {});
    *static_cast<float*>(v->data) = a.f();
  } else if (a.name() == "value_int") {
    v = MakeTensor(NX_TYPE_INT64, {});
    *static_cast<int64_t*>(v->data) = a.i();
  } else if (a.name() == "value_floats") {
    int64_t n = a.floats_size();
    v = MakeTensor(NX_TYPE_FLOAT, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(v->data)[i] = a.floats(static_cast<int>(i));
  } else if (a.name() == "value_ints") {
    int64_t n = a.ints_size();
    v = MakeTensor(NX_TYPE_INT64, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(v->data)[i] = a.ints(static_cast<int>(i));
  } else if (a.name() == "value_string") {
    v = MakeTensor(NX_TYPE_STRING, {});
    v->strings[0] = a.s();
  } else if (a.name() == "value_strings") {
    int64_t n = a.strings_size();
    v = MakeTensor(NX_TYPE_STRING, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) v->strings[i] = a.strings(static_cast<int>(i));
  } else {
    return false;
  }
  if (node.output(0).empty()) return true;  // nothing reads it
  int index = graph.GetOrAddValue(node.output(0));
  ValueDef& def = graph.value(index);
  if (def.initializer) {
    Throw(NX_INVALID_MODEL, ctx.source + ": Constant node '" + node.name() + "': output '" +
                                node.output(0) + "' is already an initializer");
  }
  def.initializer = v;
  def.type.kind = NX_VALUE_TENSOR;
  def.type.elem_type = v->type;
  def.type.has_shape = true;
  def.type.dims = v->dims;
  def.type.dim_params.assign(v->dims.size(), "");
  return true;
}

std::shared_ptr<Graph> ConvertGraph(const onnx::GraphProto& proto,
                                    const std::map<std::string, int>& opsets, const Graph* parent,
                                    LoadContext& ctx) {
  auto graph = std::make_shared<Graph>();
  graph->name = proto.name();
  graph->source = ctx.source;
  graph->opsets = opsets;
  graph->parent = parent;

  if (proto.sparse_initializer_size() > 0) {
    Throw(NX_NOT_IMPLEMENTED, ctx.source + ": sparse initializers are not supported");
  }
  for (const auto& t : proto.initializer()) {
    if (t.name().empty()) Throw(NX_INVALID_MODEL, ctx.source + ": an initializer has no name");
    int index = graph->GetOrAddValue(t.name());
    ValueDef& def = graph->value(index);
    if (def.initializer) {
      Throw(NX_INVALID_MODEL, ctx.source + ": initializer '" + t.name() + "' is defined twice");
    }
    // Large raw_data moves out of the proto into a buffer of its own (no copy), so an
    // initializer the session no longer needs (its consumers pre-packed it) can really be freed.
    // The proto is not read for values again.
    def.initializer = TensorTakingProtoData(const_cast<onnx::TensorProto&>(t), ctx.external);
    def.type.elem_type = def.initializer->type;
    def.type.has_shape = true;
    def.type.dims = def.initializer->dims;
    def.type.dim_params.assign(def.type.dims.size(), "");
  }
  for (const auto& in : proto.input()) {
    int index = graph->GetOrAddValue(in.name());
    ValueDef& def = graph->value(index);
    if (def.initializer) continue;  // an initializer listed as input (IR < 4): a constant here
    if (def.is_graph_input) {
      Throw(NX_INVALID_MODEL, ctx.source + ": graph input '" + in.name() + "' is listed twice");
    }
    def.is_graph_input = true;
    def.type = ConvertType(in.type());
    graph->inputs.push_back(index);
  }
  for (const auto& vi : proto.value_info()) {
    int index = graph->GetOrAddValue(vi.name());
    ValueDef& def = graph->value(index);
    if (!def.initializer && !def.is_graph_input) def.type = ConvertType(vi.type());
  }
  for (const auto& node_proto : proto.node()) {
    std::string desc = node_proto.op_type() + " node '" + node_proto.name() + "'";
    if (node_proto.op_type().empty())
      Throw(NX_INVALID_MODEL, ctx.source + ": a node has no op_type");
    if (FoldConstant(node_proto, *graph, ctx)) continue;
    Node node;
    node.name = node_proto.name();
    node.op_type = node_proto.op_type();
    node.domain = NormalizeDomain(node_proto.domain());
    auto it = opsets.find(node.domain);
    if (it == opsets.end()) {
      Throw(NX_INVALID_MODEL, ctx.source + ": " + desc +
                                  ": the model imports no opset for domain '" + node.domain + "'");
    }
    node.opset = it->second;
    for (const auto& name : node_proto.input())
      node.inputs.push_back(name.empty() ? -1 : graph->GetOrAddValue(name));
    for (const auto& name : node_proto.output())
      node.outputs.push_back(name.empty() ? -1 : graph->GetOrAddValue(name));
    for (const auto& a : node_proto.attribute()) {
      Attribute attr = ConvertAttribute(a, *graph, ctx, desc);
      if (node.FindAttribute(attr.name)) {
        Throw(NX_INVALID_MODEL,
              ctx.source + ": " + desc + ": attribute '" + attr.name + "' appears twice");
      }
      node.attributes.push_back(std::move(attr));
    }
    graph->nodes.push_back(std::move(node));
  }
  for (const auto& out : proto.output()) {
    if (out.name().empty()) Throw(NX_INVALID_MODEL, ctx.source + ": a graph output has no name");
    int index = graph->GetOrAddValue(out.name());
    ValueDef& def = graph->value(index);
    def.is_graph_output = true;
    if (out.has_type() && !def.initializer) {
      TypeInfo declared = ConvertType(out.type());
      if (declared.elem_type != NX_TYPE_UNDEFINED || !def.is_graph_input) def.type = declared;
    }
    graph->outputs.push_back(index);
  }
  if (parent != nullptr) ctx.subgraphs.push_back(graph);
  return graph;
}

std::shared_ptr<Model> ConvertModel(std::shared_ptr<onnx::ModelProto> proto,
                                    const std::string& source, const std::string& external_dir) {
  auto model = std::make_shared<Model>();
  model->source = source;
  model->external_data_dir = external_dir;
  model->ir_version = proto->ir_version();
  model->producer_name = proto->producer_name();
  model->producer_version = proto->producer_version();
  model->domain = proto->domain();
  model->model_version = proto->model_version();
  model->doc_string = proto->doc_string();
  model->graph_doc_string = proto->graph().doc_string();
  for (const auto& kv : proto->metadata_props()) model->metadata[kv.key()] = kv.value();

  if (!proto->has_graph()) Throw(NX_INVALID_MODEL, source + ": the model has no graph");
  std::map<std::string, int> opsets;
  for (const auto& op : proto->opset_import()) {
    std::string domain = NormalizeDomain(op.domain());
    if (op.version() <= 0 || op.version() > 1000) {
      Throw(NX_INVALID_MODEL, source + ": invalid opset version " + std::to_string(op.version()) +
                                  " for domain '" + domain + "'");
    }
    opsets[domain] = static_cast<int>(op.version());
  }
  // IR v1/v2 models predate opset imports and mean ai.onnx opset 1. Other models may import
  // only other domains (e.g. ai.onnx.ml); a node of an unimported domain is rejected below.
  if (proto->opset_import_size() == 0 && proto->ir_version() < 3) opsets[""] = 1;
  ExternalDataResolver external(external_dir);
  LoadContext ctx{source, &external, proto, {}};
  model->graph = ConvertGraph(proto->graph(), opsets, nullptr, ctx);
  if (model->graph->outputs.empty()) Throw(NX_INVALID_MODEL, source + ": the graph has no outputs");
  model->graph->Finalize();
  for (auto& sub : ctx.subgraphs) sub->Finalize();  // parents are complete by now
  // Our own inference on the finalized IR (not ONNX's on the raw proto, which crashes on
  // malformed models and knows no opset newer than its schemas); subgraphs follow their parents.
  InferTypesAndShapes(*model->graph);
  return model;
}

// protobuf's default recursion limit, which ParseFromArray applies.
constexpr int kProtobufDepthLimit = 100;

std::shared_ptr<onnx::ModelProto> ParseModel(const void* data, size_t size,
                                             const std::string& source) {
  if (size > static_cast<size_t>(INT32_MAX)) {
    Throw(NX_INVALID_MODEL,
          source + ": the model is larger than 2 GiB; store weights as external data");
  }
  auto proto = std::make_shared<onnx::ModelProto>();
  if (size > 0 && proto->ParseFromArray(data, static_cast<int>(size))) return proto;
  // Tell a model nested deeper than protobuf's recursion limit (100 levels: subgraphs in
  // subgraphs, types in types) from a damaged one by parsing again with a larger limit, only to
  // word the error: the model is refused either way (deep recursion risks the stack).
  if (size > 0) {
    google::protobuf::io::CodedInputStream stream(static_cast<const uint8_t*>(data),
                                                  static_cast<int>(size));
    stream.SetRecursionLimit(1000);
    onnx::ModelProto probe;
    if (probe.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage()) {
      Throw(NX_INVALID_MODEL, source + ": the model is nested deeper than " +
                                  std::to_string(kProtobufDepthLimit) +
                                  " levels (graphs within graphs or types within types), more "
                                  "than the loader accepts");
    }
  }
  Throw(NX_INVALID_MODEL,
        source + ": not a valid ONNX model (the protobuf data is truncated or corrupt)");
}

}  // namespace

std::shared_ptr<onnx::ModelProto> ReadModelProto(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) Throw(NX_NOT_FOUND, path + ": no such model file");
    Throw(NX_NOT_FOUND, path + ": cannot open the model file: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) Throw(NX_INVALID_ARGUMENT, path + ": is a folder, not a model file");
  if (!S_ISREG(st.st_mode)) {
    Throw(NX_INVALID_ARGUMENT,
          path + ": is not a regular file (a FIFO, socket or device cannot hold a model)");
  }
  // O_NONBLOCK: if the path became a FIFO since the check, open() must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) Throw(NX_NOT_FOUND, path + ": cannot open the model file: " + std::strerror(errno));
  struct stat opened {};
  bool ok = ::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode);
  if (ok && static_cast<uint64_t>(opened.st_size) > static_cast<uint64_t>(INT32_MAX)) {
    ::close(fd);
    ParseModel(nullptr, static_cast<size_t>(opened.st_size), path);  // throws: too large
  }
  const size_t size = ok ? static_cast<size_t>(opened.st_size) : 0;
  // Parsed straight from the file through a 1 MiB window: a copy of the whole file (read into a
  // buffer or mapped) was resident beside the parsed model at the peak of the load, twice the
  // weights (ViT-B/16: 692 MB), and reading it into a zero-filled buffer cost a page fault per
  // 4 KiB on top. A stream that fails to parse is read again whole for the error message.
  std::shared_ptr<onnx::ModelProto> proto;
  if (ok && size > 0) {
    google::protobuf::io::FileInputStream stream(fd, 1 << 20);
    auto streamed = std::make_shared<onnx::ModelProto>();
    if (streamed->ParseFromZeroCopyStream(&stream) && stream.GetErrno() == 0) {
      proto = std::move(streamed);
    } else {
      ok = ::lseek(fd, 0, SEEK_SET) == 0;
    }
  }
  if (!proto) {
    std::string bytes;  // an empty file, or one that did not parse: read it whole
    if (ok) {
      bytes.resize(size);
      size_t done = 0;
      while (ok && done < bytes.size()) {
        const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
          ok = false;
        else
          done += static_cast<size_t>(n);
      }
    }
    ::close(fd);
    if (!ok) Throw(NX_INVALID_ARGUMENT, path + ": cannot read the model file");
    proto = ParseModel(bytes.data(), bytes.size(), path);
  } else {
    ::close(fd);
  }
  return proto;
}

std::shared_ptr<onnx::ModelProto> ReadModelProto(const void* data, size_t size) {
  if (data == nullptr) Throw(NX_INVALID_ARGUMENT, "model buffer is null");
  return ParseModel(data, size, "<buffer>");
}

std::string ModelFolder(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::shared_ptr<Model> LoadModelFromFile(const std::string& path) {
  return ConvertModel(ReadModelProto(path), path, ModelFolder(path));
}

std::shared_ptr<Model> LoadModelFromBuffer(const void* data, size_t size,
                                           const std::string& external_data_dir) {
  return ConvertModel(ReadModelProto(data, size), "<buffer>", external_data_dir);
}

}  // namespace nxrt
