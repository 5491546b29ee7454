/* The C interface of onnxruntime's plugin execution providers, as nxrt hosts it: the tables a
 * library built for onnxruntime receives (OrtApiBase -> OrtApi -> OrtEpApi) and the structs such
 * a library fills in (OrtEpFactory, OrtEp, OrtNodeComputeInfo, ...).
 *
 * Written here from the facts of that interface (slot order, signatures, enum values) up to the
 * API level nxrt implements, NXRT_ORT_API_LEVEL. A library negotiates its level from the version
 * string OrtApiBase reports, so one built for a newer onnxruntime asks for this level's tables
 * and uses only what they hold. Layouts must match onnxruntime's exactly: the function tables are
 * generated from ort_api_slots.inc / ort_ep_api_slots.inc, and tests/ort_plugins/ort_abi_test.cc
 * pins every slot's name and index and every struct's size.
 *
 * Slots of the two tables are declared with one generic pointer type; the host installs each
 * implemented function with its real signature (ort_api_table.cc) and a stub that reports
 * ORT_NOT_IMPLEMENTED everywhere else. The structs a plugin fills are declared with their real
 * signatures, since the host calls them. */
#ifndef NXRT_ORT_ABI_H_
#define NXRT_ORT_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NXRT_ORT_API_LEVEL 24
#define NXRT_ORT_VERSION_STRING "1.24.4"

/* ---- Enums (values are the interface's) ---------------------------------------------------- */

typedef enum OrtErrorCode {
  ORT_OK = 0,
  ORT_FAIL = 1,
  ORT_INVALID_ARGUMENT = 2,
  ORT_NO_SUCHFILE = 3,
  ORT_NO_MODEL = 4,
  ORT_ENGINE_ERROR = 5,
  ORT_RUNTIME_EXCEPTION = 6,
  ORT_INVALID_PROTOBUF = 7,
  ORT_MODEL_LOADED = 8,
  ORT_NOT_IMPLEMENTED = 9,
  ORT_INVALID_GRAPH = 10,
  ORT_EP_FAIL = 11,
  ORT_MODEL_LOAD_CANCELED = 12,
  ORT_MODEL_REQUIRES_COMPILATION = 13,
  ORT_NOT_FOUND = 14,
} OrtErrorCode;

typedef enum OrtLoggingLevel {
  ORT_LOGGING_LEVEL_VERBOSE = 0,
  ORT_LOGGING_LEVEL_INFO = 1,
  ORT_LOGGING_LEVEL_WARNING = 2,
  ORT_LOGGING_LEVEL_ERROR = 3,
  ORT_LOGGING_LEVEL_FATAL = 4,
} OrtLoggingLevel;

typedef enum OrtHardwareDeviceType {
  OrtHardwareDeviceType_CPU = 0,
  OrtHardwareDeviceType_GPU = 1,
  OrtHardwareDeviceType_NPU = 2,
} OrtHardwareDeviceType;

typedef enum OrtMemoryInfoDeviceType {
  OrtMemoryInfoDeviceType_CPU = 0,
  OrtMemoryInfoDeviceType_GPU = 1,
  OrtMemoryInfoDeviceType_FPGA = 2,
  OrtMemoryInfoDeviceType_NPU = 3,
} OrtMemoryInfoDeviceType;

typedef enum OrtDeviceMemoryType {
  OrtDeviceMemoryType_DEFAULT = 0,
  OrtDeviceMemoryType_HOST_ACCESSIBLE = 5,
} OrtDeviceMemoryType;

typedef enum OrtAllocatorType {
  OrtInvalidAllocator = -1,
  OrtDeviceAllocator = 0,
  OrtArenaAllocator = 1,
  OrtReadOnlyAllocator = 2,
} OrtAllocatorType;

typedef enum OrtMemType {
  OrtMemTypeCPUInput = -2,
  OrtMemTypeCPUOutput = -1,
  OrtMemTypeCPU = -1,
  OrtMemTypeDefault = 0,
} OrtMemType;

typedef enum OrtCompiledModelCompatibility {
  OrtCompiledModelCompatibility_EP_NOT_APPLICABLE = 0,
  OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL = 1,
  OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION = 2,
  OrtCompiledModelCompatibility_EP_UNSUPPORTED = 3,
} OrtCompiledModelCompatibility;

typedef enum OrtEpDataLayout {
  OrtEpDataLayout_NCHW = 0,
  OrtEpDataLayout_NHWC = 1,
} OrtEpDataLayout;

