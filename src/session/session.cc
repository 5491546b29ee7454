#include "session/session.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <thread>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "session/constant_folding.h"
#include "session/env.h"
#include "session/ep_channels_last.h"
#include "session/ep_selection.h"
#include "session/float16_upcast.h"
#include "session/graph_fusion.h"
#include "session/identity_bypass.h"
#include "session/parallel_conv_merge.h"
#include "session/qdq_folding.h"
#include "session/saved_groups.h"
#include "session/shape_value_folding.h"

namespace nxrt {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool HasSubgraphs(const Graph& g) {
  for (const Node& n : g.nodes)
    for (const Attribute& a : n.attributes)
      if (a.graph || !a.graphs.empty()) return true;
  return false;
}

// Whether a value in `have` can be read by a consumer that needs `need` without a copy: the same
// memory, or host memory wanted and the value is host-accessible.
bool Reachable(const NxMemoryInfo* have, const NxMemoryInfo* need) {
  if (SameMemory(have, need)) return true;
  return SameMemory(need, HostMemory()) && HostAccessible(have);
}

}  // namespace

Session::Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options)
    : Session(env, std::move(model), options, false) {}

AssignmentReport Session::PlanPlacement(Env& env, std::shared_ptr<Model> model,
                                        const SessionOptions& options) {
  Session dry(env, std::move(model), options, true);
  return *dry.report_;
}

Session::Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options,
                 bool dry_run)
    : env_(env),
      model_(std::move(model)),
      logger_{env.logger().WithLevel(options.log_level)},
      is_root_(true),
      dry_run_(dry_run) {
  threads_ = options.intra_op_threads > 0
                 ? options.intra_op_threads
                 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Cache up to 1 GiB of freed tensor buffers for reuse by later nodes and runs.
  pool_ = std::make_shared<BufferPool>(size_t{1} << 30);
  int spin_us = ThreadPool::kDefaultSpinMicroseconds;
  if (const std::string* spin = options.config.Find("session.intra_op_spin_us")) {
    char* end = nullptr;
    const long v = std::strtol(spin->c_str(), &end, 10);
    NXRT_CHECK(
        !spin->empty() && *end == '\0' && v >= 0 && v <= 1000000, NX_INVALID_ARGUMENT,
        "session.intra_op_spin_us must be microseconds from 0 to 1000000, got '" + *spin + "'");
    spin_us = static_cast<int>(v);
  }
  thread_pool_ = std::make_shared<ThreadPool>(threads_, spin_us);
  config_.entries = options.config.entries;
  config_.entries["session.intra_op_num_threads"] = std::to_string(threads_);
  config_.entries["session.optimization_level"] = std::to_string(options.optimization_level);
  const std::string* share = options.config.Find("session.share_prepacked_weights");
  if (!dry_run_) {
    compiled_ = std::make_shared<CompiledGroups>();
    compiled_->set_export(options.export_compiled);
    compiled_->set_model(model_->external_data_dir, model_->metadata);
  }
  if (options.memory_limit > 0)
    memory_budget_ = std::make_shared<MemoryBudget>(options.memory_limit);
  // profiling: with a profile file the session records events (base/profiler.h)
  if (!dry_run_ && !options.profile_file.empty())
    profiler_ = std::make_shared<Profiler>(options.profile_file);
  ProfileScope profile_step(profiler_.get(), "create_eps");  // profiling
  try {
    CreateEps(options);
    // Saved groups that kept their original nodes: compiled payload or those nodes.
    ResolveSavedGroups(*model_->graph, eps_, model_->metadata, options.fallback, logger_);
    CheckPluginContexts(*model_->graph, eps_, model_->metadata, logger_);
    // Before placement: the CPU EP claims float convolutions as blocked-layout groups, which
    // the folded quantized nodes replace.
    if (!dry_run_ && options.optimization_level >= 1) {
      FoldShapeValues(*model_->graph);
      BypassIdentities(*model_->graph);
      UpcastFloat16(*model_->graph, eps_, CpuEpIndex(), config_, logger_.logger);
      FoldQdq(*model_->graph, eps_, CpuEpIndex(), logger_.logger);
      // EPs that compute channels-last (onnxruntime's WebGPU plugin) get their convolutions and
      // pools in that form, with as few transposes as the graph allows.
      EpChannelsLast(*model_->graph, eps_, logger_);
      if (eps_.size() == 1 && CpuEpIndex() == 0)
        *folded_nodes_ += static_cast<size_t>(FoldConstantsBeforePlacement(
            *model_->graph, env_, options.memory_limit, logger_.logger));
      // Summed convolution branches of one input (RepVGG / MobileOne in training form): one.
      MergeParallelConvs(*model_->graph);
    }
    profile_step.Next("partition");  // profiling
    AssignNodes();
    if (dry_run_) {  // placement only: no kernels, nothing compiled
      NameReportStreams();
      return;
    }
    if (options.optimization_level >= 1) {
      profile_step.Next("optimize");  // profiling
      Optimize(*model_->graph, options.memory_limit);
    }
    profile_step.Next("create_kernels");  // profiling
    CreateKernels();
    PrePackWeights(share == nullptr || *share != "0");
    profile_step.Next("plan_memory");  // profiling
    PlanMemory();
    PlanLifetimes();
    PlanStreams();
    NameReportStreams();
    profile_step.End();  // profiling
    PrepareProfiling();  // profiling
  } catch (...) {
    ReleaseKernels();
    throw;
  }
}

