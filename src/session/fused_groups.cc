#include "session/fused_groups.h"

#include "base/error.h"
#include "base/profiler.h"
#include "model/external_data.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "plugins/host_objects.h"

namespace nxrt {
namespace {

const Attribute* FindAttr(const Node& n, const char* name, int type) {
  const Attribute* a = n.FindAttribute(name);
  return a != nullptr && a->type == type ? a : nullptr;
}

}  // namespace

std::string ContextSource(const Node& node) {
  if (node.op_type != "EPContext" || node.domain != "com.microsoft") return "";
  const Attribute* source = FindAttr(node, "source", NX_ATTR_STRING);
  return source != nullptr ? source->s : "";
}

NxCompatibility CheckContextCompatibility(EpFactory& factory,
                                          const std::vector<const NxHardwareDevice*>& devices,
                                          const std::string& compatibility) {
  NxEpFactory* f = factory.raw;
  if (f->version < 9 || f->CheckCompatibility == nullptr) return NX_COMPATIBILITY_OPTIMAL;
  NxCompatibility result = NX_COMPATIBILITY_UNSUPPORTED;
  ThrowIfStatus(
      f->CheckCompatibility(f, devices.data(), devices.size(), compatibility.c_str(), &result),
      "EP '" + factory.name + "' CheckCompatibility");
  const int raw = RawEnum(result);
  NXRT_CHECK(
      raw >= NX_COMPATIBILITY_NOT_APPLICABLE && raw <= NX_COMPATIBILITY_UNSUPPORTED,
      NX_INVALID_PLUGIN,
      "EP '" + factory.name + "' CheckCompatibility gave an unknown answer " + std::to_string(raw));
  return result;
}

const char* CompatibilityName(NxCompatibility c) {
  switch (c) {
    case NX_COMPATIBILITY_OPTIMAL:
      return "optimal";
    case NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL:
      return "supported but suboptimal";
    case NX_COMPATIBILITY_NEEDS_RECOMPILATION:
      return "needs recompilation";
    case NX_COMPATIBILITY_UNSUPPORTED:
      return "unsupported";
    default:
      return "not applicable";
  }
}

NxKernel* CompiledGroups::LoadContext(const Graph& g, int node, EpInstance& ep, const Graph& view,
                                      std::string& error) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  // A model that does not say what its payloads need (written by hand or by another tool) is
  // left to the EP's own checks in LoadCompiledGroup.
  const auto it = metadata_.find("ep_compatibility_info." + ep.name());
  const std::string compatibility = it != metadata_.end() ? it->second : "";
  std::vector<const NxHardwareDevice*> devices;
  for (const NxEpDevice* d : ep.devices()) devices.push_back(d->device);
  const NxCompatibility verdict =
      it == metadata_.end() ? NX_COMPATIBILITY_NOT_APPLICABLE
                            : CheckContextCompatibility(ep.factory(), devices, compatibility);
  if (verdict == NX_COMPATIBILITY_NEEDS_RECOMPILATION || verdict == NX_COMPATIBILITY_UNSUPPORTED) {
    error = "the compiled payload of " + n.Describe() + " does not suit this device (" +
            CompatibilityName(verdict) + "; compatibility '" + compatibility + "')";
    return nullptr;
  }
  const Attribute* mode = FindAttr(n, "embed_mode", NX_ATTR_INT);
  const Attribute* context = FindAttr(n, "ep_cache_context", NX_ATTR_STRING);
  NXRT_CHECK(context != nullptr, NX_INVALID_MODEL,
             n.Describe() + " has no string attribute 'ep_cache_context'");
  const bool embedded = mode == nullptr || mode->i == 1;
  NXRT_CHECK(embedded || mode->i == 0, NX_INVALID_MODEL,
             n.Describe() + ": embed_mode must be 0 or 1, not " + std::to_string(mode->i));
  ExternalDataResolver files(model_dir_);
  ExternalDataResolver::Span span;
  if (!embedded) span = files.Read(n.Describe(), context->s, 0, -1);
  const void* payload =
      embedded ? static_cast<const void*>(context->s.data()) : static_cast<const void*>(span.data);
  const size_t size = embedded ? context->s.size() : span.size;
  NxKernel* kernel = nullptr;
  NxEp* raw = ep.raw();
  NxStatus* st =
      raw->LoadCompiledGroup(raw, reinterpret_cast<const NxGraph*>(&view), payload, size, &kernel);
  if (st != nullptr) {
    NxStatusCode code = NX_FAIL;
    if (!TakeStatus(st, code, error))
      error = "it returned a status pointer the host did not create";
    if (kernel != nullptr) kernel->Release(kernel);
    return nullptr;
  }
  return kernel;
}

