// An arena: a cache of tensor buffers over one allocator, so steady-state runs of a session
// reuse memory instead of asking the allocator (the C library returns big blocks to the OS and
// page-faults them back in on every run; a device allocator may be slow). Buffers are aligned to
// the memory's alignment; contents are not initialised.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/allocator.h"

namespace nxrt {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // At most `max_cached_bytes` are kept for reuse; beyond that freed buffers go back to the
  // system.
  // Over host memory.
  explicit BufferPool(size_t max_cached_bytes);
  // Over `allocator` (kept alive by the pool).
  BufferPool(size_t max_cached_bytes, std::shared_ptr<RawAllocator> allocator);
  ~BufferPool();

  // A buffer of at least `bytes` bytes. Freeing the last reference returns it to this pool (or
  // to the system once the pool is gone).
  std::shared_ptr<void> Acquire(size_t bytes);

  size_t cached_bytes() const;
  size_t cached_blocks() const;
  const NxMemoryInfo* memory() const { return allocator_->memory(); }
  const std::shared_ptr<RawAllocator>& allocator() const { return allocator_; }

 private:
  void Return(void* p, size_t capacity);

  size_t max_cached_bytes_;
  std::shared_ptr<RawAllocator> allocator_;
  mutable std::mutex mutex_;
  // capacity -> cached buffers of that capacity. Buckets stay when emptied, so that steady-state
  // runs return and take buffers without allocating.
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

}  // namespace nxrt