int Session::CpuEpIndex() const {
  const EpFactory* cpu = env_.DefaultCpuFactory();
  for (size_t e = 0; e < eps_.size(); ++e)
    if (&eps_[e]->factory() == cpu) return static_cast<int>(e);
  return -1;
}

void Session::Optimize(Graph& g, size_t memory_limit) {
  *folded_nodes_ +=
      static_cast<size_t>(FoldConstants(g, CpuEpIndex(), env_, memory_limit, logger_.logger));
  FuseNodes(g, eps_, logger_.logger);
  node_ep_.assign(g.nodes.size(), -1);
  for (const Node& node : g.nodes) node_ep_[static_cast<size_t>(node.index)] = node.assigned_ep;
}

void Session::ReleaseKernels() {
  for (NxKernel* k : kernels_)
    if (k) k->Release(k);
  kernels_.clear();
  for (auto& [name, installed] : fused_kernels_)
    if (installed.kernel) installed.kernel->Release(installed.kernel);
  fused_kernels_.clear();
}

Session::Session(const Session& parent, std::shared_ptr<Graph> body)
    : env_(parent.env_), logger_(parent.logger_) {
  auto model = std::make_shared<Model>(*parent.model_);
  model->graph = std::move(body);
  model_ = std::move(model);
  threads_ = parent.threads_;
  pool_ = parent.pool_;
  thread_pool_ = parent.thread_pool_;
  config_ = parent.config_;
  eps_ = parent.eps_;
  device_arenas_ = parent.device_arenas_;
  fallback_ep_ = parent.fallback_ep_;
  fallback_mode_ = parent.fallback_mode_;
  compiled_ = parent.compiled_;
  profiler_ = parent.profiler_;  // profiling: body events go to the main session's profile
  folded_nodes_ = parent.folded_nodes_;
  const std::string* share = config_.Find("session.share_prepacked_weights");
  const std::string* level = config_.Find("session.optimization_level");
  try {
    const Graph* shared = model_->graph.get();
    AssignNodes();
    if (level == nullptr || *level != "0") {
      // The body graph belongs to the model (and to other sessions of it): optimize a copy
      // (placement made one already when it installed fused groups).
      if (model_->graph.get() == shared) model_->graph = std::make_shared<Graph>(*shared);
      Graph& g = *model_->graph;
      if (ResolveOuterConstants(g, parent.graph()) > 0) g.Finalize();
      Optimize(g, parent.memory_budget_ ? parent.memory_budget_->limit() : 0);
    }
    CreateKernels();
    PrePackWeights(share == nullptr || *share != "0");
    PlanMemory();
    PlanLifetimes();
    PlanStreams();
    PrepareProfiling();  // profiling
  } catch (...) {
    ReleaseKernels();
    throw;
  }
}

Session::~Session() {
  // profiling: the profile is written when the main session goes, unless EndProfiling did
  if (is_root_ && profiler_ && profiler_->active()) {
    try {
      profiler_->End();
    } catch (const std::exception& e) {
      logger_.logger.Log(NX_LOG_ERROR, e.what());
    }
  }
  lanes_.reset();  // streams go first: nothing is queued once no run is in flight
  ReleaseKernels();
  compiled_.reset();  // kernels compiled for bodies that never ran go before their EPs
  constants_.clear();
  shared_packs_.clear();
  device_pack_allocators_.clear();
  device_arenas_.clear();
  eps_.clear();
}

