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

/* Grows when functions are added (4: output dim names, model info and metadata, sequence and
 * optional values; 5: NxSession_RunWithOutputMemories, NxEnv_CompileModel,
 * NxEnv_GetModelCompatibility). */
#define NXRT_C_API_VERSION 5

typedef struct NxEnv NxEnv;
typedef struct NxSessionOptions NxSessionOptions;
typedef struct NxSession NxSession;
typedef struct NxRunOptions NxRunOptions;

/* ---- Status ------------------------------------------------------------------------------ */
NXRT_EXPORT NxStatusCode NxStatus_GetCode(const NxStatus* status);
/* Borrowed until the status is released. */
NXRT_EXPORT const char* NxStatus_GetMessage(const NxStatus* status);
NXRT_EXPORT void NxStatus_Release(NxStatus* status);
/* A new status (the message is copied), for application callbacks that report an error
 * (NxEpSelectionFn). NULL only when out of memory. */
NXRT_EXPORT NxStatus* NxStatus_Create(NxStatusCode code, const char* message);

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
/* Fails while a live session uses one of the library's EPs (or a tensor lives in its memory).
 * Releases the library's EP devices and the virtual devices it created. */
NXRT_EXPORT NxStatus* NxEnv_UnregisterEpLibrary(NxEnv* env, const char* name);

/* A request for virtual devices: hardware of `type` that need not be present (to compile for
 * it, or to run on a simulator of it), with target options such as {"arch", "nx2"}. */
typedef struct NxVirtualDeviceRequest {
  NxDeviceType type;
  const NxKeyValue* options;
  size_t num_options;
} NxVirtualDeviceRequest;
/* Like NxEnv_RegisterEpLibrary, and asks the library's factories for virtual devices: each
 * factory sees each request and creates the devices it can target (possibly none). The runtime
 * marks them is_virtual = "1" and discovered_by = <EP name>, offers them only to the factory
 * that made them, and releases them when the library is unregistered. Their EP devices are
 * listed by NxEnv_GetEpDevice like any other. A factory that rejects a request's options fails
 * the registration. */
NXRT_EXPORT NxStatus* NxEnv_RegisterEpLibraryWithVirtualDevices(
    NxEnv* env, const char* name, const char* path, const NxVirtualDeviceRequest* requests,
    size_t num_requests);

/* ---- EP devices -------------------------------------------------------------------------- */
/* The EP devices of every registered library, in registration order (each library's factories
 * in order, each factory's devices in the order it added them), then the default CPU EP's
 * (loaded by this call if needed, hence the status). An EP device is borrowed until its
 * library is unregistered (the default CPU EP's: until the env is released). */
NXRT_EXPORT NxStatus* NxEnv_GetEpDeviceCount(NxEnv* env, size_t* count);
/* NULL when `index` is out of range. */
NXRT_EXPORT const NxEpDevice* NxEnv_GetEpDevice(NxEnv* env, size_t index);
/* Name, vendor and the registration name of the EP's library ("cpu" for the default CPU EP);
 * borrowed like the EP device. */
NXRT_EXPORT const char* NxEpDevice_GetEpName(const NxEpDevice* device);
NXRT_EXPORT const char* NxEpDevice_GetEpVendor(const NxEpDevice* device);
NXRT_EXPORT const char* NxEpDevice_GetLibraryName(const NxEpDevice* device);
/* The hardware device (discovered or virtual: check its "is_virtual" metadata). */
NXRT_EXPORT const NxHardwareDevice* NxEpDevice_GetHardwareDevice(const NxEpDevice* device);
/* The EP's metadata about this device ("version", "library_path", "performance_hint",
 * "power_hint", EP-specific keys) and its default options (overridden by the options given at
 * selection). Same conventions as the hardware-device metadata calls. */
NXRT_EXPORT size_t NxEpDevice_GetMetadataCount(const NxEpDevice* device);
NXRT_EXPORT bool NxEpDevice_GetMetadata(const NxEpDevice* device, size_t index, const char** key,
                                        const char** value);
