// The host's one error type. Code inside the runtime throws nxrt::Error; the API layers turn it
// into an NxStatus at the boundary (and plugins' NxStatus into Error on the way in).
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

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

// A new heap status (caller releases with delete or NxStatus_Release).
inline NxStatus* MakeStatus(NxStatusCode code, const std::string& message) {
  return new NxStatus{code, message};
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

// Throws the error carried by a status (taking ownership of it), if any.
inline void ThrowIfStatus(NxStatus* status, const std::string& context = "") {
  if (status == nullptr) return;
  NxStatusCode code = status->code;
  std::string message = context.empty() ? status->message : context + ": " + status->message;
  delete status;
  throw Error(code, message);
}

}  // namespace nxrt
