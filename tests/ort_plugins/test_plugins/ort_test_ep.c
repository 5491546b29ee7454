/* An EP library written the way onnxruntime plugin EPs are: it exports CreateEpFactories and
 * ReleaseEpFactory and reaches the host only through the OrtApi / OrtEpApi tables it is handed.
 * Built in C against nxrt's declarations of that interface (src/ort_plugins/ort_abi.h), it is
 * what the ORT plugin host is tested with on machines where no vendor plugin finds its hardware.
 *
 * The registration name chooses a behaviour, so one library covers the good path and the ways a
 * plugin can break the contract:
 *   "ort_test"                   one factory, an EP device on every CPU
 *   "ort_test.refuse"            CreateEpFactories returns an error status
 *   "ort_test.garbage_status"    CreateEpFactories returns a pointer the host never made
 *   "ort_test.no_factories"      reports success and zero factories
 *   "ort_test.too_many"          reports more factories than the host offered room for
 *   "ort_test.no_name"           the factory's GetName returns NULL
 *   "ort_test.garbage_device"    GetSupportedDevices returns a pointer that is no EP device
 *   "ort_test.unoffered_device"  GetSupportedDevices returns an EP device on a device it was not
 *                                offered
 *   "ort_test.failing_devices"   GetSupportedDevices creates a device, then fails */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_plugins/ort_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* Typed views of the slots this plugin calls. */
typedef OrtStatus* (*CreateStatusFn)(OrtErrorCode, const char*);
typedef OrtErrorCode (*GetErrorCodeFn)(const OrtStatus*);
typedef const char* (*GetErrorMessageFn)(const OrtStatus*);
typedef void (*ReleaseStatusFn)(OrtStatus*);
typedef OrtStatus* (*CreateEnvFn)(OrtLoggingLevel, const char*, OrtEnv**);
typedef void (*CreateKeyValuePairsFn)(OrtKeyValuePairs**);
typedef void (*AddKeyValuePairFn)(OrtKeyValuePairs*, const char*, const char*);
typedef void (*ReleaseKeyValuePairsFn)(OrtKeyValuePairs*);
typedef OrtHardwareDeviceType (*HardwareDeviceTypeFn)(const OrtHardwareDevice*);
typedef const char* (*HardwareDeviceVendorFn)(const OrtHardwareDevice*);
typedef const OrtEpApi* (*GetEpApiFn)(void);
typedef OrtStatus* (*CreateMemoryInfoV2Fn)(const char*, OrtMemoryInfoDeviceType, uint32_t, int32_t,
                                           OrtDeviceMemoryType, size_t, OrtAllocatorType,
                                           OrtMemoryInfo**);
typedef void (*ReleaseMemoryInfoFn)(OrtMemoryInfo*);
typedef OrtStatus* (*CreateEpDeviceFn)(OrtEpFactory*, const OrtHardwareDevice*,
                                       const OrtKeyValuePairs*, const OrtKeyValuePairs*,
                                       OrtEpDevice**);
typedef OrtStatus* (*AddAllocatorInfoFn)(OrtEpDevice*, const OrtMemoryInfo*);

#define CALL(table, type, slot) ((type)(table)->slot)

static const OrtApi* api;
static const OrtEpApi* ep_api;
static char mode[64];
/* What the plugin saw when it called a slot nxrt does not implement, reported as metadata. */
static char stub_check[256] = "not run";

static OrtStatus* Error(const char* message) {
  return CALL(api, CreateStatusFn, CreateStatus)(ORT_FAIL, message);
}

static int Mode(const char* name) { return strcmp(mode, name) == 0; }

static const char* FactoryName(const OrtEpFactory* self) {
  (void)self;
  return Mode("no_name") ? NULL : "OrtTestEp";
}
static const char* FactoryVendor(const OrtEpFactory* self) {
  (void)self;
  return "nxrt tests";
}
static uint32_t FactoryVendorId(const OrtEpFactory* self) {
  (void)self;
  return 0x1234;
}
static const char* FactoryVersion(const OrtEpFactory* self) {
  (void)self;
  return "0.3.1";
}

static OrtStatus* AddCpuDevice(OrtEpFactory* self, const OrtHardwareDevice* device,
                               const char* vendor, OrtEpDevice** out) {
  OrtKeyValuePairs* metadata = NULL;
  OrtKeyValuePairs* options = NULL;
  CALL(api, CreateKeyValuePairsFn, CreateKeyValuePairs)(&metadata);
  CALL(api, CreateKeyValuePairsFn, CreateKeyValuePairs)(&options);
  AddKeyValuePairFn add = CALL(api, AddKeyValuePairFn, AddKeyValuePair);
  add(metadata, "test_device", "cpu");
  add(metadata, "cpu_vendor", vendor);
  add(metadata, "stub_check", stub_check);
  add(options, "mode", "fast");
  OrtStatus* status =
      CALL(ep_api, CreateEpDeviceFn, CreateEpDevice)(self, device, metadata, options, out);
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(metadata);
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(options);
  if (status != NULL) return status;
  OrtMemoryInfo* memory = NULL;
  status = CALL(api, CreateMemoryInfoV2Fn, CreateMemoryInfo_V2)(
      "OrtTestCpu", OrtMemoryInfoDeviceType_CPU, 0, 0, OrtDeviceMemoryType_DEFAULT, 64,
      OrtDeviceAllocator, &memory);
  if (status != NULL) return status;
  status = CALL(ep_api, AddAllocatorInfoFn, EpDevice_AddAllocatorInfo)(*out, memory);
  CALL(api, ReleaseMemoryInfoFn, ReleaseMemoryInfo)(memory);
  return status;
}

