// Device memory of onnxruntime plugin EPs. An EP device whose EpDevice_AddAllocatorInfo names a
// memory the host cannot read (a GPU's, an NPU's) computes there: the wrapped factory names that
// memory per hardware device (NxEpFactory::GetDeviceMemoryInfo), and nxrt allocates it with the
// plugin's OrtEpFactory::CreateAllocator and moves values in and out with its
// OrtDataTransferImpl, as onnxruntime does.
#include <memory>
#include <mutex>

#include "base/error.h"
#include "base/memory_info.h"
#include "base/value.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_wrapped_ep.h"
#include "ort_plugins/ort_wrapped_factory.h"
#include "plugins/host_objects.h"

namespace nxrt::ort {
namespace {

WrappedFactory* W(NxEpFactory* f) { return static_cast<WrappedFactory*>(f); }
const WrappedFactory* W(const NxEpFactory* f) { return static_cast<const WrappedFactory*>(f); }

// Whether the plugin's factory has the level-23 memory functions.
bool HasMemoryFunctions(const WrappedFactory& w) { return w.ort->ort_version_supported >= 23; }

const NxMemoryInfo* GetDeviceMemoryInfo(const NxEpFactory* self, const NxHardwareDevice* device) {
  for (const auto& m : W(self)->device_memories)
    if (m->device->device == device) return &m->nx;
  return nullptr;
}

// ---- Allocators ---------------------------------------------------------------------------------

struct WrappedAllocator : NxAllocator {
  WrappedFactory* factory = nullptr;
  OrtAllocator* ort = nullptr;
  const NxMemoryInfo* memory = nullptr;
};
void* AllocatorAlloc(NxAllocator* self, size_t size) {
  auto* a = static_cast<WrappedAllocator*>(self);
  LibraryScope scope(a->factory->calls.get());
  return a->ort->Alloc(a->ort, size);
}
void AllocatorFree(NxAllocator* self, void* block) {
  if (block == nullptr) return;
  auto* a = static_cast<WrappedAllocator*>(self);
  LibraryScope scope(a->factory->calls.get());
  a->ort->Free(a->ort, block);
}
const NxMemoryInfo* AllocatorMemory(const NxAllocator* self) {
  return static_cast<const WrappedAllocator*>(self)->memory;
}
void AllocatorRelease(NxAllocator* self) {
  auto* a = static_cast<WrappedAllocator*>(self);
  if (a->factory->ort->ReleaseAllocator != nullptr) {
    LibraryScope scope(a->factory->calls.get());
    a->factory->ort->ReleaseAllocator(a->factory->ort, a->ort);
  }
  delete a;
}

// The plugin's allocator of `memory` (one of its EP devices' memories), checked; `found` is that
// memory's entry. Both nxrt's arenas and kernels that ask for an allocator get theirs here.
OrtAllocator* NewPluginAllocator(WrappedFactory& w, const NxMemoryInfo* memory,
                                 const WrappedFactory::DeviceMemory** found) {
  *found = nullptr;
  for (const auto& m : w.device_memories)
    if (memory != nullptr && SameMemory(&m->nx, memory)) *found = m.get();
  NXRT_CHECK(*found != nullptr, NX_INVALID_ARGUMENT,
             w.Context("was asked for an allocator of a memory none of its EP devices has"));
  NXRT_CHECK(HasMemoryFunctions(w) && w.ort->CreateAllocator != nullptr, NX_INVALID_PLUGIN,
             w.Context("names device memory but has no OrtEpFactory::CreateAllocator"));
  OrtAllocator* ort = nullptr;
  OrtStatus* status = nullptr;
  {
    LibraryScope scope(w.calls.get());
    status = w.ort->CreateAllocator(w.ort, (*found)->ort, nullptr, &ort);
  }
  ThrowIfOrtStatus(status, w.Context("CreateAllocator failed"));
  NXRT_CHECK(ort != nullptr, NX_INVALID_PLUGIN, w.Context("CreateAllocator returned none"));
  if (ort->Alloc == nullptr || ort->Free == nullptr) {
    if (w.ort->ReleaseAllocator != nullptr) {
      LibraryScope scope(w.calls.get());
      w.ort->ReleaseAllocator(w.ort, ort);
    }
    Throw(NX_INVALID_PLUGIN, w.Context("CreateAllocator returned one without Alloc or Free"));
  }
  return ort;
}

NxStatus* CreateAllocator(NxEpFactory* self, const NxMemoryInfo* memory, NxAllocator** out) {
  WrappedFactory* w = W(self);
  *out = nullptr;
  return CatchAsStatus([&] {
    const WrappedFactory::DeviceMemory* found = nullptr;
    OrtAllocator* ort = NewPluginAllocator(*w, memory, &found);
    auto a = std::make_unique<WrappedAllocator>();
    NxAllocator& nx = *a;
    nx = NxAllocator{};
    nx.version = NXRT_EP_API_VERSION;
    nx.Alloc = &AllocatorAlloc;
    nx.Free = &AllocatorFree;
    nx.GetMemoryInfo = &AllocatorMemory;
    nx.Release = &AllocatorRelease;
    a->factory = w;
    a->ort = ort;
    a->memory = &found->nx;
    *out = a.release();
  });
}

// ---- Data transfer
// --------------------------------------------------------------------------------

struct WrappedTransfer : NxDataTransfer {
  WrappedFactory* factory = nullptr;
  OrtDataTransferImpl* ort = nullptr;
};
bool TransferCanCopy(const NxDataTransfer* self, const NxMemoryInfo* src, const NxMemoryInfo* dst) {
  auto* t = static_cast<const WrappedTransfer*>(self);
  LibraryScope scope(t->factory->calls.get());
  return t->ort->CanCopy(t->ort, &OrtMemoryInfoFor(src)->device, &OrtMemoryInfoFor(dst)->device);
}
NxStatus* CopyOn(WrappedTransfer* t, const NxValue* const* src, NxValue* const* dst, size_t count,
                 OrtSyncStream* stream) {
  return CatchAsStatus([&] {
    std::vector<const OrtValue*> from(count);
    std::vector<OrtValue*> to(count);
    for (size_t i = 0; i < count; ++i) {
      from[i] = reinterpret_cast<const OrtValue*>(src[i]);
      to[i] = reinterpret_cast<OrtValue*>(dst[i]);
    }
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(t->factory->calls.get());
      // Without a stream the copies are synchronous; with one the plugin queues them there.
      std::vector<OrtSyncStream*> streams(stream ? count : 0, stream);
      status = t->ort->CopyTensors(t->ort, from.data(), to.data(),
                                   stream ? streams.data() : nullptr, count);
    }
    ThrowIfOrtStatus(status, t->factory->Context("OrtDataTransferImpl::CopyTensors failed"));
  });
}
NxStatus* TransferCopy(NxDataTransfer* self, const NxValue* const* src, NxValue* const* dst,
                       size_t count) {
  return CopyOn(static_cast<WrappedTransfer*>(self), src, dst, count, nullptr);
}
NxStatus* TransferCopyAsync(NxDataTransfer* self, const NxValue* const* src, NxValue* const* dst,
                            size_t count, NxStream* stream) {
  return CopyOn(static_cast<WrappedTransfer*>(self), src, dst, count, PluginStreamOf(stream));
}
void TransferRelease(NxDataTransfer* self) {
  auto* t = static_cast<WrappedTransfer*>(self);
  if (t->ort->Release != nullptr) {
    LibraryScope scope(t->factory->calls.get());
    t->ort->Release(t->ort);
  }
  delete t;
}

NxStatus* CreateDataTransfer(NxEpFactory* self, NxDataTransfer** out) {
  WrappedFactory* w = W(self);
  *out = nullptr;
  return CatchAsStatus([&] {
    if (!HasMemoryFunctions(*w) || w->ort->CreateDataTransfer == nullptr) return;
    OrtDataTransferImpl* ort = nullptr;
    OrtStatus* status = nullptr;
    {
      LibraryScope scope(w->calls.get());
      status = w->ort->CreateDataTransfer(w->ort, &ort);
    }
    ThrowIfOrtStatus(status, w->Context("CreateDataTransfer failed"));
    if (ort == nullptr) return;  // the plugin has none
    if (ort->CanCopy == nullptr || ort->CopyTensors == nullptr) {
      if (ort->Release != nullptr) {
        LibraryScope scope(w->calls.get());
        ort->Release(ort);
      }
      Throw(NX_INVALID_PLUGIN,
            w->Context("CreateDataTransfer returned one without CanCopy or CopyTensors"));
    }
    auto t = std::make_unique<WrappedTransfer>();
    NxDataTransfer& nx = *t;
    nx = NxDataTransfer{};
    nx.version = 2;  // synchronous copies ...
    nx.CanCopy = &TransferCanCopy;
    nx.CopyTensors = &TransferCopy;
    nx.Release = &TransferRelease;
    if (IsStreamAware(*w)) {  // ... and, for a stream-aware plugin, copies on its streams
      nx.version = NXRT_EP_API_VERSION;
      nx.CopyTensorsAsync = &TransferCopyAsync;
    }
    t->factory = w;
    t->ort = ort;
    *out = t.release();
  });
}

}  // namespace

