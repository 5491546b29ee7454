// An EP library whose registration fails with its own error.
#include <nxrt/nxrt_ep_api.h>

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*, NxEpFactory**, size_t,
                                                       size_t*) {
  return host->CreateStatus(NX_FAIL, "no supported device found (refused on purpose)");
}
extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory*) {}