/* ---- Opaque handles (the host defines what is behind them) --------------------------------- */

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtLogger OrtLogger;
typedef struct OrtKeyValuePairs OrtKeyValuePairs;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtMemoryDevice OrtMemoryDevice;
typedef struct OrtHardwareDevice OrtHardwareDevice;
typedef struct OrtEpDevice OrtEpDevice;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtGraph OrtGraph;
typedef struct OrtNode OrtNode;
typedef struct OrtValueInfo OrtValueInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtEpGraphSupportInfo OrtEpGraphSupportInfo;
typedef struct OrtNodeComputeContext OrtNodeComputeContext;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtSyncStream OrtSyncStream;
typedef struct OrtSyncStreamImpl OrtSyncStreamImpl;
typedef struct OrtModelMetadata OrtModelMetadata;
typedef struct OrtKernelRegistry OrtKernelRegistry;
typedef struct OrtDeviceEpIncompatibilityDetails OrtDeviceEpIncompatibilityDetails;
typedef struct OrtExternalResourceImporterImpl OrtExternalResourceImporterImpl;
typedef struct OrtCustomOpDomain OrtCustomOpDomain;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtOpAttr OrtOpAttr;
typedef struct OrtExternalInitializerInfo OrtExternalInitializerInfo;
/* Kernel-based plugins (level 24) */
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelDefBuilder OrtKernelDefBuilder;
typedef struct OrtKernelDef OrtKernelDef;
typedef struct OrtDataType OrtDataType; /* a value kind plus, for tensors, an element type */
typedef struct OrtSharedPrePackedWeightCache OrtSharedPrePackedWeightCache;

/* ---- The tables the host hands out --------------------------------------------------------- */

/* Every slot of OrtApi / OrtEpApi / OrtModelEditorApi has this type here; callers cast to the real
 * signature. */
typedef void (*OrtApiSlot)(void);

#define NXRT_ORT_SLOT(name, since, kind) OrtApiSlot name;
typedef struct OrtApi {
#include "ort_plugins/ort_api_slots.inc"
} OrtApi;

typedef struct OrtEpApi {
#include "ort_plugins/ort_ep_api_slots.inc"
} OrtEpApi;

typedef struct OrtModelEditorApi {
#include "ort_plugins/ort_model_editor_api_slots.inc"
} OrtModelEditorApi;
#undef NXRT_ORT_SLOT

typedef struct OrtApiBase {
  /* The table of API level `version`, or NULL when the host does not implement that level. */
  const OrtApi* (*GetApi)(uint32_t version);
  /* The onnxruntime release the host stands in for, "1.23.0": libraries derive their level. */
  const char* (*GetVersionString)(void);
} OrtApiBase;

/* ---- Structs a plugin fills in (members up to NXRT_ORT_API_LEVEL) -------------------------- */

typedef struct OrtAllocator {
  uint32_t version;
  void* (*Alloc)(struct OrtAllocator* self, size_t size);
  void (*Free)(struct OrtAllocator* self, void* block);
  const OrtMemoryInfo* (*Info)(const struct OrtAllocator* self);
  /* version >= 18 */
  void* (*Reserve)(struct OrtAllocator* self, size_t size);
  /* version >= 23 */
  OrtStatus* (*GetStats)(const struct OrtAllocator* self, OrtKeyValuePairs** out);
  void* (*AllocOnStream)(struct OrtAllocator* self, size_t size, OrtSyncStream* stream);
} OrtAllocator;

typedef struct OrtNodeFusionOptions {
  uint32_t ort_version_supported;
  bool drop_constant_initializers;
} OrtNodeFusionOptions;

typedef struct OrtNodeComputeInfo {
  uint32_t ort_version_supported;
  OrtStatus* (*CreateState)(struct OrtNodeComputeInfo* self, OrtNodeComputeContext* context,
                            void** state);
  OrtStatus* (*Compute)(struct OrtNodeComputeInfo* self, void* state, OrtKernelContext* context);
  void (*ReleaseState)(struct OrtNodeComputeInfo* self, void* state);
} OrtNodeComputeInfo;

typedef struct OrtDataTransferImpl {
  uint32_t ort_version_supported;
  void (*Release)(struct OrtDataTransferImpl* self);
  bool (*CanCopy)(const struct OrtDataTransferImpl* self, const OrtMemoryDevice* src,
                  const OrtMemoryDevice* dst);
  OrtStatus* (*CopyTensors)(struct OrtDataTransferImpl* self, const OrtValue** src, OrtValue** dst,
                            OrtSyncStream** streams, size_t count);
} OrtDataTransferImpl;

/* Level 24: one kernel instance for one node of a kernel-based plugin (OrtEp::GetKernelRegistry),
 * made by the OrtKernelCreateFunc the plugin registered and released with Release. */
