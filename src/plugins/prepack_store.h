// Packed weights shared between sessions of one env: a kernel that packs a constant weight can
// hand the packed buffers to the host, and a later session that would pack the same weight for
// the same kind of node gets those buffers instead of packing again. Entries live as long as a
// session uses them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/allocator.h"
#include "graph/graph.h"

namespace nxrt {

// Packed buffers owned by the host (freed with the allocator the kernel packed them with).
struct PackedWeight {
  std::vector<void*> buffers;
  std::vector<size_t> sizes;
  std::shared_ptr<HostSideAllocator> allocator;
  size_t bytes() const;
  ~PackedWeight();
};

class PrePackStore {
 public:
  // The key a packing of input `input` of `node` by EP `ep` is shared under: the EP, the op and
  // its opset, the node's attributes, the element types and static shapes of all its inputs,
  // and a 128-bit hash of the weight's bytes.
  static std::string Key(const std::string& ep, const Node& node, size_t input,
                         const Value& weight);

  std::shared_ptr<PackedWeight> Find(const std::string& key);
  // Stores `packed` unless an entry for `key` appeared meanwhile; returns the entry to use.
  std::shared_ptr<PackedWeight> Insert(const std::string& key,
                                       std::shared_ptr<PackedWeight> packed);

  // Live shared entries and their bytes (each counted once however many sessions use it).
  size_t entries() const;
  size_t bytes() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::weak_ptr<PackedWeight>> entries_;
};

}  // namespace nxrt

// What PrePackWeight receives to offer a packing for sharing. Owns stored buffers (freeing them
// with `allocator`) until the host takes them.
struct NxPrePackCache {
  NxAllocator* allocator = nullptr;
  std::vector<void*> buffers;
  std::vector<size_t> sizes;
  bool stored = false;

  NxPrePackCache() = default;
  NxPrePackCache(const NxPrePackCache&) = delete;
  NxPrePackCache& operator=(const NxPrePackCache&) = delete;
  ~NxPrePackCache() { FreeBuffers(); }
  void FreeBuffers() {
    for (void* b : buffers)
      if (allocator) allocator->Free(allocator, b);
    buffers.clear();
    sizes.clear();
  }
  // Hands the buffers over (the cache no longer frees them).
  void Release(std::vector<void*>& out_buffers, std::vector<size_t>& out_sizes) {
    out_buffers = std::move(buffers);
    out_sizes = std::move(sizes);
    buffers.clear();
    sizes.clear();
  }
};