NXRT_EXPORT const char* NxEpDevice_GetMetadataValue(const NxEpDevice* device, const char* key);
NXRT_EXPORT size_t NxEpDevice_GetOptionCount(const NxEpDevice* device);
NXRT_EXPORT bool NxEpDevice_GetOption(const NxEpDevice* device, size_t index, const char** key,
                                      const char** value);
/* The memory the EP computes in on this device (host memory for CPU-like EPs); borrowed for the
 * process lifetime. */
NXRT_EXPORT const NxMemoryInfo* NxEpDevice_GetMemoryInfo(const NxEpDevice* device);

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
/* Metadata entries in a stable order (CPU: "model_name", "architecture", "cores", "threads",
 * "isa", "discovered_by"; GPU/NPU: "pci_bus_id", "pci_class", "driver", "discrete", ...,
 * "discovered_by"; virtual devices: the EP's keys, "is_virtual", "discovered_by"). Key and value
 * are borrowed like the device; false when `index` is out of range. */
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
/* A free-form configuration entry ("session.*" keys; EPs read them too). Keys nxrt reads:
 *   "session.share_prepacked_weights" "0" | "1" (default "1"): share packed weights between
 *     sessions of one env (docs/writing-an-ep.md);
 *   "session.intra_op_spin_us" microseconds (default 200): how long an idle intra-op worker
 *     thread spins waiting for the next parallel kernel before it sleeps (docs/threading.md);
 *     0 sleeps at once (least CPU on a busy machine, about 50 us more per parallel kernel). */
NXRT_EXPORT NxStatus* NxSessionOptions_SetConfig(NxSessionOptions* options, const char* key,
                                                 const char* value);
/* Appends the EP named `ep_name` (from a registered library, or "CPU") with options, in
 * priority order, for all of its EP devices (virtual ones included; none for a factory without
 * EP devices). Options override the EP devices' defaults. Keys/values are copied. */
NXRT_EXPORT NxStatus* NxSessionOptions_AppendEp(NxSessionOptions* options, const char* ep_name,
                                                const char* const* keys, const char* const* values,
                                                size_t num_options);

/* ---- EP selection -----------------------------------------------------------------------
 * A session runs each node on the first of its EPs that claims it. The EPs come from one of:
 *   - explicit selection: NxSessionOptions_AppendEp / NxSessionOptions_AppendEpDevices, in
 *     priority order;
 *   - a policy (NxSessionOptions_SetEpSelectionPolicy) or a callback
 *     (NxSessionOptions_SetEpSelectionCallback) that orders the env's EP devices;
 *   - neither: the default CPU EP alone.
 * Explicit selection and a policy/callback together fail session creation. Selected EP devices
 * of one EP become one EP instance that gets all of them. Unless fallback is forbidden, the
 * default CPU EP is appended last when not selected already. See docs/devices.md. */

/* Appends one EP for one or more of its EP devices (all of the same EP, from the env the session
 * will be created in). `options` (copied) override the EP devices' default options; they reach
 * the EP as session configuration "ep.<ep name in lower case>.<key>". */
NXRT_EXPORT NxStatus* NxSessionOptions_AppendEpDevices(NxSessionOptions* options,
                                                       const NxEpDevice* const* devices,
                                                       size_t num_devices,
                                                       const NxKeyValue* ep_options,
                                                       size_t num_ep_options);

