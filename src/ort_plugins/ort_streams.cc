// Streams of stream-aware onnxruntime plugins (OrtEpFactory::IsStreamAware): nxrt's streams
// (NxEp::CreateStream, version 13) are the plugin's OrtSyncStreamImpl, its events the plugin's
// notifications, and copies to and from its memory go through its data transfer on those
// streams, so kernels queue device work and return, as under onnxruntime.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_wrapped_ep.h"
#include "plugins/host_objects.h"

// What a plugin's stream is to the host: its OrtSyncStreamImpl plus the sync ids onnxruntime
// keeps (a notification activated on the stream counts one up; a wait remembers the producer's).
struct OrtSyncStream {
  OrtSyncStreamImpl* impl = nullptr;
  nxrt::ort::WrappedFactory* factory = nullptr;
  std::atomic<uint64_t> sync_id{0};
  std::mutex mutex;
  std::map<const OrtSyncStream*, uint64_t> waited;  // producer -> last sync id waited for
};

namespace nxrt::ort {
namespace {

struct Stream : NxStream {
  OrtSyncStream ort;
};
struct Event : NxEvent {
  WrappedFactory* factory = nullptr;
  OrtSyncNotificationImpl* notification = nullptr;
  OrtSyncStream* producer = nullptr;
  uint64_t sync_id = 0;
};

NxStatus* EventSynchronize(NxEvent* self) {
  auto* e = static_cast<Event*>(self);
  return CatchAsStatus([&] {
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(e->factory->calls.get());
      status = e->notification->WaitOnHost(e->notification);
    }
    ThrowIfOrtStatus(status, e->factory->Context("OrtSyncNotificationImpl::WaitOnHost failed"));
  });
}
void EventRelease(NxEvent* self) {
  auto* e = static_cast<Event*>(self);
  if (e->notification->Release != nullptr) {
    LibraryScope scope(e->factory->calls.get());
    e->notification->Release(e->notification);
  }
  delete e;
}

// A notification activated now on `s`: complete once the work queued before it is.
OrtSyncNotificationImpl* Notify(OrtSyncStream& s) {
  OrtSyncNotificationImpl* n = nullptr;
  OrtStatus* status = nullptr;
  {
    LibraryScope scope(s.factory->calls.get());
    status = s.impl->CreateNotification(s.impl, &n);
  }
  ThrowIfOrtStatus(status, s.factory->Context("OrtSyncStreamImpl::CreateNotification failed"));
  NXRT_CHECK(n != nullptr && n->Activate && n->WaitOnDevice && n->WaitOnHost && n->Release,
             NX_INVALID_PLUGIN,
             s.factory->Context("CreateNotification returned an incomplete notification"));
  {
    LibraryScope scope(s.factory->calls.get());
    status = n->Activate(n);
  }
  if (status != nullptr) {
    LibraryScope scope(s.factory->calls.get());
    n->Release(n);
  }
  ThrowIfOrtStatus(status, s.factory->Context("OrtSyncNotificationImpl::Activate failed"));
  s.sync_id.fetch_add(1);
  return n;
}

NxStatus* StreamRecordEvent(NxStream* self, NxEvent** out) {
  auto* s = static_cast<Stream*>(self);
  *out = nullptr;
  return CatchAsStatus([&] {
    auto e = std::make_unique<Event>();
    NxEvent& nx = *e;
    nx = NxEvent{};
    nx.version = NXRT_EP_API_VERSION;
    nx.Synchronize = &EventSynchronize;
    nx.Release = &EventRelease;
    e->factory = s->ort.factory;
    e->producer = &s->ort;
    e->notification = Notify(s->ort);
    e->sync_id = s->ort.sync_id.load();
    *out = e.release();
  });
}

NxStatus* StreamWaitEvent(NxStream* self, NxEvent* event) {
  auto* s = static_cast<Stream*>(self);
  auto* e = static_cast<Event*>(event);
  return CatchAsStatus([&] {
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(s->ort.factory->calls.get());
      status = e->notification->WaitOnDevice(e->notification, &s->ort);
    }
    ThrowIfOrtStatus(status,
                     s->ort.factory->Context("OrtSyncNotificationImpl::WaitOnDevice failed"));
    std::lock_guard<std::mutex> lock(s->ort.mutex);
    s->ort.waited[e->producer] = e->sync_id;
  });
}

// Everything queued so far done: the host calls it at the end of a run, so the plugin also hears
// OnSessionRunEnd (where onnxruntime's CUDA EP, for one, frees what the run kept alive).
NxStatus* StreamSynchronize(NxStream* self) {
  auto* s = static_cast<Stream*>(self);
  return CatchAsStatus([&] {
    OrtSyncStream& o = s->ort;
    OrtStatus* status = nullptr;
    if (o.impl->Flush != nullptr) {
      LibraryScope scope(o.factory->calls.get());
      status = o.impl->Flush(o.impl);
    }
    ThrowIfOrtStatus(status, o.factory->Context("OrtSyncStreamImpl::Flush failed"));
    OrtSyncNotificationImpl* n = Notify(o);
    {
      LibraryScope scope(o.factory->calls.get());
      status = n->WaitOnHost(n);
      n->Release(n);
    }
    ThrowIfOrtStatus(status, o.factory->Context("OrtSyncNotificationImpl::WaitOnHost failed"));
    if (o.impl->OnSessionRunEnd != nullptr) {
      LibraryScope scope(o.factory->calls.get());
      status = o.impl->OnSessionRunEnd(o.impl);
    }
    ThrowIfOrtStatus(status, o.factory->Context("OrtSyncStreamImpl::OnSessionRunEnd failed"));
  });
}

