#include "base/buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/free_list.h"
#include "base/memory_info.h"
#include "base/run_control.h"

namespace nxrt {
namespace {

// Sizes are rounded up so buffers of nearly equal size share a bucket: 64 bytes for small
// buffers, 1/16 of the size's power of two for large ones.
size_t RoundCapacity(size_t bytes) {
  if (bytes <= 4096) return (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
  // No machine has 2^62 bytes; above 2^63 the power-of-two search below would overflow to 0
  // and never end.
  if (bytes > (size_t{1} << 62)) {
    Throw(NX_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  size_t p = 1;
  while (p < bytes) p <<= 1;
  size_t step = p / 16;
  return (bytes + step - 1) / step * step;
}

}  // namespace

BufferPool::BufferPool(size_t max_cached_bytes)
    : BufferPool(max_cached_bytes, HostRawAllocator()) {}

BufferPool::BufferPool(size_t max_cached_bytes, std::shared_ptr<RawAllocator> allocator)
    : max_cached_bytes_(max_cached_bytes), allocator_(std::move(allocator)) {}

BufferPool::~BufferPool() {
  for (auto& [capacity, blocks] : free_)
    for (void* p : blocks) allocator_->Free(p);
}

std::shared_ptr<void> BufferPool::Acquire(size_t bytes) {
  size_t capacity = RoundCapacity(bytes);
  // A run with a memory limit pays for the buffer until it is freed (throws when over it).
  std::shared_ptr<MemoryBudget> budget;
  if (const auto* current = CurrentMemoryBudget()) {
    (*current)->Charge(capacity);
    budget = *current;
  }
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Reuse a cached buffer that is not wastefully large (at most 2x).
    for (auto it = free_.lower_bound(capacity); it != free_.end() && it->first <= capacity * 2;
         ++it) {
      if (it->second.empty()) continue;
      capacity = it->first;
      p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= capacity;
      break;
    }
  }
  if (p == nullptr) {
    try {
      p = allocator_->Alloc(capacity);
    } catch (...) {
      if (budget) budget->Release(capacity);
      throw;
    }
  }
  // Testing aid: NXRT_POISON_BUFFERS=1 fills every handed-out buffer with 0xFF bytes (NaN for
  // floats, -1 for integers) to expose kernels that do not write all of their outputs.
  static const bool poison = [] {
    const char* v = std::getenv("NXRT_POISON_BUFFERS");
    return v != nullptr && v[0] == '1';
  }();
  if (poison && HostAccessible(allocator_->memory())) std::memset(p, 0xff, capacity);
  std::weak_ptr<BufferPool> weak = weak_from_this();
  // The deleter holds the allocator, so a buffer that outlives its pool is still freed right.
  // Its control block comes from a free list: no malloc per buffer in steady state.
  return std::shared_ptr<void>(
      p,
      [weak, capacity, allocator = allocator_, budget](void* q) {
        if (budget) budget->Release(capacity);
        if (auto pool = weak.lock())
          pool->Return(q, capacity);
        else
          allocator->Free(q);
      },
      FreeListAllocator<char>());
}

void BufferPool::Return(void* p, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_bytes_ + capacity > max_cached_bytes_) {
    allocator_->Free(p);
    return;
  }
  try {
    free_[capacity].push_back(p);
  } catch (...) {  // no memory to remember it: free it
    allocator_->Free(p);
    return;
  }
  cached_bytes_ += capacity;
}

size_t BufferPool::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t blocks = 0;
  for (const auto& [capacity, list] : free_) blocks += list.size();
  return blocks;
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

}  // namespace nxrt