void CompiledGroups::Export(const Graph& g, const FusedGroup& group, EpInstance& ep,
                            NxKernel* kernel, const std::string& name,
                            const std::vector<int>& inputs, const std::vector<int>& outputs) {
  NxEp* raw = ep.raw();
  std::optional<ort::ExportedContext> ort_context = ort::TakeExportedContext(raw, kernel);
  if (!ort_context && (raw->version < 9 || raw->ExportCompiledGroup == nullptr)) return;
  NxCompiledGroupExport out{};
  out.version = NXRT_EP_API_VERSION;
  if (ort_context) {
    out.compatibility = ort_context->compatibility.c_str();
  } else {
    ThrowIfStatus(raw->ExportCompiledGroup(raw, kernel, &out),
                  "EP '" + ep.name() + "' ExportCompiledGroup");
  }
  NXRT_CHECK(out.payload != nullptr || out.payload_size == 0, NX_INVALID_PLUGIN,
             "EP '" + ep.name() + "' ExportCompiledGroup: a payload size without bytes");
  ExportedGroup e;
  e.graph = &g;
  e.ep = ep.name();
  e.ep_version = ep.factory().version;
  e.name = name;
  for (int i : group.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(i)];
    e.node_names.push_back(n.name);
    for (int v : n.outputs)
      if (v >= 0) e.node_outputs.push_back(g.value(v).name);
  }
  for (int v : inputs) e.inputs.push_back(g.value(v).name);
  for (int v : outputs) e.outputs.push_back(g.value(v).name);
  if (out.payload_size > 0)
    e.payload.assign(static_cast<const char*>(out.payload), out.payload_size);
  e.compatibility = out.compatibility != nullptr ? out.compatibility : "";
  if (ort_context) e.context_node = std::move(ort_context->node);
  NXRT_CHECK(e.compatibility.size() <= 4096, NX_INVALID_PLUGIN,
             "EP '" + ep.name() + "' ExportCompiledGroup: compatibility string over 4 KiB");
  for (char c : e.compatibility)
    NXRT_CHECK(c >= 0x20 && c < 0x7f, NX_INVALID_PLUGIN,
               "EP '" + ep.name() + "' ExportCompiledGroup: compatibility string not printable");
  exported_.push_back(std::move(e));
}

CompiledGroups::~CompiledGroups() {
  for (auto& [key, compiled] : compiled_)
    if (compiled.kernel != nullptr) compiled.kernel->Release(compiled.kernel);
}