typedef enum NxEpSelectionPolicy {
  /* CPU EP devices only: a vendor's own CPU EP first, the default CPU EP last. */
  NX_POLICY_PREFER_CPU = 0,
  /* GPU EP devices only, ranked: real hardware before virtual, discrete before unknown before
   * integrated, the GPU vendor's own EP before a generic one, then by performance_hint. The
   * default CPU EP follows as fallback (unless forbidden) for nodes they do not claim. */
  NX_POLICY_PREFER_GPU = 1,
  /* The same with NPU EP devices. */
  NX_POLICY_PREFER_NPU = 2,
  /* Every EP device of real hardware by performance_hint, fastest first (defaults: discrete
   * GPU 80, other GPU 60, NPU 50, integrated GPU 40, CPU 10), the CPU EPs included as chosen
   * EPs; virtual devices are left out. */
  NX_POLICY_MAX_PERFORMANCE = 3,
  /* EP devices of real hardware that draw less power (power_hint; defaults: NPU 5, integrated
   * GPU 15, CPU 45, other GPU 150, discrete GPU 250 W) than the most frugal CPU EP device,
   * lowest first, then the CPU EPs. Hungrier devices (discrete GPUs unless their EP says
   * otherwise) and virtual devices are left out. */
  NX_POLICY_MIN_POWER = 4,
} NxEpSelectionPolicy;
NXRT_EXPORT NxStatus* NxSessionOptions_SetEpSelectionPolicy(NxSessionOptions* options,
                                                            NxEpSelectionPolicy policy);
/* "prefer-cpu", "prefer-gpu", "prefer-npu", "max-performance", "min-power"; static. */
NXRT_EXPORT const char* Nx_EpSelectionPolicyName(NxEpSelectionPolicy policy);

/* A custom policy. Called at session creation with every EP device of the env (the order of
 * NxEnv_GetEpDevice) and the model's metadata (producer_name, producer_version, domain,
 * model_version, doc_string, graph_name and the model's metadata_props); it writes its choice,
 * in priority order, into `selected` (room for `max_selected`, at least num_devices) and sets
 * *num_selected. Everything is borrowed for the call. An error status, an empty choice or an EP
 * device not offered fails session creation. */
typedef NxStatus* (*NxEpSelectionFn)(void* user, const NxEpDevice* const* devices,
                                     size_t num_devices, const NxKeyValue* model_metadata,
                                     size_t num_metadata, const NxEpDevice** selected,
                                     size_t max_selected, size_t* num_selected);
/* Replaces any policy; `user` is passed through and must outlive session creation. */
NXRT_EXPORT NxStatus* NxSessionOptions_SetEpSelectionCallback(NxSessionOptions* options,
                                                              NxEpSelectionFn fn, void* user);

typedef enum NxFallbackMode {
  /* Nodes no selected EP claims run on the default CPU EP (the default). */
  NX_FALLBACK_ALLOW = 0,
  /* The same, and session creation logs a warning naming each node that fell back. */
  NX_FALLBACK_WARN = 1,
  /* No CPU fallback: a node no selected EP claims fails session creation, naming the node and
   * its op. (Selecting the CPU EP explicitly or by policy still uses it.) */
  NX_FALLBACK_FORBID = 2,
} NxFallbackMode;
NXRT_EXPORT NxStatus* NxSessionOptions_SetFallback(NxSessionOptions* options, NxFallbackMode mode);

/* Profiling. A session created with a profile file records a profile: session events for the
 * steps of its creation (load, create_eps, partition, optimize, create_kernels, plan_memory;
 * EPs that compile add compile events) and, for every NxSession_Run, a "run" event enclosing one
 * event per node (name = node name; args: EP, hardware device, op type, input and output
 * shapes, run index), one per copy between memories and the events EPs add themselves. It is
 * written as Chrome trace JSON (chrome://tracing, https://ui.perfetto.dev) to `path` by
 * NxSession_EndProfiling or when the session is released. The file is opened at session
 * creation: a path that cannot be written fails it. `path` is copied; "" turns profiling off.
 * See docs/profiling.md. */
NXRT_EXPORT NxStatus* NxSessionOptions_SetProfileFile(NxSessionOptions* options, const char* path);

/* Memory limit (version 3): at most `bytes` of tensor memory held at once by the session's runs
 * (intermediate values, outputs not yet released, scratch that kernels ask the host for; every
 * memory, host and device), counted over all its concurrent runs. An allocation beyond it fails
 * the run with NX_OUT_OF_MEMORY and a message naming the limit; the session stays usable.
 * Buffers the runtime caches for reuse and memory an EP allocates by itself are not counted.
 * 0 (the default) = no limit. */
