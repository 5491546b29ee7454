// Raw block allocators behind the buffer pools (arenas): plain host memory, or an EP's
// NxAllocator. Blocks of device memory are opaque to the host: it never dereferences them.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

// 64-byte aligned host memory of at least `bytes` bytes (0 allowed), or NX_OUT_OF_MEMORY. A
// request larger than the machine's physical memory fails at once with a clear error: where
// the kernel overcommits, the C library would hand out a block that faults page by page
// (a hostile model declaring a 4 TiB output would hang the process instead of failing).
void* AllocateHostBlock(size_t bytes);

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // A block of at least `bytes` bytes; throws NX_OUT_OF_MEMORY.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* block) = 0;
  virtual const NxMemoryInfo* memory() const = 0;

  // Blocks handed out and not yet freed (for the "values still alive" checks).
  size_t live_blocks() const { return live_.load(); }

 protected:
  std::atomic<size_t> live_{0};
};

// 64-byte aligned host memory from the C library.
class HostAllocator : public RawAllocator {
 public:
  void* Alloc(size_t bytes) override;
  void Free(void* block) override;
  const NxMemoryInfo* memory() const override;
};

// An allocator an EP handed out; released through its Release when this object dies.
class PluginAllocator : public RawAllocator {
 public:
  // Takes ownership of `raw`; `memory` is the interned description it serves.
  PluginAllocator(NxAllocator* raw, const NxMemoryInfo* memory, std::string owner);
  ~PluginAllocator() override;
  void* Alloc(size_t bytes) override;
  void Free(void* block) override;
  const NxMemoryInfo* memory() const override { return memory_; }

 private:
  NxAllocator* raw_;
  const NxMemoryInfo* memory_;
  std::string owner_;
};

// The process-wide host allocator.
std::shared_ptr<RawAllocator> HostRawAllocator();

// An NxAllocator (the ABI struct) backed by a RawAllocator, handed to PrePackWeight. Tracks its
// blocks: memory accounting reports the bytes in use, and blocks still out when it dies are
// freed.
class HostSideAllocator {
 public:
  explicit HostSideAllocator(std::shared_ptr<RawAllocator> raw);
  ~HostSideAllocator();
  HostSideAllocator(const HostSideAllocator&) = delete;
  HostSideAllocator& operator=(const HostSideAllocator&) = delete;

  NxAllocator* abi() { return &base; }
  static HostSideAllocator* From(NxAllocator* a) { return reinterpret_cast<HostSideAllocator*>(a); }
  void* AllocBlock(size_t size);
  void FreeBlock(void* block);  // ignores blocks it did not hand out
  size_t bytes_in_use() const;
  const std::shared_ptr<RawAllocator>& raw_allocator() const { return raw; }

 private:
  NxAllocator base;  // first member: the plugin sees an NxAllocator*
  std::shared_ptr<RawAllocator> raw;
  mutable std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;
  size_t bytes_in_use_ = 0;
};

}  // namespace nxrt