std::vector<EpChoice> Session::ChooseEps(const SessionOptions& options) {
  const bool automatic = options.policy.has_value() || static_cast<bool>(options.selector);
  NXRT_CHECK(!(automatic && !options.eps.empty()), NX_INVALID_ARGUMENT,
             "the session options both append EPs and set a selection policy; choose one");
  EpFactory* cpu = env_.DefaultCpuFactory();
  std::vector<EpChoice> chosen;
  if (!options.eps.empty()) {
    const std::vector<const NxEpDevice*> known = env_.EpDevices();
    for (const EpRequest& req : options.eps) {
      EpChoice c;
      if (req.devices.empty()) {
        c.factory = env_.FindFactory(req.name);
        NXRT_CHECK(c.factory != nullptr, NX_NOT_FOUND,
                   "no registered EP library provides an EP named '" + req.name + "'");
        c.devices = c.factory->devices;
      } else {
        for (const NxEpDevice* d : req.devices) {
          // Compare pointers before touching one: a stale device must not be dereferenced.
          NXRT_CHECK(std::find(known.begin(), known.end(), d) != known.end(), NX_INVALID_ARGUMENT,
                     "an appended EP device is not one of this env's (was its library "
                     "unregistered?)");
        }
        c.factory = req.devices.front()->factory;
        for (const NxEpDevice* d : req.devices) {
          NXRT_CHECK(d->factory == c.factory, NX_INVALID_ARGUMENT,
                     "EP devices appended together must belong to one EP, not to both '" +
                         c.factory->name + "' and '" + d->ep_name + "'");
        }
        c.devices = req.devices;
      }
      auto same = std::find_if(chosen.begin(), chosen.end(),
                               [&](const EpChoice& x) { return x.factory == c.factory; });
      if (same == chosen.end()) {
        chosen.push_back(std::move(c));
      } else {
        for (const NxEpDevice* d : c.devices)
          if (std::find(same->devices.begin(), same->devices.end(), d) == same->devices.end())
            same->devices.push_back(d);
      }
    }
  } else if (automatic) {
    const std::vector<const NxEpDevice*> all = env_.EpDevices();
    std::vector<const NxEpDevice*> ordered;
    std::string how;
    if (options.selector) {
      how = "the selection callback";
      ordered = options.selector(all, SelectionMetadata(*model_));
      NXRT_CHECK(!ordered.empty(), NX_INVALID_ARGUMENT,
                 "the selection callback chose no EP device");
      for (const NxEpDevice* d : ordered) {
        NXRT_CHECK(std::find(all.begin(), all.end(), d) != all.end(), NX_INVALID_ARGUMENT,
                   "the selection callback returned an EP device it was not offered");
      }
    } else {
      how = std::string("policy ") + PolicyName(*options.policy);
      ordered = RankByPolicy(*options.policy, all, cpu);
    }
    chosen = FoldByEp(ordered);
    std::string summary;
    for (const NxEpDevice* d : ordered)
      summary += (summary.empty() ? "" : ", ") + DescribeEpDevice(*d);
    logger_.logger.Log(NX_LOG_INFO, how + " chose: " + (summary.empty() ? "nothing" : summary));
    if (chosen.empty() && options.fallback == NX_FALLBACK_FORBID) {
      Throw(NX_NOT_FOUND, how +
                              " found no EP device on this machine and fallback to the CPU "
                              "EP is forbidden");
    }
  } else {
    chosen.push_back({cpu, cpu->devices});  // nothing asked for: the CPU EP is the session's EP
  }
  const bool have_cpu = std::any_of(chosen.begin(), chosen.end(),
                                    [&](const EpChoice& c) { return c.factory == cpu; });
  if (!have_cpu && options.fallback != NX_FALLBACK_FORBID) {
    fallback_ep_ = static_cast<int>(chosen.size());
    chosen.push_back({cpu, cpu->devices});
  }
  return chosen;
}