static OrtStatus* GetSupportedDevices(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                      size_t num_devices, OrtEpDevice** ep_devices,
                                      size_t max_ep_devices, size_t* num_ep_devices) {
  *num_ep_devices = 0;
  if (Mode("garbage_device")) {
    static char not_a_device[64];
    ep_devices[0] = (OrtEpDevice*)not_a_device;
    *num_ep_devices = 1;
    return NULL;
  }
  if (Mode("unoffered_device")) {
    /* Never dereferenced by a correct host: it must reject the device first. */
    static char not_offered[256];
    OrtStatus* status =
        AddCpuDevice(self, (const OrtHardwareDevice*)not_offered, "none", &ep_devices[0]);
    if (status != NULL) return status;
    *num_ep_devices = 1;
    return NULL;
  }
  for (size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
    if (CALL(api, HardwareDeviceTypeFn, HardwareDevice_Type)(devices[i]) !=
        OrtHardwareDeviceType_CPU)
      continue;
    const char* vendor = CALL(api, HardwareDeviceVendorFn, HardwareDevice_Vendor)(devices[i]);
    OrtStatus* status = AddCpuDevice(self, devices[i], vendor, &ep_devices[*num_ep_devices]);
    if (status != NULL) return status;
    ++*num_ep_devices;
  }
  if (Mode("failing_devices")) return Error("GetSupportedDevices failed on purpose");
  return NULL;
}

static OrtStatus* CreateEp(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                           const OrtKeyValuePairs* const* metadata, size_t num_devices,
                           const OrtSessionOptions* options, const OrtLogger* logger, OrtEp** ep) {
  (void)self, (void)devices, (void)metadata, (void)num_devices, (void)options, (void)logger;
  *ep = NULL;
  return CALL(api, CreateStatusFn, CreateStatus)(ORT_NOT_IMPLEMENTED,
                                                 "OrtTestEp cannot create EPs yet");
}

static void ReleaseEp(OrtEpFactory* self, OrtEp* ep) { (void)self, (void)ep; }

static OrtEpFactory factory;

/* Calls OrtApi::CreateEnv, which a plugin has no business calling and nxrt does not implement:
 * the host must answer with a status that names the slot, and count the call. */
static void CheckStub(void) {
  OrtEnv* env = NULL;
  OrtStatus* status = CALL(api, CreateEnvFn, CreateEnv)(ORT_LOGGING_LEVEL_WARNING, "x", &env);
  if (status == NULL) {
    snprintf(stub_check, sizeof stub_check, "CreateEnv succeeded");
    return;
  }
  OrtErrorCode code = CALL(api, GetErrorCodeFn, GetErrorCode)(status);
  const char* message = CALL(api, GetErrorMessageFn, GetErrorMessage)(status);
  if (code == ORT_NOT_IMPLEMENTED && strstr(message, "OrtApi::CreateEnv") != NULL)
    snprintf(stub_check, sizeof stub_check, "ok");
  else
    snprintf(stub_check, sizeof stub_check, "code %d: %s", (int)code, message);
  CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
}

EXPORT OrtStatus* CreateEpFactories(const char* registration_name, const OrtApiBase* base,
                                    const OrtLogger* logger, OrtEpFactory** factories,
                                    size_t max_factories, size_t* num_factories) {
  (void)logger;
  *num_factories = 0;
  api = base->GetApi(NXRT_ORT_API_LEVEL);
  if (api == NULL) return NULL; /* cannot even make a status: register nothing */
  ep_api = CALL(api, GetEpApiFn, GetEpApi)();
  const char* dot = strchr(registration_name, '.');
  snprintf(mode, sizeof mode, "%s", dot ? dot + 1 : "");
  if (Mode("refuse")) return Error("registration refused on purpose");
  if (Mode("garbage_status")) {
    static char not_a_status[32];
    return (OrtStatus*)not_a_status;
  }
  if (Mode("no_factories")) return NULL;
  CheckStub();
  memset(&factory, 0, sizeof factory);
  factory.ort_version_supported = NXRT_ORT_API_LEVEL;
  factory.GetName = FactoryName;
  factory.GetVendor = FactoryVendor;
  factory.GetSupportedDevices = GetSupportedDevices;
  factory.CreateEp = CreateEp;
  factory.ReleaseEp = ReleaseEp;
  factory.GetVendorId = FactoryVendorId;
  factory.GetVersion = FactoryVersion;
  factories[0] = &factory;
  *num_factories = Mode("too_many") ? max_factories + 5 : 1;
  return NULL;
}

EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* released) {
  return released == &factory ? NULL : Error("ReleaseEpFactory: not this library's factory");
}
