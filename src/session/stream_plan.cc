// Session::PlanStreams: which lane (session/streams.h) each step of the plan runs on.
//   - A node runs on the kernels stream of its device when its EP makes streams (ABI 13). The
//     host's Loop and Scan kernels do too (their helpers queue stacking and slicing there), with
//     every input completed first: their bodies run on streams of their own. If and
//     SequenceMap stay on the host.
//   - A copy into a factory's memory runs on its to-device stream, a copy out of it on its
//     from-device stream, when its data transfer can queue that copy (CopyTensorsAsync).
//   - Everything else is the host (-1).
#include <algorithm>

#include "base/memory_info.h"
#include "session/session.h"

namespace nxrt {
namespace {

bool IsHostOnly(const Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "SequenceMap");
}
bool IsLoopOrScan(const Node& node) {
  return node.domain.empty() && (node.op_type == "Loop" || node.op_type == "Scan");
}

// The hardware device of `factory` whose kernels work in `memory` (null when none says so,
// e.g. an EP created without EP devices).
const NxHardwareDevice* DeviceOfMemory(const EpFactory& factory, const NxMemoryInfo* memory) {
  for (const NxEpDevice* d : factory.devices)
    if (SameMemory(factory.MemoryFor(d->device), memory)) return d->device;
  return nullptr;
}

}  // namespace

void Session::PlanStreams() {
  step_lane_.assign(steps_.size(), -1);
  step_event_needed_.assign(steps_.size(), 0);
  step_sync_inputs_.assign(steps_.size(), 0);
  if (dry_run_) return;
  std::vector<const EpInstance*> streaming;
  for (const auto& ep : eps_)
    if (StreamLanes::HasStreams(*ep)) streaming.push_back(ep.get());
  if (streaming.empty()) return;
  auto lanes = std::make_unique<StreamLanes>();
  const Graph& g = graph();
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (!step.is_copy) {
      const Node& node = g.nodes[static_cast<size_t>(step.index)];
      const int e = node_ep_[static_cast<size_t>(node.index)];
      if (e < 0 || IsHostOnly(node)) continue;
      const EpInstance& ep = *eps_[static_cast<size_t>(e)];
      if (!StreamLanes::HasStreams(ep)) continue;
      const NxHardwareDevice* device =
          node.assigned_device != nullptr ? node.assigned_device : ep.first_device();
      step_lane_[s] = lanes->Get(ep, device, LaneKind::kKernels);
      step_sync_inputs_[s] = IsLoopOrScan(node) ? 1 : 0;
      continue;
    }
    const Copy& c = copies_[static_cast<size_t>(step.index)];
    const NxMemoryInfo* src = slot_memory_[static_cast<size_t>(c.src_slot)];
    const NxMemoryInfo* dst = c.dst_memory;
    // Into a device memory first (its to-device stream), else out of one.
    for (const EpInstance* ep : streaming) {
      const EpFactory& f = ep->factory();
      if (!HostAccessible(dst) && f.ArenaOf(dst) && StreamLanes::CopiesAsync(*ep, src, dst)) {
        step_lane_[s] = lanes->Get(*ep, DeviceOfMemory(f, dst), LaneKind::kToDevice);
        break;
      }
      if (!HostAccessible(src) && f.ArenaOf(src) && StreamLanes::CopiesAsync(*ep, src, dst)) {
        step_lane_[s] = lanes->Get(*ep, DeviceOfMemory(f, src), LaneKind::kFromDevice);
        break;
      }
    }
  }
  // Graph outputs left in device memory go back to the host as soon as they are produced, so
  // those copies overlap the rest of the run.
  for (int v : g.outputs) {
    const NxMemoryInfo* memory = slot_memory_[static_cast<size_t>(v)];
    if (HostAccessible(memory)) continue;
    for (const EpInstance* ep : streaming) {
      if (!ep->factory().ArenaOf(memory) || !StreamLanes::CopiesAsync(*ep, memory, HostMemory()))
        continue;
      const int lane =
          lanes->Get(*ep, DeviceOfMemory(ep->factory(), memory), LaneKind::kFromDevice);
      if (lane < 0) break;
      if (output_lane_.empty()) output_lane_.assign(g.values.size(), -1);
      output_lane_[static_cast<size_t>(v)] = lane;
      break;
    }
  }
  if (lanes->streams() == 0) {
    output_lane_.clear();
    return;
  }
  // An event after each step whose values a step on another lane reads (the run records one
  // lazily for anything this misses, e.g. a value that turned out to be a sequence).
  std::vector<int> producer(num_slots_, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    auto reads = [&](int slot) {
      if (slot < 0) return;
      const int p = producer[static_cast<size_t>(slot)];
      if (p >= 0 && step_lane_[static_cast<size_t>(p)] >= 0 &&
          step_lane_[static_cast<size_t>(p)] != step_lane_[s])
        step_event_needed_[static_cast<size_t>(p)] = 1;
    };
    if (step.is_copy) {
      const Copy& c = copies_[static_cast<size_t>(step.index)];
      reads(c.src_slot);
      producer[static_cast<size_t>(c.dst_slot)] = static_cast<int>(s);
      continue;
    }
    const Node& node = g.nodes[static_cast<size_t>(step.index)];
    for (int slot : node_input_slots_[node.index]) reads(slot);
    for (int slot : node_implicit_slots_[node.index]) reads(slot);
    for (int v : node.outputs)
      if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(s);
  }
  stats_.streams = lanes->streams();
  lanes_ = std::move(lanes);
}

void Session::NameReportStreams() {
  if (!report_) return;
  for (AssignedSubgraph& sg : report_->subgraphs) {
    if (!sg.graph.empty()) continue;
    for (const auto& ep : eps_) {
      if (ep->name() != sg.ep_name || !StreamLanes::HasStreams(*ep)) continue;
      const NxHardwareDevice* device = sg.devices.empty() ? nullptr : sg.devices.front();
      int lane = -1;
      if (dry_run_) {
        // Placement only: ask the EP for the stream it would use (released with the session).
        if (!lanes_) lanes_ = std::make_unique<StreamLanes>();
        lane = lanes_->Get(*ep, device, LaneKind::kKernels);
      } else if (lanes_) {
        lane = lanes_->Find(*ep, device, LaneKind::kKernels);
      }
      if (lane >= 0) sg.stream = lanes_->lane(lane).name;
      break;
    }
  }
}

}  // namespace nxrt