GraphPlacement CompiledGroups::PlaceAndCompile(const Graph& g,
                                               const std::vector<std::shared_ptr<EpInstance>>& eps,
                                               const NxLogger& logger,
                                               const CompileObserver& on_compile) {
  std::lock_guard<std::mutex> lock(mu_);
  FailedGroups& failed = failed_[&g];
  for (;;) {
    GraphPlacement placement = PlaceGraph(g, eps, logger, &failed);
    bool any_failed = false;
    for (const FusedGroup& group : placement.groups) {
      Key key{&g, group.ep, group.nodes};
      if (compiled_.count(key)) continue;
      EpInstance& ep = *eps[static_cast<size_t>(group.ep)];
      const std::string name = ep.name() + "_fused_" + std::to_string(next_id_++);
      std::vector<int> inputs, outputs;
      std::string error;
      NxKernel* kernel = nullptr;
      const uint64_t begin = Profiler::NowNs();
      try {
        std::unique_ptr<Graph> view = MakeGroupGraph(g, group.nodes, name, inputs, outputs);
        NxEp* raw = ep.raw();
        // A saved group this EP wrote: rebuilt from its payload, not compiled.
        const bool saved = group.nodes.size() == 1 && raw->version >= 9 &&
                           raw->LoadCompiledGroup != nullptr &&
                           ContextSource(g.nodes[static_cast<size_t>(group.nodes[0])]) == ep.name();
        NxStatus* st = nullptr;
        if (saved)
          kernel = LoadContext(g, group.nodes[0], ep, *view, error);
        else
          st = raw->CompileGroup(raw, reinterpret_cast<const NxGraph*>(view.get()), name.c_str(),
                                 &kernel);
        if (saved && kernel == nullptr) {
          if (error.empty()) error = "it returned no kernel";
        } else if (st != nullptr) {
          NxStatusCode code = NX_FAIL;
          if (!TakeStatus(st, code, error))
            error = "it returned a status pointer the host did not create";
          if (kernel != nullptr) kernel->Release(kernel);
          kernel = nullptr;
        } else if (kernel == nullptr) {
          error = "it returned no kernel";
        } else if (kernel->Compute == nullptr || kernel->Release == nullptr) {
          if (kernel->Release != nullptr) kernel->Release(kernel);
          kernel = nullptr;
          error = "it returned an incomplete kernel";
        }
        if (kernel != nullptr && export_ && !saved) {
          try {
            Export(g, group, ep, kernel, name, inputs, outputs);
          } catch (...) {
            kernel->Release(kernel);
            throw;
          }
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (on_compile) on_compile(begin, Profiler::NowNs(), ep.name(), name, kernel != nullptr);
      if (kernel == nullptr) {
        logger.logger.Log(NX_LOG_WARNING, "EP '" + ep.name() + "' could not compile a group of " +
                                              std::to_string(group.nodes.size()) +
                                              " nodes (they fall back): " + error);
        failed[{group.ep, group.nodes}] = error;
        any_failed = true;
        continue;
      }
      compiled_[key] = {kernel, name};
    }
    if (!any_failed) return placement;
  }
}

std::map<std::string, CompiledGroups::Installed> CompiledGroups::Install(
    Graph& g, const Graph* original, const GraphPlacement& placement) {
  std::map<std::string, Installed> kernels;
  if (placement.groups.empty()) return kernels;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = g.nodes.size();
  std::vector<char> dead(n, 0);
  std::vector<std::unique_ptr<Node>> fused_at(n);
  for (const FusedGroup& group : placement.groups) {
    auto it = compiled_.find(Key{original, group.ep, group.nodes});
    NXRT_CHECK(it != compiled_.end() && it->second.kernel != nullptr, NX_RUNTIME_ERROR,
               "internal: a fused group has no compiled kernel");
    auto fused = std::make_unique<Node>();
    fused->name = it->second.name;
    fused->op_type = "CompiledGroup";
    fused->domain = kCompiledDomain;
    fused->opset = 1;
    fused->assigned_ep = group.ep;
    fused->assigned_device = group.device;
    GroupBoundary(g, group.nodes, fused->inputs, fused->outputs);
    for (int i : group.nodes) dead[static_cast<size_t>(i)] = 1;
    fused_at[static_cast<size_t>(group.nodes.back())] = std::move(fused);
    kernels[it->second.name] = {it->second.kernel, group.device};
    it->second.kernel = nullptr;  // the caller's now
  }
  std::vector<Node> kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (fused_at[i]) kept.push_back(std::move(*fused_at[i]));
    if (!dead[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  g.Finalize();
  return kernels;
}

}  // namespace nxrt
