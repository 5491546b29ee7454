// A session: one model, the EPs chosen for it, one kernel per node, and the plan that runs them:
// where every value lives, the copies between memories, and when each value is freed.
// Created once; Run may be called from several threads at once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer_pool.h"
#include "base/profiler.h"
#include "base/run_control.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "plugins/host_objects.h"
#include "plugins/prepack_store.h"
#include "session/ep_instance.h"
#include "session/ep_selection.h"
#include "session/fused_groups.h"
#include "session/placement.h"
#include "session/session_options.h"
#include "session/streams.h"

namespace nxrt {

class Env;

// Counters a session keeps about its set-up (reported through NxSession_GetStatistic).
struct SessionStats {
  size_t copies = 0;                 // copies planned at memory boundaries (per run)
  size_t output_copies = 0;          // ... of which graph outputs leaving device memory
  size_t initializer_uploads = 0;    // initializers copied once into device memory
  size_t prepack_calls = 0;          // PrePackWeight calls made by this session
  size_t prepacked_weights = 0;      // (node, input) pairs packed, own or shared
  size_t prepack_shared_hits = 0;    // packings taken from another session
  size_t initializers_released = 0;  // initializers freed because every consumer packed them
  size_t initializer_bytes_released = 0;
  size_t streams = 0;  // streams the session created (ABI 13), its control-flow bodies' not counted
};

class Session {
 public:
  Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options);
  // The plan of a control-flow body of `parent`: the parent's EPs, pools and threads, its own
  // placement (nodes inside the body are claimed like any other), kernels and memory plan.
  Session(const Session& parent, std::shared_ptr<Graph> body);
  // Placement only ("could these EPs run this model, and where would each node go?"): the EPs
  // are created and asked for their capability, no kernel is created and nothing compiled.
  // Nodes no EP can take are reported, not an error.
  static AssignmentReport PlanPlacement(Env& env, std::shared_ptr<Model> model,
                                        const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Model& model() const { return *model_; }
  const Graph& graph() const { return *model_->graph; }
  // The compiled groups of this session and its bodies (null for a dry run).
  const CompiledGroups* compiled_groups() const { return compiled_.get(); }
  int threads() const { return threads_; }
  const SessionStats& stats() const { return stats_; }
  // Nodes constant folding computed at creation, in the main graph and every control-flow body.
  size_t folded_nodes() const { return *folded_nodes_; }
  Env& env() const { return env_; }

  // Runs the model. `inputs[i]` feeds the graph input named `input_names[i]` (borrowed for the
  // call; host or device memory). Writes the requested outputs (all graph outputs when
  // `output_names` is empty) into `results`, which the call sizes. `bound[i]` (optional, may be
  // shorter) is a tensor the caller wants output i written into, in any memory; the kernel writes
  // straight into it when it lives where the output is produced (its result entry is then null).
  // Unbound outputs come back in host memory, or in run_options.output_memories[i] where given
  // (left where they were produced when that is the memory). `run_options` may stop the run
  // (NX_CANCELLED): a
  // terminate flag and a time limit, checked between steps, in control-flow iterations and by
  // kernels that poll them. A steady-state run allocates nothing but what `results` needs.
  void Run(std::span<const std::string_view> input_names, std::span<const Value* const> inputs,
           std::span<const std::string_view> output_names, std::span<Value* const> bound,
           const RunLimits& run_options, std::vector<ValuePtr>& results) const;
  // The same, returning the results.
  std::vector<ValuePtr> Run(std::span<const std::string_view> input_names,
                            std::span<const Value* const> inputs,
                            std::span<const std::string_view> output_names = {},
                            std::span<Value* const> bound = {},
                            const RunLimits& run_options = {}) const;

  // Run with feeds by value index (graph inputs and, for a control-flow body, the outer-scope
  // values it reads; `feeds` has one slot per graph value, null where not fed, in any memory).
  // Checks nothing: for callers that checked already (the control-flow kernels). Writes the
  // values of `wanted` (value indices of graph outputs; all graph outputs when empty) into
  // `results` (sized by the caller). Unbound outputs come back in host memory, or, with
  // `host_outputs` false, where they were produced (a body's values stay on the device between
  // iterations); `output_memories[i]` (optional, may be shorter), where not null, names the
  // memory unbound output i is handed over in instead.
  void Execute(std::span<const Value* const> feeds, std::span<const int> wanted,
               std::span<Value* const> bound, bool host_outputs, std::span<ValuePtr> results,
               std::span<const NxMemoryInfo* const> output_memories = {}) const;
  std::vector<ValuePtr> Execute(std::span<const Value* const> feeds,
                                bool host_outputs = true) const;

  // Working memory of one run (or one body run), reused across runs: a steady-state run takes
  // one from the session and gives it back emptied, so per-run vectors cost no allocation.
  struct RunScratch {
    std::vector<const Value*> feeds;  // for callers assembling feeds (Run, control-flow bodies)
    std::vector<int> wanted;
    std::vector<const Value*> slots;
    std::vector<ValuePtr> owned;
    std::vector<Value*> bound_by_value;
    std::vector<const Value*> node_inputs;
    std::vector<ValuePtr> node_outputs;
    std::vector<Value*> node_bound;
    std::vector<char> node_reusable;
    std::vector<ValuePtr> node_owners;
    std::vector<const Value*> node_implicit;
    NxKernelContext ctx;  // its scratch/created lists keep their capacity across nodes
  };
  struct ScratchReturn {
    const Session* session;
    void operator()(RunScratch* scratch) const { session->ReturnScratch(scratch); }
  };
  using ScratchLease = std::unique_ptr<RunScratch, ScratchReturn>;
  ScratchLease LeaseScratch() const;

  // Placement: the EPs in priority order, and which one runs each node (graph order).
  size_t ep_count() const { return eps_.size(); }
  const std::string& ep_name(size_t i) const { return eps_[i]->name(); }
  int node_ep(size_t node) const { return node_ep_[node]; }
  // The EP devices EP `i` was created for.
  const std::vector<const NxEpDevice*>& ep_devices(size_t i) const { return eps_[i]->devices(); }
  // A counter EP `i` keeps about this session (false when it keeps none by that name).
  bool ep_statistic(size_t i, const std::string& key, int64_t* value) const {
    return eps_[i]->Statistic(key, value);
  }
  // Index of the CPU EP appended as fallback, or -1.
  int fallback_ep() const { return fallback_ep_; }
  // Where every node of the model (control-flow bodies included) runs, and why nodes left the
  // preferred EP. Made at creation, always.
  const AssignmentReport& assignment_report() const { return *report_; }

  // ---- profiling (base/profiler.h) ----
  // The session's profile recorder, shared with its control-flow bodies; null when the session
  // was created without a profile file. Creation steps record themselves through it, e.g.
  //   ProfileScope scope(profiler(), "compile", {{"ep", name}});  // ends with the scope
  Profiler* profiler() const { return profiler_.get(); }
  // Writes the profile file now and stops recording (also done when the main session is
  // destroyed). Returns the number of events written. Throws when the session is not profiling
  // (or profiling ended) and when the file cannot be written.
  size_t EndProfiling();
  // ---- end profiling ----

 private:
  // Run's work between the EPs' run boundaries.
  void RunSteps(std::span<const std::string_view> input_names, std::span<const Value* const> inputs,
                std::span<const std::string_view> output_names, std::span<Value* const> bound,
                const RunLimits& run_options, std::vector<ValuePtr>& results) const;
  // One step of the plan: run a node, or copy a value into another memory.
  struct Step {
    bool is_copy = false;
    int index = 0;  // node index or copy index
  };
  struct Copy {
    int src_slot = -1;
    int dst_slot = -1;
    const NxMemoryInfo* dst_memory = nullptr;
  };

  std::vector<EpChoice> ChooseEps(const SessionOptions& options);
  void CreateEps(const SessionOptions& options);
  Session(Env& env, std::shared_ptr<Model> model, const SessionOptions& options, bool dry_run);
  void AssignNodes();
  // The session's EP index of the env's CPU EP, or -1 when the session does not use it.
  int CpuEpIndex() const;
  // Graph optimizations after placement (optimization level >= 1): constant folding on the CPU
  // EP (session/constant_folding.h), then fusion (session/graph_fusion.h).
  void Optimize(Graph& g, size_t memory_limit);
  void CreateKernels();
  void PrePackWeights(bool share);
  void PlanMemory();
  void PlanLifetimes();
  // Puts each step on a lane (session/streams.h): the host, or a stream of its EP (ABI 13).
  void PlanStreams();
  // The assignment report names each main-graph subgraph's kernels stream (a dry run asks the
  // EPs for the streams they would use).
  void NameReportStreams();
  // The memory `node`'s kernel works in: its EP's memory on its device (null = host memory).
  const NxMemoryInfo* NodeMemory(const Node& node) const;
  const NxMemoryInfo* KernelInputMemory(const Node& node, size_t input) const;
  const NxMemoryInfo* KernelOutputMemory(const Node& node, size_t output) const;
  BufferPool& ArenaFor(const NxMemoryInfo* memory) const;
  void CheckFeeds(std::span<const std::string_view> names, std::span<const Value* const> values,
                  std::vector<const Value*>& slots) const;
  void ReturnScratch(RunScratch* scratch) const noexcept;

  Env& env_;
  std::shared_ptr<Model> model_;
  NxConfig config_;
  NxLogger logger_;
  int threads_ = 1;
  std::vector<std::shared_ptr<EpInstance>> eps_;  // shared with control-flow bodies
  int fallback_ep_ = -1;  // the CPU EP appended as fallback (not chosen), or -1
  NxFallbackMode fallback_mode_ = NX_FALLBACK_ALLOW;
  std::vector<int> node_ep_;                 // EP index per node
  std::vector<const KernelEntry*> entries_;  // kernel definition per node
  std::vector<NxKernel*> kernels_;           // kernel per node
  // Per node: an input's type was unknown when its kernel was chosen, so every run checks the
  // fed types against the kernel's constraints (a kernel must never see a type it did not take).
  std::vector<char> run_time_type_check_;
  std::shared_ptr<BufferPool> pool_;  // host buffers, reused across runs
  // Per device memory of the session's EPs: its arena (an EP's per-session allocator, else the
  // factory's process-wide arena). Host memory is pool_.
  std::vector<std::pair<const NxMemoryInfo*, std::shared_ptr<BufferPool>>> device_arenas_;
  std::vector<BufferPool*> node_arena_;  // per node: the arena of its kernel's memory
  std::shared_ptr<ThreadPool> thread_pool_;
  // Per device arena: the allocator kernels pre-pack device weights with.
  std::map<const BufferPool*, std::unique_ptr<HostSideAllocator>> device_pack_allocators_;
  std::vector<std::shared_ptr<PackedWeight>> shared_packs_;  // packings this session uses

  // ---- The plan ----
  size_t num_slots_ = 0;                            // graph values, then copy destinations
  std::vector<ValuePtr> constants_;                 // per slot: initializer (or its upload), if any
  std::vector<const NxMemoryInfo*> slot_memory_;    // per slot: where it lives (null = host)
  std::vector<std::vector<int>> node_input_slots_;  // per node input: slot, -1 if omitted
  std::vector<std::vector<int>> node_implicit_slots_;  // per node: its subgraphs' outer values
  std::vector<std::vector<char>>
      node_input_reusable_;                       // per node input: last use, may be overwritten
  std::vector<std::vector<char>> packed_inputs_;  // per node input: packed by the kernel
  std::vector<Copy> copies_;
  std::vector<Step> steps_;
  std::vector<std::vector<int>> free_after_step_;  // slots whose last use is step i
  // Per fed slot (graph input or outer-scope value): a host kernel reads it, so a feed given in
  // device memory comes to the host first.
  std::vector<char> input_used_on_host_;
  // Streams (ABI 13): per step its lane (-1 = the host), and whether a step on another lane
  // reads what it produces (an event is recorded after it). Null lanes_: no EP has streams.
  std::unique_ptr<StreamLanes> lanes_;
  std::vector<int> step_lane_;
  std::vector<char> step_event_needed_;
  std::vector<char> step_sync_inputs_;  // a Loop/Scan on a stream: its inputs complete first
  // Per value: the from-device stream a graph output produced in device memory goes to the host
  // on, as soon as it is produced (-1: at the end of the run, synchronously); empty: none.
  std::vector<int> output_lane_;
  SessionStats stats_;
  mutable std::mutex scratch_mutex_;
  mutable std::vector<std::unique_ptr<RunScratch>> free_scratch_;
  std::shared_ptr<size_t> folded_nodes_ = std::make_shared<size_t>(0);  // shared with bodies
  // Fused groups compiled for this session and its bodies (null in a dry run), and the kernels
  // of this graph's fused nodes until CreateKernels takes them.
  std::shared_ptr<CompiledGroups> compiled_;
  std::map<std::string, CompiledGroups::Installed> fused_kernels_;
  void ReleaseKernels();
  // ---- profiling ----
  std::shared_ptr<Profiler> profiler_;            // null when not profiling; shared with bodies
  std::vector<std::string> profile_node_device_;  // per node: its hardware device, for events
  void PrepareProfiling();                        // fills profile_node_device_ (executor.cc)
  // ---- end profiling ----
  std::shared_ptr<MemoryBudget> memory_budget_;  // the session's memory limit; null = none
  bool is_root_ = false;                         // the model's main graph (not a control-flow body)
  bool dry_run_ = false;                         // PlanPlacement: stop after placement
  std::shared_ptr<AssignmentReport> report_;     // the root's; null in bodies
};

}  // namespace nxrt
