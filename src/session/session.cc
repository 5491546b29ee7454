#include "session/session.h"

#include <algorithm>
#include <map>
#include <thread>

#include "base/element_type.h"
#include "base/error.h"
#include "session/env.h"
#include "session/graph_fusion.h"

namespace nxrt {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Session::Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options)
    : env_(env), model_(std::move(model)), logger_{env.logger().WithLevel(options.log_level)} {
  threads_ = options.intra_op_threads > 0
                 ? options.intra_op_threads
                 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Cache up to 1 GiB of freed tensor buffers for reuse by later nodes and runs.
  pool_ = std::make_shared<BufferPool>(size_t{1} << 30);
  config_.entries = options.config.entries;
  config_.entries["session.intra_op_num_threads"] = std::to_string(threads_);
  config_.entries["session.optimization_level"] = std::to_string(options.optimization_level);
  try {
    CreateEps(options);
    AssignNodes();
    if (options.optimization_level >= 1) {
      FuseNodes(*model_->graph, eps_, logger_.logger);
      node_ep_.resize(graph().nodes.size());
      for (const Node& node : graph().nodes) node_ep_[static_cast<size_t>(node.index)] = node.assigned_ep;
    }
    CreateKernels();
    PlanLifetimes();
  } catch (...) {
    for (size_t i = 0; i < kernels_.size(); ++i)
      if (kernels_[i]) kernels_[i]->Release(kernels_[i]);
    kernels_.clear();
    throw;
  }
}

Session::~Session() {
  for (NxKernel* k : kernels_)
    if (k) k->Release(k);
  kernels_.clear();
  eps_.clear();
}

void Session::CreateEps(const SessionOptions& options) {
  for (const EpRequest& req : options.eps) {
    for (const auto& [key, value] : req.options) config_.entries["ep." + Lower(req.name) + "." + key] = value;
  }
  for (const EpRequest& req : options.eps) {
    EpFactory* factory = env_.FindFactory(req.name);
    NXRT_CHECK(factory != nullptr, NX_NOT_FOUND,
               "no registered EP library provides an EP named '" + req.name + "'");
    bool duplicate = false;
    for (auto& ep : eps_) duplicate = duplicate || Lower(ep->name()) == Lower(factory->name);
    if (!duplicate) eps_.push_back(std::make_unique<EpInstance>(env_, *factory, &config_, &logger_));
  }
  EpFactory* cpu = env_.DefaultCpuFactory();
  bool have_cpu = false;
  for (auto& ep : eps_) have_cpu = have_cpu || Lower(ep->name()) == Lower(cpu->name);
  if (!have_cpu) eps_.push_back(std::make_unique<EpInstance>(env_, *cpu, &config_, &logger_));
}

void Session::AssignNodes() {
  const Graph& g = graph();
  node_ep_.assign(g.nodes.size(), -1);
  std::vector<std::string> reasons(g.nodes.size());
  for (size_t e = 0; e < eps_.size(); ++e) {
    EpInstance& ep = *eps_[e];
    NxCapability cap;
    cap.graph = &g;
    NxEp* raw = ep.raw();
    if (raw->GetCapability != nullptr) {
      NxStatus* st = raw->GetCapability(raw, reinterpret_cast<const NxGraph*>(&g), &cap);
      if (st != nullptr) {
        logger_.logger.Log(NX_LOG_WARNING, "EP '" + ep.name() + "' GetCapability failed (it claims no node): " + st->message);
        delete st;
        cap.claimed.clear();
      }
    } else if (ep.registry() != nullptr) {
      for (const Node& node : g.nodes) {
        std::string why;
        if (ep.registry()->Find(node, &why)) cap.claimed.push_back(&node);
        else if (node_ep_[node.index] < 0) reasons[node.index] += "\n  " + ep.name() + ": " + why;
      }
    }
    for (const Node* node : cap.claimed) {
      if (node_ep_[node->index] >= 0) continue;  // a higher-priority EP has it
      if (!ep.registry() || !ep.registry()->Find(*node, nullptr)) {
        reasons[node->index] += "\n  " + ep.name() + ": claimed the node but has no kernel for it";
        continue;
      }
      node_ep_[node->index] = static_cast<int>(e);
    }
  }
  for (Node& node : model_->graph->nodes) node.assigned_ep = node_ep_[static_cast<size_t>(node.index)];
  for (const Node& node : g.nodes) {
    if (node_ep_[node.index] < 0) {
      Throw(NX_NOT_IMPLEMENTED, g.source + ": no EP can run " + node.Describe() + " (op " +
                                    (node.domain.empty() ? "" : node.domain + ".") + node.op_type +
                                    ", opset " + std::to_string(node.opset) + "):" + reasons[node.index]);
    }
  }
  std::vector<size_t> counts(eps_.size(), 0);
  for (int e : node_ep_) ++counts[static_cast<size_t>(e)];
  for (size_t e = 0; e < eps_.size(); ++e) {
    logger_.logger.Log(NX_LOG_INFO, "EP " + eps_[e]->name() + ": " + std::to_string(counts[e]) + " of " +
                                        std::to_string(g.nodes.size()) + " nodes");
  }
}