void Session::CreateEps(const SessionOptions& options) {
  fallback_mode_ = options.fallback;
  std::vector<EpChoice> chosen = ChooseEps(options);
  // Options: given at selection > set in the session config > the EP devices' defaults.
  for (const EpRequest& req : options.eps) {
    std::string name = req.devices.empty() ? req.name : req.devices.front()->ep_name;
    for (const auto& [key, value] : req.options)
      config_.entries["ep." + Lower(name) + "." + key] = value;
  }
  for (const EpChoice& c : chosen)
    for (const NxEpDevice* d : c.devices)
      for (const auto& [key, value] : d->options)
        config_.entries.emplace("ep." + Lower(c.factory->name) + "." + key, value);
  for (EpChoice& c : chosen) {
    eps_.push_back(
        std::make_shared<EpInstance>(env_, *c.factory, std::move(c.devices), &config_, &logger_));
  }

  // An arena per device memory of each EP (host EPs share the session's host pool): the EP's
  // own per-session allocator when it offers one, else its factory's process-wide arena.
  for (auto& ep : eps_) {
    for (const NxMemoryInfo* m : ep->factory().DeviceMemories()) {
      NxEp* raw = ep->raw();
      NxAllocator* own = nullptr;
      if (raw->version >= 2 && raw->CreateAllocator != nullptr) {
        ThrowIfStatus(raw->CreateAllocator(raw, m, &own),
                      "EP '" + ep->name() + "' CreateAllocator failed for " + DescribeMemory(m));
      }
      if (own != nullptr) {
        auto alloc =
            std::make_shared<PluginAllocator>(own, m, "EP '" + ep->name() + "' session allocator");
        device_arenas_.emplace_back(m, std::make_shared<BufferPool>(size_t{256} << 20, alloc));
      } else {
        device_arenas_.emplace_back(m, ep->factory().ArenaOf(m));
      }
    }
  }
}

void Session::AssignNodes() {
  const Graph& g = graph();
  // Placement, and for a real session the compilation of fused groups (a group that fails to
  // compile is placed again without it).
  const CompiledGroups::CompileObserver on_compile = [this](uint64_t begin, uint64_t end,
                                                            const std::string& ep,
                                                            const std::string& name, bool ok) {
    if (Profiler* p = profiler())
      p->AddSessionEvent("compile", begin, end,
                         {{"ep", ep}, {"group", name}, {"ok", ok ? "1" : "0"}});
  };
  const BodyPlacer place = [&](const Graph& x) {
    return compiled_ ? compiled_->PlaceAndCompile(x, eps_, logger_, on_compile)
                     : PlaceGraph(x, eps_, logger_);
  };
  GraphPlacement placement = place(g);
  node_ep_ = placement.node_ep;
  for (Node& node : model_->graph->nodes) {
    node.assigned_ep = node_ep_[static_cast<size_t>(node.index)];
    node.assigned_device = placement.node_device[static_cast<size_t>(node.index)];
  }
  // The report covers the whole model (bodies too): only the main graph's session keeps one,
  // made before fusion changes the nodes.
  if (is_root_) {
    report_ = std::make_shared<AssignmentReport>();
    AddToReport(g, placement, "", eps_, place, *report_);
  }
  if (dry_run_) return;
  for (const Node& node : g.nodes) {
    if (node_ep_[node.index] >= 0) continue;
    std::string names, reasons;
    for (const auto& ep : eps_) names += (names.empty() ? "" : ", ") + ep->name();
    for (const EpVerdict& v : placement.verdicts[node.index])
      reasons += "\n  " + eps_[static_cast<size_t>(v.ep)]->name() + ": " + v.detail;
    Throw(
        NX_NOT_IMPLEMENTED,
        g.source + ": " +
            (fallback_mode_ == NX_FALLBACK_FORBID
                 ? "fallback to the CPU EP is forbidden and no selected EP (" + names + ") can run "
                 : "no EP can run ") +
            node.Describe() + " (op " + (node.domain.empty() ? "" : node.domain + ".") +
            node.op_type + ", opset " + std::to_string(node.opset) + "):" + reasons);
  }
  std::vector<size_t> counts(eps_.size(), 0);
  for (int e : node_ep_) ++counts[static_cast<size_t>(e)];
  if (fallback_ep_ >= 0 && fallback_mode_ == NX_FALLBACK_WARN && counts[fallback_ep_] > 0) {
    std::string list;
    size_t listed = 0;
    for (const Node& node : g.nodes) {
      if (node_ep_[node.index] != fallback_ep_) continue;
      if (listed++ < 20) list += "\n  " + node.Describe();
    }
    if (listed > 20) list += "\n  ... and " + std::to_string(listed - 20) + " more";
    logger_.logger.Log(NX_LOG_WARNING, g.source + ": " + std::to_string(counts[fallback_ep_]) +
                                           " of " + std::to_string(g.nodes.size()) +
                                           " nodes fell back to the CPU EP:" + list);
  }
  if (report_) {
    // One line per EP; a warning when any node left the preferred EP.
    const NxLogLevel level = report_->fallbacks.empty() ? NX_LOG_INFO : NX_LOG_WARNING;
    for (const std::string& line : SummarizeReport(*report_, eps_)) logger_.logger.Log(level, line);
  }
  if (!placement.groups.empty()) {
    // Each group becomes one fused node. A body's graph is shared with the model's attribute
    // (and other sessions): rewrite a copy.
    const Graph* original = model_->graph.get();
    if (!is_root_) model_->graph = std::make_shared<Graph>(*original);
    fused_kernels_ = compiled_->Install(*model_->graph, original, placement);
    node_ep_.assign(graph().nodes.size(), -1);
    for (const Node& node : graph().nodes)
      node_ep_[static_cast<size_t>(node.index)] = node.assigned_ep;
  }
}

