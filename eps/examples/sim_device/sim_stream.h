// sim_stream.h: SimDevice's streams and events (plugin ABI 13), for its asynchronous mode (EP
// option async=1).
//
// A real accelerator runs queued work on its own engines while the host goes on. SimDevice
// imitates that with a worker thread per stream: Compute and CopyTensorsAsync put a closure on
// the stream's queue and return; the worker runs the closures in order. An event is a marker in
// a queue: it completes when the worker reaches it. WaitEvent queues a closure that blocks the
// worker (never the host) until another stream's event completes.
//
// Errors in queued work (a kernel's Fail) are kept, and the stream's next Synchronize returns
// the first one: the host learns of them where a GPU runtime would report them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <thread>
#include <utility>

namespace sim {

// The completion of one marker: shared by the stream's queue and the NxEvent handed out.
class Completion {
 public:
  void Complete(uint64_t now_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    done_ns_ = now_ns;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  bool Done(uint64_t* ns) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ && ns != nullptr) *ns = done_ns_;
    return done_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  uint64_t done_ns_ = 0;
};

// The host's clock (Profiler_NowNs, ABI 6), so completion times line up with the host's events.
inline uint64_t NowNs() {
  return nxrt::ep::Host().version >= 6 ? nxrt::ep::Host().Profiler_NowNs() : 0;
}

struct Event {
  NxEvent base;  // first member: the host sees an NxEvent*
  std::shared_ptr<Completion> completion;
};

// A stream: `base` comes first, so the host's NxStream* is the Stream*.
class Stream {
 public:
  NxStream base{};

  Stream() : worker_([this] { Work(); }) {
    base.version = NXRT_EP_API_VERSION;
    base.RecordEvent = [](NxStream* self, NxEvent** event) {
      return nxrt::ep::Guard([&] { *event = &Of(self)->Record()->base; });
    };
    base.WaitEvent = [](NxStream* self, NxEvent* event) {
      return nxrt::ep::Guard([&] {
        std::shared_ptr<Completion> c = reinterpret_cast<Event*>(event)->completion;
        Of(self)->Enqueue([c] { c->Wait(); });
      });
    };
    base.Synchronize = [](NxStream* self) { return Of(self)->Synchronize(); };
    base.Release = &ReleaseStream;
  }
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    worker_.join();
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The Stream behind a stream handle the host passes back; nullptr for any other handle
  // (another EP's stream, or none).
  static Stream* FromHandle(NxStream* handle) {
    return handle != nullptr && handle->Release == &ReleaseStream ? Of(handle) : nullptr;
  }

  // Queues `work`; it runs on the worker after everything queued before it.
  void Enqueue(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    cv_.notify_all();
  }

 private:
  static Stream* Of(NxStream* s) { return reinterpret_cast<Stream*>(s); }
  static void ReleaseStream(NxStream* self) { delete Of(self); }

  Event* Record() {
    auto event = std::make_unique<Event>();
    event->completion = std::make_shared<Completion>();
    event->base.version = NXRT_EP_API_VERSION;
    event->base.Synchronize = [](NxEvent* self) {
      reinterpret_cast<Event*>(self)->completion->Wait();
      return static_cast<NxStatus*>(nullptr);  // errors surface at the stream's Synchronize
    };
    event->base.GetCompletionTime = [](const NxEvent* self, uint64_t* ns) {
      return reinterpret_cast<const Event*>(self)->completion->Done(ns);
    };
    event->base.Release = [](NxEvent* self) { delete reinterpret_cast<Event*>(self); };
    std::shared_ptr<Completion> c = event->completion;
    Enqueue([c] { c->Complete(NowNs()); });
    return event.release();
  }

  NxStatus* Synchronize() {
    std::shared_ptr<Completion> c = std::make_shared<Completion>();
    Enqueue([c] { c->Complete(NowNs()); });
    c->Wait();
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty()) return nullptr;
    NxStatus* status = nxrt::ep::Host().CreateStatus(error_code_, error_.c_str());
    error_.clear();
    return status;
  }

  void Work() {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      NxStatusCode code = NX_FAIL;
      std::string message;
      try {
        work();
        continue;
      } catch (const nxrt::ep::Error& e) {
        code = e.code();
        message = e.what();
      } catch (const std::exception& e) {
        message = e.what();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty()) {
        error_code_ = code;
        error_ = "SimDevice stream: " + message;
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  NxStatusCode error_code_ = NX_FAIL;
  std::string error_;   // the first error since the last Synchronize
  std::thread worker_;  // last: starts after everything it reads is constructed
};

// Runs `work` on the kernel's stream when it has a SimDevice stream (asynchronous mode), else
// now. `work` must capture what it needs by value: Compute returns before it runs.
inline void RunOn(NxStream* stream, std::function<void()> work) {
  if (Stream* s = Stream::FromHandle(stream)) {
    s->Enqueue(std::move(work));
    return;
  }
  work();
}

}  // namespace sim
