/* A kernel-based EP library written the way onnxruntime plugin EPs of API level 24 are: its EP
 * has no Compile; it builds a kernel registry (OrtEp::GetKernelRegistry) with definitions made by
 * OrtKernelDefBuilder, claims nodes one by one in GetCapability (EpGraphSupportInfo_LookUpKernel,
 * EpGraphSupportInfo_AddSingleNode), and the host creates its kernels (OrtKernelImpl) through the
 * create functions it registered, handing them an OrtKernelInfo. Built in C against nxrt's
 * declarations of that interface (src/ort_plugins/ort_abi.h), a sibling of ort_test_ep.c.
 *
 * The registration name chooses a behaviour, so one library covers the good path and the ways a
 * kernel-based plugin can break the contract:
 *   "ort_kernel_test"                   one factory, an EP device on every CPU
 *   "ort_kernel_test.failing_registry"  GetKernelRegistry returns an error status
 *   "ort_kernel_test.failing_create"    Relu's create function returns an error status
 *   "ort_kernel_test.null_kernel"       Relu's create function succeeds without a kernel
 *   "ort_kernel_test.failing_compute"   Relu's Compute returns an error status
 *   "ort_kernel_test.foreign_node"      GetCapability passes a pointer that is no node to
 *                                       LookUpKernel and AddSingleNode (releasing their error
 *                                       statuses) and claims nothing
 *   "ort_kernel_test.no_compute"        Relu's kernel has no Compute
 *   "ort_kernel_test.wrong_ep"          Relu's definition names the EP "SomeOtherEp"
 *   "ort_kernel_test.stream"            "device", and stream aware: the factory makes a stream
 *                                       per memory device (OrtSyncStreamImpl, notifications);
 *                                       every kernel fails unless KernelContext_
 *                                       GetGPUComputeStream gives one of its streams, copies
 *                                       check the streams they are handed
 *   "ort_kernel_test.device"            computes in memory of its own (a GPU-type memory,
 *                                       vendor 0x1234, really malloc'ed blocks with a tag):
 *                                       the factory's CreateAllocator and CreateDataTransfer
 *                                       serve it, and every kernel fails when its input 0 is
 *                                       not in that memory
 *
 * Its EP (OrtKernelTestEp) registers, in domain "" (ai.onnx):
 *   Add        since 7, T = float: elementwise on equal shapes or a one-element second input
 *   Add        since 7, T = int64: the same with its own create function
 *   Relu       since 6, T = float, input 0 may be overwritten by output 0 (mutable alias)
 *   LeakyRelu  since 6, T = float, attribute "alpha" (0.01 when the host has none)
 *   Transpose  since 1, T = float, attribute "perm" (reversed axes when absent), rank <= 8
 *   Reshape    since 5, T = float, input 1 in CPU memory, output 0 may alias input 0
 *   MatMul     since 1, T = float, 2-D only; pre-packs input 1 (B transposed, after a small
 *              header that records K and N), in the host's shared cache when it offers one
 *   If         since 1, B = bool, V = float, input 0 in CPU memory: the runtime's kernel
 *              (OrtEpApi::CreateIfKernel)
 * every version range ending at INT32_MAX. Every create function first checks what
 * OrtKernelInfo reports (node name, operator type, domain and since version against the
 * definition, inputs and outputs, the element type of input 0, the EP, the logger, the config
 * entries), reading each string the way onnxruntime's getters are read (size, short buffer,
 * copy). The session config entry "ep.ortkerneltestep.scale" (the EP option "scale"), when set,
 * multiplies the results of Add and Relu.
 *
 * OrtKernelTestCounters(name) reports process-wide counts for the tests:
 *   "created"   kernels the create functions returned (the runtime's If kernels included)
 *   "released"  OrtKernelImpl::Release calls on the plugin's own kernels
 *   "prepacked" PrePackWeight calls that packed a weight (is_packed set)
 *   "shared"    SetSharedPrePackedWeight calls
 *   "computed"  Compute calls on the plugin's own kernels
 *   "device_blocks" blocks of the device memory allocated and not yet freed
 *   "copies"    tensors the data transfer copied
 *   "streams"   streams alive; "notifications" activated; "device_waits" / "host_waits"
 *   WaitOnDevice / WaitOnHost calls; "stream_copies" tensors copied on a stream; "run_ends"
 *   OnSessionRunEnd calls
 * and -1 for any other name. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ort_plugins/ort_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* Typed views of the slots this plugin calls. */
typedef OrtStatus* (*CreateStatusFn)(OrtErrorCode, const char*);
typedef void (*ReleaseStatusFn)(OrtStatus*);
typedef void (*CreateKeyValuePairsFn)(OrtKeyValuePairs**);
typedef void (*AddKeyValuePairFn)(OrtKeyValuePairs*, const char*, const char*);
typedef const char* (*GetKeyValueFn)(const OrtKeyValuePairs*, const char*);
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
typedef OrtStatus* (*GetCountFn)(const void*, size_t*);
typedef OrtStatus* (*GetNodesFn)(const OrtGraph*, const OrtNode**, size_t);
/* Type infos */
typedef OrtStatus* (*CastTensorInfoFn)(const OrtTypeInfo*, const OrtTensorTypeAndShapeInfo**);
typedef OrtStatus* (*GetElementTypeFn)(const OrtTensorTypeAndShapeInfo*, int*);
typedef void (*ReleaseTypeInfoFn)(OrtTypeInfo*);
/* Kernel contexts and values */
typedef OrtStatus* (*CtxGetInputFn)(const OrtKernelContext*, size_t, const OrtValue**);
typedef OrtStatus* (*CtxGetOutputFn)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**);
typedef OrtStatus* (*GetTypeAndShapeFn)(const OrtValue*, OrtTensorTypeAndShapeInfo**);
typedef OrtStatus* (*GetDimsFn)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t);
typedef OrtStatus* (*ShapeCountFn)(const OrtTensorTypeAndShapeInfo*, size_t*);
typedef void (*ReleaseTensorInfoFn)(OrtTensorTypeAndShapeInfo*);
typedef OrtStatus* (*GetDataFn)(const OrtValue*, const void**);
typedef OrtStatus* (*GetMutableDataFn)(OrtValue*, void**);
/* Kernel infos */
typedef OrtStatus* (*InfoAttrFloatFn)(const OrtKernelInfo*, const char*, float*);
typedef OrtStatus* (*InfoAttrInt64Fn)(const OrtKernelInfo*, const char*, int64_t*);
typedef OrtStatus* (*InfoAttrArrayInt64Fn)(const OrtKernelInfo*, const char*, int64_t*, size_t*);
typedef OrtStatus* (*InfoCountFn)(const OrtKernelInfo*, size_t*);
typedef OrtStatus* (*InfoStringFn)(const OrtKernelInfo*, char*, size_t*);
typedef OrtStatus* (*InfoIndexedStringFn)(const OrtKernelInfo*, size_t, char*, size_t*);
typedef OrtStatus* (*InfoTypeInfoFn)(const OrtKernelInfo*, size_t, OrtTypeInfo**);
typedef OrtStatus* (*InfoLoggerFn)(const OrtKernelInfo*, const OrtLogger**);
typedef OrtStatus* (*InfoConstantInputFn)(const OrtKernelInfo*, size_t, int*, const OrtValue**);
typedef OrtStatus* (*InfoConfigEntriesFn)(const OrtKernelInfo*, OrtKeyValuePairs**);
typedef OrtStatus* (*InfoSinceVersionFn)(const OrtKernelInfo*, int*);
/* OrtEpApi: kernel registries and definitions */
typedef OrtStatus* (*CreateKernelRegistryFn)(OrtKernelRegistry**);
typedef void (*ReleaseKernelRegistryFn)(OrtKernelRegistry*);
typedef OrtStatus* (*AddKernelFn)(OrtKernelRegistry*, const OrtKernelDef*, OrtKernelCreateFunc,
                                  void*);
typedef OrtStatus* (*CreateDefBuilderFn)(OrtKernelDefBuilder**);
typedef void (*ReleaseDefBuilderFn)(OrtKernelDefBuilder*);
typedef OrtStatus* (*BuilderStringFn)(OrtKernelDefBuilder*, const char*);
typedef OrtStatus* (*BuilderSinceFn)(OrtKernelDefBuilder*, int, int);
typedef OrtStatus* (*BuilderMemTypeFn)(OrtKernelDefBuilder*, size_t, OrtMemType);
typedef OrtStatus* (*BuilderTypeConstraintFn)(OrtKernelDefBuilder*, const char*,
                                              const OrtDataType* const*, size_t);