namespace {

// The definition of every fused node's kernel: tensors in the EP's memory, nothing aliased.
const KernelEntry& CompiledGroupEntry() {
  static const KernelEntry entry = [] {
    KernelEntry e;
    e.op_type = "CompiledGroup";
    e.domain = kCompiledDomain;
    return e;
  }();
  return entry;
}

}  // namespace

void Session::CreateKernels() {
  const Graph& g = graph();
  kernels_.assign(g.nodes.size(), nullptr);
  entries_.assign(g.nodes.size(), nullptr);
  run_time_type_check_.assign(g.nodes.size(), 0);
  for (const Node& node : g.nodes) {
    const size_t e = static_cast<size_t>(node_ep_[node.index]);
    EpInstance& ep = *eps_[e];
    if (node.domain == kCompiledDomain) {
      auto it = fused_kernels_.find(node.name);
      NXRT_CHECK(it != fused_kernels_.end(), NX_RUNTIME_ERROR,
                 "internal: no compiled kernel for " + node.Describe());
      kernels_[node.index] = it->second.kernel;
      entries_[node.index] = &CompiledGroupEntry();
      fused_kernels_.erase(it);
      continue;
    }
    std::string why;
    const KernelEntry* entry = ep.registry()->Find(node, &why);
    NXRT_CHECK(entry != nullptr, NX_NOT_IMPLEMENTED, node.Describe() + ": " + why);
    const NxMemoryInfo* memory = NodeMemory(node);
    NxKernelInfo info{&node,
                      &config_,
                      ep.raw(),
                      memory ? memory : HostMemory(),
                      node.assigned_device ? node.assigned_device : ep.first_device(),
                      this};
    NxKernel* kernel = nullptr;
    ThrowIfStatus(
        entry->create(entry->create_state, &info, &kernel),
        g.source + ": " + node.Describe() + " on EP " + ep.name() + ": cannot create kernel");
    NXRT_CHECK(kernel != nullptr, NX_INVALID_PLUGIN,
               node.Describe() + ": EP " + ep.name() + " returned no kernel");
    kernels_[node.index] = kernel;  // owned from here on, even if incomplete
    NXRT_CHECK(kernel->Compute != nullptr && kernel->Release != nullptr, NX_INVALID_PLUGIN,
               node.Describe() + ": EP " + ep.name() + " returned an incomplete kernel");
    entries_[node.index] = entry;
    run_time_type_check_[node.index] = entry->NeedsRunTimeTypeCheck(node);
  }
}

