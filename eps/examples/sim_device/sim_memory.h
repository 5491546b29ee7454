// sim_memory.h: the simulated device memory behind the SimDevice example EP, and the allocator
// and data transfer over it.
//
// SimDevice memory is ordinary host memory that pretends not to be. The pointer the allocator
// hands out is an opaque handle, not an address: the host and the CPU EP must never read or
// write it, and if they try, the CPU faults on the spot instead of quietly reading the right
// bytes (which is what would hide such a bug until the EP ran on a real accelerator). Only the
// EP itself looks inside, and always through Memory::Resolve, which checks the block first.
//
// Layout of one block (one aligned_alloc each):
//   [Header: tag, size, live | 64 bytes][payload: size bytes, rounded up to 64]
//                                        ^ handle = payload address XOR kHandleKey
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "sim_stream.h"

namespace sim {

// The memories SimDevice kernels read and write: one per simulated device (device_id 0 and 1).
// The first is the factory's (NxEpFactory::GetMemoryInfo); with two virtual devices the second
// device's kernels work in the second (GetDeviceMemoryInfo, ABI 12).
inline constexpr int kDevices = 2;
inline constexpr NxMemoryInfo kMemories[kDevices] = {
    {1, "SimDevice", NX_DEVICE_NPU, 0, 0, NX_MEMORY_DEVICE, 64},
    {1, "SimDevice", NX_DEVICE_NPU, 0, 1, NX_MEMORY_DEVICE, 64}};
inline constexpr const NxMemoryInfo& kMemory = kMemories[0];

// User-space addresses on x86-64 have their top 17 bits clear. Setting some of the top 16 makes
// the handle non-canonical (with 4- or 5-level paging), so any load or store through it raises
// a fault (SIGSEGV) at once, whatever is mapped where; on AArch64 bits 48-55 are beyond every
// address space too. The low bits are untouched, so a handle keeps the payload's 64-byte
// alignment. 0x51DE ("SImDEvice") also makes handles easy to spot in a debugger.
inline constexpr uintptr_t kHandleKey = uintptr_t{0x51DE} << 48;
inline constexpr uintptr_t kHandleMask = uintptr_t{0xFFFF} << 48;
inline constexpr uint64_t kLiveTag = 0x5349'4D44'4556'4943;  // "SIMDEVIC"

struct alignas(64) Header {  // 64 bytes, so the payload after it stays 64-byte aligned
  uint64_t tag;              // kLiveTag while the block is live; cleared when it is freed
  size_t size;               // payload bytes the allocator was asked for
  bool live;
  int device;  // which simulated device's memory (kMemories) the block belongs to
};

// The one simulated device of the process: every SimDevice allocator and the data transfer
// share it, so a handle from any of them resolves anywhere in the EP.
class Memory {
 public:
  static Memory& Get() {
    static Memory memory;
    return memory;
  }

  // A handle to `size` bytes of device `device`'s memory, or nullptr when out of memory (the
  // NxAllocator contract).
  void* Alloc(size_t size, int device = 0) {
    if (size > (size_t{1} << 40)) return nullptr;  // a simulator has no business with 1 TiB
    const size_t payload = (std::max<size_t>(size, 1) + 63) / 64 * 64;
    void* raw = std::aligned_alloc(64, sizeof(Header) + payload);
    if (raw == nullptr) return nullptr;
    auto* header = new (raw) Header{kLiveTag, size, true, device};
    // Device memory holds garbage: 0xFF bytes read as NaN, so unwritten outputs show up.
    std::memset(header + 1, 0xFF, payload);
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.insert(header);
    ++live_;
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(header + 1) ^ kHandleKey);
  }

  // Frees a block. A bad free (not a handle, unknown block, double free) touches nothing: it is
  // reported on stderr and counted, as the allocator ABI has no way to return an error.
  void Free(void* handle) {
    if (handle == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    Header* header = Find(handle, 0, &error);
    if (header == nullptr) {
      ++bad_frees_;
      std::fprintf(stderr, "SimDevice: Free ignored: %s\n", error.c_str());
      return;
    }
    header->tag = 0;
    header->live = false;
    --live_;
    // Freed blocks stay ours for a while, so a later use of the handle reads our own "freed"
    // header (use-after-free is reported) rather than memory the C library handed to others.
    quarantine_.push_back(header);
    if (quarantine_.size() > kQuarantineBlocks) {
      blocks_.erase(quarantine_.front());
      std::free(quarantine_.front());
      quarantine_.pop_front();
    }
  }

  // The host address behind `handle`, after checking that it names a live block of at least
  // `bytes` bytes (of device `device`'s memory, unless -1). Throws NX_RUNTIME_ERROR naming the
  // problem otherwise: a block of one device in a value that says it lives on the other is the
  // host mixing up the two memories.
  void* Resolve(const void* handle, size_t bytes, int device = -1) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    Header* header = Find(handle, bytes, &error);
    if (header == nullptr) nxrt::ep::Fail(NX_RUNTIME_ERROR, "SimDevice: " + error);
    if (device >= 0 && header->device != device) {
      nxrt::ep::Fail(NX_RUNTIME_ERROR, "SimDevice: a block of device " +
                                           std::to_string(header->device) +
                                           "'s memory in a value said to be in device " +
                                           std::to_string(device) + "'s memory");
    }
    return header + 1;
  }

