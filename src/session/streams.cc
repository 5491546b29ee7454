#include "session/streams.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "base/error.h"
#include "base/memory_info.h"
#include "base/status_registry.h"
#include "plugins/ep_library.h"
#include "session/ep_instance.h"

namespace nxrt {
namespace {

const char* KindName(LaneKind kind) {
  switch (kind) {
    case LaneKind::kKernels:
      return "kernels";
    case LaneKind::kToDevice:
      return "to-device";
    case LaneKind::kFromDevice:
      return "from-device";
  }
  return "?";
}

// Forgets a status (an error while cleaning up, or after the first one was kept).
void ReleaseStatus(NxStatus* status) {
  NxStatusCode code = NX_FAIL;
  std::string message;
  (void)TakeStatus(status, code, message);
}

// Profile tracks of streams sit far above the thread ids (1, 2, ...) so the two never meet.
uint32_t NextTrack() {
  static std::atomic<uint32_t> next{1u << 20};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

bool StreamLanes::HasStreams(const EpInstance& ep) {
  return ep.raw() != nullptr && ep.raw()->version >= 13 && ep.raw()->CreateStream != nullptr;
}

bool StreamLanes::CopiesAsync(const EpInstance& ep, const NxMemoryInfo* src,
                              const NxMemoryInfo* dst) {
  const NxDataTransfer* t = ep.factory().transfer;
  return HasStreams(ep) && t != nullptr && t->version >= 13 && t->CopyTensorsAsync != nullptr &&
         t->CanCopy(t, src != nullptr ? src : HostMemory(), dst != nullptr ? dst : HostMemory());
}

int StreamLanes::Get(const EpInstance& ep, const NxHardwareDevice* device, LaneKind kind) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& l = lanes_[i];
    if (l.ep == &ep && l.device == device && l.kind == kind)
      return l.stream != nullptr ? static_cast<int>(i) : -1;
  }
  NxStream* stream = nullptr;
  ThrowIfStatus(ep.raw()->CreateStream(ep.raw(), device, &stream),
                "EP '" + ep.name() + "' could not create a stream");
  if (stream != nullptr && !(stream->version >= 13 && stream->RecordEvent && stream->WaitEvent &&
                             stream->Synchronize && stream->Release)) {
    throw Error(NX_INVALID_PLUGIN,
                "EP '" + ep.name() + "' made a stream without its version 13 functions");
  }
  char id[16] = "";
  if (device != nullptr) std::snprintf(id, sizeof id, "0x%04x", device->device_id);
  Lane lane{stream,        &ep,
            &ep.factory(), device,
            kind,          ep.name() + ":" + (device != nullptr ? id : "ep") + ":" + KindName(kind),
            NextTrack()};
  try {
    lanes_.push_back(std::move(lane));
  } catch (...) {
    stream->Release(stream);
    throw;
  }
  return stream != nullptr ? static_cast<int>(lanes_.size() - 1) : -1;
}

int StreamLanes::Find(const EpInstance& ep, const NxHardwareDevice* device, LaneKind kind) const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& l = lanes_[i];
    if (l.ep == &ep && l.device == device && l.kind == kind && l.stream != nullptr)
      return static_cast<int>(i);
  }
  return -1;
}

void StreamLanes::QueueCopy(int index, const Value& src, Value& dst,
                            const std::string& value) const {
  const Lane& l = lane(index);
  NxDataTransfer* t = l.factory->transfer;
  const NxValue* from = &src;
  NxValue* to = &dst;
  ThrowIfStatus(
      t->CopyTensorsAsync(t, &from, &to, 1, l.stream),
      "EP '" + l.factory->name + "' could not queue a copy of '" + value + "' on stream " + l.name);
}

size_t StreamLanes::streams() const {
  size_t n = 0;
  for (const Lane& l : lanes_) n += l.stream != nullptr ? 1 : 0;
  return n;
}

StreamLanes::~StreamLanes() {
  for (Lane& l : lanes_) {
    if (l.stream == nullptr) continue;
    if (NxStatus* status = l.stream->Synchronize(l.stream)) ReleaseStatus(status);
    l.stream->Release(l.stream);
  }
}

// ---- one run ----