typedef OrtStatus* (*BuilderAliasesFn)(OrtKernelDefBuilder*, const int*, const int*, size_t);
typedef OrtStatus* (*BuildFn)(OrtKernelDefBuilder*, OrtKernelDef**);
typedef void (*ReleaseKernelDefFn)(OrtKernelDef*);
typedef const char* (*DefStringFn)(const OrtKernelDef*);
typedef OrtStatus* (*DefSinceFn)(const OrtKernelDef*, int*, int*);
typedef OrtStatus* (*GetTensorDataTypeFn)(int, const OrtDataType**);
typedef OrtStatus* (*LookUpKernelFn)(OrtEpGraphSupportInfo*, const OrtNode*, const OrtKernelDef**);
typedef OrtStatus* (*AddSingleNodeFn)(OrtEpGraphSupportInfo*, const OrtNode*);
typedef OrtStatus* (*StoreWeightDataFn)(OrtSharedPrePackedWeightCache*, void**, size_t*, size_t);
typedef OrtStatus* (*InfoGetEpFn)(const OrtKernelInfo*, const OrtEp**);
typedef OrtStatus* (*CreateIfKernelFn)(const OrtKernelInfo*, OrtKernelImpl**);
typedef OrtStatus* (*TypeAndShapeRefFn)(const OrtValue*, int*, const int64_t**, size_t*);
typedef OrtStatus* (*InfoGetAllocatorFn)(const OrtKernelInfo*, OrtMemType, OrtAllocator**);
typedef void (*ReleaseAllocatorFn)(OrtAllocator*);

/* ONNXTensorElementDataType values this plugin uses. */
enum { TYPE_FLOAT = 1, TYPE_INT64 = 7, TYPE_BOOL = 9 };

#define CALL(table, type, slot) ((type)(table)->slot)
#define EP_NAME "OrtKernelTestEp"
#define DEVICE_VENDOR 0x1234
#define MAX_RANK 8

static const OrtApi* api;
static const OrtEpApi* ep_api;
static char mode[64];

/* ---- Counters ------------------------------------------------------------------------------ */

enum {
  C_CREATED,
  C_RELEASED,
  C_PREPACKED,
  C_SHARED,
  C_COMPUTED,
  C_DEVICE_BLOCKS,
  C_COPIES,
  C_STREAMS,
  C_NOTIFICATIONS,
  C_DEVICE_WAITS,
  C_HOST_WAITS,
  C_STREAM_COPIES,
  C_RUN_ENDS,
  C_EP_RUN_STARTS,
  C_EP_RUN_ENDS,
  C_ACTIVE_RUNS,
  C_MAX_ACTIVE_RUNS,
  C_COUNT
};
static atomic_int counters[C_COUNT];
static const char* const counter_names[C_COUNT] = {
    "created",  "released",      "prepacked",     "shared",       "computed",       "device_blocks",
    "copies",   "streams",       "notifications", "device_waits", "host_waits",     "stream_copies",
    "run_ends", "ep_run_starts", "ep_run_ends",   "active_runs",  "max_active_runs"};

EXPORT int OrtKernelTestCounters(const char* which) {
  for (int i = 0; which != NULL && i < C_COUNT; ++i)
    if (strcmp(which, counter_names[i]) == 0) return atomic_load(&counters[i]);
  return -1;
}

static void Count(int which) { atomic_fetch_add(&counters[which], 1); }
static void Uncount(int which) { atomic_fetch_sub(&counters[which], 1); }

/* ---- Statuses ------------------------------------------------------------------------------ */

static OrtStatus* Error(const char* message) {
  return CALL(api, CreateStatusFn, CreateStatus)(ORT_FAIL, message);
}

static OrtStatus* Errorf(const char* format, ...) __attribute__((format(printf, 1, 2)));
static OrtStatus* Errorf(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return Error(message);
}

static void Release(OrtStatus* status) {
  if (status != NULL) CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
}

#define RETURN_IF(expr)                  \
  do {                                   \
    OrtStatus* status_ = (expr);         \
    if (status_ != NULL) return status_; \
  } while (0)

static int Mode(const char* name) { return strcmp(mode, name) == 0; }
/* "stream" computes in the device memory too. */
static int DeviceMode(void) { return Mode("device") || Mode("stream"); }

/* ---- Factory and devices (as ort_test_ep.c) --------------------------------------------- */

static const char* FactoryName(const OrtEpFactory* self) {
  (void)self;
  return EP_NAME;
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
  return "0.1.0";
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
  OrtStatus* status =
      CALL(ep_api, CreateEpDeviceFn, CreateEpDevice)(self, device, metadata, options, out);
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(metadata);
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(options);
  if (status != NULL) return status;
  OrtMemoryInfo* memory = NULL;
  if (DeviceMode())
    status = CALL(api, CreateMemoryInfoV2Fn, CreateMemoryInfo_V2)(
        "OrtKernelTestDevice", OrtMemoryInfoDeviceType_GPU, DEVICE_VENDOR, 0,
        OrtDeviceMemoryType_DEFAULT, 64, OrtDeviceAllocator, &memory);
  else
    status = CALL(api, CreateMemoryInfoV2Fn, CreateMemoryInfo_V2)(
        "OrtKernelTestCpu", OrtMemoryInfoDeviceType_CPU, 0, 0, OrtDeviceMemoryType_DEFAULT, 64,
        OrtDeviceAllocator, &memory);
  if (status != NULL) return status;
  status = CALL(ep_api, AddAllocatorInfoFn, EpDevice_AddAllocatorInfo)(*out, memory);
  CALL(api, ReleaseMemoryInfoFn, ReleaseMemoryInfo)(memory);
  if (status != NULL || !DeviceMode()) return status;
  /* Like WebGPU's plugin, a read-only (initializer) allocator of the same memory after the
   * default one: it must not take the default's place. */
  status = CALL(api, CreateMemoryInfoV2Fn, CreateMemoryInfo_V2)(
      "OrtKernelTestDevice", OrtMemoryInfoDeviceType_GPU, DEVICE_VENDOR, 0,
      OrtDeviceMemoryType_DEFAULT, 64, OrtReadOnlyAllocator, &memory);
  if (status != NULL) return status;
  status = CALL(ep_api, AddAllocatorInfoFn, EpDevice_AddAllocatorInfo)(*out, memory);
  CALL(api, ReleaseMemoryInfoFn, ReleaseMemoryInfo)(memory);
  return status;
}

static OrtStatus* GetSupportedDevices(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                      size_t num_devices, OrtEpDevice** ep_devices,
                                      size_t max_ep_devices, size_t* num_ep_devices) {
  *num_ep_devices = 0;
  for (size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
    if (CALL(api, HardwareDeviceTypeFn, HardwareDevice_Type)(devices[i]) !=
        OrtHardwareDeviceType_CPU)
      continue;
    const char* vendor = CALL(api, HardwareDeviceVendorFn, HardwareDevice_Vendor)(devices[i]);
    RETURN_IF(AddCpuDevice(self, devices[i], vendor, &ep_devices[*num_ep_devices]));
    ++*num_ep_devices;
  }
  return NULL;
}

/* ---- Device memory ("device" mode) -------------------------------------------------------- */

/* Blocks of the "device" memory carry a tag in front, so a block of another memory handed to
 * Free is caught. */
#define DEVICE_TAG 0x4e58444556424c4bull /* "NXDEVBLK" */
#define DEVICE_HEADER 64

typedef const OrtMemoryDevice* (*GetMemoryDeviceFn)(const OrtMemoryInfo*);
typedef OrtMemoryInfoDeviceType (*MemoryDeviceTypeFn)(const OrtMemoryDevice*);
typedef uint32_t (*MemoryDeviceVendorFn)(const OrtMemoryDevice*);
typedef OrtStatus* (*TensorMemoryInfoFn)(const OrtValue*, const OrtMemoryInfo**);
typedef OrtStatus* (*TensorBytesFn)(const OrtValue*, size_t*);
typedef OrtStatus* (*MemoryInfoAllocatorTypeFn)(const OrtMemoryInfo*, OrtAllocatorType*);

static OrtMemoryInfo* device_memory_info; /* what Info reports; made at registration */

static void* DeviceAlloc(OrtAllocator* self, size_t size) {
  (void)self;
  void* p = NULL;
  if (posix_memalign(&p, 64, DEVICE_HEADER + (size == 0 ? 1 : size)) != 0) return NULL;
  *(uint64_t*)p = DEVICE_TAG;
  Count(C_DEVICE_BLOCKS);
  return (char*)p + DEVICE_HEADER;
}
static void DeviceFree(OrtAllocator* self, void* block) {
  (void)self;
  if (block == NULL) return;
  char* p = (char*)block - DEVICE_HEADER;
  if (*(uint64_t*)p != DEVICE_TAG) abort(); /* not a block of this memory: a host bug */
  *(uint64_t*)p = 0;
  Uncount(C_DEVICE_BLOCKS);
  free(p);
}
static const OrtMemoryInfo* DeviceInfo(const OrtAllocator* self) {
  (void)self;
  return device_memory_info;
}
static void* DeviceReserve(OrtAllocator* self, size_t size) { return DeviceAlloc(self, size); }
static OrtAllocator device_allocator;

