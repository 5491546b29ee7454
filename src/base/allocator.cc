#include "base/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/error.h"
#include "base/memory_info.h"

namespace nxrt {

namespace {

// Blocks from this size on (pre-packed weights, the run arena of a large model) start on a
// transparent huge page and ask the kernel for huge pages: one page fault per 2 MiB instead of
// 512 (ViT-B/16 packs 346 MB at session creation), and fewer TLB misses when a product streams
// the weights. Only the alignment grows, not the size: the tail keeps 4 KiB pages.
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

void* HostAllocator::Alloc(size_t bytes) {
  size_t padded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = nullptr;
  if (padded >= kHugePage) {
    if (posix_memalign(&p, kHugePage, padded) != 0) p = nullptr;
    if (p != nullptr) madvise(p, padded / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint only
  } else {
    p = std::aligned_alloc(64, padded);
  }
  if (p == nullptr)
    Throw(NX_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
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
