/* nxrt_c_api.h: the application C API of the nxrt inference runtime.
 *
 * Objects: an NxEnv (logger, registered EP libraries) holds sessions; an NxSessionOptions
 * configures a session; an NxSession is one loaded model ready to run; an NxValue is a tensor
 * (or a sequence / optional value).
 *
 * Every function that can fail returns NxStatus* (NULL = success); read it with NxStatus_GetCode
 * and NxStatus_GetMessage, then release it with NxStatus_Release. Objects from Nx*_Create* are
 * released with the matching Nx*_Release. `const char*` results are borrowed; each function says
 * for how long. The default CPU EP is loaded from libnxrt_ep_cpu.so next to libnxrt.so (or from
 * the path in the environment variable NXRT_CPU_EP_LIBRARY) when the first session is created.
 */
#ifndef NXRT_C_API_H_
#define NXRT_C_API_H_

#include "nxrt_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NXRT_C_API_VERSION 1

typedef struct NxEnv NxEnv;
typedef struct NxSessionOptions NxSessionOptions;
typedef struct NxSession NxSession;

/* ---- Status ------------------------------------------------------------------------------ */
NXRT_EXPORT NxStatusCode NxStatus_GetCode(const NxStatus* status);
/* Borrowed until the status is released. */
NXRT_EXPORT const char* NxStatus_GetMessage(const NxStatus* status);
NXRT_EXPORT void NxStatus_Release(NxStatus* status);

/* The runtime's version string, e.g. "0.1.0" (static). */
NXRT_EXPORT const char* Nx_GetVersionString(void);

/* ---- Environment ------------------------------------------------------------------------- */
/* Receives log lines at or above the env's level. Called from any thread. */
typedef void (*NxLogFn)(void* user, NxLogLevel level, const char* message);

/* `log_fn` may be NULL: lines then go to stderr. */
NXRT_EXPORT NxStatus* NxEnv_Create(NxLogLevel level, NxLogFn log_fn, void* log_user, NxEnv** env);
/* Releases the env; every session created from it must be released first. */
NXRT_EXPORT void NxEnv_Release(NxEnv* env);
/* Loads an EP library (a shared object exporting NxrtCreateEpFactories) under `name`. */
NXRT_EXPORT NxStatus* NxEnv_RegisterEpLibrary(NxEnv* env, const char* name, const char* path);
/* Fails while a live session uses one of the library's EPs. */
NXRT_EXPORT NxStatus* NxEnv_UnregisterEpLibrary(NxEnv* env, const char* name);

/* ---- Hardware devices -------------------------------------------------------------------- */
/* The machine's devices, discovered once per process: the CPU first (vendor and model from
 * CPUID, ISA features, cores and threads), then GPUs and accelerators from Linux sysfs (DRM
 * cards, /sys/class/accel, PCI display controllers and processing accelerators) ordered by type
 * and PCI bus id. NXRT_SYSFS_ROOT replaces /sys (for tests). Devices are borrowed for the
 * process lifetime. */
NXRT_EXPORT size_t Nx_GetHardwareDeviceCount(void);
/* NULL when `index` is out of range. */
NXRT_EXPORT const NxHardwareDevice* Nx_GetHardwareDevice(size_t index);
NXRT_EXPORT NxDeviceType NxHardwareDevice_GetType(const NxHardwareDevice* device);
/* Vendor name ("GenuineIntel", "NVIDIA", "unknown"); borrowed like the device. */
NXRT_EXPORT const char* NxHardwareDevice_GetVendor(const NxHardwareDevice* device);
/* PCI vendor id (0x8086, 0x10de, ...), 0 if unknown. */
NXRT_EXPORT uint32_t NxHardwareDevice_GetVendorId(const NxHardwareDevice* device);
/* PCI device id; for CPUs (family << 8) | model. */
NXRT_EXPORT uint32_t NxHardwareDevice_GetDeviceId(const NxHardwareDevice* device);
/* Metadata entries in a stable order ("discovered_by", "pci_bus_id", "driver", "discrete",
 * "model_name", "isa", "cores", "threads", ...). Key and value are borrowed like the device;
 * false when `index` is out of range. */
NXRT_EXPORT size_t NxHardwareDevice_GetMetadataCount(const NxHardwareDevice* device);
NXRT_EXPORT bool NxHardwareDevice_GetMetadata(const NxHardwareDevice* device, size_t index,
                                              const char** key, const char** value);
/* The value of `key`, or NULL if the device has no such entry. */
NXRT_EXPORT const char* NxHardwareDevice_GetMetadataValue(const NxHardwareDevice* device,
                                                          const char* key);

