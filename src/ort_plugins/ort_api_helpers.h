// Small helpers shared by the files that fill the ORT tables: installing a typed function in a
// slot, the null-argument status, and running a body with exceptions turned into statuses
// (nothing may unwind into plugin code), and the set of live objects the host handed out.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <unordered_set>

#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {

// Objects of one kind the host made and handed to plugins. A pointer a plugin passes back is used
// only when it is in the set, so a wild or stale pointer is an error, not a crash.
template <class T>
struct LiveSet {
  std::mutex mutex;
  std::unordered_set<const T*> live;
  void Add(const T* p) {
    std::lock_guard<std::mutex> lock(mutex);
    live.insert(p);
  }
  bool Remove(const T* p) {
    std::lock_guard<std::mutex> lock(mutex);
    return live.erase(p) != 0;
  }
  bool Has(const T* p) {
    std::lock_guard<std::mutex> lock(mutex);
    return live.count(p) != 0;
  }
};

template <class Fn>
OrtApiSlot Slot(Fn* fn) {
  return reinterpret_cast<OrtApiSlot>(fn);
}

inline OrtStatus* NullArgument(const char* fn) {
  return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": null argument");
}

template <class Fn>
OrtStatus* Guard(const char* name, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    return NewOrtStatus(ORT_FAIL, std::string(name) + ": " + e.what());
  } catch (...) {
    return NewOrtStatus(ORT_FAIL, std::string(name) + ": unknown error");
  }
}

}  // namespace nxrt::ort
