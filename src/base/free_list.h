// A standard allocator over per-size free lists, for the small fixed-size objects every run
// makes many of (shared_ptr control blocks of tensors and their buffers): after the first runs
// they come from the list instead of malloc, so a steady-state run allocates nothing for them.
//
// One list per block size, shared by all threads (a mutex; runs take and give back a handful of
// blocks per node, far from contention). Lists are never destroyed: blocks still cached at exit
// stay reachable from a static pointer, and objects freed during static destruction still find
// their list.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

namespace nxrt {

// A bounded, thread-safe stack of pointers: what a free list keeps. Never destroyed by its
// users (see above).
class PointerStack {
 public:
  // Enough for the live values of a large model's run on every thread; more go back to malloc.
  static constexpr size_t kMaxCached = 16384;

  // A kept pointer, or null.
  void* Pop() {
    std::lock_guard lock(mutex_);
    if (pointers_.empty()) return nullptr;
    void* p = pointers_.back();
    pointers_.pop_back();
    return p;
  }
  // Keeps `p`; false when full (or out of memory): the caller frees it.
  bool Push(void* p) noexcept {
    std::lock_guard lock(mutex_);
    if (pointers_.size() >= kMaxCached) return false;
    try {
      pointers_.push_back(p);
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  std::mutex mutex_;
  std::vector<void*> pointers_;
};

template <size_t kSize, size_t kAlign>
class FreeList {
 public:
  static void* Take() {
    if (void* p = Blocks().Pop()) return p;
    return ::operator new (kSize, std::align_val_t{kAlign});
  }
  static void Give(void* p) noexcept {
    if (!Blocks().Push(p)) ::operator delete (p, std::align_val_t{kAlign});
  }

 private:
  static PointerStack& Blocks() {
    static PointerStack* blocks = new PointerStack;  // never destroyed (see above)
    return *blocks;
  }
};

template <class T>
struct FreeListAllocator {
  using value_type = T;
  FreeListAllocator() noexcept = default;
  template <class U>
  FreeListAllocator(const FreeListAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(FreeList<sizeof(T), alignof(T)>::Take());
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1)
      FreeList<sizeof(T), alignof(T)>::Give(p);
    else
      ::operator delete (p, std::align_val_t{alignof(T)});
  }
  template <class U>
  bool operator==(const FreeListAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace nxrt
