// The host's one error type. Code inside the runtime throws nxrt::Error; the API layers turn it
// into an NxStatus at the boundary (and plugins' NxStatus into Error on the way in).
#pragma once

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "base/status_registry.h"
#include "nxrt/nxrt_types.h"

namespace nxrt {

class Error : public std::runtime_error {
 public:
  Error(NxStatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  NxStatusCode code() const { return code_; }

 private:
  NxStatusCode code_;
};

[[noreturn]] inline void Throw(NxStatusCode code, const std::string& message) {
  throw Error(code, message);
}

#define NXRT_CHECK(cond, code, message)                       \
  do {                                                        \
    if (!(cond)) ::nxrt::Throw((code), std::string(message)); \
  } while (0)

}  // namespace nxrt

// The concrete status object behind the opaque NxStatus handle.
struct NxStatus {
  NxStatusCode code;
  std::string message;
};

namespace nxrt {

// A new recorded status (base/status_registry.h; released with FreeStatus / NxStatus_Release).
inline NxStatus* MakeStatus(NxStatusCode code, const std::string& message) {
  NxStatus* s = NewStatus(code, message);
  if (s == nullptr) throw std::bad_alloc();
  return s;
}

// Runs fn, returning NULL on success or a status describing the exception.
template <class Fn>
NxStatus* CatchAsStatus(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return MakeStatus(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return MakeStatus(NX_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return MakeStatus(NX_FAIL, e.what());
  } catch (...) {
    return MakeStatus(NX_FAIL, "unknown error");
  }
}

// The integer a C caller passed for an enum, read without loading it as the enum type: a C
// program may pass any int, and loading an out-of-range enum is undefined in C++ (UBSan).
template <class E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Throws the error carried by a status (taking ownership of it), if any. `context` names who
// returned it (the EP, the call). A pointer the host did not create is not touched: it becomes
// an NX_INVALID_PLUGIN error.
inline void ThrowIfStatus(NxStatus* status, const std::string& context = "") {
  if (status == nullptr) return;
  NxStatusCode code = NX_FAIL;
  std::string message;
  if (!TakeStatus(status, code, message)) {
    throw Error(NX_INVALID_PLUGIN, (context.empty() ? std::string() : context + ": ") +
                                       "returned a status pointer the host did not create "
                                       "(garbage or already released)");
  }
  throw Error(code, context.empty() ? message : context + ": " + message);
}

}  // namespace nxrt
