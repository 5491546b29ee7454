#include "base/allocator.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/error.h"
#include "base/memory_info.h"

namespace nxrt {

namespace {

size_t PhysicalMemoryBytes() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page)
                                 : ~size_t{0};
  }();
  return bytes;
}

}  // namespace

void* AllocateHostBlock(size_t bytes) {
  if (bytes > PhysicalMemoryBytes()) {
    Throw(NX_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) +
                                " bytes of host memory: more than this machine has (" +
                                std::to_string(PhysicalMemoryBytes()) + " bytes)");
  }
  const size_t padded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  // Large blocks are not marked for transparent huge pages (they were, before): on the
  // VMs we measure on, 2 MiB pages come from memory the host has taken back, and zeroing them
  // made ViT-B/16's session creation 360 -> 700-780 ms whenever another process had just run;
  // 4 KiB pages cost 420-470 ms in every condition, and runs were no faster on huge pages.
  void* p = std::aligned_alloc(64, padded);
  if (p == nullptr)
    Throw(NX_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return p;
}

void* HostAllocator::Alloc(size_t bytes) {
  void* p = AllocateHostBlock(bytes);
  ++live_;
  return p;
}

void HostAllocator::Free(void* block) {
  if (block == nullptr) return;
  std::free(block);
  --live_;
}

const NxMemoryInfo* HostAllocator::memory() const { return HostMemory(); }

std::shared_ptr<RawAllocator> HostRawAllocator() {
  static std::shared_ptr<RawAllocator> host = std::make_shared<HostAllocator>();
  return host;
}

PluginAllocator::PluginAllocator(NxAllocator* raw, const NxMemoryInfo* memory, std::string owner)
    : raw_(raw), memory_(memory), owner_(std::move(owner)) {
  NXRT_CHECK(raw_ != nullptr && raw_->version >= 1 && raw_->Alloc != nullptr &&
                 raw_->Free != nullptr && raw_->Release != nullptr,
             NX_INVALID_PLUGIN, owner_ + " returned an incomplete allocator");
}

PluginAllocator::~PluginAllocator() { raw_->Release(raw_); }

void* PluginAllocator::Alloc(size_t bytes) {
  void* p = raw_->Alloc(raw_, bytes == 0 ? 1 : bytes);
  if (p == nullptr) {
    Throw(NX_OUT_OF_MEMORY, owner_ + ": cannot allocate " + std::to_string(bytes) + " bytes of " +
                                DescribeMemory(memory_));
  }
  ++live_;
  return p;
}

void PluginAllocator::Free(void* block) {
  if (block == nullptr) return;
  raw_->Free(raw_, block);
  --live_;
}

HostSideAllocator::HostSideAllocator(std::shared_ptr<RawAllocator> r) : raw(std::move(r)) {
  base.version = NXRT_EP_API_VERSION;
  base.Alloc = [](NxAllocator* self, size_t size) -> void* {
    try {
      return From(self)->AllocBlock(size);
    } catch (...) {
      return nullptr;  // the ABI reports failure as NULL
    }
  };
  base.Free = [](NxAllocator* self, void* block) { From(self)->FreeBlock(block); };
  base.GetMemoryInfo = [](const NxAllocator* self) {
    return reinterpret_cast<const HostSideAllocator*>(self)->raw->memory();
  };
  base.Release = [](NxAllocator*) {};
}

HostSideAllocator::~HostSideAllocator() {
  // Blocks a kernel never freed: return them so nothing leaks past the allocator.
  for (auto& [block, size] : sizes_) raw->Free(block);
}

void* HostSideAllocator::AllocBlock(size_t size) {
  void* p = raw->Alloc(size);
  std::lock_guard<std::mutex> lock(mu_);
  sizes_[p] = size;
  bytes_in_use_ += size;
  return p;
}

void HostSideAllocator::FreeBlock(void* block) {
  if (block == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(block);
    if (it == sizes_.end()) return;  // not ours: ignore rather than corrupt the heap
    bytes_in_use_ -= it->second;
    sizes_.erase(it);
  }
  raw->Free(block);
}

size_t HostSideAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_in_use_;
}

}  // namespace nxrt
