#include "base/status_registry.h"

#include <mutex>
#include <new>
#include <unordered_set>

#include "base/error.h"

namespace nxrt {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<const NxStatus*> live;
};

// Never destroyed: statuses may be released by static destructors at exit.
Registry& TheRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

NxStatus* NewStatus(NxStatusCode code, std::string message) noexcept {
  try {
    auto* s = new NxStatus{code, std::move(message)};
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.insert(s);
    return s;
  } catch (...) {
    return nullptr;
  }
}

void FreeStatus(NxStatus* status) noexcept {
  if (status == nullptr) return;
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.live.erase(status) == 0) return;
  }
  delete status;
}

bool IsHostStatus(const NxStatus* status) noexcept {
  if (status == nullptr) return false;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.count(status) != 0;
}

bool TakeStatus(NxStatus* status, NxStatusCode& code, std::string& message) {
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.live.erase(status) == 0) return false;
  }
  const int raw = RawEnum(status->code);
  message = std::move(status->message);
  delete status;
  if (raw > NX_OK && raw <= NX_CANCELLED) {
    code = static_cast<NxStatusCode>(raw);
  } else {
    code = NX_FAIL;
    message = "(unknown status code " + std::to_string(raw) + ") " + message;
  }
  return true;
}

}  // namespace nxrt
