// Profiling: a session that was given a profile file records timed events (its creation steps,
// every run, node and copy, and the events EPs add through the kernel context) and writes them
// as Chrome trace JSON (chrome://tracing, https://ui.perfetto.dev) when profiling ends.
// See docs/profiling.md for the format.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/key_values.h"
#include "base/value.h"

namespace nxrt {

// One complete event ("ph":"X"): [begin_ns, end_ns] on Profiler::NowNs.
struct ProfileEvent {
  std::string name;
  std::string cat;  // "session", "node", "copy", "ep" or "stream"
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t tid = 0;  // Profiler::ThreadId of the recording thread
  KeyValues args;
};

// A thread-safe recorder of one session's events. Shared by the session and its control-flow
// bodies; recording stops at End().
class Profiler {
 public:
  // Events go to `path` at End(). The file is opened now (created if missing, left unchanged
  // otherwise) so that a path that cannot be written fails session creation, not the last step.
  explicit Profiler(std::string path);
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // The steady clock events are measured on, in nanoseconds (NxHostApi::Profiler_NowNs).
  static uint64_t NowNs();
  // A small number naming the calling thread in the trace (1, 2, ... in order of first use).
  static uint32_t ThreadId();

  const std::string& path() const { return path_; }
  // Whether events are still recorded (until End()).
  bool active() const { return active_.load(std::memory_order_acquire); }

  // Records `event` (dropped once profiling ended). Thread-safe.
  void Add(ProfileEvent event);
  // A session-level event (cat "session") on the calling thread, e.g. "compile" around an EP's
  // CompileGroup: begin/end from NowNs().
  void AddSessionEvent(std::string name, uint64_t begin_ns, uint64_t end_ns, KeyValues args = {});
  // Names the trace track `tid` (default "thread <tid>"), e.g. a stream's executed spans.
  void NameTrack(uint32_t tid, std::string name);
  // An entry of the trace's "otherData" (e.g. "model"); the last value set for a key wins.
  void SetMetadata(const std::string& key, std::string value);

  // The index of a new run of the main graph (0, 1, ...).
  uint64_t NextRun() { return runs_.fetch_add(1, std::memory_order_relaxed); }

  // Stops recording and writes the trace to path(). Returns the number of complete ("X")
  // events written. Throws Error (NX_FAIL) when the file cannot be written, and
  // (NX_INVALID_ARGUMENT) when profiling ended already; recording stops in both cases.
  size_t End();

  // The trace as it would be written now (for tests and End()).
  std::string ToJson() const;
  size_t event_count() const;

 private:
  std::string path_;
  uint64_t created_ns_ = 0;
  std::atomic<bool> active_{true};
  std::atomic<uint64_t> runs_{0};
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
  KeyValues metadata_;
  std::map<uint32_t, std::string> track_names_;
};

// Times one session-level step: the event covers construction (or the last Next) to End(),
// Next() or destruction. Does nothing at all with a null profiler.
class ProfileScope {
 public:
  ProfileScope(Profiler* profiler, std::string name, KeyValues args = {});
  ~ProfileScope() {
    try {
      End();
    } catch (...) {  // out of memory while recording: lose the event
    }
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
  // Ends the current event and starts `name`.
  void Next(std::string name, KeyValues args = {});
  void End();

 private:
  Profiler* profiler_;
  std::string name_;
  KeyValues args_;
  uint64_t begin_ns_ = 0;
  bool open_ = false;
};

// What the executor knows about the run it is profiling; one per Session::Execute, on its
// stack. Kernels reach it through NxKernelContext::profile; a control-flow body's Execute finds
// its enclosing run through `current` (bodies run inside their node's Compute, on its thread).
struct ProfiledRun {
  Profiler* profiler = nullptr;
  uint64_t run = 0;
  bool run_known = true;  // false for a body run outside any profiled run (not expected)
  std::string parent;     // the control-flow node whose body this run is ("" = main graph)
  // The node computing now and its EP (valid during its Compute).
  const std::string* node = nullptr;
  const std::string* ep = nullptr;

  // The innermost profiled Execute of this thread, or null.
  static thread_local ProfiledRun* current;
};

// "[1,3,224,224]" for a tensor, "sequence(n)" for a sequence, an optional's contents, and
// "none" for an omitted input or an empty optional.
std::string ProfileShape(const Value* value);

}  // namespace nxrt