NXRT_EXPORT NxStatus* NxSessionOptions_SetMemoryLimit(NxSessionOptions* options, size_t bytes);

/* ---- Run options (version 3) --------------------------------------------------------------
 * What bounds a run: a terminate flag that any thread may set while runs are in progress, and
 * a time limit. A run stopped by them fails with NX_CANCELLED (the message says which, and
 * where: before which node, in which Loop iteration); the session stays usable. The runtime
 * checks between nodes and copies, before every Loop/Scan iteration (bodies included) and
 * inside kernels that poll it (plugin ABI KernelContext_ShouldStop), so a run stops within one
 * node's time of the flag. */
NXRT_EXPORT NxStatus* NxRunOptions_Create(NxRunOptions** options);
/* No run may be using the options any more. */
NXRT_EXPORT void NxRunOptions_Release(NxRunOptions* options);
/* true: every run using these options stops as soon as it checks, and runs started with them
 * fail at once, until it is set back to false. Safe from any thread at any time. */
NXRT_EXPORT NxStatus* NxRunOptions_SetTerminate(NxRunOptions* options, bool terminate);
/* A time limit for each run, counted from the start of NxSession_RunWithOptions; 0 (the
 * default) = none. Negative, NaN or infinite values are refused. */
NXRT_EXPORT NxStatus* NxRunOptions_SetTimeout(NxRunOptions* options, double seconds);

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
/* Writes the profile (NxSessionOptions_SetProfileFile) now and stops recording; later runs are
 * not profiled and releasing the session writes nothing more. Errors: the session was not
 * created with a profile file or profiling ended already (NX_INVALID_ARGUMENT), the file cannot
 * be written (NX_FAIL; recording stops all the same). */
NXRT_EXPORT NxStatus* NxSession_EndProfiling(NxSession* session);

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
/* The same for output `index`. */
NXRT_EXPORT const char* NxSession_GetOutputDimName(const NxSession* session, size_t index,
                                                   size_t dim);
/* Model-level facts by key: "producer_name", "producer_version", "domain", "description" (the
 * model's doc_string), "graph_name", "graph_description" (the graph's doc_string), "version"
 * (model_version) and "ir_version" (both in decimal); "" when the model leaves one out, NULL for
 * an unknown key. Borrowed for the session's lifetime. */
NXRT_EXPORT const char* NxSession_GetModelInfo(const NxSession* session, const char* key);
/* The model's metadata_props, in key order; false for an index out of range. Borrowed for the
 * session's lifetime. */
NXRT_EXPORT size_t NxSession_GetCustomMetadataCount(const NxSession* session);
NXRT_EXPORT bool NxSession_GetCustomMetadata(const NxSession* session, size_t index,
                                             const char** key, const char** value);

/* Every value of the session's main graph (graph inputs, initializers, intermediate values,
 * outputs) with its static type: declared by the model or inferred when it was loaded. For tools
 * (`nxrt info MODEL --values`); the order is unspecified. Names and dims are borrowed for the
 * session's lifetime; an index out of range gives NULL / NX_INVALID_ARGUMENT. */
NXRT_EXPORT size_t NxSession_GetValueCount(const NxSession* session);
NXRT_EXPORT const char* NxSession_GetValueName(const NxSession* session, size_t index);
NXRT_EXPORT NxStatus* NxSession_GetValueTypeInfo(const NxSession* session, size_t index,
                                                 NxTypeInfo* info);

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
/* NxSession_Run bounded by `run_options` (NULL = none; borrowed for the call, and it must not
 * be released before the call returns). */
NXRT_EXPORT NxStatus* NxSession_RunWithOptions(NxSession* session, const NxRunOptions* run_options,
                                               const char* const* input_names,
                                               const NxValue* const* inputs, size_t num_inputs,
                                               const char* const* output_names, size_t num_outputs,
                                               NxValue** outputs);
