/* nxrt_types.h: the few plain C types shared by the application API (nxrt_c_api.h) and the
 * plugin EP ABI (nxrt_ep_api.h). Standalone: only <stdint.h>, <stddef.h> and <stdbool.h>.
 *
 * Conventions used by every nxrt C header:
 * - A function that can fail returns `NxStatus*`; NULL means success. A non-NULL status is owned
 *   by the caller, who reads it and releases it exactly once.
 * - `Create*` hands ownership to the caller, who pairs it with the matching `Release*`.
 * - A pointer returned as `const` is borrowed; its lifetime is stated next to the function.
 */
#ifndef NXRT_TYPES_H_
#define NXRT_TYPES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define NXRT_EXPORT __declspec(dllexport)
#else
#define NXRT_EXPORT __attribute__((visibility("default")))
#endif

/* An error with a code and a message. Opaque; NULL means "no error". */
typedef struct NxStatus NxStatus;

typedef enum NxStatusCode {
  NX_OK = 0,
  NX_FAIL = 1,             /* generic failure */
  NX_INVALID_ARGUMENT = 2, /* the caller passed something wrong (name, shape, type, null) */
  NX_NOT_FOUND = 3,        /* a file, a name, an attribute or an entry does not exist */
  NX_NOT_IMPLEMENTED = 4,  /* valid request that this runtime or plugin does not support */
  NX_INVALID_MODEL = 5,    /* the model is malformed or fails validation */
  NX_INVALID_PLUGIN = 6,   /* an EP library broke the ABI contract */
  NX_RUNTIME_ERROR = 7,    /* a kernel failed while running */
  NX_OUT_OF_MEMORY = 8,    /* an allocation failed, or the session's memory limit was reached */
  NX_CANCELLED = 9,        /* a run stopped by its run options: terminate flag or time limit */
} NxStatusCode;

/* Tensor element types. The numbering is ONNX's TensorProto.DataType, so values read from a
 * model file map one to one. */
typedef enum NxElementType {
  NX_TYPE_UNDEFINED = 0,
  NX_TYPE_FLOAT = 1,
  NX_TYPE_UINT8 = 2,
  NX_TYPE_INT8 = 3,
  NX_TYPE_UINT16 = 4,
  NX_TYPE_INT16 = 5,
  NX_TYPE_INT32 = 6,
  NX_TYPE_INT64 = 7,
  NX_TYPE_STRING = 8,
  NX_TYPE_BOOL = 9,
  NX_TYPE_FLOAT16 = 10,
  NX_TYPE_DOUBLE = 11,
  NX_TYPE_UINT32 = 12,
  NX_TYPE_UINT64 = 13,
  NX_TYPE_COMPLEX64 = 14,
  NX_TYPE_COMPLEX128 = 15,
  NX_TYPE_BFLOAT16 = 16,
  NX_TYPE_FLOAT8E4M3FN = 17,
  NX_TYPE_FLOAT8E4M3FNUZ = 18,
  NX_TYPE_FLOAT8E5M2 = 19,
  NX_TYPE_FLOAT8E5M2FNUZ = 20,
  NX_TYPE_UINT4 = 21,
  NX_TYPE_INT4 = 22,
  NX_TYPE_FLOAT4E2M1 = 23,
  /* Added in ABI version 10 (ONNX 1.20+): an 8-bit power of two (exponent only, no sign or
   * mantissa; 0xFF is NaN) and 2-bit integers packed four per byte, lowest bits first. */
  NX_TYPE_FLOAT8E8M0 = 24,
  NX_TYPE_UINT2 = 25,
  NX_TYPE_INT2 = 26,
} NxElementType;

/* What an NxValue holds. Tensors are the common case; sequences and optionals appear with
 * control flow and sequence operators. */
typedef enum NxValueKind {
  NX_VALUE_TENSOR = 0,
  NX_VALUE_SEQUENCE = 1,
  NX_VALUE_OPTIONAL = 2,
} NxValueKind;

