// Session::Run: walks the plan (nodes and copies between memories) in order, freeing each value
// after its last use, then hands out the outputs (in host memory unless the caller bound them).
#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "base/profiler.h"
#include "session/env.h"
#include "session/placement.h"
#include "session/session.h"
#include "session/streams.h"

namespace nxrt {
namespace {

ValuePtr CopyValue(const Value& v) {
  if (v.kind == NX_VALUE_TENSOR && v.type != NX_TYPE_STRING) {
    ValuePtr fresh = MakeTensor(v.type, v.dims);
    if (TensorBytes(v)) std::memcpy(fresh->data, v.data, TensorBytes(v));
    return fresh;
  }
  return std::make_shared<Value>(v);
}

// Whether a sequence or optional holds a tensor the host cannot read (made by a device EP).
bool HoldsDeviceTensor(const Value& v) {
  if (v.kind == NX_VALUE_TENSOR) return !IsHostReadable(v);
  for (const auto& e : v.elements)
    if (e && HoldsDeviceTensor(*e)) return true;
  return v.contained && HoldsDeviceTensor(*v.contained);
}

// Whether tensor `t` may be used where `memory` is wanted: the host reads any host-readable
// tensor; other memories take only their own.
bool ReadableIn(const Value& t, const NxMemoryInfo* memory) {
  return SameMemory(memory, HostMemory()) ? IsHostReadable(t) : SameMemory(MemoryOf(t), memory);
}

// A copy of `v` whose tensors all live in `memory`: how sequences and optionals cross memories,
// element by element through the EPs' data transfers. Tensors already there are shared.
ValuePtr CopyInto(Env& env, const ValuePtr& v, const NxMemoryInfo* memory) {
  if (v->kind == NX_VALUE_TENSOR) return ReadableIn(*v, memory) ? v : env.CopyToMemory(*v, memory);
  auto out = std::make_shared<Value>(*v);
  for (auto& e : out->elements)
    if (e) e = CopyInto(env, e, memory);
  if (out->contained) out->contained = CopyInto(env, out->contained, memory);
  return out;
}
ValuePtr CopyInto(Env& env, const Value& v, const NxMemoryInfo* memory) {
  return CopyInto(env, std::make_shared<Value>(v), memory);
}

// ---- profiling (base/profiler.h) ----
// A node's input shapes for its event: "[1,3,224,224],[64,3,7,7]". An input the kernel packed
// (passed as null) shows the initializer's shape, an omitted one "none".
std::string InputShapes(const Graph& g, const Node& node, const std::vector<const Value*>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ",";
    const int v = i < node.inputs.size() ? node.inputs[i] : -1;
    if (inputs[i] != nullptr || v < 0) {
      s += ProfileShape(inputs[i]);
      continue;
    }
    const ValueDef& def = g.value(v);
    s += def.initializer      ? ShapeString(def.initializer->dims)
         : def.type.has_shape ? ShapeString(def.type.dims)
                              : "packed";
  }
  return s;
}

std::string OutputShapes(const std::vector<ValuePtr>& outputs) {
  std::string s;
  for (size_t o = 0; o < outputs.size(); ++o) s += (o ? "," : "") + ProfileShape(outputs[o].get());
  return s;
}

void AddRunArgs(const ProfiledRun& run, KeyValues& args) {
  if (run.run_known) args.emplace_back("run", std::to_string(run.run));
  if (!run.parent.empty()) args.emplace_back("parent", run.parent);
}

void RecordNode(const ProfiledRun& run, const Graph& g, const Node& node, const std::string& ep,
                const std::string& device, const std::vector<const Value*>& inputs,
                const std::vector<ValuePtr>& outputs, uint64_t begin_ns,
                const std::string* stream) {
  const uint64_t end_ns = Profiler::NowNs();
  ProfileEvent e{node.name, "node", begin_ns, end_ns, Profiler::ThreadId(), {}};
  e.args.reserve(8);
  e.args.emplace_back("ep", ep);
  e.args.emplace_back("device", device);
  e.args.emplace_back("op_type", node.op_type);
  if (!node.domain.empty()) e.args.emplace_back("domain", node.domain);
  e.args.emplace_back("input_shapes", InputShapes(g, node, inputs));
  e.args.emplace_back("output_shapes", OutputShapes(outputs));
  if (stream != nullptr) e.args.emplace_back("stream", *stream);  // queued there, not yet run
  AddRunArgs(run, e.args);
  run.profiler->Add(std::move(e));
}

void RecordCopy(const ProfiledRun& run, const std::string& value, const Value& src,
                const NxMemoryInfo* to, uint64_t begin_ns, const std::string* stream = nullptr) {
  const uint64_t end_ns = Profiler::NowNs();
  ProfileEvent e{"copy:" + value, "copy", begin_ns, end_ns, Profiler::ThreadId(), {}};
  e.args.emplace_back("from", DescribeMemory(MemoryOf(src)));
  e.args.emplace_back("to", DescribeMemory(to));
  e.args.emplace_back("shape", ProfileShape(&src));
  if (stream != nullptr) e.args.emplace_back("stream", *stream);
  AddRunArgs(run, e.args);
  run.profiler->Add(std::move(e));
}

// The executed spans of the steps a run queued on streams: each on its stream's track, from
// when it was queued (or the previous step there finished, if later) to its event's completion.
void RecordStreamSpans(const ProfiledRun& run, const StreamLanes& lanes, const RunStreams& rs) {
  std::vector<uint64_t> lane_free(lanes.size(), 0);  // when the lane's previous step finished
  for (const RunStreams::Span& span : rs.spans()) {
    uint64_t end_ns = 0;
    if (span.done->GetCompletionTime == nullptr ||
        !span.done->GetCompletionTime(span.done.get(), &end_ns))
      continue;  // the EP cannot tell when it ran
    const StreamLanes::Lane& lane = lanes.lane(span.lane);
    uint64_t& free_at = lane_free[static_cast<size_t>(span.lane)];
    // The stream began the step when its start marker completed (after the waits before it);
    // without one, when it was queued or the previous step finished, whichever is later.
    uint64_t started_ns = 0;
    const bool marked = span.started && span.started->GetCompletionTime != nullptr &&
                        span.started->GetCompletionTime(span.started.get(), &started_ns);
    const uint64_t begin_ns =
        std::min(end_ns, marked ? started_ns : std::max(span.queued_ns, free_at));
    free_at = end_ns;
    ProfileEvent e{span.name, "stream", begin_ns, end_ns, lane.track, {}};
    e.args.emplace_back("stream", lane.name);
    e.args.emplace_back("step", span.category);
    AddRunArgs(run, e.args);
    run.profiler->NameTrack(lane.track, "stream " + lane.name);
    run.profiler->Add(std::move(e));
  }
}

// One Execute under profiling: makes its ProfiledRun current on this thread (a body's Execute,
// inside its node's Compute, takes the run index and parent node from there) and, for the main
// graph, records the "run" event around the whole Execute, also when it fails.
class ProfiledExecute {
 public:
  ProfiledExecute(Profiler* profiler, bool root, size_t nodes)
      : root_(root), nodes_(nodes), previous_(ProfiledRun::current) {
    run.profiler = profiler;
    if (root) {
      run.run = profiler->NextRun();
    } else if (previous_ != nullptr) {
      run.run = previous_->run;
      run.run_known = previous_->run_known;
      if (previous_->node != nullptr) run.parent = *previous_->node;
    } else {
      run.run_known = false;
    }
    ProfiledRun::current = &run;
    begin_ns_ = Profiler::NowNs();
  }
  ~ProfiledExecute() {
    ProfiledRun::current = previous_;
    if (!root_) return;
    try {
      run.profiler->Add(ProfileEvent{"run",
                                     "session",
                                     begin_ns_,
                                     Profiler::NowNs(),
                                     Profiler::ThreadId(),
                                     {{"run", std::to_string(run.run)},
                                      {"nodes", std::to_string(nodes_)},
                                      {"failed", std::uncaught_exceptions() > 0 ? "1" : "0"}}});
    } catch (...) {  // out of memory: the event is lost
    }
  }
  ProfiledExecute(const ProfiledExecute&) = delete;
  ProfiledExecute& operator=(const ProfiledExecute&) = delete;

