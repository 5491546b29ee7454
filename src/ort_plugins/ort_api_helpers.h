// Small helpers shared by the files that fill the ORT tables: installing a typed function in a
// slot, the null-argument status, and running a body with exceptions turned into statuses
// (nothing may unwind into plugin code).
#pragma once

#include <exception>
#include <string>

#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {

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