void RunStreams::Begin(const StreamLanes* lanes, size_t num_slots, bool profiling) {
  lanes_ = lanes;
  active_ = lanes != nullptr && lanes->streams() > 0;
  if (!active_) return;
  profiling_ = profiling;
  synchronized_ = false;
  slot_lane_.assign(num_slots, -1);
  slot_event_.assign(num_slots, nullptr);
  cross_read_.assign(num_slots, 0);
  defer_free_.assign(num_slots, 0);
  lane_used_.assign(lanes->size(), 0);
}

EventPtr RunStreams::Record(int lane) {
  NxStream* stream = lanes_->lane(lane).stream;
  NxEvent* event = nullptr;
  ThrowIfStatus(stream->RecordEvent(stream, &event),
                "stream " + lanes_->lane(lane).name + " could not record an event");
  NXRT_CHECK(event != nullptr && event->Synchronize != nullptr && event->Release != nullptr,
             NX_INVALID_PLUGIN, "stream " + lanes_->lane(lane).name + " recorded no usable event");
  return EventPtr(event, [](NxEvent* e) { e->Release(e); });
}

void RunStreams::BeforeRead(int slot, int lane, bool in_host_memory) {
  if (!active_ || slot < 0) return;
  const size_t s = static_cast<size_t>(slot);
  const int producer = slot_lane_[s];
  if (lane >= 0 && producer != lane) cross_read_[s] = 1;
  if (lane >= 0) defer_free_[s] = 1;
  if (producer < 0) return;                         // done on the host already
  if (producer == lane && !in_host_memory) return;  // the stream's own order suffices
  EventPtr& event = slot_event_[s];
  if (!event) event = Record(producer);
  const StreamLanes::Lane& from = lanes_->lane(producer);
  if (lane >= 0 && !in_host_memory && lanes_->lane(lane).ep == from.ep) {
    NxStream* stream = lanes_->lane(lane).stream;
    ThrowIfStatus(stream->WaitEvent(stream, event.get()),
                  "stream " + lanes_->lane(lane).name + " could not wait for " + from.name);
    return;
  }
  // The host (or a kernel that reads host memory in Compute, or another EP) needs the value
  // now: wait for this one event, not for the whole stream.
  ThrowIfStatus(event->Synchronize(event.get()), "queued work on stream " + from.name + " failed");
  slot_lane_[s] = -1;  // complete: later readers need not wait again
}

void RunStreams::AfterStep(int lane, const std::vector<int>& slots, bool needed, std::string name,
                           const char* category, uint64_t queued_ns, EventPtr start) {
  if (!active_ || lane < 0) return;
  lane_used_[static_cast<size_t>(lane)] = 1;
  if (!needed && !profiling_) return;
  EventPtr event = Record(lane);
  if (needed)
    for (int slot : slots)
      if (slot >= 0) slot_event_[static_cast<size_t>(slot)] = event;
  if (profiling_)
    spans_.push_back(Span{std::move(name), category, lane, queued_ns, std::move(start), event});
}

void RunStreams::Release(int slot, ValuePtr& value) {
  if (active_ && defer_free_[static_cast<size_t>(slot)] && value) {
    deferred_.push_back(std::move(value));
    return;
  }
  value.reset();
}

void RunStreams::SynchronizeAll() {
  if (!active_ || synchronized_) return;
  NxStatus* first = nullptr;
  std::string failed;
  for (size_t l = 0; l < lane_used_.size(); ++l) {
    if (!lane_used_[l]) continue;
    NxStream* stream = lanes_->lane(static_cast<int>(l)).stream;
    NxStatus* status = stream->Synchronize(stream);
    if (status != nullptr && first == nullptr) {
      first = status;
      failed = lanes_->lane(static_cast<int>(l)).name;
    } else if (status != nullptr) {
      ReleaseStatus(status);
    }
  }
  synchronized_ = true;
  deferred_.clear();
  std::fill(slot_lane_.begin(), slot_lane_.end(), -1);
  ThrowIfStatus(first, "queued work on stream " + failed + " failed");
}

void RunStreams::End() noexcept {
  if (!active_) return;
  if (!synchronized_) {
    for (size_t l = 0; l < lane_used_.size(); ++l) {
      if (!lane_used_[l]) continue;
      NxStream* stream = lanes_->lane(static_cast<int>(l)).stream;
      if (NxStatus* status = stream->Synchronize(stream)) ReleaseStatus(status);
    }
    synchronized_ = true;
  }
  deferred_.clear();
  spans_.clear();
  slot_event_.clear();
  active_ = false;
}

}  // namespace nxrt