typedef enum NxLogLevel {
  NX_LOG_VERBOSE = 0,
  NX_LOG_INFO = 1,
  NX_LOG_WARNING = 2,
  NX_LOG_ERROR = 3,
  NX_LOG_FATAL = 4,
} NxLogLevel;

/* Kinds of hardware a device (and its memory) belongs to. */
typedef enum NxDeviceType {
  NX_DEVICE_CPU = 0,
  NX_DEVICE_GPU = 1,
  NX_DEVICE_NPU = 2,
  NX_DEVICE_FPGA = 3,
  NX_DEVICE_OTHER = 4,
} NxDeviceType;

/* Whether a compiled payload (an EPContext node of a saved model) runs on a device, as the EP
 * that wrote it judges (NxEpFactory::CheckCompatibility, NxEnv_GetModelCompatibility). */
typedef enum NxCompatibility {
  /* The model holds no compiled payload for this EP. */
  NX_COMPATIBILITY_NOT_APPLICABLE = 0,
  /* Made for this device: runs as compiled. */
  NX_COMPATIBILITY_OPTIMAL = 1,
  /* Runs, but compiling again for this device would be faster. */
  NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL = 2,
  /* Does not run here; compiling the original model again for this device would. */
  NX_COMPATIBILITY_NEEDS_RECOMPILATION = 3,
  /* Does not run here (another EP version, a malformed string). */
  NX_COMPATIBILITY_UNSUPPORTED = 4,
} NxCompatibility;

/* Who may touch a block of memory. */
typedef enum NxMemoryKind {
  /* The device's own memory: only that device's kernels and data transfer read or write it. The
   * host CPU never dereferences a pointer into it. */
  NX_MEMORY_DEVICE = 0,
  /* Memory the host CPU can read and write directly (plain host memory, pinned or shared
   * memory). Host kernels consume it without a copy. */
  NX_MEMORY_HOST_ACCESSIBLE = 1,
} NxMemoryKind;

/* Describes one memory: which device it belongs to and who may touch it. Two descriptions name
 * the same memory when device_type, vendor_id, device_id and kind are equal (`name` is for
 * people). Host memory is {"Cpu", NX_DEVICE_CPU, 0, 0, NX_MEMORY_HOST_ACCESSIBLE}. */
typedef struct NxMemoryInfo {
  uint32_t version; /* 1 */
  const char* name; /* e.g. "Cpu", "SimDevice" */
  NxDeviceType device_type;
  uint32_t vendor_id; /* PCI vendor id of the device, or 0 */
  int32_t device_id;  /* index among devices of that type and vendor */
  NxMemoryKind kind;
  size_t alignment; /* minimum alignment of blocks in bytes; 0 = 64 */
} NxMemoryInfo;

/* A hardware device: one the runtime discovered (the CPU, a GPU, an NPU) or a virtual device an
 * EP factory created on the application's request (metadata is_virtual = "1"). Opaque; owned by
 * the runtime. */
typedef struct NxHardwareDevice NxHardwareDevice;

/* An EP device: one EP (factory) paired with one hardware device it supports, with the EP's
 * metadata about that pairing, its default options and the memory it computes in. Opaque; owned
 * by the runtime from registration of its library to unregistration. */
typedef struct NxEpDevice NxEpDevice;

/* One key/value pair (metadata, options). Both strings are NUL-terminated. No `version`
 * member: it cannot grow. The plugin ABI has a versioned successor, NxKeyValue2 (version 14);
 * the application API keeps this one (it grows by new functions, never by growing structs). */
typedef struct NxKeyValue {
  const char* key;
  const char* value;
} NxKeyValue;

/* A value passed between the application, the runtime and EPs: a tensor (element type, shape,
 * data), a sequence of values, or an optional value. Opaque. */
typedef struct NxValue NxValue;

#ifdef __cplusplus
}
#endif

#endif /* NXRT_TYPES_H_ */