void CollectDeviceMemories(WrappedFactory& w) {
  w.device_memories.clear();
  for (const auto& d : w.ep_devices) {
    if (d->device_memory == nullptr) continue;
    auto m = std::make_unique<WrappedFactory::DeviceMemory>();
    m->device = d.get();
    m->ort = d->device_memory.get();
    m->nx = ToNxMemoryInfo(*m->ort);
    if (m->nx.kind != NX_MEMORY_DEVICE) continue;  // host memory: nothing to set up
    w.device_memories.push_back(std::move(m));
  }
}

OrtAllocator* DeviceAllocator(WrappedEp& ep, const NxMemoryInfo* memory) {
  std::lock_guard<std::mutex> lock(ep.mutex);
  auto it = ep.device_allocators.find(memory);
  if (it != ep.device_allocators.end()) return it->second;
  const WrappedFactory::DeviceMemory* found = nullptr;
  OrtAllocator* a = NewPluginAllocator(*ep.factory, memory, &found);
  ep.device_allocators[memory] = a;
  return a;
}

std::shared_ptr<NxValue> DeviceCopyOfWeight(WrappedEp& ep, const NxValue& weight,
                                            const NxMemoryInfo* memory) {
  OrtAllocator* a = DeviceAllocator(ep, memory);
  NxDataTransfer* transfer = nullptr;
  {
    std::lock_guard<std::mutex> lock(ep.mutex);
    if (ep.weight_transfer == nullptr) {
      ThrowIfStatus(CreateDataTransfer(ep.factory, &ep.weight_transfer),
                    ep.Context("data transfer for weights"));
      NXRT_CHECK(ep.weight_transfer != nullptr, NX_INVALID_PLUGIN,
                 ep.Context("has device memory but no OrtDataTransferImpl to copy weights there"));
    }
    transfer = ep.weight_transfer;
  }
  const size_t bytes = TensorBytes(weight);
  void* block = nullptr;
  {
    LibraryScope scope(ep.factory->calls.get());
    block = a->Alloc(a, bytes == 0 ? 1 : bytes);
  }
  NXRT_CHECK(block != nullptr, NX_OUT_OF_MEMORY,
             ep.Context("could not allocate " + std::to_string(bytes) + " bytes of " +
                        DescribeMemory(memory) + " for a weight"));
  auto copy = std::make_shared<NxValue>();
  copy->type = weight.type;
  copy->dims = weight.dims;
  copy->count = weight.count;
  copy->data = block;
  copy->memory = memory;
  WrappedFactory* factory = ep.factory;
  copy->storage = std::shared_ptr<void>(block, [factory, a](void* p) {
    LibraryScope scope(factory->calls.get());
    a->Free(a, p);
  });
  const NxValue* src = &weight;
  NxValue* dst = copy.get();
  ThrowIfStatus(transfer->CopyTensors(transfer, &src, &dst, 1),
                ep.Context("copying a weight to " + DescribeMemory(memory)));
  return copy;
}

void ReleaseDeviceAllocators(WrappedEp& ep) {
  if (ep.weight_transfer != nullptr) {
    ep.weight_transfer->Release(ep.weight_transfer);
    ep.weight_transfer = nullptr;
  }
  WrappedFactory& w = *ep.factory;
  for (auto& [memory, a] : ep.device_allocators) {
    if (w.ort->ReleaseAllocator == nullptr) continue;
    LibraryScope scope(w.calls.get());
    w.ort->ReleaseAllocator(w.ort, a);
  }
  ep.device_allocators.clear();
}

void InstallDeviceMemoryApi(NxEpFactory& nx) {
  nx.GetMemoryInfo = nullptr;  // host memory unless an EP device names its own
  nx.CreateAllocator = &CreateAllocator;
  nx.CreateDataTransfer = &CreateDataTransfer;
  nx.GetDeviceMemoryInfo = &GetDeviceMemoryInfo;
}

}  // namespace nxrt::ort