void Session::PrePackWeights(bool share) {
  Graph& g = *model_->graph;
  packed_inputs_.assign(g.nodes.size(), {});
  // An initializer every consumer packed is no longer needed: it is freed as soon as its last
  // consumer has packed it (unless a subgraph might read it or the model returns it), so the
  // weights are not held twice, as given and as packed, until the end (ViT-B/16: peak resident
  // memory 688 -> 382 MB, with the streamed parse of model_loader.cc).
  std::vector<int> unpacked_uses(g.values.size(), 0);
  for (const Node& node : g.nodes)
    for (int v : node.inputs)
      if (v >= 0) ++unpacked_uses[static_cast<size_t>(v)];
  const bool may_release = !HasSubgraphs(g);
  auto mark_packed = [&](const Node& node, size_t input) {
    packed_inputs_[node.index][input] = 1;
    const auto v = static_cast<size_t>(node.inputs[input]);
    if (--unpacked_uses[v] != 0 || !may_release) return;
    ValueDef& def = g.values[v];
    if (!def.initializer || def.is_graph_output) return;
    ++stats_.initializers_released;
    // Bytes only count when this was the last holder of the memory (not a shared file mapping).
    if (def.initializer->storage && def.initializer->storage.use_count() == 1 &&
        def.initializer.use_count() == 1) {
      stats_.initializer_bytes_released += TensorBytes(*def.initializer);
    }
    def.initializer.reset();
  };
  for (const Node& node : g.nodes) {
    packed_inputs_[node.index].assign(node.inputs.size(), 0);
    NxKernel* k = kernels_[node.index];
    if (k->version < 2 || k->PrePackWeight == nullptr) continue;
    const size_t e = static_cast<size_t>(node_ep_[node.index]);
    EpInstance& ep = *eps_[e];
    const NxMemoryInfo* memory = NodeMemory(node);
    const bool host_kernel = memory == nullptr;
    NxAllocator* allocator = nullptr;
    if (host_kernel) {
      allocator = env_.prepack_allocator()->abi();
    } else {
      BufferPool& arena = ArenaFor(memory);
      auto& pack = device_pack_allocators_[&arena];
      if (!pack) pack = std::make_unique<HostSideAllocator>(arena.allocator());
      allocator = pack->abi();
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v < 0 || !g.value(v).initializer) continue;
      const Value& weight = *g.value(v).initializer;
      if (weight.kind != NX_VALUE_TENSOR || !IsHostReadable(weight)) continue;
      const std::string where = g.source + ": " + node.Describe() + " on EP " + ep.name();
      // Sharing needs host memory (the weight is hashed, the packing outlives the session).
      std::string key;
      if (share && host_kernel && k->UseSharedPrePackedWeight != nullptr) {
        key = PrePackStore::Key(ep.name(), node, i, weight);
        if (auto hit = env_.prepack_store().Find(key)) {
          ThrowIfStatus(
              k->UseSharedPrePackedWeight(k, i, const_cast<const void* const*>(hit->buffers.data()),
                                          hit->sizes.data(), hit->buffers.size()),
              where + ": UseSharedPrePackedWeight failed for input " + std::to_string(i));
          shared_packs_.push_back(std::move(hit));
          mark_packed(node, i);
          ++stats_.prepack_shared_hits;
          ++stats_.prepacked_weights;
          continue;
        }
      }
      NxPrePackCache cache;  // frees stored buffers on every path that does not take them
      cache.allocator = allocator;
      bool packed = false;
      ++stats_.prepack_calls;
      ThrowIfStatus(
          k->PrePackWeight(k, &weight, i, allocator, key.empty() ? nullptr : &cache, &packed),
          where + ": PrePackWeight failed for input " + std::to_string(i));
      if (cache.stored) {
        auto entry = std::make_shared<PackedWeight>();
        cache.Release(entry->buffers, entry->sizes);
        entry->allocator = env_.prepack_allocator();
        NXRT_CHECK(
            packed, NX_INVALID_PLUGIN,
            where +
                ": the kernel stored a packed weight for sharing but said it did not pack input " +
                std::to_string(i));
        NXRT_CHECK(
            k->UseSharedPrePackedWeight != nullptr, NX_INVALID_PLUGIN,
            where + ": the kernel shares packed weights but has no UseSharedPrePackedWeight");
        entry = env_.prepack_store().Insert(key, std::move(entry));
        ThrowIfStatus(
            k->UseSharedPrePackedWeight(k, i, const_cast<const void* const*>(entry->buffers.data()),
                                        entry->sizes.data(), entry->buffers.size()),
            where + ": UseSharedPrePackedWeight failed for input " + std::to_string(i));
        shared_packs_.push_back(std::move(entry));
      }
      if (packed) {
        mark_packed(node, i);
        ++stats_.prepacked_weights;
      }
    }
  }
}

const NxMemoryInfo* Session::NodeMemory(const Node& node) const {
  return eps_[static_cast<size_t>(node_ep_[node.index])]->MemoryFor(node.assigned_device);
}

const NxMemoryInfo* Session::KernelInputMemory(const Node& node, size_t input) const {
  const NxMemoryInfo* memory = NodeMemory(node);
  if (memory == nullptr || entries_[node.index]->InputOnHost(input)) return HostMemory();
  return memory;
}

const NxMemoryInfo* Session::KernelOutputMemory(const Node& node, size_t output) const {
  const NxMemoryInfo* memory = NodeMemory(node);
  if (memory == nullptr || entries_[node.index]->OutputOnHost(output)) return HostMemory();
  return memory;
}