/* ---- Session options --------------------------------------------------------------------- */
NXRT_EXPORT NxStatus* NxSessionOptions_Create(NxSessionOptions** options);
NXRT_EXPORT void NxSessionOptions_Release(NxSessionOptions* options);
/* Threads one node may use; 0 (the default) = one per core. */
NXRT_EXPORT NxStatus* NxSessionOptions_SetIntraOpThreads(NxSessionOptions* options, int threads);
/* Log level of the session's messages (default WARNING). */
NXRT_EXPORT NxStatus* NxSessionOptions_SetLogLevel(NxSessionOptions* options, NxLogLevel level);
/* 0 = no graph optimisation, 1 = basic (default), 2 = all. */
NXRT_EXPORT NxStatus* NxSessionOptions_SetOptimizationLevel(NxSessionOptions* options, int level);
/* A free-form configuration entry ("session.*" keys; EPs read them too). */
NXRT_EXPORT NxStatus* NxSessionOptions_SetConfig(NxSessionOptions* options, const char* key,
                                                 const char* value);
/* Appends the EP named `ep_name` (from a registered library) with options, in priority order
 * ahead of the default CPU EP. Keys/values are copied. */
NXRT_EXPORT NxStatus* NxSessionOptions_AppendEp(NxSessionOptions* options, const char* ep_name,
                                                const char* const* keys, const char* const* values,
                                                size_t num_options);

/* ---- Sessions ---------------------------------------------------------------------------- */
/* `options` may be NULL for defaults. The env must outlive the session. */
NXRT_EXPORT NxStatus* NxSession_CreateFromFile(NxEnv* env, const char* model_path,
                                               const NxSessionOptions* options,
                                               NxSession** session);
/* The buffer is only read during the call. External tensor data is not allowed (no folder). */
NXRT_EXPORT NxStatus* NxSession_CreateFromBuffer(NxEnv* env, const void* data, size_t size,
                                                 const NxSessionOptions* options,
                                                 NxSession** session);
NXRT_EXPORT void NxSession_Release(NxSession* session);

NXRT_EXPORT size_t NxSession_GetInputCount(const NxSession* session);
NXRT_EXPORT size_t NxSession_GetOutputCount(const NxSession* session);
/* Names are borrowed for the session's lifetime. Index out of range: NULL. */
NXRT_EXPORT const char* NxSession_GetInputName(const NxSession* session, size_t index);
NXRT_EXPORT const char* NxSession_GetOutputName(const NxSession* session, size_t index);

/* Declared type of an input or output. `dims` (borrowed for the session's lifetime) holds -1 for
 * symbolic or unknown dimensions; *rank is 0 and *has_shape false when the rank is unknown. */
typedef struct NxTypeInfo {
  NxValueKind kind;
  NxElementType element_type;
  bool has_shape;
  const int64_t* dims;
  size_t rank;
} NxTypeInfo;
NXRT_EXPORT NxStatus* NxSession_GetInputTypeInfo(const NxSession* session, size_t index,
                                                 NxTypeInfo* info);
NXRT_EXPORT NxStatus* NxSession_GetOutputTypeInfo(const NxSession* session, size_t index,
                                                  NxTypeInfo* info);
/* Symbolic name of dimension `dim` of input `index` ("" if it has none); borrowed for the
 * session's lifetime. */
NXRT_EXPORT const char* NxSession_GetInputDimName(const NxSession* session, size_t index,
                                                  size_t dim);

/* Runs the model. `inputs` are borrowed for the call; they may live in host memory or in an EP's
 * device memory (NxEnv_CreateTensorInMemory): the runtime moves them where the consuming
 * kernels need them. For each requested output either pass a NULL slot in `outputs` (the
 * runtime creates a value in host memory, which the caller releases with NxValue_Release) or
 * bind a tensor created by the caller (wrapping its own buffer, or in an EP's memory), which
 * must have the output's exact element type and shape. A bound output in the memory where the
 * output is produced is written directly by the producing kernel (no round trip through the
 * host); otherwise the result is copied into it. `output_names` NULL with num_outputs equal to
 * the output count means "all outputs in order". */
NXRT_EXPORT NxStatus* NxSession_Run(NxSession* session, const char* const* input_names,
                                    const NxValue* const* inputs, size_t num_inputs,
                                    const char* const* output_names, size_t num_outputs,
                                    NxValue** outputs);

/* Counters about the session's set-up, by name:
 *   "copies"                      copies inserted at memory boundaries (per run), including
 *   "copies.outputs"              graph outputs produced in device memory (copied to the host
 *                                 unless bound in that memory)
 *   "initializers.uploaded"       initializers copied once into an EP's device memory
 *   "prepack.calls"               PrePackWeight calls this session made
 *   "prepack.weights"             (node, input) weights packed, own or shared
 *   "prepack.shared_hits"         packings reused from another session instead of packing
 *   "initializers.released"       initializers freed because every consumer packed them
 *   "initializers.released_bytes" bytes those freed
 * NX_NOT_FOUND for an unknown name. */
NXRT_EXPORT NxStatus* NxSession_GetStatistic(const NxSession* session, const char* key,
                                             int64_t* value);