typedef struct OrtKernelImpl {
  uint32_t ort_version_supported;
  uint32_t flags; /* the plugin sets 0; the host may use it */
  OrtStatus* (*Compute)(struct OrtKernelImpl* self, OrtKernelContext* context);
  void (*Release)(struct OrtKernelImpl* self);
  /* Optional (NULL: never packs). Offered each constant input once, before the first run. */
  OrtStatus* (*PrePackWeight)(struct OrtKernelImpl* self, const OrtValue* tensor, int input_index,
                              OrtAllocator* allocator, OrtSharedPrePackedWeightCache* cache,
                              bool* is_packed);
  /* Optional unless PrePackWeight stores into the cache: the shared copy of a packed weight. */
  OrtStatus* (*SetSharedPrePackedWeight)(struct OrtKernelImpl* self,
                                         const void* const* buffer_data_ptrs,
                                         const size_t* buffer_data_sizes, size_t num_buffers,
                                         int input_index);
} OrtKernelImpl;

/* Registered with OrtEpApi::KernelRegistry_AddKernel; `info` is borrowed for the call. */
typedef OrtStatus* (*OrtKernelCreateFunc)(void* state, const OrtKernelInfo* info,
                                          OrtKernelImpl** kernel_out);

/* Level 24: what the runtime's Loop and Scan kernels (OrtEpApi::CreateLoopKernel /
 * CreateScanKernel) ask of the plugin for values in its memory. */
typedef struct OrtLoopKernelHelper {
  uint32_t ort_version_supported;
  void (*Release)(struct OrtLoopKernelHelper* self);
  OrtStatus* (*ConcatOutput)(struct OrtLoopKernelHelper* self, void* stream_handle,
                             const OrtValue* const* per_iteration_outputs,
                             size_t num_per_iteration_outputs, void* output,
                             size_t output_size_in_bytes);
} OrtLoopKernelHelper;

typedef struct OrtScanKernelHelper {
  uint32_t ort_version_supported;
  void (*Release)(struct OrtScanKernelHelper* self);
  OrtStatus* (*Transpose)(struct OrtScanKernelHelper* self, const size_t* permutation,
                          size_t num_permutation_elems, const OrtValue* input,
                          OrtSyncStream* stream, OrtValue* output);
} OrtScanKernelHelper;

/* Streams (level 23): an EP that is stream aware (OrtEpFactory::IsStreamAware) queues device work
 * on streams it creates per memory device; notifications order work between streams and the
 * host. */
typedef struct OrtSyncNotificationImpl {
  uint32_t ort_version_supported;
  void (*Release)(struct OrtSyncNotificationImpl* self);
  OrtStatus* (*Activate)(struct OrtSyncNotificationImpl* self);
  OrtStatus* (*WaitOnDevice)(struct OrtSyncNotificationImpl* self, OrtSyncStream* consumer_stream);
  OrtStatus* (*WaitOnHost)(struct OrtSyncNotificationImpl* self);
} OrtSyncNotificationImpl;

struct OrtSyncStreamImpl {
  uint32_t ort_version_supported;
  void (*Release)(OrtSyncStreamImpl* self);
  void* (*GetHandle)(OrtSyncStreamImpl* self); /* the native stream (a cudaStream_t, ...) */
  OrtStatus* (*CreateNotification)(OrtSyncStreamImpl* self, OrtSyncNotificationImpl** notification);
  OrtStatus* (*Flush)(OrtSyncStreamImpl* self);
  OrtStatus* (*OnSessionRunEnd)(OrtSyncStreamImpl* self);
};

typedef struct OrtEp {
  uint32_t ort_version_supported;
  const char* (*GetName)(const struct OrtEp* self);
  /* level 23 */
  OrtStatus* (*GetCapability)(struct OrtEp* self, const OrtGraph* graph,
                              OrtEpGraphSupportInfo* support);
  OrtStatus* (*Compile)(struct OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes,
                        size_t count, OrtNodeComputeInfo** compute_infos,
                        OrtNode** ep_context_nodes);
  void (*ReleaseNodeComputeInfos)(struct OrtEp* self, OrtNodeComputeInfo** compute_infos,
                                  size_t count);
  OrtStatus* (*GetPreferredDataLayout)(struct OrtEp* self, OrtEpDataLayout* layout);
  OrtStatus* (*ShouldConvertDataLayoutForOp)(struct OrtEp* self, const char* domain,
                                             const char* op_type, OrtEpDataLayout target,
                                             int* should_convert);
  OrtStatus* (*SetDynamicOptions)(struct OrtEp* self, const char* const* keys,
                                  const char* const* values, size_t count);
  OrtStatus* (*OnRunStart)(struct OrtEp* self, const OrtRunOptions* run_options);
  OrtStatus* (*OnRunEnd)(struct OrtEp* self, const OrtRunOptions* run_options, bool sync_stream);
  OrtStatus* (*CreateAllocator)(struct OrtEp* self, const OrtMemoryInfo* memory,
                                OrtAllocator** allocator);
  OrtStatus* (*CreateSyncStreamForDevice)(struct OrtEp* self, const OrtMemoryDevice* device,
                                          OrtSyncStreamImpl** stream);
  const char* (*GetCompiledModelCompatibilityInfo)(struct OrtEp* self, const OrtGraph* graph);
  /* level 24 */
  OrtStatus* (*GetKernelRegistry)(struct OrtEp* self, const OrtKernelRegistry** registry);
  OrtStatus* (*IsConcurrentRunSupported)(struct OrtEp* self, bool* supported);
} OrtEp;

