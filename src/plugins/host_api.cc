// The host side of the plugin ABI: builds the NxHostApi table handed to every EP library. Each
// area fills its own part (declared in host_api_parts.h); this file adds status, logging and
// config. No function lets an exception escape; errors become NxStatus.
#include <string>

#include "base/error.h"
#include "plugins/host_api_parts.h"
#include "plugins/host_objects.h"

namespace nxrt {
namespace host_api {

// ---- Status ----
NxStatus* CreateStatus(NxStatusCode code, const char* message) {
  return NewStatus(code, message ? message : "");
}

namespace {

// A plugin may only pass statuses the host gave it; anything else reads as a generic failure.
NxStatusCode StatusGetCode(const NxStatus* s) {
  if (s == nullptr) return NX_OK;
  return IsHostStatus(s) ? s->code : NX_FAIL;
}
const char* StatusGetMessage(const NxStatus* s) {
  if (s == nullptr) return "";
  return IsHostStatus(s) ? s->message.c_str() : "(not a status the host created)";
}
void ReleaseStatus(NxStatus* s) { FreeStatus(s); }

// ---- Logging and config ----
void Log(const NxLogger* logger, NxLogLevel level, const char* message) {
  if (logger && message) logger->logger.Log(level, message);
}
const char* ConfigGet(const NxConfig* config, const char* key) {
  if (!config || !key) return nullptr;
  const std::string* v = config->Find(key);
  return v ? v->c_str() : nullptr;
}

}  // namespace

void FillCoreApi(NxHostApi& api) {
  api.CreateStatus = CreateStatus;
  api.Status_GetCode = StatusGetCode;
  api.Status_GetMessage = StatusGetMessage;
  api.ReleaseStatus = ReleaseStatus;
  api.Log = Log;
  api.Config_Get = ConfigGet;
}

}  // namespace host_api

namespace {

NxHostApi MakeHostApi() {
  NxHostApi api{};
  api.version = NXRT_EP_API_VERSION;
  host_api::FillCoreApi(api);
  host_api::FillGraphApi(api);
  host_api::FillKernelsApi(api);
  host_api::FillValuesApi(api);
  host_api::FillDevicesApi(api);
  host_api::FillControlFlowApi(api);
  return api;
}

}  // namespace

const NxHostApi* GetHostApi() {
  static const NxHostApi api = MakeHostApi();
  return &api;
}

}  // namespace nxrt