static OrtStatus* FactoryCreateAllocator(OrtEpFactory* self, const OrtMemoryInfo* memory,
                                         const OrtKeyValuePairs* options, OrtAllocator** out) {
  (void)self;
  (void)options;
  *out = NULL;
  const OrtMemoryDevice* d = CALL(ep_api, GetMemoryDeviceFn, MemoryInfo_GetMemoryDevice)(memory);
  if (CALL(ep_api, MemoryDeviceTypeFn, MemoryDevice_GetDeviceType)(d) !=
          OrtMemoryInfoDeviceType_GPU ||
      CALL(ep_api, MemoryDeviceVendorFn, MemoryDevice_GetVendorId)(d) != DEVICE_VENDOR)
    return Error(EP_NAME ": CreateAllocator for a memory that is not its device's");
  OrtAllocatorType type = OrtInvalidAllocator;
  RETURN_IF(CALL(api, MemoryInfoAllocatorTypeFn, MemoryInfoGetType)(memory, &type));
  if (type != OrtDeviceAllocator)
    return Error(EP_NAME ": CreateAllocator for the read-only allocator's memory info");
  *out = &device_allocator;
  return NULL;
}
static void FactoryReleaseAllocator(OrtEpFactory* self, OrtAllocator* allocator) {
  (void)self;
  (void)allocator;
}

static int IsOurs(const OrtMemoryDevice* d) {
  return CALL(ep_api, MemoryDeviceTypeFn, MemoryDevice_GetDeviceType)(d) ==
             OrtMemoryInfoDeviceType_GPU &&
         CALL(ep_api, MemoryDeviceVendorFn, MemoryDevice_GetVendorId)(d) == DEVICE_VENDOR;
}
static int IsHost(const OrtMemoryDevice* d) {
  return CALL(ep_api, MemoryDeviceTypeFn, MemoryDevice_GetDeviceType)(d) ==
         OrtMemoryInfoDeviceType_CPU;
}
static bool TransferCanCopy(const OrtDataTransferImpl* self, const OrtMemoryDevice* src,
                            const OrtMemoryDevice* dst) {
  (void)self;
  return (IsOurs(src) && (IsHost(dst) || IsOurs(dst))) || (IsHost(src) && IsOurs(dst));
}
static int IsTestSyncStream(const OrtSyncStream* s);
static OrtStatus* TransferCopy(OrtDataTransferImpl* self, const OrtValue** src, OrtValue** dst,
                               OrtSyncStream** streams, size_t count) {
  (void)self;
  for (size_t i = 0; i < count; ++i) {
    if (streams != NULL) {
      if (!IsTestSyncStream(streams[i])) return Error(EP_NAME ": CopyTensors on a foreign stream");
      Count(C_STREAM_COPIES);
    }
    size_t bytes = 0, dst_bytes = 0;
    const void* from = NULL;
    void* to = NULL;
    RETURN_IF(CALL(api, TensorBytesFn, GetTensorSizeInBytes)(src[i], &bytes));
    RETURN_IF(CALL(api, TensorBytesFn, GetTensorSizeInBytes)(dst[i], &dst_bytes));
    if (bytes != dst_bytes) return Error(EP_NAME ": CopyTensors between different sizes");
    RETURN_IF(CALL(api, GetDataFn, GetTensorData)(src[i], &from));
    RETURN_IF(CALL(api, GetMutableDataFn, GetTensorMutableData)(dst[i], &to));
    if (bytes > 0) memcpy(to, from, bytes);
    Count(C_COPIES);
  }
  return NULL;
}
static void TransferRelease(OrtDataTransferImpl* self) { (void)self; }
static OrtDataTransferImpl data_transfer;

static OrtStatus* FactoryCreateDataTransfer(OrtEpFactory* self, OrtDataTransferImpl** out) {
  (void)self;
  *out = &data_transfer;
  return NULL;
}

/* ---- Streams ("stream" mode): synchronous work, but every hand-over checked ------------------ */

#define STREAM_MAGIC 0x53545245414d5321ull /* "STREAMS!" */
typedef const OrtSyncStreamImpl* (*SyncStreamGetImplFn)(const OrtSyncStream*);
typedef OrtStatus* (*GetComputeStreamFn)(const OrtKernelContext*, void**);

typedef struct TestStream {
  OrtSyncStreamImpl base;
  uint64_t magic;
} TestStream;
typedef struct TestNotification {
  OrtSyncNotificationImpl base;
  int activated;
} TestNotification;

static int IsTestStream(const void* p) {
  return p != NULL && ((const TestStream*)p)->magic == STREAM_MAGIC;
}
static int IsTestSyncStream(const OrtSyncStream* s) {
  return s != NULL && IsTestStream(CALL(ep_api, SyncStreamGetImplFn, SyncStream_GetImpl)(s));
}

static void NotificationRelease(OrtSyncNotificationImpl* self) { free(self); }
static OrtStatus* NotificationActivate(OrtSyncNotificationImpl* self) {
  ((TestNotification*)self)->activated = 1;
  Count(C_NOTIFICATIONS);
  return NULL;
}
static OrtStatus* NotificationWaitOnDevice(OrtSyncNotificationImpl* self, OrtSyncStream* consumer) {
  if (!((TestNotification*)self)->activated)
    return Error(EP_NAME ": wait on a notification not activated");
  if (!IsTestSyncStream(consumer)) return Error(EP_NAME ": WaitOnDevice for a stream not its own");
  Count(C_DEVICE_WAITS);
  return NULL;
}
static OrtStatus* NotificationWaitOnHost(OrtSyncNotificationImpl* self) {
  if (!((TestNotification*)self)->activated)
    return Error(EP_NAME ": wait on a notification not activated");
  Count(C_HOST_WAITS);
  return NULL;
}

static void StreamRelease(OrtSyncStreamImpl* self) {
  ((TestStream*)self)->magic = 0;
  Uncount(C_STREAMS);
  free(self);
}
static void* StreamGetHandle(OrtSyncStreamImpl* self) { return self; }
static OrtStatus* StreamCreateNotification(OrtSyncStreamImpl* self, OrtSyncNotificationImpl** out) {
  (void)self;
  TestNotification* n = calloc(1, sizeof *n);
  if (n == NULL) return Error(EP_NAME ": out of memory");
  n->base = (OrtSyncNotificationImpl){NXRT_ORT_API_LEVEL, NotificationRelease, NotificationActivate,
                                      NotificationWaitOnDevice, NotificationWaitOnHost};
  *out = &n->base;
  return NULL;
}
static OrtStatus* StreamFlush(OrtSyncStreamImpl* self) {
  (void)self;
  return NULL;
}
static OrtStatus* StreamOnSessionRunEnd(OrtSyncStreamImpl* self) {
  (void)self;
  Count(C_RUN_ENDS);
  return NULL;
}

static bool FactoryIsStreamAware(const OrtEpFactory* self) {
  (void)self;
  return true;
}
static OrtStatus* FactoryCreateSyncStream(OrtEpFactory* self, const OrtMemoryDevice* device,
                                          const OrtKeyValuePairs* options,
                                          OrtSyncStreamImpl** out) {
  (void)self;
  (void)options;
  *out = NULL;
  if (!IsOurs(device)) return Error(EP_NAME ": a stream for a memory that is not its device's");
  TestStream* s = calloc(1, sizeof *s);
  if (s == NULL) return Error(EP_NAME ": out of memory");
  s->base = (OrtSyncStreamImpl){NXRT_ORT_API_LEVEL,       StreamRelease, StreamGetHandle,
                                StreamCreateNotification, StreamFlush,   StreamOnSessionRunEnd};
  s->magic = STREAM_MAGIC;
  Count(C_STREAMS);
  *out = &s->base;
  return NULL;
}

/* In stream mode every kernel runs on one of the plugin's streams. */
static OrtStatus* CheckOnStream(OrtKernelContext* ctx) {
  if (!Mode("stream")) return NULL;
  void* handle = NULL;
  RETURN_IF(CALL(api, GetComputeStreamFn, KernelContext_GetGPUComputeStream)(ctx, &handle));
  if (!IsTestStream(handle)) return Error(EP_NAME ": the kernel has no stream of its own");
  return NULL;
}

/* In device mode, whether `value` is in the device's memory must be `want` (1 device, 0 host):
 * onnxruntime puts values where the kernel definition says, and so must the host. */
static OrtStatus* CheckMemory(const OrtValue* value, int want, const char* what) {
  if (!DeviceMode()) return NULL;
  const OrtMemoryInfo* m = NULL;
  RETURN_IF(CALL(api, TensorMemoryInfoFn, GetTensorMemoryInfo)(value, &m));
  const int on_device = IsOurs(CALL(ep_api, GetMemoryDeviceFn, MemoryInfo_GetMemoryDevice)(m));
  if (on_device != want)
    return Errorf(EP_NAME ": %s is in %s memory", what, on_device ? "device" : "host");
  return NULL;
}

/* In device mode every kernel's input 0 must be in the device memory (the host moved it there). */
static OrtStatus* CheckInDeviceMemory(OrtKernelContext* ctx) {
  if (!DeviceMode()) return NULL;
  const OrtValue* in = NULL;
  RETURN_IF(CALL(api, CtxGetInputFn, KernelContext_GetInput)(ctx, 0, &in));
  const OrtMemoryInfo* m = NULL;
  RETURN_IF(CALL(api, TensorMemoryInfoFn, GetTensorMemoryInfo)(in, &m));
  if (!IsOurs(CALL(ep_api, GetMemoryDeviceFn, MemoryInfo_GetMemoryDevice)(m)))
    return Error(EP_NAME ": input 0 is not in the device's memory");
  return NULL;
}