/* NxSession_RunWithOptions where the caller also names, per requested output, the memory an
 * unbound output comes back in (version 5): `output_memories` (NULL = all host memory) has
 * num_outputs entries; entry i NULL means host memory, otherwise a memory such as
 * NxEnv_GetEpMemoryInfo or NxEpDevice_GetMemoryInfo returns. An output produced in that memory
 * is handed over as it is, with no copy (an output left in an EP's device memory for the next
 * run to consume); one produced elsewhere is copied there with the EPs' data transfers. The
 * shape need not be known in advance, unlike a bound output. Entries for bound outputs (a
 * non-NULL outputs[i]) are ignored. */
NXRT_EXPORT NxStatus* NxSession_RunWithOutputMemories(
    NxSession* session, const NxRunOptions* run_options, const char* const* input_names,
    const NxValue* const* inputs, size_t num_inputs, const char* const* output_names,
    size_t num_outputs, const NxMemoryInfo* const* output_memories, NxValue** outputs);

/* Counters about the session's set-up, by name:
 *   "copies"                      copies inserted at memory boundaries (per run), including
 *   "copies.outputs"              graph outputs produced in device memory (copied to the host
 *                                 unless bound in that memory)
 *   "streams"                     streams the session's EPs made for it (plugin ABI 13): kernels
 *                                 and copies queued there run asynchronously
 *   "initializers.uploaded"       initializers copied once into an EP's device memory
 *   "prepack.calls"               PrePackWeight calls this session made
 *   "prepack.weights"             (node, input) weights packed, own or shared
 *   "prepack.shared_hits"         packings reused from another session instead of packing
 *   "initializers.released"       initializers freed because every consumer packed them
 *   "initializers.released_bytes" bytes those freed
 *   "nodes.folded"                nodes computed once at creation because all their inputs are
 *                                 constants (constant folding, in the main graph and in
 *                                 control-flow bodies; optimization level 1 and up)
 *   "ep.<EP name>.<key>"          a counter the EP keeps (plugin ABI version 11), read when
 *                                 asked; the CPU EP keeps "ep.CPU.primitives" (oneDNN
 *                                 primitives created so far) and "ep.CPU.reference_primitives"
 *                                 (those of them on a oneDNN reference implementation, which the
 *                                 CPU EP avoids: 0 unless it also logged a warning naming the
 *                                 node)
 * NX_NOT_FOUND for an unknown name. */
NXRT_EXPORT NxStatus* NxSession_GetStatistic(const NxSession* session, const char* key,
                                             int64_t* value);

/* EPs the session uses, in priority order, and how many nodes each runs. */
NXRT_EXPORT size_t NxSession_GetEpCount(const NxSession* session);
NXRT_EXPORT const char* NxSession_GetEpName(const NxSession* session, size_t index);
NXRT_EXPORT size_t NxSession_GetEpNodeCount(const NxSession* session, size_t index);
/* The EP devices EP `ep_index` was created for (none for an EP appended by name that has no EP
 * device); borrowed like NxEnv_GetEpDevice's. */
NXRT_EXPORT size_t NxSession_GetEpDeviceCount(const NxSession* session, size_t ep_index);
NXRT_EXPORT const NxEpDevice* NxSession_GetEpDevice(const NxSession* session, size_t ep_index,
                                                    size_t device_index);

/* ---- Placement report ----------------------------------------------------------------------
 * Where every node runs, always recorded (no opt-in): the assigned subgraphs (connected groups
 * of nodes on one EP, in execution order, control-flow bodies included) with their EP, kind
 * ("kernels": one kernel per node; "fused": compiled as one), hardware devices and nodes; and for
 * every node the session's first (preferred) EP did not take, why. */
typedef struct NxAssignmentReport NxAssignmentReport;