typedef struct OrtEpFactory {
  uint32_t ort_version_supported;
  const char* (*GetName)(const struct OrtEpFactory* self);
  const char* (*GetVendor)(const struct OrtEpFactory* self);
  /* Fills ep_devices (created with OrtEpApi::CreateEpDevice; the host takes them) for the
   * devices among `devices` the EP supports. */
  OrtStatus* (*GetSupportedDevices)(struct OrtEpFactory* self,
                                    const OrtHardwareDevice* const* devices, size_t num_devices,
                                    OrtEpDevice** ep_devices, size_t max_ep_devices,
                                    size_t* num_ep_devices);
  OrtStatus* (*CreateEp)(struct OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                         const OrtKeyValuePairs* const* ep_metadata, size_t num_devices,
                         const OrtSessionOptions* session_options, const OrtLogger* logger,
                         OrtEp** ep);
  void (*ReleaseEp)(struct OrtEpFactory* self, OrtEp* ep);
  /* level 23 */
  uint32_t (*GetVendorId)(const struct OrtEpFactory* self);
  const char* (*GetVersion)(const struct OrtEpFactory* self);
  OrtStatus* (*ValidateCompiledModelCompatibilityInfo)(struct OrtEpFactory* self,
                                                       const OrtHardwareDevice* const* devices,
                                                       size_t num_devices,
                                                       const char* compatibility_info,
                                                       OrtCompiledModelCompatibility* result);
  OrtStatus* (*CreateAllocator)(struct OrtEpFactory* self, const OrtMemoryInfo* memory,
                                const OrtKeyValuePairs* options, OrtAllocator** allocator);
  void (*ReleaseAllocator)(struct OrtEpFactory* self, OrtAllocator* allocator);
  OrtStatus* (*CreateDataTransfer)(struct OrtEpFactory* self, OrtDataTransferImpl** transfer);
  bool (*IsStreamAware)(const struct OrtEpFactory* self);
  OrtStatus* (*CreateSyncStreamForDevice)(struct OrtEpFactory* self, const OrtMemoryDevice* device,
                                          const OrtKeyValuePairs* options,
                                          OrtSyncStreamImpl** stream);
  /* level 24 */
  OrtStatus* (*GetHardwareDeviceIncompatibilityDetails)(struct OrtEpFactory* self,
                                                        const OrtHardwareDevice* device,
                                                        OrtDeviceEpIncompatibilityDetails* details);
  OrtStatus* (*CreateExternalResourceImporterForDevice)(struct OrtEpFactory* self,
                                                        const OrtEpDevice* device,
                                                        OrtExternalResourceImporterImpl** importer);
  OrtStatus* (*GetNumCustomOpDomains)(struct OrtEpFactory* self, size_t* count);
  OrtStatus* (*GetCustomOpDomains)(struct OrtEpFactory* self, OrtCustomOpDomain** domains,
                                   size_t count);
} OrtEpFactory;

/* ---- The library's entry points -------------------------------------------------------------- */

#define NXRT_ORT_CREATE_FACTORIES_SYMBOL "CreateEpFactories"
#define NXRT_ORT_RELEASE_FACTORY_SYMBOL "ReleaseEpFactory"

/* Called once at registration: fill up to `max_factories` factories, set *num_factories. */
typedef OrtStatus* (*OrtCreateEpFactoriesFn)(const char* registration_name,
                                             const OrtApiBase* api_base,
                                             const OrtLogger* default_logger,
                                             OrtEpFactory** factories, size_t max_factories,
                                             size_t* num_factories);
/* Called once per factory at unregistration, before the library is unloaded. */
typedef OrtStatus* (*OrtReleaseEpFactoryFn)(OrtEpFactory* factory);

#ifdef __cplusplus
}
#endif

#endif /* NXRT_ORT_ABI_H_ */