BufferPool& Session::ArenaFor(const NxMemoryInfo* memory) const {
  if (SameMemory(memory, HostMemory())) return *pool_;
  for (const auto& [m, arena] : device_arenas_)
    if (SameMemory(m, memory)) return *arena;
  Throw(NX_NOT_FOUND, "no EP of this session allocates " + DescribeMemory(memory));
}

void Session::PlanMemory() {
  const Graph& g = graph();
  const size_t num_values = g.values.size();
  num_slots_ = num_values;
  constants_.assign(num_values, nullptr);
  slot_memory_.assign(num_values, HostMemory());
  input_used_on_host_.assign(num_values, 0);
  node_arena_.assign(g.nodes.size(), pool_.get());
  for (const Node& node : g.nodes)
    if (const NxMemoryInfo* m = NodeMemory(node)) node_arena_[node.index] = &ArenaFor(m);
  for (size_t v = 0; v < num_values; ++v) constants_[v] = g.values[v].initializer;
  for (const Node& node : g.nodes) {
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] >= 0)
        slot_memory_[static_cast<size_t>(node.outputs[o])] = KernelOutputMemory(node, o);
    }
  }

  std::map<std::pair<int, const NxMemoryInfo*>, int>
      moved;  // (slot, memory) -> slot holding it there
  node_input_slots_.assign(g.nodes.size(), {});
  node_implicit_slots_.assign(g.nodes.size(), {});
  steps_.clear();
  copies_.clear();
  for (const Node& node : g.nodes) {
    auto& slots = node_input_slots_[node.index];
    slots.assign(node.inputs.size(), -1);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v < 0) continue;
      const ValueDef& def = g.value(v);
      const NxMemoryInfo* need = KernelInputMemory(node, i);
      // A packed input is never passed again (Compute gets NULL), even when the initializer
      // stays alive for another consumer.
      if (packed_inputs_[node.index][i]) continue;
      const bool is_constant = def.initializer != nullptr;
      if (Reachable(slot_memory_[static_cast<size_t>(v)], need)) {
        slots[i] = v;
        if ((def.is_graph_input || def.is_outer_scope) && SameMemory(need, HostMemory()))
          input_used_on_host_[static_cast<size_t>(v)] = 1;
        continue;
      }
      auto key = std::make_pair(v, InternMemoryInfo(*need));
      auto it = moved.find(key);
      if (it == moved.end()) {
        const int slot = static_cast<int>(num_slots_++);
        constants_.push_back(nullptr);
        slot_memory_.push_back(key.second);
        if (is_constant) {
          // An initializer a device kernel reads: uploaded once, now.
          constants_[static_cast<size_t>(slot)] = env_.CopyToMemory(*def.initializer, key.second);
          ++stats_.initializer_uploads;
        } else {
          copies_.push_back(Copy{v, slot, key.second});
          steps_.push_back(Step{true, static_cast<int>(copies_.size() - 1)});
        }
        it = moved.emplace(key, slot).first;
      }
      slots[i] = it->second;
    }
    // A control-flow node hands its outer values to its bodies as they are (each body plans
    // its own copies).
    node_implicit_slots_[node.index] = node.implicit_inputs;
    steps_.push_back(Step{false, node.index});
  }
  stats_.copies = copies_.size();
  // Graph outputs produced in device memory go back to the host (unless the caller binds an
  // output in that memory): one more boundary each.
  stats_.output_copies = 0;
  for (int o : g.outputs) {
    if (!HostAccessible(slot_memory_[static_cast<size_t>(o)])) ++stats_.output_copies;
  }
  stats_.copies += stats_.output_copies;
}