/* Why the preferred EP did not take a node. */
typedef enum NxFallbackReason {
  NX_FALLBACK_NO_KERNEL = 0,              /* no kernel for that op and domain */
  NX_FALLBACK_OPSET_NOT_COVERED = 1,      /* kernels for the op, none for the node's opset */
  NX_FALLBACK_TYPE_CONSTRAINT = 2,        /* a type constraint not met (the detail names it) */
  NX_FALLBACK_DECLINED = 3,               /* the EP has a kernel; its GetCapability declined */
  NX_FALLBACK_CLAIMED_WITHOUT_KERNEL = 4, /* claimed, but the EP has no kernel for it */
  NX_FALLBACK_CAPABILITY_FAILED = 5,      /* the EP's GetCapability returned an error */
  NX_FALLBACK_NON_CONVEX = 6, /* in a fused group a path leaves and re-enters (rejected whole) */
  NX_FALLBACK_COMPILE_FAILED = 7, /* in a fused group the EP failed to compile (detail: why) */
} NxFallbackReason;

/* One node the preferred EP did not take. Strings are borrowed from the report. */
typedef struct NxFallbackInfo {
  const char* graph; /* "" = main graph; else the body's path ("loop/body") */
  const char* node_name;
  const char* node_domain;
  const char* node_op_type;
  const char* preferred_ep;
  NxFallbackReason reason;
  const char* reason_name; /* "no_kernel", "opset_not_covered", "type_constraint", "declined",
                              "claimed_without_kernel", "capability_failed", "non_convex",
                              "compile_failed" */
  const char* detail;      /* human-readable, e.g. "input 1 has type int64 but input 0 has float" */
  const char* assigned_ep; /* the EP that runs it instead; "" when none can */
} NxFallbackInfo;

/* The session's report; borrowed, lives as long as the session. */
NXRT_EXPORT const NxAssignmentReport* NxSession_GetAssignmentReport(const NxSession* session);
/* Dry run: the report for a model and session options (EPs, policy, fallback) without creating
 * kernels or compiling. Nodes no EP can take are listed as fallbacks with assigned_ep "". Release
 * the report with NxAssignmentReport_Release. */
NXRT_EXPORT NxStatus* NxEnv_PlanPlacementFromFile(NxEnv* env, const char* model_path,
                                                  const NxSessionOptions* options,
                                                  NxAssignmentReport** report);
NXRT_EXPORT NxStatus* NxEnv_PlanPlacementFromBuffer(NxEnv* env, const void* data, size_t size,
                                                    const NxSessionOptions* options,
                                                    NxAssignmentReport** report);
NXRT_EXPORT void NxAssignmentReport_Release(NxAssignmentReport* report);

NXRT_EXPORT size_t NxAssignmentReport_GetSubgraphCount(const NxAssignmentReport* report);
/* Subgraph `index`: its graph ("" = main; else the body's path), EP name and kind; NULL when out
 * of range. */
NXRT_EXPORT const char* NxAssignmentReport_GetSubgraphGraph(const NxAssignmentReport* report,
                                                            size_t index);
NXRT_EXPORT const char* NxAssignmentReport_GetSubgraphEpName(const NxAssignmentReport* report,
                                                             size_t index);
NXRT_EXPORT const char* NxAssignmentReport_GetSubgraphKind(const NxAssignmentReport* report,
                                                           size_t index);
/* The stream its kernels are queued on (plugin ABI 13), e.g. "SimDevice:0x0000:kernels": the EP,
 * the device id and the stream's job; "" when they run synchronously (also for control-flow
 * bodies, whose streams are planned when they run). NULL when out of range. */
NXRT_EXPORT const char* NxAssignmentReport_GetSubgraphStream(const NxAssignmentReport* report,
                                                             size_t index);
/* Its hardware devices: the one the EP declared for the group, else the device of the first EP
 * device the EP was created with; none for an EP created without EP devices. */
NXRT_EXPORT size_t NxAssignmentReport_GetSubgraphDeviceCount(const NxAssignmentReport* report,
                                                             size_t index);