  ProfiledRun run;

 private:
  bool root_;
  size_t nodes_;
  ProfiledRun* previous_;
  uint64_t begin_ns_ = 0;
};
// ---- end profiling ----

}  // namespace

Session::ScratchLease Session::LeaseScratch() const {
  {
    std::lock_guard lock(scratch_mutex_);
    if (!free_scratch_.empty()) {
      RunScratch* scratch = free_scratch_.back().release();
      free_scratch_.pop_back();
      return ScratchLease(scratch, ScratchReturn{this});
    }
  }
  return ScratchLease(new RunScratch, ScratchReturn{this});
}

void Session::ReturnScratch(RunScratch* scratch) const noexcept {
  // Emptied of every reference (the values a run made are freed when it ends), sizes kept.
  std::fill(scratch->feeds.begin(), scratch->feeds.end(), nullptr);
  std::fill(scratch->slots.begin(), scratch->slots.end(), nullptr);
  for (ValuePtr& v : scratch->owned) v.reset();
  for (ValuePtr& v : scratch->node_outputs) v.reset();
  for (ValuePtr& v : scratch->node_owners) v.reset();
  scratch->ctx.created.clear();
  scratch->ctx.scratch.clear();
  scratch->ctx.share_index.clear();
  std::unique_ptr<RunScratch> owned(scratch);
  std::lock_guard lock(scratch_mutex_);
  try {
    free_scratch_.push_back(std::move(owned));
  } catch (...) {  // no memory to keep it: it is freed
  }
}