void Session::PlanLifetimes() {
  const Graph& g = graph();
  std::vector<int> last_step(num_slots_, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (step.is_copy) {
      last_step[static_cast<size_t>(copies_[static_cast<size_t>(step.index)].src_slot)] =
          static_cast<int>(s);
      last_step[static_cast<size_t>(copies_[static_cast<size_t>(step.index)].dst_slot)] =
          static_cast<int>(s);
      continue;
    }
    const Node& node = g.nodes[static_cast<size_t>(step.index)];
    for (int slot : node_input_slots_[node.index])
      if (slot >= 0) last_step[static_cast<size_t>(slot)] = static_cast<int>(s);
    for (int slot : node_implicit_slots_[node.index])
      last_step[static_cast<size_t>(slot)] = static_cast<int>(s);
    for (int v : node.outputs)
      if (v >= 0)
        last_step[static_cast<size_t>(v)] =
            std::max(last_step[static_cast<size_t>(v)], static_cast<int>(s));
  }
  free_after_step_.assign(steps_.size(), {});
  for (size_t slot = 0; slot < num_slots_; ++slot) {
    if (constants_[slot] || last_step[slot] < 0) continue;
    if (slot < g.values.size()) {
      const ValueDef& def = g.values[slot];
      if (def.is_graph_output || def.is_graph_input || def.initializer || def.producer < 0)
        continue;
    }
    free_after_step_[static_cast<size_t>(last_step[slot])].push_back(static_cast<int>(slot));
  }
  // An input may be overwritten by an in-place output when this node is its last use, it was
  // produced by a node (runtime-owned) and the node reads it through one input only.
  node_input_reusable_.assign(g.nodes.size(), {});
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].is_copy) continue;
    const Node& node = g.nodes[static_cast<size_t>(steps_[s].index)];
    auto& reusable = node_input_reusable_[node.index];
    const auto& slots = node_input_slots_[node.index];
    reusable.assign(slots.size(), 0);
    for (size_t i = 0; i < slots.size(); ++i) {
      const int slot = slots[i];
      if (slot < 0 || constants_[static_cast<size_t>(slot)] ||
          last_step[static_cast<size_t>(slot)] != static_cast<int>(s))
        continue;
      if (static_cast<size_t>(slot) < g.values.size()) {
        const ValueDef& def = g.values[static_cast<size_t>(slot)];
        if (def.is_graph_output || def.is_graph_input || def.producer < 0) continue;
      }
      if (std::count(slots.begin(), slots.end(), slot) != 1) continue;
      const auto& implicit = node_implicit_slots_[node.index];
      if (std::find(implicit.begin(), implicit.end(), slot) != implicit.end()) continue;
      reusable[i] = 1;
    }
  }
}
void Session::CheckFeeds(std::span<const std::string_view> names,
                         std::span<const Value* const> values,
                         std::vector<const Value*>& slots) const {
  const Graph& g = graph();
  NXRT_CHECK(names.size() == values.size(), NX_INVALID_ARGUMENT,
             "input names and values differ in number");
  for (size_t i = 0; i < names.size(); ++i) {
    int index = g.FindValue(names[i]);
    NXRT_CHECK(index >= 0 && g.value(index).is_graph_input, NX_INVALID_ARGUMENT,
               "'" + std::string(names[i]) + "' is not an input of the model");
    NXRT_CHECK(values[i] != nullptr, NX_INVALID_ARGUMENT,
               "input '" + std::string(names[i]) + "' is null");
    NXRT_CHECK(slots[static_cast<size_t>(index)] == nullptr, NX_INVALID_ARGUMENT,
               "input '" + std::string(names[i]) + "' is given twice");
    const TypeInfo& t = g.value(index).type;
    const Value& v = *values[i];
    NXRT_CHECK(v.kind == t.kind, NX_INVALID_ARGUMENT,
               "input '" + std::string(names[i]) +
                   "' has the wrong kind of value (tensor, sequence or optional)");
    if (v.kind == NX_VALUE_TENSOR) {
      if (t.elem_type != NX_TYPE_UNDEFINED && v.type != t.elem_type) {
        Throw(NX_INVALID_ARGUMENT, "input '" + std::string(names[i]) + "' has element type " +
                                       std::string(ElementTypeName(v.type)) +
                                       ", the model expects " + ElementTypeName(t.elem_type));
      }
      if (t.has_shape) {
        bool ok = v.dims.size() == t.dims.size();
        for (size_t d = 0; ok && d < t.dims.size(); ++d)
          ok = t.dims[d] < 0 || t.dims[d] == v.dims[d];
        if (!ok) {
          std::string expected = "[";
          for (size_t d = 0; d < t.dims.size(); ++d) {
            expected += (d ? "," : "") + (t.dims[d] >= 0
                                              ? std::to_string(t.dims[d])
                                              : (t.dim_params[d].empty() ? "?" : t.dim_params[d]));
          }
          Throw(NX_INVALID_ARGUMENT, "input '" + std::string(names[i]) + "' has shape " +
                                         ShapeString(v.dims) + ", the model expects " + expected +
                                         "]");
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
