// A cache of tensor buffers, so steady-state runs of a session reuse memory instead of asking
// the system allocator (which returns big blocks to the OS and page-faults them back in on
// every run). Buffers are 64-byte aligned; contents are not initialised.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace nxrt {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // At most `max_cached_bytes` are kept for reuse; beyond that freed buffers go back to the
  // system.
  explicit BufferPool(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  ~BufferPool();

  // A buffer of at least `bytes` bytes. Freeing the last reference returns it to this pool (or
  // to the system once the pool is gone).
  std::shared_ptr<void> Acquire(size_t bytes);

  size_t cached_bytes() const;

 private:
  void Return(void* p, size_t capacity);

  size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // capacity -> buffer
  size_t cached_bytes_ = 0;
};

}  // namespace nxrt