/* ---- Kernel definitions ------------------------------------------------------------------- */

enum Kind {
  K_ADD_FLOAT,
  K_ADD_INT64,
  K_RELU,
  K_LEAKY_RELU,
  K_TRANSPOSE,
  K_RESHAPE,
  K_MATMUL,
  K_IF
};
enum Alias { NO_ALIAS, ALIAS, MUTABLE_ALIAS };

typedef struct TestEp TestEp;

typedef struct KernelSpec {
  enum Kind kind;
  const char* op;
  int since; /* to INT32_MAX */
  const char* param;
  int type; /* also the element type input 0 must have */
  const char* param2;
  int type2;
  int cpu_input;    /* an input in CPU memory, or -1 */
  enum Alias alias; /* input 0 -> output 0 */
  OrtKernelCreateFunc create;
} KernelSpec;

/* What a create function receives as its state: the EP whose registry holds it, and its spec. */
typedef struct KernelState {
  TestEp* ep;
  const KernelSpec* spec;
} KernelState;

static OrtStatus* CreateAddFloat(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateAddInt64(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateRelu(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateLeakyRelu(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateTranspose(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateReshape(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateMatMul(void*, const OrtKernelInfo*, OrtKernelImpl**);
static OrtStatus* CreateIf(void*, const OrtKernelInfo*, OrtKernelImpl**);

static const KernelSpec specs[] = {
    {K_ADD_FLOAT, "Add", 7, "T", TYPE_FLOAT, NULL, 0, -1, NO_ALIAS, CreateAddFloat},
    {K_ADD_INT64, "Add", 7, "T", TYPE_INT64, NULL, 0, -1, NO_ALIAS, CreateAddInt64},
    {K_RELU, "Relu", 6, "T", TYPE_FLOAT, NULL, 0, -1, MUTABLE_ALIAS, CreateRelu},
    {K_LEAKY_RELU, "LeakyRelu", 6, "T", TYPE_FLOAT, NULL, 0, -1, NO_ALIAS, CreateLeakyRelu},
    {K_TRANSPOSE, "Transpose", 1, "T", TYPE_FLOAT, NULL, 0, -1, NO_ALIAS, CreateTranspose},
    /* "shape" is a formal parameter's name, not a type parameter: onnxruntime accepts both. */
    {K_RESHAPE, "Reshape", 5, "T", TYPE_FLOAT, "shape", TYPE_INT64, 1, ALIAS, CreateReshape},
    {K_MATMUL, "MatMul", 1, "T", TYPE_FLOAT, NULL, 0, -1, NO_ALIAS, CreateMatMul},
    {K_IF, "If", 1, "B", TYPE_BOOL, "V", TYPE_FLOAT, 0, NO_ALIAS, CreateIf},
};
#define NUM_SPECS (sizeof specs / sizeof specs[0])

struct TestEp {
  OrtEp base;
  OrtKernelRegistry* registry;
  KernelState states[NUM_SPECS];
};

static OrtStatus* AddTypeConstraint(OrtKernelDefBuilder* b, const char* param, int type) {
  const OrtDataType* data_type = NULL;
  RETURN_IF(CALL(ep_api, GetTensorDataTypeFn, GetTensorDataType)(type, &data_type));
  if (data_type == NULL) return Errorf(EP_NAME ": GetTensorDataType(%d) returned NULL", type);
  return CALL(ep_api, BuilderTypeConstraintFn, KernelDefBuilder_AddTypeConstraint)(b, param,
                                                                                   &data_type, 1);
}

/* Checks that the definition's readers report what the builder was told. */
static OrtStatus* CheckDef(const OrtKernelDef* def, const char* op, const char* ep_name,
                           int since) {
  const char* def_op = CALL(ep_api, DefStringFn, KernelDef_GetOperatorType)(def);
  const char* def_domain = CALL(ep_api, DefStringFn, KernelDef_GetDomain)(def);
  const char* def_ep = CALL(ep_api, DefStringFn, KernelDef_GetExecutionProvider)(def);
  int start = 0, end = 0;
  RETURN_IF(CALL(ep_api, DefSinceFn, KernelDef_GetSinceVersion)(def, &start, &end));
  if (def_op == NULL || strcmp(def_op, op) != 0 || def_domain == NULL || def_domain[0] != '\0' ||
      def_ep == NULL || strcmp(def_ep, ep_name) != 0 || start != since || end != INT32_MAX)
    return Errorf(EP_NAME
                  ": the definition of %s reads back as op '%s', domain '%s', EP '%s', "
                  "versions %d..%d",
                  op, def_op ? def_op : "(null)", def_domain ? def_domain : "(null)",
                  def_ep ? def_ep : "(null)", start, end);
  return NULL;
}

static OrtStatus* FillBuilder(OrtKernelDefBuilder* b, const KernelSpec* spec, const char* ep_name) {
  RETURN_IF(CALL(ep_api, BuilderStringFn, KernelDefBuilder_SetOperatorType)(b, spec->op));
  RETURN_IF(CALL(ep_api, BuilderStringFn, KernelDefBuilder_SetDomain)(b, ""));
  RETURN_IF(
      CALL(ep_api, BuilderSinceFn, KernelDefBuilder_SetSinceVersion)(b, spec->since, INT32_MAX));
  RETURN_IF(CALL(ep_api, BuilderStringFn, KernelDefBuilder_SetExecutionProvider)(b, ep_name));
  RETURN_IF(AddTypeConstraint(b, spec->param, spec->type));
  if (spec->param2 != NULL) RETURN_IF(AddTypeConstraint(b, spec->param2, spec->type2));
  /* onnxruntime's own kernels mark such inputs OrtMemTypeCPU, which is OrtMemTypeCPUOutput's
   * value; If uses the explicit OrtMemTypeCPUInput. */
  if (spec->cpu_input >= 0)
    RETURN_IF(CALL(ep_api, BuilderMemTypeFn, KernelDefBuilder_SetInputMemType)(
        b, (size_t)spec->cpu_input,
        spec->kind == K_RESHAPE ? OrtMemTypeCPUOutput : OrtMemTypeCPUInput));
  const int zero = 0;
  if (spec->alias == ALIAS)
    RETURN_IF(
        CALL(ep_api, BuilderAliasesFn, KernelDefBuilder_AddInputOutputAliases)(b, &zero, &zero, 1));
  if (spec->alias == MUTABLE_ALIAS)
    RETURN_IF(CALL(ep_api, BuilderAliasesFn, KernelDefBuilder_AddInputOutputMutableAliases)(
        b, &zero, &zero, 1));
  return NULL;
}

/* One definition into the EP's registry. */
static OrtStatus* Register(TestEp* e, size_t index) {
  const KernelSpec* spec = &specs[index];
  const char* ep_name = spec->kind == K_RELU && Mode("wrong_ep") ? "SomeOtherEp" : EP_NAME;
  OrtKernelDefBuilder* b = NULL;
  RETURN_IF(CALL(ep_api, CreateDefBuilderFn, CreateKernelDefBuilder)(&b));
  OrtKernelDef* def = NULL;
  OrtStatus* status = FillBuilder(b, spec, ep_name);
  if (status == NULL) status = CALL(ep_api, BuildFn, KernelDefBuilder_Build)(b, &def);
  CALL(ep_api, ReleaseDefBuilderFn, ReleaseKernelDefBuilder)(b);
  if (status != NULL) return status;
  status = CheckDef(def, spec->op, ep_name, spec->since);
  e->states[index].ep = e;
  e->states[index].spec = spec;
  if (status == NULL)
    status = CALL(ep_api, AddKernelFn, KernelRegistry_AddKernel)(e->registry, def, spec->create,
                                                                 &e->states[index]);
  CALL(ep_api, ReleaseKernelDefFn, ReleaseKernelDef)(def); /* the registry keeps its own */
  return status;
}

/* ---- Kernels ------------------------------------------------------------------------------ */

typedef struct TestKernel {
  OrtKernelImpl base;
  enum Kind kind;
  float scale;            /* Add and Relu multiply their results by it */
  float alpha;            /* LeakyRelu */
  int64_t perm[MAX_RANK]; /* Transpose; perm_len 0: reversed axes */
  size_t perm_len;
  int64_t allowzero; /* Reshape */
  /* MatMul: B packed as [N,K] after a header {K, N} (int64s). */
  OrtAllocator* allocator; /* the allocator `owned` came from */
  void* owned;             /* packed without a cache: ours to free */
  const float* packed;     /* the packed data (in `owned` or in the host's shared buffer) */
  int64_t packed_k, packed_n;
  int awaiting_shared; /* stored into the cache, SetSharedPrePackedWeight not yet seen */
  /* As onnxruntime's kernels do, the kernel keeps the info it was made with and reads it again
   * in Compute: it must live as long as the kernel. */
  const OrtKernelInfo* info;
} TestKernel;

#define PACK_HEADER (2 * sizeof(int64_t))

/* Reads one of OrtKernelInfo's strings the way onnxruntime's getters are read: its size (out
 * NULL), a buffer one byte short (an error that reports the size again), then the copy. */
static OrtStatus* InfoString(const OrtKernelInfo* info, OrtApiSlot slot, int indexed, size_t index,
                             const char* what, char* buf, size_t cap) {
  InfoStringFn plain = (InfoStringFn)slot;
  InfoIndexedStringFn with_index = (InfoIndexedStringFn)slot;
#define GET(out, size) \
  (indexed ? with_index(info, index, (out), (size)) : plain(info, (out), (size)))
  size_t need = 0;
  RETURN_IF(GET(NULL, &need));
  if (need == 0) return Errorf(EP_NAME ": %s reported a size of 0 (no room for the NUL)", what);
  if (need > cap) return Errorf(EP_NAME ": %s is longer than %zu bytes", what, cap);
  if (need > 1) {
    size_t short_size = need - 1;
    OrtStatus* status = GET(buf, &short_size);
    if (status == NULL)
      return Errorf(EP_NAME ": %s accepted a buffer one byte short of the %zu it needs", what,
                    need);
    Release(status);
    if (short_size != need)
      return Errorf(EP_NAME ": %s reported %zu bytes after a short buffer, %zu before", what,
                    short_size, need);
  }
  size_t size = need;
  RETURN_IF(GET(buf, &size));
#undef GET
  if (strlen(buf) + 1 != need || size != need)
    return Errorf(EP_NAME ": %s copied %zu bytes (size %zu) after reporting %zu", what,
                  strlen(buf) + 1, size, need);
  return NULL;
}

static float ConfigScale(const OrtKeyValuePairs* entries) {
  GetKeyValueFn get = CALL(api, GetKeyValueFn, GetKeyValue);
  /* EP options reach the session config as "ep.<lower-case EP name>.<key>" (onnxruntime's
   * convention); the EP's own spelling is accepted as well. */
  const char* value = get(entries, "ep.ortkerneltestep.scale");
  if (value == NULL) value = get(entries, "ep." EP_NAME ".scale");
  return value != NULL ? strtof(value, NULL) : 1.0f;
}

/* Element type of input `index` according to the kernel info (0 when it has none). */
static OrtStatus* InfoInputType(const OrtKernelInfo* info, size_t index, int* type) {
  *type = 0;
  OrtTypeInfo* type_info = NULL;
  RETURN_IF(CALL(api, InfoTypeInfoFn, KernelInfo_GetInputTypeInfo)(info, index, &type_info));
  if (type_info == NULL) return Error(EP_NAME ": KernelInfo_GetInputTypeInfo returned NULL");
  const OrtTensorTypeAndShapeInfo* tensor = NULL;
  OrtStatus* status = CALL(api, CastTensorInfoFn, CastTypeInfoToTensorInfo)(type_info, &tensor);
  if (status == NULL && tensor != NULL)
    status = CALL(api, GetElementTypeFn, GetTensorElementType)(tensor, type);
  CALL(api, ReleaseTypeInfoFn, ReleaseTypeInfo)(type_info);
  return status;
}

/* What every create function checks first: the kernel info describes the node of the definition
 * it was registered with, on this EP. Fills the kernel's scale. */
static OrtStatus* CheckInfo(const KernelState* state, const OrtKernelInfo* info, float* scale) {
  const KernelSpec* spec = state->spec;
  char name[256], op[64], domain[64], input[256], output[256];
  RETURN_IF(InfoString(info, api->KernelInfo_GetNodeName, 0, 0, "KernelInfo_GetNodeName", name,
                       sizeof name));
  RETURN_IF(InfoString(info, api->KernelInfo_GetOperatorType, 0, 0, "KernelInfo_GetOperatorType",
                       op, sizeof op));
  if (strcmp(op, spec->op) != 0)
    return Errorf(EP_NAME ": the %s kernel was created for node '%s', a %s", spec->op, name, op);
  RETURN_IF(InfoString(info, api->KernelInfo_GetOperatorDomain, 0, 0,
                       "KernelInfo_GetOperatorDomain", domain, sizeof domain));
  if (domain[0] != '\0')
    return Errorf(EP_NAME ": the %s kernel was created for node '%s' of domain '%s'", spec->op,
                  name, domain);
  int since = 0;
  RETURN_IF(CALL(api, InfoSinceVersionFn, KernelInfo_GetOperatorSinceVersion)(info, &since));
  if (since < spec->since)
    return Errorf(EP_NAME ": the %s kernel (since %d) was created for node '%s' of version %d",
                  spec->op, spec->since, name, since);
  size_t inputs = 0, outputs = 0;
  RETURN_IF(CALL(api, InfoCountFn, KernelInfo_GetInputCount)(info, &inputs));
  RETURN_IF(CALL(api, InfoCountFn, KernelInfo_GetOutputCount)(info, &outputs));
  if (inputs == 0 || outputs == 0)
    return Errorf(EP_NAME ": node '%s' has %zu inputs and %zu outputs", name, inputs, outputs);
  RETURN_IF(InfoString(info, api->KernelInfo_GetInputName, 1, 0, "KernelInfo_GetInputName", input,
                       sizeof input));
  RETURN_IF(InfoString(info, api->KernelInfo_GetOutputName, 1, 0, "KernelInfo_GetOutputName",
                       output, sizeof output));
  int type = 0;
  RETURN_IF(InfoInputType(info, 0, &type));
  if (type != 0 && type != spec->type)
    return Errorf(EP_NAME
                  ": the %s kernel for element type %d was created for node '%s', whose "
                  "input '%s' has element type %d",
                  spec->op, spec->type, name, input, type);
  const OrtEp* ep = NULL;
  RETURN_IF(CALL(ep_api, InfoGetEpFn, KernelInfo_GetEp)(info, &ep));
  if (ep != &state->ep->base)
    return Errorf(EP_NAME ": KernelInfo_GetEp of node '%s' is not the EP whose registry made it",
                  name);
  const OrtLogger* logger = NULL;
  RETURN_IF(CALL(api, InfoLoggerFn, KernelInfo_GetLogger)(info, &logger));
  if (logger == NULL) return Error(EP_NAME ": KernelInfo_GetLogger returned NULL");
  OrtKeyValuePairs* entries = NULL;
  RETURN_IF(CALL(api, InfoConfigEntriesFn, KernelInfo_GetConfigEntries)(info, &entries));
  if (entries == NULL) return Error(EP_NAME ": KernelInfo_GetConfigEntries returned NULL");
  *scale = ConfigScale(entries);
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(entries);
  return NULL;
}

static OrtStatus* Compute(OrtKernelImpl* self, OrtKernelContext* ctx);
static void ReleaseKernel(OrtKernelImpl* self);
static OrtStatus* PrePackWeight(OrtKernelImpl* self, const OrtValue* tensor, int input_index,
                                OrtAllocator* allocator, OrtSharedPrePackedWeightCache* cache,
                                bool* is_packed);
static OrtStatus* SetSharedPrePackedWeight(OrtKernelImpl* self, const void* const* buffers,
                                           const size_t* sizes, size_t num_buffers,
                                           int input_index);

/* Checks the info, then makes a kernel of the state's kind (not yet counted). */
static OrtStatus* NewKernel(void* state, const OrtKernelInfo* info, TestKernel** out) {
  *out = NULL;
  const KernelState* s = (const KernelState*)state;
  float scale = 1.0f;
  RETURN_IF(CheckInfo(s, info, &scale));
  TestKernel* k = calloc(1, sizeof *k);
  if (k == NULL) return Error("out of memory");
  k->base.ort_version_supported = NXRT_ORT_API_LEVEL;
  k->base.flags = 0;
  k->base.Compute = Compute;
  k->base.Release = ReleaseKernel;
  k->kind = s->spec->kind;
  k->scale = scale;
  k->info = info;
  *out = k;
  return NULL;
}

static OrtStatus* Made(TestKernel* k, OrtKernelImpl** out) {
  *out = &k->base;
  Count(C_CREATED);
  return NULL;
}

static OrtStatus* CreateAddFloat(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  return Made(k, out);
}

/* Its own function: a test sees from the kernel's results that the type constraint chose it. */
static OrtStatus* CreateAddInt64(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  if (k->kind != K_ADD_INT64) {
    free(k);
    return Error(EP_NAME ": the int64 Add create function was registered for another kernel");
  }
  return Made(k, out);
}

static OrtStatus* CreateRelu(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  if (Mode("failing_create")) {
    free(k);
    return Error(EP_NAME ": Relu create failed on purpose");
  }
  if (Mode("null_kernel")) {
    free(k);
    return NULL;
  }
  if (Mode("no_compute")) k->base.Compute = NULL;
  return Made(k, out);
}

static OrtStatus* CreateLeakyRelu(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  /* No fallback of its own, as in onnxruntime's kernels: a node without "alpha" reads the
   * schema's default (0.01) through the host. */
  OrtStatus* status =
      CALL(api, InfoAttrFloatFn, KernelInfoGetAttribute_float)(info, "alpha", &k->alpha);
  if (status != NULL) {
    free(k);
    return status;
  }
  return Made(k, out);
}

static OrtStatus* CreateTranspose(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  InfoAttrArrayInt64Fn get = CALL(api, InfoAttrArrayInt64Fn, KernelInfoGetAttributeArray_int64);
  size_t count = 0;
  OrtStatus* status = get(info, "perm", NULL, &count);
  if (status != NULL) { /* absent: reversed axes */
    Release(status);
    return Made(k, out);
  }
  if (count > MAX_RANK) {
    free(k);
    return Errorf(EP_NAME ": Transpose perm of %zu axes (at most %d)", count, MAX_RANK);
  }
  size_t got = count;
  if (count > 0) status = get(info, "perm", k->perm, &got);
  if (status == NULL && got != count)
    status = Errorf(EP_NAME ": Transpose perm reported %zu values, then copied %zu", count, got);
  if (status != NULL) {
    free(k);
    return status;
  }
  k->perm_len = count;
  return Made(k, out);
}

static OrtStatus* CreateReshape(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  OrtStatus* status =
      CALL(api, InfoAttrInt64Fn, KernelInfoGetAttribute_int64)(info, "allowzero", &k->allowzero);
  if (status != NULL) {
    Release(status);
    k->allowzero = 0;
  }
  /* The shape, when it is a constant, is readable already; Compute still takes the context's. */
  int is_constant = 0;
  const OrtValue* shape = NULL;
  status = CALL(api, InfoConstantInputFn, KernelInfoGetConstantInput_tensor)(info, 1, &is_constant,
                                                                             &shape);
  if (status == NULL && is_constant && shape == NULL)
    status = Error(EP_NAME ": KernelInfoGetConstantInput_tensor: a constant without a value");
  if (status == NULL && is_constant) status = CheckMemory(shape, 0, "Reshape's constant shape");
  if (status == NULL && is_constant) {
    const void* data = NULL;
    status = CALL(api, GetDataFn, GetTensorData)(shape, &data);
    if (status == NULL && data == NULL)
      status = Error(EP_NAME ": the constant shape of Reshape has no data");
  }
  if (status != NULL) {
    free(k);
    return status;
  }
  return Made(k, out);
}

static OrtStatus* CreateMatMul(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  TestKernel* k = NULL;
  RETURN_IF(NewKernel(state, info, &k));
  /* The kernel's allocator: the caller's to release with OrtApi::ReleaseAllocator. */
  OrtAllocator* allocator = NULL;
  OrtStatus* status =
      CALL(api, InfoGetAllocatorFn, KernelInfoGetAllocator)(info, OrtMemTypeDefault, &allocator);
  if (status == NULL && allocator == NULL)
    status = Error(EP_NAME ": KernelInfoGetAllocator returned none");
  if (status == NULL) {
    const OrtMemoryDevice* d =
        CALL(ep_api, GetMemoryDeviceFn, MemoryInfo_GetMemoryDevice)(allocator->Info(allocator));
    if (DeviceMode() != IsOurs(d))
      status = Error(EP_NAME ": KernelInfoGetAllocator's allocator is not of the kernel's memory");
    void* block = allocator->Alloc(allocator, 16);
    if (status == NULL && block == NULL) status = Error(EP_NAME ": the kernel's allocator failed");
    if (block != NULL) allocator->Free(allocator, block);
    CALL(api, ReleaseAllocatorFn, ReleaseAllocator)(allocator);
  }
  if (status != NULL) {
    free(k);
    return status;
  }
  k->base.PrePackWeight = PrePackWeight;
  k->base.SetSharedPrePackedWeight = SetSharedPrePackedWeight;
  return Made(k, out);
}

/* The runtime's If: the plugin checks the info like any other, then hands the kernel on. */
static OrtStatus* CreateIf(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) {
  *out = NULL;
  float scale = 1.0f;
  RETURN_IF(CheckInfo((const KernelState*)state, info, &scale));
  RETURN_IF(CALL(ep_api, CreateIfKernelFn, CreateIfKernel)(info, out));
  if (*out == NULL) return Error(EP_NAME ": CreateIfKernel succeeded without a kernel");
  Count(C_CREATED);
  return NULL;
}

static void ReleaseKernel(OrtKernelImpl* self) {
  TestKernel* k = (TestKernel*)self;
  Count(C_RELEASED);
  if (k->owned != NULL) k->allocator->Free(k->allocator, k->owned);
  free(k);
}

/* ---- Compute -------------------------------------------------------------------------------- */

typedef struct Tensor {
  int64_t dims[MAX_RANK];
  size_t rank;
  size_t count;
  int type;
  const void* data;
} Tensor;

static OrtStatus* ShapeOf(const OrtValue* value, Tensor* t) {
  OrtTensorTypeAndShapeInfo* info = NULL;
  RETURN_IF(CALL(api, GetTypeAndShapeFn, GetTensorTypeAndShape)(value, &info));
  OrtStatus* status = CALL(api, ShapeCountFn, GetDimensionsCount)(info, &t->rank);
  if (status == NULL && t->rank > MAX_RANK)
    status = Errorf(EP_NAME ": rank %zu (at most %d)", t->rank, MAX_RANK);
  if (status == NULL) status = CALL(api, GetDimsFn, GetDimensions)(info, t->dims, t->rank);
  if (status == NULL) status = CALL(api, ShapeCountFn, GetTensorShapeElementCount)(info, &t->count);
  if (status == NULL) status = CALL(api, GetElementTypeFn, GetTensorElementType)(info, &t->type);
  CALL(api, ReleaseTensorInfoFn, ReleaseTensorTypeAndShapeInfo)(info);
  return status;
}

static OrtStatus* Input(OrtKernelContext* ctx, size_t index, Tensor* t) {
  const OrtValue* value = NULL;
  RETURN_IF(CALL(api, CtxGetInputFn, KernelContext_GetInput)(ctx, index, &value));
  if (value == NULL) return Errorf(EP_NAME ": input %zu is missing", index);
  RETURN_IF(ShapeOf(value, t));
  int type = 0;
  const int64_t* dims = NULL;
  size_t rank = 0;
  RETURN_IF(CALL(api, TypeAndShapeRefFn, GetTensorElementTypeAndShapeDataReference)(value, &type,
                                                                                    &dims, &rank));
  if (type != t->type || rank != t->rank || (rank > 0 && dims == NULL) ||
      (rank > 0 && memcmp(dims, t->dims, rank * sizeof(int64_t)) != 0))
    return Errorf(EP_NAME ": GetTensorElementTypeAndShapeDataReference disagrees on input %zu",
                  index);
  return CALL(api, GetDataFn, GetTensorData)(value, &t->data);
}

static OrtStatus* Output(OrtKernelContext* ctx, size_t index, const int64_t* dims, size_t rank,
                         void** data) {
  OrtValue* value = NULL;
  RETURN_IF(CALL(api, CtxGetOutputFn, KernelContext_GetOutput)(ctx, index, dims, rank, &value));
  if (value == NULL) return Errorf(EP_NAME ": output %zu is missing", index);
  return CALL(api, GetMutableDataFn, GetTensorMutableData)(value, data);
}

static OrtStatus* ComputeAdd(const TestKernel* k, OrtKernelContext* ctx) {
  Tensor a, b;
  RETURN_IF(Input(ctx, 0, &a));
  RETURN_IF(Input(ctx, 1, &b));
  if (b.count != a.count && b.count != 1)
    return Errorf(EP_NAME ": Add of %zu and %zu elements", a.count, b.count);
  void* out = NULL;
  RETURN_IF(Output(ctx, 0, a.dims, a.rank, &out));
  if (k->kind == K_ADD_INT64) {
    const int64_t* x = a.data;
    const int64_t* y = b.data;
    int64_t* z = out;
    for (size_t i = 0; i < a.count; ++i) {
      const int64_t v = x[i] + y[b.count == 1 ? 0 : i];
      z[i] = k->scale == 1.0f ? v : (int64_t)((double)v * k->scale);
    }
    return NULL;
  }
  const float* x = a.data;
  const float* y = b.data;
  float* z = out;
  for (size_t i = 0; i < a.count; ++i) z[i] = (x[i] + y[b.count == 1 ? 0 : i]) * k->scale;
  return NULL;
}

/* Relu and LeakyRelu; the output may be the input (Relu's mutable alias). */
static OrtStatus* ComputeUnary(const TestKernel* k, OrtKernelContext* ctx) {
  if (k->kind == K_RELU && Mode("failing_compute"))
    return Error(EP_NAME ": Relu compute failed on purpose");
  Tensor a;
  RETURN_IF(Input(ctx, 0, &a));
  void* out = NULL;
  RETURN_IF(Output(ctx, 0, a.dims, a.rank, &out));
  const float* x = a.data;
  float* y = out;
  for (size_t i = 0; i < a.count; ++i) {
    const float v = x[i];
    y[i] = k->kind == K_RELU ? (v > 0 ? v : 0) * k->scale : (v >= 0 ? v : k->alpha * v);
  }
  return NULL;
}

static OrtStatus* ComputeTranspose(const TestKernel* k, OrtKernelContext* ctx) {
  Tensor a;
  RETURN_IF(Input(ctx, 0, &a));
  const size_t r = a.rank;
  int64_t perm[MAX_RANK];
  if (k->perm_len == 0) {
    for (size_t i = 0; i < r; ++i) perm[i] = (int64_t)(r - 1 - i);
  } else {
    if (k->perm_len != r)
      return Errorf(EP_NAME ": Transpose perm of %zu axes for rank %zu", k->perm_len, r);
    int seen[MAX_RANK] = {0};
    for (size_t i = 0; i < r; ++i) {
      if (k->perm[i] < 0 || k->perm[i] >= (int64_t)r || seen[k->perm[i]]++)
        return Error(EP_NAME ": Transpose perm is no permutation");
      perm[i] = k->perm[i];
    }
  }
  int64_t in_strides[MAX_RANK], out_dims[MAX_RANK], step[MAX_RANK];
  for (size_t i = r; i-- > 0;) in_strides[i] = i + 1 == r ? 1 : in_strides[i + 1] * a.dims[i + 1];
  for (size_t i = 0; i < r; ++i) {
    out_dims[i] = a.dims[perm[i]];
    step[i] = in_strides[perm[i]];
  }
  void* out = NULL;
  RETURN_IF(Output(ctx, 0, out_dims, r, &out));
  const float* x = a.data;
  float* y = out;
  int64_t index[MAX_RANK] = {0};
  int64_t offset = 0; /* into x, of the output element `index` */
  for (size_t n = 0; n < a.count; ++n) {
    y[n] = x[offset];
    for (size_t i = r; i-- > 0;) { /* next output index, last axis fastest */
      offset += step[i];
      if (++index[i] < out_dims[i]) break;
      offset -= step[i] * out_dims[i];
      index[i] = 0;
    }
  }
  return NULL;
}

static OrtStatus* ComputeReshape(const TestKernel* k, OrtKernelContext* ctx) {
  Tensor a, shape;
  RETURN_IF(Input(ctx, 0, &a));
  RETURN_IF(Input(ctx, 1, &shape));
  const OrtValue* shape_value = NULL;
  RETURN_IF(CALL(api, CtxGetInputFn, KernelContext_GetInput)(ctx, 1, &shape_value));
  RETURN_IF(CheckMemory(shape_value, 0, "Reshape's shape input (OrtMemTypeCPU)"));
  if (shape.type != TYPE_INT64 || shape.rank != 1 || shape.count > MAX_RANK)
    return Error(EP_NAME ": Reshape's shape is no 1-D int64 tensor of at most 8 values");
  const int64_t* s = shape.data;
  int64_t dims[MAX_RANK];
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.count; ++i) {
    dims[i] = s[i];
    if (s[i] == 0 && !k->allowzero) {
      if (i >= a.rank) return Error(EP_NAME ": Reshape copies a dimension the input lacks");
      dims[i] = a.dims[i];
    }
    if (dims[i] == -1) {
      if (infer >= 0) return Error(EP_NAME ": Reshape infers two dimensions");
      infer = (int)i;
    } else if (dims[i] < 0) {
      return Error(EP_NAME ": Reshape to a negative dimension");
    } else {
      known *= dims[i];
    }
  }
  if (infer >= 0) dims[infer] = known == 0 ? 0 : (int64_t)a.count / known;
  int64_t total = 1;
  for (size_t i = 0; i < shape.count; ++i) total *= dims[i];
  if (total != (int64_t)a.count)
    return Errorf(EP_NAME ": Reshape of %zu elements to %lld", a.count, (long long)total);
  void* out = NULL;
  RETURN_IF(Output(ctx, 0, dims, shape.count, &out));
  if (out != a.data) memcpy(out, a.data, a.count * sizeof(float)); /* aliased: nothing to do */
  return NULL;
}

static OrtStatus* ComputeMatMul(const TestKernel* k, OrtKernelContext* ctx) {
  Tensor a;
  RETURN_IF(Input(ctx, 0, &a));
  if (a.rank != 2) return Error(EP_NAME ": MatMul of 2-D inputs only");
  const int64_t m = a.dims[0], kk = a.dims[1];
  const float* x = a.data;
  int64_t n = 0;
  const float* bt = NULL; /* packed: [N,K] */
  const float* b = NULL;  /* not packed: [K,N] */
  if (k->awaiting_shared)
    return Error(EP_NAME
                 ": MatMul stored its packed weight in the shared cache but "
                 "SetSharedPrePackedWeight never handed it back");
  if (k->packed != NULL) {
    if (k->packed_k != kk)
      return Errorf(EP_NAME ": MatMul of K %lld and a packed weight of K %lld", (long long)kk,
                    (long long)k->packed_k);
    n = k->packed_n;
    bt = k->packed;
  } else {
    Tensor w;
    RETURN_IF(Input(ctx, 1, &w));
    if (w.rank != 2 || w.dims[0] != kk) return Error(EP_NAME ": MatMul shapes do not match");
    n = w.dims[1];
    b = w.data;
  }
  const int64_t dims[2] = {m, n};
  void* out = NULL;
  RETURN_IF(Output(ctx, 0, dims, 2, &out));
  float* y = out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < kk; ++p) sum += x[i * kk + p] * (bt ? bt[j * kk + p] : b[p * n + j]);
      y[i * n + j] = sum;
    }
  return NULL;
}

static OrtStatus* Compute(OrtKernelImpl* self, OrtKernelContext* ctx) {
  const TestKernel* k = (const TestKernel*)self;
  Count(C_COMPUTED);
  char op[64];
  RETURN_IF(InfoString(k->info, api->KernelInfo_GetOperatorType, 0, 0,
                       "KernelInfo_GetOperatorType in Compute", op, sizeof op));
  if (strcmp(op, specs[k->kind].op) != 0)
    return Errorf(EP_NAME ": the %s kernel's info reads '%s' in Compute", specs[k->kind].op, op);
  RETURN_IF(CheckInDeviceMemory(ctx));
  RETURN_IF(CheckOnStream(ctx));
  switch (k->kind) {
    case K_ADD_FLOAT:
    case K_ADD_INT64:
      return ComputeAdd(k, ctx);
    case K_RELU:
    case K_LEAKY_RELU:
      return ComputeUnary(k, ctx);
    case K_TRANSPOSE:
      return ComputeTranspose(k, ctx);
    case K_RESHAPE:
      return ComputeReshape(k, ctx);
    case K_MATMUL:
      return ComputeMatMul(k, ctx);
    default:
      return Error(EP_NAME ": no Compute for this kernel");
  }
}

/* ---- Pre-packing (MatMul's B) ------------------------------------------------------------- */

static OrtStatus* PrePackWeight(OrtKernelImpl* self, const OrtValue* tensor, int input_index,
                                OrtAllocator* allocator, OrtSharedPrePackedWeightCache* cache,
                                bool* is_packed) {
  TestKernel* k = (TestKernel*)self;
  *is_packed = false;
  if (input_index != 1) return NULL;
  if (tensor == NULL || allocator == NULL)
    return Error(EP_NAME ": PrePackWeight without a tensor or an allocator");
  Tensor w;
  RETURN_IF(ShapeOf(tensor, &w));
  RETURN_IF(CheckMemory(tensor, 1, "the weight PrePackWeight got"));
  if (w.rank != 2 || w.type != TYPE_FLOAT) return NULL; /* Compute reads it as it is */
  RETURN_IF(CALL(api, GetDataFn, GetTensorData)(tensor, &w.data));
  const int64_t kk = w.dims[0], n = w.dims[1];
  const size_t size = PACK_HEADER + w.count * sizeof(float);
  void* buffer = allocator->Alloc(allocator, size);
  if (buffer == NULL) return Error(EP_NAME ": the PrePackWeight allocator returned NULL");
  int64_t* header = buffer;
  header[0] = kk;
  header[1] = n;
  float* bt = (float*)((char*)buffer + PACK_HEADER);
  const float* b = w.data;
  for (int64_t p = 0; p < kk; ++p)
    for (int64_t j = 0; j < n; ++j) bt[j * kk + p] = b[p * n + j];
  if (cache != NULL) {
    /* The cache owns the buffer from here; SetSharedPrePackedWeight hands it back. */
    void* buffers[1] = {buffer};
    size_t sizes[1] = {size};
    OrtStatus* status = CALL(ep_api, StoreWeightDataFn, SharedPrePackedWeightCache_StoreWeightData)(
        cache, buffers, sizes, 1);
    if (status != NULL) {
      allocator->Free(allocator, buffer);
      return status;
    }
    k->awaiting_shared = 1;
  } else {
    if (k->owned != NULL) k->allocator->Free(k->allocator, k->owned);
    k->allocator = allocator;
    k->owned = buffer;
    k->packed = bt;
    k->packed_k = kk;
    k->packed_n = n;
  }
  *is_packed = true;
  Count(C_PREPACKED);
  return NULL;
}

static OrtStatus* SetSharedPrePackedWeight(OrtKernelImpl* self, const void* const* buffers,
                                           const size_t* sizes, size_t num_buffers,
                                           int input_index) {
  TestKernel* k = (TestKernel*)self;
  Count(C_SHARED);
  if (input_index != 1)
    return Errorf(EP_NAME ": SetSharedPrePackedWeight for input %d (MatMul packs input 1)",
                  input_index);
  if (num_buffers != 1 || buffers == NULL || sizes == NULL || buffers[0] == NULL)
    return Errorf(EP_NAME ": SetSharedPrePackedWeight with %zu buffers (MatMul stores one)",
                  num_buffers);
  if (sizes[0] < PACK_HEADER) return Error(EP_NAME ": a shared packed weight without its header");
  const int64_t* header = buffers[0];
  const int64_t kk = header[0], n = header[1];
  if (kk < 0 || n < 0 || sizes[0] != PACK_HEADER + (size_t)(kk * n) * sizeof(float))
    return Errorf(EP_NAME ": a shared packed weight of %zu bytes for [%lld,%lld]", sizes[0],
                  (long long)n, (long long)kk);
  /* The host's buffer from now on: never ours to free. */
  if (k->owned != NULL) k->allocator->Free(k->allocator, k->owned);
  k->owned = NULL;
  k->packed = (const float*)((const char*)buffers[0] + PACK_HEADER);
  k->packed_k = kk;
  k->packed_n = n;
  k->awaiting_shared = 0;
  return NULL;
}

/* ---- The EP ---------------------------------------------------------------------------------- */

static const char* EpName(const OrtEp* self) {
  (void)self;
  return EP_NAME;
}

static OrtStatus* GetCapability(OrtEp* self, const OrtGraph* graph,
                                OrtEpGraphSupportInfo* support) {
  (void)self;
  LookUpKernelFn look_up = CALL(ep_api, LookUpKernelFn, EpGraphSupportInfo_LookUpKernel);
  AddSingleNodeFn add = CALL(ep_api, AddSingleNodeFn, EpGraphSupportInfo_AddSingleNode);
  if (Mode("foreign_node")) {
    /* Never dereferenced by a correct host: it must reject the pointer first. */
    static char not_a_node[64];
    const OrtNode* foreign = (const OrtNode*)not_a_node;
    const OrtKernelDef* def = NULL;
    Release(look_up(support, foreign, &def));
    Release(add(support, foreign));
    return NULL;
  }
  size_t n = 0;
  RETURN_IF(CALL(api, GetCountFn, Graph_GetNumNodes)(graph, &n));
  const OrtNode** nodes = calloc(n ? n : 1, sizeof *nodes);
  if (nodes == NULL) return Error("out of memory");
  OrtStatus* status = CALL(api, GetNodesFn, Graph_GetNodes)(graph, nodes, n);
  for (size_t i = 0; status == NULL && i < n; ++i) {
    const OrtKernelDef* def = NULL;
    status = look_up(support, nodes[i], &def);
    if (status == NULL && def != NULL) status = add(support, nodes[i]);
  }
  free(nodes);
  return status;
}

/* Run boundaries: counted; how many runs are between OnRunStart and OnRunEnd at once is
 * tracked. "serial_runs" says the EP cannot run two runs at once (the host must serialise them);
 * "failing_run_start" fails every run before it computes. */
static OrtStatus* OnRunStart(OrtEp* self, const OrtRunOptions* options) {
  (void)self, (void)options;
  if (Mode("failing_run_start")) return Error(EP_NAME ": OnRunStart failed on purpose");
  Count(C_EP_RUN_STARTS);
  const int active = atomic_fetch_add(&counters[C_ACTIVE_RUNS], 1) + 1;
  int max = atomic_load(&counters[C_MAX_ACTIVE_RUNS]);
  while (active > max &&
         !atomic_compare_exchange_weak(&counters[C_MAX_ACTIVE_RUNS], &max, active)) {
  }
  if (Mode("serial_runs")) usleep(2000); /* a window in which an overlapping run would show */
  return NULL;
}
static OrtStatus* OnRunEnd(OrtEp* self, const OrtRunOptions* options, bool sync_stream) {
  (void)self, (void)options;
  if (!sync_stream) return Error(EP_NAME ": OnRunEnd without sync_stream");
  Uncount(C_ACTIVE_RUNS);
  Count(C_EP_RUN_ENDS);
  return NULL;
}
static OrtStatus* IsConcurrentRunSupported(OrtEp* self, bool* supported) {
  (void)self;
  *supported = !Mode("serial_runs");
  return NULL;
}

static OrtStatus* GetKernelRegistry(OrtEp* self, const OrtKernelRegistry** registry) {
  *registry = NULL;
  if (Mode("failing_registry")) return Error(EP_NAME ": GetKernelRegistry failed on purpose");
  *registry = ((TestEp*)self)->registry;
  return NULL;
}

static void FreeEp(TestEp* e) {
  if (e->registry != NULL)
    CALL(ep_api, ReleaseKernelRegistryFn, ReleaseKernelRegistry)(e->registry);
  free(e);
}

static OrtStatus* CreateEp(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                           const OrtKeyValuePairs* const* metadata, size_t num_devices,
                           const OrtSessionOptions* options, const OrtLogger* logger, OrtEp** ep) {
  (void)self, (void)devices, (void)metadata, (void)options, (void)logger;
  *ep = NULL;
  if (num_devices == 0) return Error("CreateEp: no device");
  TestEp* e = calloc(1, sizeof *e);
  if (e == NULL) return Error("out of memory");
  OrtStatus* status = CALL(ep_api, CreateKernelRegistryFn, CreateKernelRegistry)(&e->registry);
  if (status == NULL && e->registry == NULL)
    status = Error(EP_NAME ": CreateKernelRegistry returned NULL");
  for (size_t i = 0; status == NULL && i < NUM_SPECS; ++i) status = Register(e, i);
  if (status != NULL) {
    FreeEp(e);
    return status;
  }
  e->base.ort_version_supported = NXRT_ORT_API_LEVEL;
  e->base.GetName = EpName;
  e->base.GetCapability = GetCapability;
  e->base.Compile = NULL;
  e->base.ReleaseNodeComputeInfos = NULL;
  e->base.GetKernelRegistry = GetKernelRegistry;
  e->base.OnRunStart = OnRunStart;
  e->base.OnRunEnd = OnRunEnd;
  e->base.IsConcurrentRunSupported = IsConcurrentRunSupported;
  *ep = &e->base;
  return NULL;
}

static void ReleaseEp(OrtEpFactory* self, OrtEp* ep) {
  (void)self;
  if (ep != NULL) FreeEp((TestEp*)ep);
}

/* ---- Entry points ------------------------------------------------------------------------- */

static OrtEpFactory factory;

EXPORT OrtStatus* CreateEpFactories(const char* registration_name, const OrtApiBase* base,
                                    const OrtLogger* logger, OrtEpFactory** factories,
                                    size_t max_factories, size_t* num_factories) {
  (void)logger;
  *num_factories = 0;
  api = base->GetApi(NXRT_ORT_API_LEVEL);
  if (api == NULL) return NULL; /* cannot even make a status: register nothing */
  ep_api = CALL(api, GetEpApiFn, GetEpApi)();
  if (ep_api == NULL) return Error(EP_NAME ": GetEpApi returned NULL");
  const char* dot = strchr(registration_name, '.');
  snprintf(mode, sizeof mode, "%s", dot ? dot + 1 : "");
  if (max_factories < 1) return Error(EP_NAME ": no room for its factory");
  memset(&factory, 0, sizeof factory);
  factory.ort_version_supported = NXRT_ORT_API_LEVEL;
  factory.GetName = FactoryName;
  factory.GetVendor = FactoryVendor;
  factory.GetSupportedDevices = GetSupportedDevices;
  factory.CreateEp = CreateEp;
  factory.ReleaseEp = ReleaseEp;
  factory.GetVendorId = FactoryVendorId;
  factory.GetVersion = FactoryVersion;
  if (DeviceMode()) {
    device_allocator = (OrtAllocator){NXRT_ORT_API_LEVEL, DeviceAlloc, DeviceFree, DeviceInfo,
                                      DeviceReserve,      NULL,        NULL};
    data_transfer =
        (OrtDataTransferImpl){NXRT_ORT_API_LEVEL, TransferRelease, TransferCanCopy, TransferCopy};
    if (device_memory_info == NULL) {
      RETURN_IF(CALL(api, CreateMemoryInfoV2Fn, CreateMemoryInfo_V2)(
          "OrtKernelTestDevice", OrtMemoryInfoDeviceType_GPU, DEVICE_VENDOR, 0,
          OrtDeviceMemoryType_DEFAULT, 64, OrtDeviceAllocator, &device_memory_info));
    }
    factory.CreateAllocator = FactoryCreateAllocator;
    factory.ReleaseAllocator = FactoryReleaseAllocator;
    factory.CreateDataTransfer = FactoryCreateDataTransfer;
  }
  if (Mode("stream")) {
    factory.IsStreamAware = FactoryIsStreamAware;
    factory.CreateSyncStreamForDevice = FactoryCreateSyncStream;
  }
  factories[0] = &factory;
  *num_factories = 1;
  return NULL;
}

EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* released) {
  if (released != &factory) return Error("ReleaseEpFactory: not this library's factory");
  if (device_memory_info != NULL) {
    CALL(api, ReleaseMemoryInfoFn, ReleaseMemoryInfo)(device_memory_info);
    device_memory_info = NULL;
  }
  return NULL;
}
