// An EP built against a future ABI version: the host must refuse it with a clear error.
// Registered as "version0", its factory says version 0 instead, which the host refuses too.
#include <nxrt/nxrt_ep_api.h>

#include <cstring>

namespace {
const char* Name(const NxEpFactory*) { return "FutureEP"; }
const char* Vendor(const NxEpFactory*) { return "test"; }
const char* Version(const NxEpFactory*) { return "9.0.0"; }
uint32_t VendorId(const NxEpFactory*) { return 0; }
NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp**) { return nullptr; }
void ReleaseEp(NxEpFactory*, NxEp*) {}
NxEpFactory g_factory = {NXRT_EP_API_VERSION + 998, Name, Vendor, Version, VendorId, CreateEp, ReleaseEp};
int g_released = 0;
}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi*, const char* name, NxEpFactory** out,
                                                       size_t max, size_t* n) {
  if (max < 1) return nullptr;
  g_factory.version = name != nullptr && std::strcmp(name, "version0") == 0 ? 0 : NXRT_EP_API_VERSION + 998;
  out[0] = &g_factory;
  *n = 1;
  return nullptr;
}
extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory*) { ++g_released; }