void Session::CreateKernels() {
  const Graph& g = graph();
  kernels_.assign(g.nodes.size(), nullptr);
  for (const Node& node : g.nodes) {
    EpInstance& ep = *eps_[static_cast<size_t>(node_ep_[node.index])];
    std::string why;
    const KernelEntry* entry = ep.registry()->Find(node, &why);
    NXRT_CHECK(entry != nullptr, NX_NOT_IMPLEMENTED, node.Describe() + ": " + why);
    NxKernelInfo info{&node, &config_};
    NxKernel* kernel = nullptr;
    ThrowIfStatus(entry->create(entry->create_state, &info, &kernel),
                  g.source + ": " + node.Describe() + " on EP " + ep.name() + ": cannot create kernel");
    NXRT_CHECK(kernel != nullptr && kernel->Compute != nullptr && kernel->Release != nullptr,
               NX_INVALID_PLUGIN, node.Describe() + ": EP " + ep.name() + " returned an incomplete kernel");
    kernels_[node.index] = kernel;
  }
}

void Session::PlanLifetimes() {
  const Graph& g = graph();
  free_after_.assign(g.nodes.size(), {});
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueDef& def = g.values[v];
    if (def.is_graph_output || def.initializer || def.is_graph_input || def.producer < 0) continue;
    int last = def.producer;
    for (int c : def.consumers) last = std::max(last, c);
    free_after_[static_cast<size_t>(last)].push_back(static_cast<int>(v));
  }
}

void Session::CheckFeeds(const std::vector<std::string>& names, const std::vector<const Value*>& values,
                         std::vector<const Value*>& slots) const {
  const Graph& g = graph();
  NXRT_CHECK(names.size() == values.size(), NX_INVALID_ARGUMENT, "input names and values differ in number");
  for (size_t i = 0; i < names.size(); ++i) {
    int index = g.FindValue(names[i]);
    NXRT_CHECK(index >= 0 && g.value(index).is_graph_input, NX_INVALID_ARGUMENT,
               "'" + names[i] + "' is not an input of the model");
    NXRT_CHECK(values[i] != nullptr, NX_INVALID_ARGUMENT, "input '" + names[i] + "' is null");
    NXRT_CHECK(slots[static_cast<size_t>(index)] == nullptr, NX_INVALID_ARGUMENT,
               "input '" + names[i] + "' is given twice");
    const TypeInfo& t = g.value(index).type;
    const Value& v = *values[i];
    NXRT_CHECK(v.kind == t.kind, NX_INVALID_ARGUMENT,
               "input '" + names[i] + "' has the wrong kind of value (tensor, sequence or optional)");
    if (v.kind == NX_VALUE_TENSOR) {
      if (t.elem_type != NX_TYPE_UNDEFINED && v.type != t.elem_type) {
        Throw(NX_INVALID_ARGUMENT, "input '" + names[i] + "' has element type " +
                                       std::string(ElementTypeName(v.type)) + ", the model expects " +
                                       ElementTypeName(t.elem_type));
      }
      if (t.has_shape) {
        bool ok = v.dims.size() == t.dims.size();
        for (size_t d = 0; ok && d < t.dims.size(); ++d) ok = t.dims[d] < 0 || t.dims[d] == v.dims[d];
        if (!ok) {
          std::string expected = "[";
          for (size_t d = 0; d < t.dims.size(); ++d) {
            expected += (d ? "," : "") + (t.dims[d] >= 0 ? std::to_string(t.dims[d])
                                                         : (t.dim_params[d].empty() ? "?" : t.dim_params[d]));
          }
          Throw(NX_INVALID_ARGUMENT, "input '" + names[i] + "' has shape " + ShapeString(v.dims) +
                                         ", the model expects " + expected + "]");
        }
      }
    }
    slots[static_cast<size_t>(index)] = values[i];
  }
  for (int in : g.inputs) {
    if (slots[static_cast<size_t>(in)] == nullptr) {
      Throw(NX_INVALID_ARGUMENT, "input '" + g.value(in).name + "' was not given");
    }
  }
}

}  // namespace nxrt