void Session::Run(std::span<const std::string_view> input_names,
                  std::span<const Value* const> inputs,
                  std::span<const std::string_view> output_names, std::span<Value* const> bound,
                  const RunLimits& run_options, std::vector<ValuePtr>& results) const {
  // Every EP hears of the run before anything computes and once it is over (ABI 15). A failed
  // run ends quietly: its own error is the one to report.
  auto end_failed = [this](size_t count) {
    for (size_t i = 0; i < count; ++i) {
      try {
        eps_[i]->OnRunEnd(true);
      } catch (const std::exception&) {
      }
    }
  };
  size_t started = 0;
  try {
    for (; started < eps_.size(); ++started) eps_[started]->OnRunStart();
    RunSteps(input_names, inputs, output_names, bound, run_options, results);
  } catch (...) {
    end_failed(started);
    throw;
  }
  std::exception_ptr first_error;
  for (const auto& ep : eps_) {
    try {
      ep->OnRunEnd(false);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

void Session::RunSteps(std::span<const std::string_view> input_names,
                       std::span<const Value* const> inputs,
                       std::span<const std::string_view> output_names,
                       std::span<Value* const> bound, const RunLimits& run_options,
                       std::vector<ValuePtr>& results) const {
  const Graph& g = graph();
  ScratchLease lease = LeaseScratch();
  std::vector<const Value*>& feeds = lease->feeds;
  feeds.assign(g.values.size(), nullptr);
  CheckFeeds(input_names, inputs, feeds);
  std::vector<int>& wanted = lease->wanted;
  wanted.clear();
  if (output_names.empty()) {
    wanted.assign(g.outputs.begin(), g.outputs.end());
  } else {
    for (std::string_view name : output_names) {
      const int index = g.FindValue(name);
      bool is_output = false;
      for (int o : g.outputs) is_output = is_output || o == index;
      NXRT_CHECK(index >= 0 && is_output, NX_INVALID_ARGUMENT,
                 "'" + std::string(name) + "' is not an output of the model");
      wanted.push_back(index);
    }
  }
  results.resize(wanted.size());
  // A run with nothing to bound it makes no control current: the executor then checks one null
  // pointer per step.
  if (run_options.terminate == nullptr && run_options.timeout_seconds <= 0 && !memory_budget_) {
    Execute(feeds, wanted, bound, true, results, run_options.output_memories);
    return;
  }
  RunControl control;
  control.terminate = run_options.terminate;
  if (run_options.timeout_seconds > 0) {
    control.has_deadline = true;
    control.timeout_seconds = run_options.timeout_seconds;
    control.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(run_options.timeout_seconds));
  }
  control.budget = memory_budget_;
  RunControlScope scope(&control);
  Execute(feeds, wanted, bound, true, results, run_options.output_memories);
}

std::vector<ValuePtr> Session::Run(std::span<const std::string_view> input_names,
                                   std::span<const Value* const> inputs,
                                   std::span<const std::string_view> output_names,
                                   std::span<Value* const> bound,
                                   const RunLimits& run_options) const {
  std::vector<ValuePtr> results;
  Run(input_names, inputs, output_names, bound, run_options, results);
  return results;
}

std::vector<ValuePtr> Session::Execute(std::span<const Value* const> feeds,
                                       bool host_outputs) const {
  std::vector<ValuePtr> results(graph().outputs.size());
  Execute(feeds, {}, {}, host_outputs, results);
  return results;
}

void Session::Execute(std::span<const Value* const> feeds, std::span<const int> wanted_values,
                      std::span<Value* const> bound, bool host_outputs, std::span<ValuePtr> results,
                      std::span<const NxMemoryInfo* const> output_memories) const {
  const Graph& g = graph();
  const std::span<const int> wanted =
      wanted_values.empty() ? std::span<const int>(g.outputs) : wanted_values;
  NXRT_CHECK(results.size() == wanted.size(), NX_RUNTIME_ERROR,
             "internal: " + std::to_string(results.size()) + " result slots for " +
                 std::to_string(wanted.size()) + " outputs");
  NXRT_CHECK(bound.size() <= wanted.size(), NX_INVALID_ARGUMENT,
             "more bound outputs than requested outputs");
  const RunControl* const control = RunControl::Current();  // null: nothing stops this run
  // profiling: one null check per Execute, then one per step, when not profiling
  std::optional<ProfiledExecute> profiled;
  if (profiler_ && profiler_->active()) profiled.emplace(profiler_.get(), is_root_, g.nodes.size());
  ProfiledRun* const prof = profiled ? &profiled->run : nullptr;
  const size_t num_values = g.values.size();
  ScratchLease lease = LeaseScratch();
  RunScratch& run = *lease;
  std::vector<const Value*>& slots = run.slots;
  std::vector<ValuePtr>& owned = run.owned;
  slots.assign(num_slots_, nullptr);
  owned.resize(num_slots_);
  for (size_t v = 0; v < num_values && v < feeds.size(); ++v) slots[v] = feeds[v];
  // A feed handed over in device memory that a host kernel reads comes to the host first (graph
  // inputs, and outer-scope values a body reads from a device-resident parent).
  for (size_t v = 0; v < num_values; ++v) {
    const Value* fed = slots[v];
    if (fed && input_used_on_host_[v] && fed->kind == NX_VALUE_TENSOR && !IsHostReadable(*fed)) {
      const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
      owned[v] = env_.CopyToMemory(*fed, HostMemory());
      if (prof) RecordCopy(*prof, g.values[v].name, *fed, HostMemory(), t0);  // profiling
      slots[v] = owned[v].get();
    }
  }
  for (size_t s = 0; s < num_slots_; ++s) {
    if (constants_[s] && slots[s] == nullptr) slots[s] = constants_[s].get();
  }
  // Streams (ABI 13): inactive, and free, unless an EP of the session queues its work. Declared
  // after the lease: on an error it waits for queued work before the run's values are freed.
  RunStreams streams;
  streams.Begin(lanes_.get(), num_slots_, prof != nullptr);
  std::vector<int> lane_slots;  // the slots a queued copy produced
  // Graph outputs the caller gets in host memory that are produced in device memory: queued for
  // the host on their from-device stream as soon as they exist (per value; only with streams).
  std::vector<char> early_wanted;
  std::vector<ValuePtr> early_outputs;
  if (streams.active() && host_outputs && !output_lane_.empty()) {
    early_wanted.assign(num_values, 0);
    early_outputs.resize(num_values);
    for (size_t i = 0; i < wanted.size(); ++i) {
      const bool bound_i = i < bound.size() && bound[i] != nullptr;
      const bool memory_i = i < output_memories.size() && output_memories[i] != nullptr;
      if (!bound_i && !memory_i && output_lane_[static_cast<size_t>(wanted[i])] >= 0)
        early_wanted[static_cast<size_t>(wanted[i])] = 1;
    }
  }
  auto queue_output = [&](int v) {
    const Value* value = slots[static_cast<size_t>(v)];
    if (value == nullptr || value->kind != NX_VALUE_TENSOR || value->type == NX_TYPE_STRING ||
        TensorBytes(*value) == 0 || IsHostReadable(*value))
      return;  // the end of the run hands it out as before
    const int lane = output_lane_[static_cast<size_t>(v)];
    const StreamLanes::Lane& l = lanes_->lane(lane);
    streams.BeforeRead(v, lane, false);
    EventPtr start = streams.MarkStart(lane);          // profiling
    const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
    ValuePtr host = MakeTensorFromPool(value->type, value->dims, *pool_);
    lanes_->QueueCopy(lane, *value, *host, g.value(v).name);
    if (prof) RecordCopy(*prof, g.value(v).name, *value, HostMemory(), t0, &l.name);
    lane_slots.clear();
    streams.AfterStep(lane, lane_slots, false, prof ? "copy:" + g.value(v).name : std::string(),
                      "copy", t0, std::move(start));
    early_outputs[static_cast<size_t>(v)] = std::move(host);
  };

  std::vector<Value*>& bound_by_value = run.bound_by_value;
  bound_by_value.assign(num_values, nullptr);
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i] != nullptr) bound_by_value[static_cast<size_t>(wanted[i])] = bound[i];
  }

  std::vector<const Value*>& node_inputs = run.node_inputs;
  std::vector<ValuePtr>& node_outputs = run.node_outputs;
  std::vector<Value*>& node_bound = run.node_bound;
  std::vector<char>& node_reusable = run.node_reusable;
  std::vector<ValuePtr>& node_owners = run.node_owners;
  std::vector<const Value*>& node_implicit = run.node_implicit;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (control != nullptr && control->ShouldStop()) {
      control->ThrowIfStopped(
          step.is_copy ? std::string("before a copy")
                       : "before " + g.nodes[static_cast<size_t>(step.index)].Describe());
    }
    if (step.is_copy) {
      const Copy& c = copies_[static_cast<size_t>(step.index)];
      const Value* src = slots[static_cast<size_t>(c.src_slot)];
      NXRT_CHECK(src != nullptr, NX_RUNTIME_ERROR,
                 "value '" + g.value(c.src_slot).name + "' was not produced");
      // Queued on a stream only for a plain tensor; anything else is copied by the host.
      const int lane = streams.active() && src->kind == NX_VALUE_TENSOR &&
                               src->type != NX_TYPE_STRING && TensorBytes(*src) > 0
                           ? step_lane_[s]
                           : -1;
      if (src->kind == NX_VALUE_TENSOR && SameMemory(MemoryOf(*src), c.dst_memory)) {
        slots[static_cast<size_t>(c.dst_slot)] =
            src;                                   // already there (an input given in that memory)
        streams.BeforeRead(c.src_slot, -1, true);  // a value on a stream: complete it first
      } else {
        streams.BeforeRead(c.src_slot, lane, false);
        EventPtr start = streams.MarkStart(lane);          // profiling
        const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
        ValuePtr dst;
        if (src->kind != NX_VALUE_TENSOR) {
          dst = CopyInto(env_, *src, c.dst_memory);  // a sequence or optional: its tensors
        } else {
          dst = src->type == NX_TYPE_STRING
                    ? MakeTensor(src->type, src->dims)
                    : MakeTensorFromPool(src->type, src->dims, ArenaFor(c.dst_memory));
          if (lane >= 0) {
            lanes_->QueueCopy(lane, *src, *dst, g.value(c.src_slot).name);
          } else {
            env_.CopyTensor(*src, *dst);
          }
        }
        if (prof)
          RecordCopy(*prof, g.value(c.src_slot).name, *src, c.dst_memory, t0,
                     lane >= 0 ? &lanes_->lane(lane).name : nullptr);
        owned[static_cast<size_t>(c.dst_slot)] = std::move(dst);
        slots[static_cast<size_t>(c.dst_slot)] = owned[static_cast<size_t>(c.dst_slot)].get();
        streams.Produced(c.dst_slot, lane);
        if (lane >= 0) {
          lane_slots.assign(1, c.dst_slot);
          streams.AfterStep(lane, lane_slots, step_event_needed_[s] != 0,
                            prof ? "copy:" + g.value(c.src_slot).name : std::string(), "copy", t0,
                            std::move(start));
        }
      }
    } else {
      const size_t n = static_cast<size_t>(step.index);
      const Node& node = g.nodes[n];
      const auto& in_slots = node_input_slots_[n];
      const int lane = streams.active() ? step_lane_[s] : -1;
      node_inputs.assign(node.inputs.size(), nullptr);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (in_slots[i] < 0) continue;
        const Value* in = slots[static_cast<size_t>(in_slots[i])];
        node_inputs[i] = in;
        // A queued kernel reads device memory later, in its stream's order; host memory (and
        // anything but a tensor) it may read in Compute, so that must be complete now, as must
        // everything a control-flow node's bodies read (they run on streams of their own).
        streams.BeforeRead(in_slots[i], lane,
                           step_sync_inputs_[s] || in == nullptr || in->kind != NX_VALUE_TENSOR ||
                               IsHostReadable(*in));
      }
      for (int slot : node_implicit_slots_[n]) streams.BeforeRead(slot, lane, true);
      // An input may be overwritten only if the plan allows it and this run owns it (a copy
      // step that passed a caller's tensor through does not make it ours).
      node_reusable.assign(node.inputs.size(), 0);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        // ... and no other value (a sequence holding it) shares it.
        node_reusable[i] = node_input_reusable_[n][i] && in_slots[i] >= 0 &&
                           owned[static_cast<size_t>(in_slots[i])] &&
                           owned[static_cast<size_t>(in_slots[i])].get() == node_inputs[i] &&
                           owned[static_cast<size_t>(in_slots[i])].use_count() == 1 &&
                           streams.Reusable(in_slots[i], lane);
      }
      node_owners.assign(node.inputs.size(), nullptr);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (in_slots[i] >= 0 && owned[static_cast<size_t>(in_slots[i])].get() == node_inputs[i])
          node_owners[i] = owned[static_cast<size_t>(in_slots[i])];
      }
      node_outputs.assign(node.outputs.size(), nullptr);
      node_bound.assign(node.outputs.size(), nullptr);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        if (node.outputs[o] >= 0)
          node_bound[o] = bound_by_value[static_cast<size_t>(node.outputs[o])];
      }
      const size_t e = static_cast<size_t>(node_ep_[n]);
      NxKernelContext& ctx = run.ctx;
      // Released when the node is done (also when it throws: the lease empties them).
      struct NodeScratch {
        NxKernelContext& ctx;
        RunStreams& streams;
        ~NodeScratch() {
          streams.Keep(ctx.keep_alive);  // what queued helper work reads (ABI 13)
          ctx.created.clear();
          ctx.scratch.clear();
          ctx.share_index.clear();
          ctx.share_index_built = false;
        }
      } node_scratch{ctx, streams};
      ctx.profile = nullptr;
      ctx.node = &node;
      ctx.entry = entries_[n];
      ctx.inputs = node_inputs.data();
      ctx.num_inputs = node_inputs.size();
      ctx.outputs = node_outputs.data();
      ctx.num_outputs = node_outputs.size();
      ctx.threads = threads_;
      ctx.pool = node_arena_[n];
      ctx.host_pool = pool_.get();
      ctx.input_reusable = node_reusable.data();
      ctx.bound_outputs = node_bound.data();
      ctx.thread_pool = thread_pool_.get();
      ctx.input_owners = node_owners.data();
      node_implicit.clear();
      for (int slot : node_implicit_slots_[n])
        node_implicit.push_back(slots[static_cast<size_t>(slot)]);
      ctx.implicit_inputs = node_implicit.data();
      ctx.num_implicit_inputs = node_implicit.size();
      // Kinds are matched statically; a value whose kind the model did not declare is checked
      // here, so a tensor-only kernel never receives a sequence or optional.
      for (size_t i = 0; i < node_inputs.size(); ++i) {
        const Value* in = node_inputs[i];
        if (in == nullptr || in->kind == NX_VALUE_TENSOR) continue;
        const uint32_t bit = in->kind == NX_VALUE_SEQUENCE ? NX_KIND_SEQUENCE : NX_KIND_OPTIONAL;
        NXRT_CHECK((entries_[n]->value_kinds & bit) != 0, NX_INVALID_ARGUMENT,
                   node.Describe() + ": input " + std::to_string(i) + " is " +
                       (bit == NX_KIND_SEQUENCE ? "a sequence" : "an optional") +
                       " but the kernel of EP " + eps_[e]->name() + " takes tensors only");
      }
      if (run_time_type_check_[n]) {
        std::string why;
        NXRT_CHECK(entries_[n]->AcceptsRunTimeTypes(node_inputs.data(), node_inputs.size(), &why),
                   NX_INVALID_ARGUMENT,
                   node.Describe() + ": " + why + " (the model does not declare the type; EP " +
                       eps_[e]->name() + " has no kernel for it)");
      }
      NxKernel* kernel = kernels_[n];
      EventPtr start = streams.MarkStart(lane);  // profiling
      uint64_t t0 = 0;                           // profiling
      if (prof) {
        prof->node = &node.name;
        prof->ep = &eps_[e]->name();
        ctx.profile = prof;
        t0 = Profiler::NowNs();
      }
      ctx.run_control = control;
      ctx.stream = lane >= 0 ? lanes_->lane(lane).stream : nullptr;
      try {
        // The message is built only on failure: no string work per node per run.
        if (NxStatus* status = kernel->Compute(kernel, &ctx))
          ThrowIfStatus(status, node.Describe() + " (EP " + eps_[e]->name() + ") failed");
      } catch (const Error&) {
        // A kernel (or a body) that gave up because the run must stop: say so, whatever it said.
        if (control != nullptr && control->ShouldStop())
          control->ThrowIfStopped("in " + node.Describe());
        throw;
      }
      if (prof) {
        RecordNode(*prof, g, node, eps_[e]->name(),
                   n < profile_node_device_.size() ? profile_node_device_[n]
                                                   : DescribeEpHardware(*eps_[e]),
                   node_inputs, node_outputs, t0, lane >= 0 ? &lanes_->lane(lane).name : nullptr);
        prof->node = nullptr;
      }
      node_owners.clear();  // hold no extra reference past the node (in-place checks count them)
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        int v = node.outputs[o];
        if (v < 0) continue;
        NXRT_CHECK(node_outputs[o] != nullptr, NX_RUNTIME_ERROR,
                   node.Describe() + ": the kernel did not produce output " + std::to_string(o) +
                       " ('" + g.value(v).name + "')");
        owned[static_cast<size_t>(v)] = std::move(node_outputs[o]);
        slots[static_cast<size_t>(v)] = owned[static_cast<size_t>(v)].get();
        streams.Produced(v, lane);
      }
      if (lane >= 0)
        streams.AfterStep(lane, node.outputs, step_event_needed_[s] != 0,
                          prof ? node.name : std::string(), "node", t0, std::move(start));
      if (!early_wanted.empty())
        for (int v : node.outputs)
          if (v >= 0 && early_wanted[static_cast<size_t>(v)]) queue_output(v);
    }
    for (int slot : free_after_step_[s]) {
      streams.Release(slot, owned[static_cast<size_t>(slot)]);
      slots[static_cast<size_t>(slot)] = nullptr;
    }
  }
  // Host reads of what the streams produced start here: everything queued is done after this.
  streams.SynchronizeAll();
  if (prof && streams.active()) RecordStreamSpans(*prof, *lanes_, streams);

  for (size_t i = 0; i < wanted.size(); ++i) {
    const int v = wanted[i];
    const Value* value = slots[static_cast<size_t>(v)];
    NXRT_CHECK(value != nullptr, NX_RUNTIME_ERROR,
               "output '" + g.value(v).name + "' was not produced");
    Value* target = i < bound.size() ? bound[i] : nullptr;
    if (!early_outputs.empty() && early_outputs[static_cast<size_t>(v)] && target == nullptr &&
        (i >= output_memories.size() || output_memories[i] == nullptr)) {
      results[i] = early_outputs[static_cast<size_t>(v)];  // copied on its stream, now complete
    } else if (target != nullptr) {
      // Written in place by the producing kernel, or copied now (across memories if need be).
      if (!(value->kind == NX_VALUE_TENSOR && value->type != NX_TYPE_STRING &&
            value->data == target->data && value->dims == target->dims)) {
        NXRT_CHECK(value->kind == NX_VALUE_TENSOR && target->kind == NX_VALUE_TENSOR &&
                       value->type == target->type && value->dims == target->dims,
                   NX_INVALID_ARGUMENT,
                   "output '" + g.value(v).name + "' is " + DescribeTensor(*value) +
                       " but the provided value is " + DescribeTensor(*target));
        const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
        env_.CopyTensor(*value, *target);
        if (prof) RecordCopy(*prof, g.value(v).name, *value, MemoryOf(*target), t0);
      }
      results[i] = nullptr;
    } else if (const NxMemoryInfo* const want =
                   i < output_memories.size() ? output_memories[i] : nullptr;
               want != nullptr && value->kind == NX_VALUE_TENSOR) {
      // The caller asked for this memory: the produced value as it is when it lives there and
      // the run owns it, else a copy there (across memories with the EPs' data transfers).
      if (SameMemory(MemoryOf(*value), want) && owned[static_cast<size_t>(v)] &&
          owned[static_cast<size_t>(v)].get() == value) {
        results[i] = owned[static_cast<size_t>(v)];
      } else {
        const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
        results[i] = env_.CopyToMemory(*value, want);
        if (prof && !SameMemory(MemoryOf(*value), want))
          RecordCopy(*prof, g.value(v).name, *value, want, t0);
      }
    } else if (value->kind == NX_VALUE_TENSOR && !IsHostReadable(*value)) {
      // Device memory: to the host, or (a body's output) left there; a value the run does not
      // own (a feed, a constant) is copied within its memory.
      if (host_outputs) {
        const uint64_t t0 = prof ? Profiler::NowNs() : 0;  // profiling
        results[i] = env_.CopyToMemory(*value, HostMemory());
        if (prof) RecordCopy(*prof, g.value(v).name, *value, HostMemory(), t0);
      } else if (owned[static_cast<size_t>(v)] && owned[static_cast<size_t>(v)].get() == value)
        results[i] = owned[static_cast<size_t>(v)];
      else
        results[i] = env_.CopyToMemory(*value, MemoryOf(*value));
    } else if (host_outputs && value->kind != NX_VALUE_TENSOR && HoldsDeviceTensor(*value)) {
      results[i] = CopyInto(env_, *value, HostMemory());  // a sequence of device tensors: to host
    } else if (owned[static_cast<size_t>(v)]) {
      results[i] = owned[static_cast<size_t>(v)];  // shared if asked twice: fine, read-only
    } else {
      results[i] = CopyValue(*value);  // a graph input or an initializer: hand out a copy
    }
  }
}