NXRT_EXPORT const NxHardwareDevice* NxAssignmentReport_GetSubgraphDevice(
    const NxAssignmentReport* report, size_t index, size_t device_index);
/* Its nodes, in execution order. NX_INVALID_ARGUMENT when out of range. */
NXRT_EXPORT size_t NxAssignmentReport_GetSubgraphNodeCount(const NxAssignmentReport* report,
                                                           size_t index);
NXRT_EXPORT NxStatus* NxAssignmentReport_GetSubgraphNode(const NxAssignmentReport* report,
                                                         size_t index, size_t node_index,
                                                         const char** name, const char** domain,
                                                         const char** op_type);
NXRT_EXPORT size_t NxAssignmentReport_GetFallbackCount(const NxAssignmentReport* report);
NXRT_EXPORT NxStatus* NxAssignmentReport_GetFallback(const NxAssignmentReport* report, size_t index,
                                                     NxFallbackInfo* info);
/* The edges of node `node` of subgraph `subgraph`: its inputs and outputs as value names, in
 * order ("" for an omitted optional input or output). Counts are 0 and names NULL when out of
 * range. Strings are borrowed from the report. */
NXRT_EXPORT size_t NxAssignmentReport_GetNodeInputCount(const NxAssignmentReport* report,
                                                        size_t subgraph, size_t node);
NXRT_EXPORT const char* NxAssignmentReport_GetNodeInput(const NxAssignmentReport* report,
                                                        size_t subgraph, size_t node, size_t i);
NXRT_EXPORT size_t NxAssignmentReport_GetNodeOutputCount(const NxAssignmentReport* report,
                                                         size_t subgraph, size_t node);
NXRT_EXPORT const char* NxAssignmentReport_GetNodeOutput(const NxAssignmentReport* report,
                                                         size_t subgraph, size_t node, size_t i);
/* Copies: each value that crosses from one memory to another, once per value and reading EP, in
 * graph order (a graph's copies ahead of its bodies'): `graph` ("" = main graph; else the body's
 * path), `value` (its name), `from_ep` (the producer's EP; "" for a graph input, initializer or
 * outer-scope value, which are in host memory) and `to_ep` (the reading node's EP; "" for a
 * graph output produced in memory the host cannot read, delivered to the host). Judged by each
 * EP's memory (a kernel that takes an input in host memory may avoid a copy listed here).
 * Strings are borrowed from the report; NX_INVALID_ARGUMENT when out of range. */
NXRT_EXPORT size_t NxAssignmentReport_GetCopyCount(const NxAssignmentReport* report);
NXRT_EXPORT NxStatus* NxAssignmentReport_GetCopy(const NxAssignmentReport* report, size_t index,
                                                 const char** graph, const char** value,
                                                 const char** from_ep, const char** to_ep);
/* The two memories of copy `index`, described like "SimDevice (npu 1, device memory)": where
 * the value is and where it is read. Tells apart copies between two devices of one EP (whose
 * `from_ep` and `to_ep` are the same). Borrowed from the report; NX_INVALID_ARGUMENT when out of
 * range. */
NXRT_EXPORT NxStatus* NxAssignmentReport_GetCopyMemories(const NxAssignmentReport* report,
                                                         size_t index, const char** from_memory,
                                                         const char** to_memory);

/* ---- Ahead-of-time compilation (version 5) ------------------------------------------------ */
/* Where NxEnv_CompileModel puts each compiled group's payload. */
#define NX_COMPILE_EMBED_PAYLOADS 0u    /* inside the EPContext node (embed_mode 1) */
#define NX_COMPILE_EXTERNAL_PAYLOADS 1u /* in a file next to the output model (embed_mode 0) */
/* Also keep each group's original nodes inside its EPContext node (GRAPH attribute
 * "nxrt_original_nodes"): a session on a device the payload does not suit (or without the EP)
 * then runs those nodes instead, unless its fallback mode is NX_FALLBACK_FORBID. */
