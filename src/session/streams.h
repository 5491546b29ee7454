// Streams (plugin ABI 13): the host's side of EPs that queue their work instead of finishing it
// inside Compute.
//
// A session plans every step on a lane. Lane -1 is the host: the step is done when its call
// returns (host kernels, EPs without streams, the host's control-flow kernels, copies without
// CopyTensorsAsync). Lanes >= 0 are streams the session created through the factories: one for
// the kernels of each device, one for copies to it and one for copies from it, so copies
// overlap kernels. Streams come from the session's EP instances (NxEp::CreateStream). A run tracks
// which lane produced each value and orders consumers on other lanes with events (RunStreams
// below); it ends by synchronising every stream it used.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/value.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

struct EpFactory;
class EpInstance;

enum class LaneKind { kKernels, kToDevice, kFromDevice };

// The streams of one session, created while the session is planned and released with it.
class StreamLanes {
 public:
  struct Lane {
    NxStream* stream = nullptr;  // null: the EP keeps this device synchronous (never handed out)
    const EpInstance* ep = nullptr;
    const EpFactory* factory = nullptr;
    const NxHardwareDevice* device = nullptr;
    LaneKind kind = LaneKind::kKernels;
    std::string name;    // "SimDevice:0x0001:kernels", in the profile and the report
    uint32_t track = 0;  // the profile "thread" its executed spans are drawn on
  };

  StreamLanes() = default;
  ~StreamLanes();  // synchronises and releases every stream
  StreamLanes(const StreamLanes&) = delete;
  StreamLanes& operator=(const StreamLanes&) = delete;

  // Whether `ep` may make streams (ABI 13 NxEp::CreateStream).
  static bool HasStreams(const EpInstance& ep);
  // Whether its factory's data transfer can queue a copy from `src` to `dst` memory.
  static bool CopiesAsync(const EpInstance& ep, const NxMemoryInfo* src, const NxMemoryInfo* dst);

  // The lane of `kind` on `device` of `ep`, its stream created on first use; -1 when the EP
  // keeps the device synchronous. Throws the EP's error when it cannot make one.
  int Get(const EpInstance& ep, const NxHardwareDevice* device, LaneKind kind);
  // Streams actually created.
  size_t streams() const;
  // The lane of `kind` on `device` of `ep` if one was planned with a stream, else -1.
  int Find(const EpInstance& ep, const NxHardwareDevice* device, LaneKind kind) const;

  const Lane& lane(int index) const { return lanes_[static_cast<size_t>(index)]; }
  // Queues src -> dst on lane `index` through its factory's CopyTensorsAsync; `value` names the
  // graph value in the error.
  void QueueCopy(int index, const Value& src, Value& dst, const std::string& value) const;
  size_t size() const { return lanes_.size(); }  // lanes, including refused ones

 private:
  std::vector<Lane> lanes_;
};

// An event the host recorded, released when the last holder lets go.
using EventPtr = std::shared_ptr<NxEvent>;

// What one run (or one body run) knows about its lanes: the lane that produced each slot, the
// event recorded after it, whether a stream other than the producer's read it, and the spans to
// profile.
//
// Memory that queued work touched (a value a stream produced or read) goes back to its arena
// only when the run has synchronised: the arena is shared by the lanes of a memory, so a block
// freed as soon as its last reader was queued could be handed to a copy on another stream that
// overwrites it before that reader ran. Values the host alone produced and read are freed at
// their last use, as without streams.
class RunStreams {
 public:
  // `lanes` may be null or empty: the run is then wholly synchronous and every call is cheap.
  void Begin(const StreamLanes* lanes, size_t num_slots, bool profiling);
  bool active() const { return active_; }

  // Before a step on `lane` reads `slot` (`in_host_memory`: the value the step sees lives in
  // host memory, which a kernel may read inside Compute): makes the lane (or the host) wait for
  // the slot's producer when it ran elsewhere.
  void BeforeRead(int slot, int lane, bool in_host_memory);
  // The step on `lane` produced `slot`.
  void Produced(int slot, int lane) {
    if (active_) {
      slot_lane_[static_cast<size_t>(slot)] = lane;
      slot_event_[static_cast<size_t>(slot)].reset();
      if (lane >= 0) defer_free_[static_cast<size_t>(slot)] = 1;
    }
  }
  // When profiling, right before a step on lane >= 0 queues its work (after its waits): an event
  // that completes when the stream starts that work. Null otherwise.
  EventPtr MarkStart(int lane) {
    return active_ && profiling_ && lane >= 0 ? Record(lane) : nullptr;
  }
  // After a step on lane >= 0 that produced `slots`: records an event for consumers on other
  // lanes (`needed`) and, when profiling, for the step's executed span (from `start`).
  void AfterStep(int lane, const std::vector<int>& slots, bool needed, std::string name,
                 const char* category, uint64_t queued_ns, EventPtr start = nullptr);
  // May a step on `lane` overwrite `slot` in place? On a stream: when that stream produced it and
  // no other stream read it (earlier readers come first in its order). On the host: when no
  // queued work touched it (a queued reader may not have run yet).
  bool Reusable(int slot, int lane) const {
    const size_t s = static_cast<size_t>(slot);
    if (!active_) return true;
    return lane < 0 ? !defer_free_[s] : slot_lane_[s] == lane && !cross_read_[s];
  }
  // Frees a slot's value at its last use: now, or when the run has synchronised.
  void Release(int slot, ValuePtr& value);
  // Keeps `values` (emptied) until the run has synchronised; without streams they go now.
  void Keep(std::vector<ValuePtr>& values) {
    if (active_)
      for (ValuePtr& v : values) deferred_.push_back(std::move(v));
    values.clear();
  }
  // Waits for every stream the run used; throws the first error their queued work reported.
  void SynchronizeAll();
  // The executed spans of the profiled steps ("stream" events on each lane's track), after
  // SynchronizeAll.
  struct Span {
    std::string name;
    const char* category;
    int lane;
    uint64_t queued_ns;
    EventPtr started;  // reached when the stream began the step (null: unknown)
    EventPtr done;
  };
  const std::vector<Span>& spans() const { return spans_; }
  // Drops the run's state; on an error path synchronises the streams first (ignoring their
  // errors), so no queued work touches memory after it is freed.
  void End() noexcept;
  ~RunStreams() { End(); }

 private:
  EventPtr Record(int lane);

  const StreamLanes* lanes_ = nullptr;
  bool active_ = false;
  bool profiling_ = false;
  bool synchronized_ = true;
  std::vector<int> slot_lane_;
  std::vector<EventPtr> slot_event_;
  std::vector<char> cross_read_;  // read by a stream other than its producer's
  std::vector<char> defer_free_;  // touched by queued work: freed when the run has synchronised
  std::vector<char> lane_used_;
  std::vector<ValuePtr> deferred_;
  std::vector<Span> spans_;
};

}  // namespace nxrt