  size_t live_blocks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  size_t bad_frees() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bad_frees_;
  }

  ~Memory() {
    for (Header* header : blocks_) std::free(header);
  }

 private:
  static constexpr size_t kQuarantineBlocks = 256;

  Memory() = default;

  // The header of the block `handle` names, or nullptr with *error set. Reads a header only
  // after the registry confirms the block is ours, so a wild handle never touches memory.
  Header* Find(const void* handle, size_t bytes, std::string* error) const {
    const auto bits = reinterpret_cast<uintptr_t>(handle);
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%016" PRIxPTR, bits);
    if ((bits & kHandleMask) != kHandleKey) {
      *error = std::string(hex) +
               " is not a SimDevice handle (a host pointer, or a value in "
               "another memory, reached a SimDevice kernel or copy)";
      return nullptr;
    }
    auto* header = reinterpret_cast<Header*>(bits ^ kHandleKey) - 1;
    if (blocks_.count(header) == 0) {
      *error = "handle " + std::string(hex) +
               " names no SimDevice block (never allocated, an "
               "interior pointer, or freed long ago)";
      return nullptr;
    }
    if (!header->live) {
      *error = "use after free: handle " + std::string(hex) + " names a freed block";
      return nullptr;
    }
    if (header->tag != kLiveTag) {
      *error = "block " + std::string(hex) + " has a corrupted header (an out-of-bounds write?)";
      return nullptr;
    }
    if (bytes > header->size) {
      *error = "out of bounds: " + std::to_string(bytes) + " bytes wanted from block " + hex +
               " of " + std::to_string(header->size) + " bytes";
      return nullptr;
    }
    return header;
  }

  mutable std::mutex mu_;
  std::unordered_set<Header*> blocks_;  // live and quarantined blocks
  std::deque<Header*> quarantine_;
  size_t live_ = 0;
  size_t bad_frees_ = 0;
};

// Typed access to `bytes` bytes behind a handle.
template <class T = void>
T* Resolve(const void* handle, size_t bytes) {
  return static_cast<T*>(Memory::Get().Resolve(handle, bytes));
}

// The simulated device whose memory `m` is (0 or 1), or -1 for any other memory.
inline int DeviceOf(const NxMemoryInfo* m) {
  for (int d = 0; d < kDevices; ++d)
    if (m != nullptr && nxrt::ep::Host().MemoryInfo_AreEqual(m, &kMemories[d])) return d;
  return -1;
}

// The data of a tensor in SimDevice memory, checked against the tensor's byte size and memory.
template <class T>
const T* Data(const nxrt::ep::ConstTensor& t) {
  return static_cast<const T*>(Memory::Get().Resolve(t.raw(), t.bytes(), DeviceOf(t.memory())));
}
template <class T>
T* Data(const nxrt::ep::Tensor& t) {
  return static_cast<T*>(Memory::Get().Resolve(t.raw(), t.bytes(), DeviceOf(t.memory())));
}

// ---- Memory services: the ABI objects the factory hands the host ----------------------------
// The host asks the factory for one allocator (it keeps its own arena on top, so this one need
// not cache) and one data transfer, which it uses for every copy into, out of and within
// SimDevice memory.

inline bool IsSimDevice(const NxMemoryInfo* m) { return DeviceOf(m) >= 0; }
inline bool IsHost(const NxMemoryInfo* m) {
  return m != nullptr && m->device_type == NX_DEVICE_CPU && m->kind == NX_MEMORY_HOST_ACCESSIBLE;
}

// Tensors the data transfer has copied, for tests (SimDevice_Copies).
inline std::atomic<size_t> g_tensor_copies{0};

// Per simulated device: what each copy into or out of its memory costs on top of the bytes,
// in microseconds (virtual NPU option copy_latency_us; set at registration).
inline std::atomic<uint64_t> g_copy_latency_us[kDevices] = {};