// ---- profiling ----
void Session::PrepareProfiling() {
  if (!profiler_) return;
  const Graph& g = graph();
  profile_node_device_.assign(g.nodes.size(), "none");
  for (const Node& node : g.nodes) {
    const int e = node_ep_[static_cast<size_t>(node.index)];
    if (e >= 0)
      profile_node_device_[node.index] = DescribeEpHardware(*eps_[static_cast<size_t>(e)]);
    if (node.assigned_device != nullptr)  // the device the EP named for the node or its group
      profile_node_device_[node.index] = DescribeHardwareDevice(node.assigned_device);
  }
  if (!is_root_) return;
  std::string eps;
  for (const auto& ep : eps_) eps += (eps.empty() ? "" : ",") + ep->name();
  profiler_->SetMetadata("model", g.source);
  profiler_->SetMetadata("graph", g.name);
  profiler_->SetMetadata("eps", eps);
  profiler_->SetMetadata("threads", std::to_string(threads_));
}

size_t Session::EndProfiling() {
  NXRT_CHECK(profiler_ != nullptr, NX_INVALID_ARGUMENT,
             "the session is not profiling (no profile file was set in its options)");
  NXRT_CHECK(profiler_->active(), NX_INVALID_ARGUMENT,
             "profiling of this session ended already (the profile was written to '" +
                 profiler_->path() + "')");
  return profiler_->End();
}
// ---- end profiling ----

}  // namespace nxrt