/* EPs the session uses, in priority order, and how many nodes each runs. */
NXRT_EXPORT size_t NxSession_GetEpCount(const NxSession* session);
NXRT_EXPORT const char* NxSession_GetEpName(const NxSession* session, size_t index);
NXRT_EXPORT size_t NxSession_GetEpNodeCount(const NxSession* session, size_t index);

/* ---- Memory ------------------------------------------------------------------------------ */
/* The memory the EP named `ep_name` computes in (host memory for CPU-like EPs); borrowed for the
 * process lifetime. */
NXRT_EXPORT NxStatus* NxEnv_GetEpMemoryInfo(NxEnv* env, const char* ep_name,
                                            const NxMemoryInfo** memory);
/* A tensor allocated in `memory` (host memory: zero-filled; device memory: uninitialised) from
 * the allocator of the EP that owns that memory. Release it before unregistering that EP's
 * library. NxValue_GetData returns a device pointer for device memory: never dereference it on
 * the host; fill and read it with NxEnv_CopyTensors. */
NXRT_EXPORT NxStatus* NxEnv_CreateTensorInMemory(NxEnv* env, const NxMemoryInfo* memory,
                                                 NxElementType type, const int64_t* dims,
                                                 size_t rank, NxValue** value);
/* Copies src[i] into dst[i] (same element type and shape) across memories with the registered
 * EPs' data transfers. */
NXRT_EXPORT NxStatus* NxEnv_CopyTensors(NxEnv* env, const NxValue* const* src,
                                        NxValue* const* dst, size_t count);
/* Where a tensor's data lives; borrowed for the process lifetime. */
NXRT_EXPORT const NxMemoryInfo* NxValue_GetMemoryInfo(const NxValue* value);
/* Env-wide counters, by name:
 *   "prepack.shared_weights"  packed weights shared between sessions, alive now
 *   "prepack.shared_bytes"    their bytes (each counted once, however many sessions use it)
 *   "prepack.bytes_in_use"    all bytes host-memory kernels packed weights into (own + shared)
 * NX_NOT_FOUND for an unknown name. */
NXRT_EXPORT NxStatus* NxEnv_GetStatistic(const NxEnv* env, const char* key, int64_t* value);

/* ---- Values ------------------------------------------------------------------------------ */
/* A tensor that owns zero-initialised memory (64-byte aligned). */
NXRT_EXPORT NxStatus* NxValue_CreateTensor(NxElementType type, const int64_t* dims, size_t rank,
                                           NxValue** value);
/* A tensor that wraps the caller's buffer without copying; `data` must hold at least the
 * tensor's bytes (`size` is checked) and outlive the value. Not for strings. */
NXRT_EXPORT NxStatus* NxValue_CreateTensorWithData(NxElementType type, const int64_t* dims,
                                                   size_t rank, void* data, size_t size,
                                                   NxValue** value);
/* A value parsed from a serialized ONNX TensorProto, SequenceProto or OptionalProto (as in the
 * ONNX test suite's data files), chosen by `kind`. */
NXRT_EXPORT NxStatus* NxValue_CreateFromProto(NxValueKind kind, const void* data, size_t size,
                                              NxValue** value);
NXRT_EXPORT void NxValue_Release(NxValue* value);

NXRT_EXPORT NxValueKind NxValue_GetKind(const NxValue* value);
NXRT_EXPORT NxElementType NxValue_GetElementType(const NxValue* value);
/* Shape of a tensor, borrowed for the value's lifetime. */
NXRT_EXPORT void NxValue_GetShape(const NxValue* value, const int64_t** dims, size_t* rank);
NXRT_EXPORT size_t NxValue_GetElementCount(const NxValue* value);
/* Raw data of a non-string tensor (NULL for strings). */
NXRT_EXPORT void* NxValue_GetData(NxValue* value);
NXRT_EXPORT const void* NxValue_GetConstData(const NxValue* value);
/* Element `index` of a string tensor, borrowed until it is set again or the value released. */
NXRT_EXPORT const char* NxValue_GetString(const NxValue* value, size_t index, size_t* size);
NXRT_EXPORT NxStatus* NxValue_SetString(NxValue* value, size_t index, const char* data,
                                        size_t size);
/* Sequences: number of elements and a borrowed element. Optionals: HasValue and the contained
 * value (borrowed), or NULL when empty. */
NXRT_EXPORT size_t NxValue_GetSequenceLength(const NxValue* value);
NXRT_EXPORT const NxValue* NxValue_GetSequenceElement(const NxValue* value, size_t index);
NXRT_EXPORT bool NxValue_OptionalHasValue(const NxValue* value);
NXRT_EXPORT const NxValue* NxValue_GetOptionalValue(const NxValue* value);

/* Name of an element type ("float", "int64", ...); static. */
NXRT_EXPORT const char* Nx_ElementTypeName(NxElementType type);

#ifdef __cplusplus
}
#endif

#endif /* NXRT_C_API_H_ */