// The latency of a copy between two memories: the slower device's.
inline uint64_t CopyLatencyUs(const NxMemoryInfo* src, const NxMemoryInfo* dst) {
  uint64_t us = 0;
  for (const NxMemoryInfo* m : {src, dst})
    if (const int d = DeviceOf(m); d >= 0) us = std::max<uint64_t>(us, g_copy_latency_us[d]);
  return us;
}

// One copy, checked and resolved when it is asked for; `Run` does it (then or on a stream).
struct PendingCopy {
  void* to = nullptr;
  const void* from = nullptr;
  size_t bytes = 0;
  uint64_t latency_us = 0;
  void Run() const {
    if (latency_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(latency_us));
    if (bytes > 0) std::memcpy(to, from, bytes);
    ++g_tensor_copies;
  }
};

// All state lives in Memory::Get(): the allocator object is only the ABI table.
// An allocator of one device's memory; the NxAllocator table comes first, so the callbacks find
// their device behind the table pointer.
struct DeviceAllocator {
  NxAllocator base;
  int device;
};

inline NxAllocator* NewAllocator(int device = 0) {
  auto* a = new DeviceAllocator{
      {
          NXRT_EP_API_VERSION,
          [](NxAllocator* self, size_t size) {
            return Memory::Get().Alloc(size, reinterpret_cast<DeviceAllocator*>(self)->device);
          },
          [](NxAllocator*, void* block) { Memory::Get().Free(block); },
          [](const NxAllocator* self) {
            return &kMemories[reinterpret_cast<const DeviceAllocator*>(self)->device];
          },
          [](NxAllocator* self) { delete reinterpret_cast<DeviceAllocator*>(self); },
      },
      device};
  return &a->base;
}

// Where a tensor's bytes are: a checked address in SimDevice memory, the pointer itself in host
// memory.
inline void* TensorBytes(const nxrt::ep::ConstTensor& t) {
  if (const int device = DeviceOf(t.memory()); device >= 0)
    return Memory::Get().Resolve(t.raw(), t.bytes(), device);
  if (!IsHost(t.memory())) {
    nxrt::ep::Fail(NX_RUNTIME_ERROR,
                   "SimDevice copy: a tensor in neither host nor SimDevice memory");
  }
  return const_cast<void*>(t.raw());
}

// The copies src[i] -> dst[i], checked (same size, blocks of the memories the tensors name).
inline std::vector<PendingCopy> Resolve(const NxValue* const* src, NxValue* const* dst,
                                        size_t count) {
  std::vector<PendingCopy> copies;
  for (size_t i = 0; i < count; ++i) {
    nxrt::ep::ConstTensor from(src[i]), to(dst[i]);
    if (from.bytes() != to.bytes()) {
      nxrt::ep::Fail(NX_INVALID_ARGUMENT, "SimDevice copy: " + std::to_string(from.bytes()) +
                                              " bytes into " + std::to_string(to.bytes()));
    }
    copies.push_back(PendingCopy{TensorBytes(to), TensorBytes(from), from.bytes(),
                                 CopyLatencyUs(from.memory(), to.memory())});
  }
  return copies;
}

inline NxDataTransfer* NewDataTransfer() {
  return new NxDataTransfer{
      NXRT_EP_API_VERSION,
      // CanCopy: host -> SimDevice, SimDevice -> host, SimDevice -> SimDevice (either device to
      // either).
      [](const NxDataTransfer*, const NxMemoryInfo* src, const NxMemoryInfo* dst) {
        return (IsSimDevice(src) && (IsSimDevice(dst) || IsHost(dst))) ||
               (IsHost(src) && IsSimDevice(dst));
      },
      // CopyTensors: synchronous, so a plain memcpy between resolved addresses.
      [](NxDataTransfer*, const NxValue* const* src, NxValue* const* dst, size_t count) {
        return nxrt::ep::Guard([&] {
          for (const PendingCopy& c : Resolve(src, dst, count)) c.Run();
        });
      },
      [](NxDataTransfer* self) { delete self; },
      // CopyTensorsAsync (ABI 13): checked now, copied by the stream's worker. The host keeps
      // both tensors alive until the stream has passed the copies.
      [](NxDataTransfer*, const NxValue* const* src, NxValue* const* dst, size_t count,
         NxStream* stream) {
        return nxrt::ep::Guard([&] {
          std::vector<PendingCopy> copies = Resolve(src, dst, count);
          RunOn(stream, [copies = std::move(copies)] {
            for (const PendingCopy& c : copies) c.Run();
          });
        });
      },
  };
}

}  // namespace sim