void StreamRelease(NxStream* self) {
  auto* s = static_cast<Stream*>(self);
  if (s->ort.impl->Release != nullptr) {
    LibraryScope scope(s->ort.factory->calls.get());
    s->ort.impl->Release(s->ort.impl);
  }
  delete s;
}

// The plugin's stream behind an nxrt stream, or null for a stream of another kind.
OrtSyncStream* AsOrtStream(NxStream* stream) {
  if (stream == nullptr || stream->Release != &StreamRelease) return nullptr;
  return &static_cast<Stream*>(stream)->ort;
}

// ---- OrtApi / OrtEpApi slots --------------------------------------------------------------------

void* SyncStreamGetHandle(OrtSyncStream* s) {
  if (s == nullptr || s->impl->GetHandle == nullptr) return nullptr;
  return s->impl->GetHandle(s->impl);
}
const OrtSyncStreamImpl* SyncStreamGetImpl(const OrtSyncStream* s) { return s ? s->impl : nullptr; }
uint64_t SyncStreamGetSyncId(const OrtSyncStream* s) { return s ? s->sync_id.load() : 0; }
uint64_t GetSyncIdForLastWait(const OrtSyncStream* producer, const OrtSyncStream* consumer) {
  if (producer == nullptr || consumer == nullptr) return 0;
  auto* c = const_cast<OrtSyncStream*>(consumer);
  std::lock_guard<std::mutex> lock(c->mutex);
  auto it = c->waited.find(producer);
  return it == c->waited.end() ? 0 : it->second;
}
OrtStatus* KernelContextGetGPUComputeStream(const OrtKernelContext* c, void** out) {
  if (!c || !out) return NullArgument("KernelContext_GetGPUComputeStream");
  OrtSyncStream* s = AsOrtStream(GetHostApi()->KernelContext_GetStream(c->nx));
  *out = s ? SyncStreamGetHandle(s) : nullptr;
  return nullptr;
}

}  // namespace

bool IsStreamAware(const WrappedFactory& w) {
  if (w.ort->ort_version_supported < 23 || w.ort->IsStreamAware == nullptr) return false;
  LibraryScope scope(w.calls.get());
  return w.ort->IsStreamAware(w.ort);
}

NxStatus* CreatePluginStream(WrappedEp& ep, const NxHardwareDevice* device, NxStream** out) {
  *out = nullptr;
  return CatchAsStatus([&] {
    WrappedFactory& w = *ep.factory;
    if (!IsStreamAware(w)) return;
    const OrtMemoryDevice* memory = nullptr;
    for (const auto& m : w.device_memories)
      if (m->device->device == device) memory = &m->ort->device;
    if (memory == nullptr) return;  // host memory: nothing to queue
    OrtSyncStreamImpl* impl = nullptr;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(w.calls.get());
      if (ep.ort->CreateSyncStreamForDevice != nullptr)
        status = ep.ort->CreateSyncStreamForDevice(ep.ort, memory, &impl);
      else if (w.ort->CreateSyncStreamForDevice != nullptr)
        status = w.ort->CreateSyncStreamForDevice(w.ort, memory, nullptr, &impl);
    }
    ThrowIfOrtStatus(status, w.Context("CreateSyncStreamForDevice failed"));
    if (impl == nullptr) return;
    if (impl->CreateNotification == nullptr || impl->Release == nullptr) {
      if (impl->Release != nullptr) {
        LibraryScope scope(w.calls.get());
        impl->Release(impl);
      }
      Throw(NX_INVALID_PLUGIN,
            w.Context("CreateSyncStreamForDevice returned a stream without CreateNotification "
                      "or Release"));
    }
    auto s = std::make_unique<Stream>();
    NxStream& nx = *s;
    nx = NxStream{};
    nx.version = NXRT_EP_API_VERSION;
    nx.RecordEvent = &StreamRecordEvent;
    nx.WaitEvent = &StreamWaitEvent;
    nx.Synchronize = &StreamSynchronize;
    nx.Release = &StreamRelease;
    s->ort.impl = impl;
    s->ort.factory = &w;
    *out = s.release();
  });
}

OrtSyncStream* PluginStreamOf(NxStream* stream) { return AsOrtStream(stream); }

void InstallStreamApi(OrtApi& api, OrtEpApi& ep_api) {
  api.SyncStream_GetHandle = Slot(&SyncStreamGetHandle);
  api.KernelContext_GetGPUComputeStream = Slot(&KernelContextGetGPUComputeStream);
  ep_api.SyncStream_GetImpl = Slot(&SyncStreamGetImpl);
  ep_api.SyncStream_GetSyncId = Slot(&SyncStreamGetSyncId);
  ep_api.GetSyncIdForLastWaitOnSyncStream = Slot(&GetSyncIdForLastWait);
}

}  // namespace nxrt::ort