#define NX_COMPILE_KEEP_ORIGINAL_NODES 2u
/* Told one line per compiled group as it is saved. */
typedef void (*NxProgressFn)(void* user, const char* line);
/* Compiles the model at `model_path` for the EPs `options` selects (EP devices, virtual ones
 * included: the hardware need not be present) and writes it to `output_path`: each group an EP
 * compiled and exported (NxEp::ExportCompiledGroup) becomes one EPContext node (domain
 * com.microsoft; attributes source = the EP's name, embed_mode, ep_cache_context = the payload
 * or its file name, ep_sdk_version, partition_name, notes = the node names it replaces) reading
 * the group's inputs and producing its outputs; every other node, initializer and attribute stays
 * as the input model has it. The EP's compatibility string goes into the model's metadata as
 * "ep_compatibility_info.<EP name>". Payload files are named "<output stem>_<group>.ctx" and are
 * read back with external data's rules (relative, inside the model's folder). A session created
 * from the written model has the EP rebuild each group from its payload (NxEp::LoadCompiledGroup)
 * instead of compiling it, after NxEpFactory::CheckCompatibility accepted the device. Groups
 * inside control-flow bodies stay as nodes. Graph optimizations are off while compiling, so the
 * written model keeps the input's own nodes. `flags`: NX_COMPILE_*; `progress` may be NULL;
 * `groups_saved` (may be NULL) receives how many EPContext nodes were written. */
NXRT_EXPORT NxStatus* NxEnv_CompileModel(NxEnv* env, const char* model_path,
                                         const NxSessionOptions* options, const char* output_path,
                                         uint32_t flags, NxProgressFn progress, void* progress_user,
                                         size_t* groups_saved);
/* Whether the compiled groups a model file holds for `device`'s EP run on that device, as the EP
 * judges from the saved compatibility string (NX_COMPATIBILITY_NOT_APPLICABLE when the model
 * holds none for that EP), without creating a session. */
NXRT_EXPORT NxStatus* NxEnv_GetModelCompatibility(NxEnv* env, const char* model_path,
                                                  const NxEpDevice* device,
                                                  NxCompatibility* result);

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
NXRT_EXPORT NxStatus* NxEnv_CopyTensors(NxEnv* env, const NxValue* const* src, NxValue* const* dst,
                                        size_t count);
/* Where a tensor's data lives; borrowed for the process lifetime. */
NXRT_EXPORT const NxMemoryInfo* NxValue_GetMemoryInfo(const NxValue* value);
/* Env-wide counters, by name:
 *   "prepack.shared_weights"  packed weights shared between sessions, alive now
 *   "prepack.shared_bytes"    their bytes (each counted once, however many sessions use it)
 *   "prepack.bytes_in_use"    all bytes host-memory kernels packed weights into (own + shared)
 *   "ep.<EP>.abi_version"     the plugin ABI version the EP's factory was built against
 *   "ep.<EP>.device_blocks_alive"  blocks of the EP's device memory held outside its arena
 *                             (live tensors; 0 once every value there is released)
 *   "ep.<EP>.ort_api_level"   for an EP from an onnxruntime plugin library: the onnxruntime API
 *                             level it was built for (docs/ort-plugins.md)
 *   "ep.<EP>.ort_unimplemented_calls"  calls that library made to onnxruntime API slots nxrt
 *                             does not implement (each slot is named once in a warning)
 * NX_NOT_FOUND for an unknown name or EP. */
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
/* A sequence holding copies of `count` host tensors, all of `element_type` (which an empty
 * sequence needs too); strings included. */
NXRT_EXPORT NxStatus* NxValue_CreateSequence(NxElementType element_type,
                                             const NxValue* const* elements, size_t count,
                                             NxValue** value);
/* An optional holding a copy of `element` (a host tensor or a sequence), or an empty optional when
 * `element` is NULL. */
NXRT_EXPORT NxStatus* NxValue_CreateOptional(const NxValue* element, NxValue** value);
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
