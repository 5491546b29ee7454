#include "base/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "base/error.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {
namespace {

// Appends `s` as a JSON string: quotes, backslashes and control characters escaped; bytes that
// are not valid UTF-8 become U+FFFD (node names come from the model file).
void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: copy it when well formed (no overlongs, surrogates or > U+10FFFF).
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok) {
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

// Microseconds with nanosecond precision, as Chrome trace "ts"/"dur" expect.
void AppendMicros(std::string& out, uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03u", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned>(ns % 1000));
  out += buf;
}

void AppendArgs(std::string& out, const KeyValues& args) {
  out += "{";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out += ",";
    AppendJsonString(out, args[i].first);
    out += ":";
    AppendJsonString(out, args[i].second);
  }
  out += "}";
}

std::atomic<uint32_t> g_next_thread_id{1};

}  // namespace

thread_local ProfiledRun* ProfiledRun::current = nullptr;

uint64_t Profiler::NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint32_t Profiler::ThreadId() {
  thread_local const uint32_t id = g_next_thread_id.fetch_add(1, std::memory_order_relaxed);
  return id;
}

Profiler::Profiler(std::string path) : path_(std::move(path)), created_ns_(NowNs()) {
  NXRT_CHECK(!path_.empty(), NX_INVALID_ARGUMENT, "the profile file path is empty");
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) {
    const int err = errno;
    Throw(NX_INVALID_ARGUMENT,
          "cannot write the profile file '" + path_ + "': " + std::strerror(err));
  }
  std::fclose(f);
}

void Profiler::Add(ProfileEvent event) {
  if (event.end_ns < event.begin_ns) event.end_ns = event.begin_ns;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return;
  events_.push_back(std::move(event));
}

void Profiler::AddSessionEvent(std::string name, uint64_t begin_ns, uint64_t end_ns,
                               KeyValues args) {
  Add(ProfileEvent{std::move(name), "session", begin_ns, end_ns, ThreadId(), std::move(args)});
}

void Profiler::NameTrack(uint32_t tid, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  track_names_[tid] = std::move(name);
}

void Profiler::SetMetadata(const std::string& key, std::string value) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

size_t Profiler::event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

std::string Profiler::ToJson() const {
  std::vector<ProfileEvent> events;
  KeyValues metadata;
  std::map<uint32_t, std::string> track_names;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events = events_;
    metadata = metadata_;
    track_names = track_names_;
  }
  // Time 0 is the session's start: its earliest event (the model load, timed before the
  // session existed) or the profiler's creation.
  uint64_t origin = created_ns_;
  for (const ProfileEvent& e : events) origin = std::min(origin, e.begin_ns);
  // By start time; an enclosing event before the events it contains.
  std::stable_sort(events.begin(), events.end(), [](const ProfileEvent& a, const ProfileEvent& b) {
    if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
    return a.end_ns > b.end_ns;
  });
  const std::string pid = std::to_string(static_cast<long long>(::getpid()));
  std::set<uint32_t> tids;
  for (const ProfileEvent& e : events) tids.insert(e.tid);

  std::string out;
  out.reserve(256 + events.size() * 256);
  out += "{\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":\"nxrt session\"}}";
  for (uint32_t tid : tids) {
    const auto named = track_names.find(tid);
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
           ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":";
    AppendJsonString(out,
                     named != track_names.end() ? named->second : "thread " + std::to_string(tid));
    out += "}}";
  }
  for (const ProfileEvent& e : events) {
    out += ",\n{\"name\":";
    AppendJsonString(out, e.name);
    out += ",\"cat\":";
    AppendJsonString(out, e.cat);
    out += ",\"ph\":\"X\",\"ts\":";
    AppendMicros(out, e.begin_ns - origin);
    out += ",\"dur\":";
    AppendMicros(out, e.end_ns - e.begin_ns);
    out += ",\"pid\":" + pid + ",\"tid\":" + std::to_string(e.tid) + ",\"args\":";
    AppendArgs(out, e.args);
    out += "}";
  }
  out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":";
  KeyValues other = {{"producer", "nxrt"},
                     {"ep_api_version", std::to_string(NXRT_EP_API_VERSION)},
                     {"clock", "steady_clock"},
                     {"start_ns", std::to_string(origin)},
                     {"runs", std::to_string(runs_.load(std::memory_order_relaxed))},
                     {"events", std::to_string(events.size())}};
  for (auto& kv : metadata) other.push_back(std::move(kv));
  AppendArgs(out, other);
  out += "}\n";
  return out;
}

size_t Profiler::End() {
  NXRT_CHECK(active_.exchange(false, std::memory_order_acq_rel), NX_INVALID_ARGUMENT,
             "profiling of this session ended already");
  const std::string json = ToJson();
  size_t count = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    count = events_.size();
  }
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  if (f == nullptr) {
    const int err = errno;
    Throw(NX_FAIL, "cannot write the profile file '" + path_ + "': " + std::strerror(err));
  }
  const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int write_err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    Throw(NX_FAIL, "cannot write the profile file '" + path_ +
                       "': " + std::strerror(written ? errno : write_err));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  events_.shrink_to_fit();
  return count;
}

ProfileScope::ProfileScope(Profiler* profiler, std::string name, KeyValues args)
    : profiler_(profiler) {
  if (profiler_ == nullptr) return;
  name_ = std::move(name);
  args_ = std::move(args);
  begin_ns_ = Profiler::NowNs();
  open_ = true;
}

void ProfileScope::Next(std::string name, KeyValues args) {
  if (profiler_ == nullptr) return;
  End();
  name_ = std::move(name);
  args_ = std::move(args);
  begin_ns_ = Profiler::NowNs();
  open_ = true;
}

void ProfileScope::End() {
  if (!open_) return;
  open_ = false;
  profiler_->AddSessionEvent(std::move(name_), begin_ns_, Profiler::NowNs(), std::move(args_));
}

std::string ProfileShape(const Value* v) {
  if (v == nullptr) return "none";
  if (v->kind == NX_VALUE_SEQUENCE) return "sequence(" + std::to_string(v->elements.size()) + ")";
  if (v->kind == NX_VALUE_OPTIONAL) return v->contained ? ProfileShape(v->contained.get()) : "none";
  return ShapeString(v->dims);
}

}  // namespace nxrt
