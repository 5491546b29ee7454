// A bounded cache of per-shape plans (oneDNN primitives and what goes with them) for kernels
// whose input shapes are known only at run time. Unbounded, a server fed sequences of every
// length kept a plan per length and node for ever; here the least recently used one is dropped
// once `capacity` are kept (a run still holding it keeps it alive: plans are shared_ptrs). Not
// thread-safe: the owner locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

namespace nxrt::cpu {

template <class Key, class Plan>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The plan for `key`, or null; a hit counts as a use.
  std::shared_ptr<Plan> Find(const Key& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    it->second.used = ++clock_;
    return it->second.plan;
  }

  // Keeps `plan` for `key`, dropping the least recently used plan when full.
  void Insert(const Key& key, std::shared_ptr<Plan> plan) {
    if (entries_.size() >= capacity_ && entries_.find(key) == entries_.end()) {
      auto oldest = entries_.begin();
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->second.used < oldest->second.used) oldest = it;
      entries_.erase(oldest);
    }
    entries_[key] = Entry{std::move(plan), ++clock_};
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::shared_ptr<Plan> plan;
    uint64_t used = 0;
  };
  size_t capacity_;
  uint64_t clock_ = 0;
  std::map<Key, Entry> entries_;
};

}  // namespace nxrt::cpu
