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

template <size_t kSize, size_t kAlign>
class FreeList {
 public:
  static void* Take() {
    List& list = Instance();
    {
      std::lock_guard lock(list.mutex);
      if (!list.blocks.empty()) {
        void* p = list.blocks.back();
        list.blocks.pop_back();
        return p;
      }
    }
    return ::operator new (kSize, std::align_val_t{kAlign});
  }

  static void Give(void* p) noexcept {
    List& list = Instance();
    {
      std::lock_guard lock(list.mutex);
      if (list.blocks.size() < kMaxCached) {
        try {
          list.blocks.push_back(p);
          return;
        } catch (...) {  // no memory to remember it: free it instead
        }
      }
    }
    ::operator delete (p, std::align_val_t{kAlign});
  }

 private:
  // Enough for the live values of a large model's run on every thread; more go back to malloc.
  static constexpr size_t kMaxCached = 16384;
  struct List {
    std::mutex mutex;
    std::vector<void*> blocks;
  };
  static List& Instance() {
    static List* list = new List;  // never destroyed (see above)
    return *list;
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
