/* nxrt_ep_api.h: the plugin execution-provider (EP) ABI, version 15.
 *
 * An EP is a shared library that exports two C symbols (see "Library" below). The host hands it
 * a table of host services (NxHostApi); the library hands back factories (NxEpFactory), and each
 * factory creates one EP instance (NxEp) per session. An EP claims graph nodes and runs them
 * through kernels from its kernel registry.
 *
 * Memory (version 2). A factory names the memory its EP's kernels work in (GetMemoryInfo; none
 * = host memory), hands out allocators for it (CreateAllocator) and a data transfer that copies
 * tensors between that memory and others (CreateDataTransfer). The host keeps arenas on top of
 * the allocators, places every value in the memory its consumers need and inserts a copy where
 * a value crosses from one memory to another. A kernel definition may ask for individual inputs
 * or outputs in host memory (shape tensors), and may declare outputs that alias an input or may
 * be computed in place. Kernels may pre-pack constant weights once per session (PrePackWeight),
 * optionally sharing the packed copy between sessions of one process.
 *
 * Devices (version 3). At registration the host offers each factory the machine's hardware
 * devices (the CPU, GPUs, NPUs; see nxrt_c_api.h) and the factory says which it supports
 * (GetSupportedDevices), each pairing becoming an EP device with the EP's metadata and default
 * options. An application that wants to target hardware that is not present asks for virtual
 * devices when it registers the library; the factory creates them (CreateVirtualDevices), the
 * host owns them and offers them to that factory only. Applications then pick EP devices by
 * hand or by policy, and the EP learns at CreateEp which of its EP devices the session chose.
 *
 * Control flow (version 4). If, Loop and Scan run subgraphs, which only the host can do: the
 * host implements these kernels and an EP obtains them (CreateIfKernel, CreateLoopKernel,
 * CreateScanKernel) from the create function of its own kernel definitions for those ops. The
 * bodies are partitioned like the main graph (their nodes go to whichever EP claims them). The
 * EP supplies small helpers for the device work the host cannot do in its memory. Values stay
 * in the kernel's memory across iterations (version 5: Scan slices and stacks device tensors
 * through its helper too).
 *
 * Sequences and optionals (version 4). Kernels read sequence and optional inputs with the
 * Value_ calls and produce them with KernelContext_SetOutputSequence / SetOutputOptional /
 * SetOutputValue; the tensors inside are shared between values, never copied, and immutable.
 * A kernel definition says which value kinds it accepts (NxKernelDef::value_kinds): older
 * definitions only ever see tensors.
 *
 * Compiled groups (version 6). Instead of (or besides) kernels, an EP may claim a group of nodes
 * to compile as one (Capability_AddFusedGroup) and say which of its hardware devices runs it
 * (NxFusionOptions). The host checks the group is convex (no path leaves the group and comes
 * back), replaces it by one fused node and calls NxEp::CompileGroup with a graph view holding
 * only the group; the NxKernel returned runs the whole group. A rejected or failed group falls
 * back node by node to the next EP, and the assignment report says why. The same path restores
 * compiled-model contexts: an EP claims the "EPContext" nodes it wrote and rebuilds its program.
 *
 * Profiling (version 6). When the application asks a session for a profile, the host times
 * every kernel; a kernel may add its own events (KernelContext_AddProfileEvent).
 *
 * Stopping runs (version 7). An application may stop a run from another thread or give it a time
 * limit (NxRunOptions). The host checks between nodes and between control-flow iterations; a
 * kernel that can run long (its work grows with attributes or data rather than with its output)
 * polls KernelContext_ShouldStop in its outer loop and returns an error when it says true.
 *
 * Placement (version 8). EPs are asked for their capability in priority order; an EP that forms
 * groups leaves out the nodes an earlier EP took (Capability_IsNodeTaken).
 *
 * Ahead-of-time compilation (version 9). An application compiles a model for an EP device that
 * need not be present (a virtual device) and saves it (NxEnv_CompileModel): after CompileGroup
 * the host asks the EP for the group's payload and a compatibility string
 * (NxEp::ExportCompiledGroup) and writes one EPContext node (domain com.microsoft) per group in
 * place of its nodes. Loading such a model, the host asks the factory whether the payload suits
 * the device at hand (NxEpFactory::CheckCompatibility), reads the payload (embedded, or from a
 * file next to the model) and has the EP rebuild its kernel from it without compiling
 * (NxEp::LoadCompiledGroup).
 *
 * EP statistics (version 11). An EP may keep counters about its session (NxEp::GetStatistic);
 * applications read them as session statistics named "ep.<EP name>.<key>".
 *
 * A device per node (version 12). An EP spanning several devices places each kernel node on one
 * of them (Capability_AddNodeWithOptions; groups already could, NxFusionOptions), a kernel learns
 * its device (KernelInfo_GetHardwareDevice), and a factory may name a memory per device
 * (NxEpFactory::GetDeviceMemoryInfo): the host then keeps an allocator and arena per memory and
 * copies values between the devices' memories with the factory's data transfer.
 *
 * Streams and events (version 13). An EP may create streams (NxEp::CreateStream):
 * queues of device work that run in order. The host then gives each kernel the stream it runs
 * on (KernelContext_GetStream): the kernel queues its work there and returns at once. Copies
 * into and out of the EP's memory go on streams of their own (NxDataTransfer::CopyTensorsAsync),
 * so they overlap the kernels. Where a value crosses from one stream to another the host records
 * an event after the producer (NxStream::RecordEvent) and makes the consumer's stream wait for
 * it (NxStream::WaitEvent), or, for a consumer on the host or on another EP, waits for that one
 * event (NxEvent::Synchronize) - never for the whole device. A run ends by synchronising every
 * stream it used, so outputs the caller reads are complete. EPs without streams run
 * synchronously, as before.
 *
 * Versioning. Every table that either side fills starts with `uint32_t version`, set to the
 * NXRT_EP_API_VERSION the filler was compiled with. Tables only grow at the end; a reader reads a
 * member only when the writer's version says the member exists, and optional members may be
 * NULL. A plugin built against an older header keeps loading in a newer host. The host refuses a
 * plugin whose version is newer than its own, with a clear error. Three small structs of
 * versions 1-13 have no `version` and can never grow: NxTypeConstraint, NxIoPair and NxKeyValue.
 * Version 14 added versioned successors (NxTypeConstraint2, NxIoPair2, NxKeyValue2), passed as
 * arrays of pointers so that each entry carries its own version, and a member or function that
 * takes them next to each one that takes the old form; the old forms stay valid.
 *
 * Ownership. `Create*`/`Release*` pairs; `const` results are borrowed for the lifetime stated
 * next to each function. Strings the plugin returns (names, vendor) are copied by the host.
 * Errors cross the boundary only as NxStatus (never C++ exceptions).
 *
 * Threads. The host may call one EP's kernels from several threads at once for different runs of
 * a session: Compute must not mutate kernel state without its own synchronisation.
 */
#ifndef NXRT_EP_API_H_
#define NXRT_EP_API_H_

#include "nxrt_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NXRT_EP_API_VERSION 15

/* ============================================================================================
 * Opaque host objects an EP sees. All are owned by the host.
 * ========================================================================================== */

typedef struct NxGraph NxGraph;           /* read-only view of a graph (or a subgraph) */
typedef struct NxNode NxNode;             /* read-only view of one node */
typedef struct NxValueInfo NxValueInfo;   /* a graph value: name, element type, static shape */
typedef struct NxAttribute NxAttribute;   /* one node attribute */
typedef struct NxCapability NxCapability; /* collects the nodes an EP claims */
typedef struct NxKernelRegistry NxKernelRegistry; /* kernel definitions of one EP */
typedef struct NxKernelInfo NxKernelInfo;         /* what a kernel learns at creation */
typedef struct NxKernelContext NxKernelContext;   /* what a kernel sees while computing */
typedef struct NxConfig NxConfig;                 /* read-only key/value configuration */
typedef struct NxLogger NxLogger;
typedef struct NxPrePackCache
    NxPrePackCache; /* where a kernel offers a packed weight for sharing */
typedef struct NxEpDeviceList NxEpDeviceList; /* collects the EP devices a factory supports */
typedef struct NxVirtualDeviceList
    NxVirtualDeviceList; /* collects the virtual devices it creates */

typedef struct NxEp NxEp;
typedef struct NxEpFactory NxEpFactory;
typedef struct NxKernel NxKernel;
typedef struct NxAllocator NxAllocator;
typedef struct NxDataTransfer NxDataTransfer;
typedef struct NxCompiledGroupExport NxCompiledGroupExport;
typedef struct NxStream NxStream; /* version 13: a queue of device work, implemented by the EP */
typedef struct NxEvent NxEvent;   /* version 13: a point in a stream's queue */

/* Attribute types; numbering follows ONNX's AttributeProto.AttributeType. */
typedef enum NxAttributeType {
  NX_ATTR_UNDEFINED = 0,
  NX_ATTR_FLOAT = 1,
  NX_ATTR_INT = 2,
  NX_ATTR_STRING = 3,
  NX_ATTR_TENSOR = 4,
  NX_ATTR_GRAPH = 5,
  NX_ATTR_FLOATS = 6,
  NX_ATTR_INTS = 7,
  NX_ATTR_STRINGS = 8,
  NX_ATTR_TENSORS = 9,
  NX_ATTR_GRAPHS = 10,
  NX_ATTR_TYPE_PROTO = 13, /* version 4: a value type (Attribute_GetTypeInfo) */
  NX_ATTR_TYPE_PROTOS = 14,
} NxAttributeType;

/* ============================================================================================
 * Kernels: definitions (what a kernel accepts) and instances (what it does).
 * ========================================================================================== */

/* A type constraint binds a set of allowed element types to inputs and outputs of a node, like
 * a type variable of an ONNX schema. A node matches when, for every constraint, the type of
 * each named input/output that is present and known is in `allowed_types`, and all of them have
 * the same type (a float input and an int64 input under one "T" do not match). Bind inputs that
 * may differ to separate constraints. An index of -1 means "every input" (or "every output"),
 * for variadic operators. This struct has no `version` member: it cannot grow; NxTypeConstraint2
 * (version 14) is its versioned successor. */
typedef struct NxTypeConstraint {
  const char* name;                   /* "T", "T1", ... for messages */
  const NxElementType* allowed_types; /* borrowed for the duration of KernelRegistry_Add */
  size_t num_allowed_types;
  const int32_t* input_indices;
  size_t num_input_indices;
  const int32_t* output_indices;
  size_t num_output_indices;
} NxTypeConstraint;

/* Version 14: NxTypeConstraint with a `version`, so that it can grow. Same members, same meaning
 * (NxKernelDef::type_constraints2 lists them). */
typedef struct NxTypeConstraint2 {
  uint32_t version;                   /* NXRT_EP_API_VERSION */
  const char* name;                   /* "T", "T1", ... for messages */
  const NxElementType* allowed_types; /* borrowed for the duration of KernelRegistry_Add */
  size_t num_allowed_types;
  const int32_t* input_indices; /* -1 = every input */
  size_t num_input_indices;
  const int32_t* output_indices; /* -1 = every output */
  size_t num_output_indices;
} NxTypeConstraint2;

/* Create a kernel for one node. `state` is the pointer given in NxKernelDef::create_state;
 * `info` is borrowed for the duration of the call. On success store a kernel in *out. */
typedef NxStatus* (*NxKernelCreateFn)(void* state, const NxKernelInfo* info, NxKernel** out);

/* An (input index, output index) pair of one node. No `version` member: it cannot grow; NxIoPair2
 * (version 14) is its versioned successor. */
typedef struct NxIoPair {
  int32_t input;
  int32_t output;
} NxIoPair;

/* Version 14: NxIoPair with a `version`, so that it can grow. */
typedef struct NxIoPair2 {
  uint32_t version; /* NXRT_EP_API_VERSION */
  int32_t input;
  int32_t output;
} NxIoPair2;

/* Version 14: NxKeyValue (nxrt_types.h) with a `version`, so that it can grow. Both strings are
 * NUL-terminated. */
typedef struct NxKeyValue2 {
  uint32_t version; /* NXRT_EP_API_VERSION */
  const char* key;
  const char* value;
} NxKeyValue2;

/* A kernel definition. Version ranges are matched against the opset version the model imports
 * for the node's domain: a node in a model importing ai.onnx opset 13 matches a definition with
 * since_version_start <= 13 <= since_version_end. Several definitions may exist for one op (for
 * different version ranges or types); the first that matches wins. */
typedef struct NxKernelDef {
  uint32_t version;    /* NXRT_EP_API_VERSION */
  const char* op_type; /* "Conv" */
  const char* domain;  /* "" or "ai.onnx" for the default domain */
  int32_t since_version_start;
  int32_t since_version_end; /* inclusive; use INT32_MAX (or 0) for "and later" */
  const NxTypeConstraint* type_constraints;
  size_t num_type_constraints;
  NxKernelCreateFn create;
  void* create_state; /* passed to create; must outlive the registry */

  /* ---- version 2 (all optional: zero counts mean none) ------------------------------------
   * Memory types. By default a kernel reads its inputs and writes its outputs in its EP's
   * memory (NxEpFactory::GetMemoryInfo). Inputs listed in `host_inputs` are delivered in host
   * memory instead (a shape or a count the kernel reads on the CPU); outputs listed in
   * `host_outputs` are allocated in host memory. */
  const int32_t* host_inputs;
  size_t num_host_inputs;
  const int32_t* host_outputs;
  size_t num_host_outputs;
  /* Output `output` is input `input` unchanged (Reshape, Squeeze, Identity): when the output has
   * the input's byte size the host may hand the input's buffer out as the output, and the
   * kernel then finds the data already in place (output data pointer == input data pointer). */
  const NxIoPair* aliases;
  size_t num_aliases;
  /* The kernel can compute output `output` over input `input` (elementwise ops): when the input
   * is not needed after this node and the sizes match, the host may hand the input's buffer out
   * as the output. The kernel must cope with output and input being the same memory. */
  const NxIoPair* may_inplace;
  size_t num_may_inplace;

  /* ---- version 4 -----------------------------------------------------------------------------
   * The value kinds the kernel accepts for the node's inputs and outputs, as a bit set of
   * NX_KIND_* (0 = tensors only, like every definition before version 4). A node whose inputs
   * or outputs are statically known to be sequences or optionals matches only a definition that
   * accepts those kinds; type constraints then apply to the element type of the sequence (or of
   * the optional's tensor). */
  uint32_t value_kinds;

  /* ---- version 14 (all optional: zero counts mean none) -----------------------------------
   * The three lists above in their versioned form, as arrays of pointers (each entry carries its
   * own version; none may be NULL). A definition may use either form or both: the host applies
   * the entries of both (the constraints of type_constraints and of type_constraints2, and so
   * on). In definitions the host hands out (KernelRegistry_FindKernel) both forms hold the same
   * entries: read one of them. */
  const NxTypeConstraint2* const* type_constraints2;
  size_t num_type_constraints2;
  const NxIoPair2* const* aliases2;
  size_t num_aliases2;
  const NxIoPair2* const* may_inplace2;
  size_t num_may_inplace2;
} NxKernelDef;

/* Bits of NxKernelDef::value_kinds. */
#define NX_KIND_TENSOR 1u
#define NX_KIND_SEQUENCE 2u
#define NX_KIND_OPTIONAL 4u

/* A kernel instance, created once per node per session and released with the session. Plugins
 * usually embed it as the first member of their own kernel object. */
struct NxKernel {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* Run the node: read inputs and allocate outputs through `ctx` (borrowed for the call). */
  NxStatus* (*Compute)(NxKernel* self, NxKernelContext* ctx);
  /* Free the kernel. Called exactly once. */
  void (*Release)(NxKernel* self);

  /* ---- version 2 (optional, may be NULL) ---------------------------------------------------
   * Weight pre-packing. Called once per session, after creation and before the first run, for
   * each input of the node that is a constant initializer. `weight` (host memory) is borrowed
   * for the call only. The kernel either
   *   - declines: leaves *packed false; Compute keeps receiving the weight as an input;
   *   - owns: packs into memory from `allocator` (the kernel's memory; it lives as long as the
   *     kernel) and sets *packed; the kernel frees the packed memory itself;
   *   - shares: only when `cache` is not NULL (the allocator is host-accessible). It packs into
   *     `allocator` memory, hands the buffers to PrePackCache_Store and sets *packed; the host
   *     then calls UseSharedPrePackedWeight with the canonical copy, which may be another
   *     kernel's (even another session's) identical packing. A later session of the same
   *     process that packs the same weight for the same node gets UseSharedPrePackedWeight
   *     without a PrePackWeight call.
   * Once *packed is true Compute receives NULL for that input (the host may free the original
   * initializer) and must use the packed copy. Storing into the cache but leaving *packed false
   * is an error. A shared packing is looked up by the EP, the node's op, opset and attributes,
   * the static types and shapes of all its inputs and the bytes of this one input: it must not
   * depend on the data of another input (pack a bias separately from its weight). */
  NxStatus* (*PrePackWeight)(NxKernel* self, const NxValue* weight, size_t input_index,
                             NxAllocator* allocator, NxPrePackCache* cache, bool* packed);
  /* Receive the shared packed buffers for `input_index`: same count, order and contents as the
   * kernel stored (owned by the host; valid until the kernel is released). Required when the
   * kernel ever stores into a cache. It may come without a PrePackWeight call on this kernel
   * (another session packed the same weight), so whatever the kernel needs besides the buffers
   * (the weight's shape) must come from the node (static shapes) or be stored in the buffers. */
  NxStatus* (*UseSharedPrePackedWeight)(NxKernel* self, size_t input_index,
                                        const void* const* buffers, const size_t* sizes,
                                        size_t count);
};

/* ============================================================================================
 * Memory: allocators and data transfer (version 2).
 * ========================================================================================== */

/* Hands out blocks of one memory. Implemented by an EP (for its device memory) or by the host
 * (host memory, passed to PrePackWeight). The host wraps EP allocators in its own arenas, so an
 * allocator need not cache. */
struct NxAllocator {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* A block of at least `size` bytes aligned to the memory's alignment, or NULL when out of
   * memory. size 0 may return NULL or a unique pointer. */
  void* (*Alloc)(NxAllocator* self, size_t size);
  /* Frees a block from Alloc (NULL is a no-op). */
  void (*Free)(NxAllocator* self, void* block);
  /* The memory this allocator serves; borrowed for the allocator's lifetime. */
  const NxMemoryInfo* (*GetMemoryInfo)(const NxAllocator* self);
  /* The host is done with the allocator (every block has been freed). Not called for the host's
   * own allocators. */
  void (*Release)(NxAllocator* self);
};

/* Copies tensors between memories. One per factory at most; used for the copies the host
 * inserts at memory boundaries, for uploading initializers and for NxEnv_CopyTensors. */
struct NxDataTransfer {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* Whether this transfer copies from `src` to `dst` memory (compare the members of
   * NxMemoryInfo; host memory has device_type NX_DEVICE_CPU). */
  bool (*CanCopy)(const NxDataTransfer* self, const NxMemoryInfo* src, const NxMemoryInfo* dst);
  /* Copy `count` tensors: src[i] into dst[i] (same element type and shape, allocated by the
   * host in the memories CanCopy accepted). Synchronous: the data is in place on return. Use
   * Value_GetMemoryInfo to tell the memories apart. */
  NxStatus* (*CopyTensors)(NxDataTransfer* self, const NxValue* const* src, NxValue* const* dst,
                           size_t count);
  /* The host is done with it. */
  void (*Release)(NxDataTransfer* self);

  /* ---- version 13 (optional, may be NULL: copies then stay synchronous) ------------------
   * Queue the copies on `stream` (a stream of an EP of this factory, see NxEp::CreateStream)
   * and return without waiting. The host keeps every src and dst alive and unwritten by others
   * until the stream has passed the copies, and reads dst only after waiting for an event
   * recorded after them. Host memory may be among the src or dst. An error that shows only
   * when the queued copy runs is returned by the stream's next Synchronize. */
  NxStatus* (*CopyTensorsAsync)(NxDataTransfer* self, const NxValue* const* src,
                                NxValue* const* dst, size_t count, NxStream* stream);
};

/* ============================================================================================
 * Streams and events (version 13), implemented by the EP.
 * ========================================================================================== */

/* A point in a stream's queue: complete once the stream has done all the work queued on it
 * before the event was recorded. Made by NxStream::RecordEvent; any thread may use it. */
struct NxEvent {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* Block the calling thread until the event is complete. An error of the queued work may be
   * returned here or by the stream's next Synchronize (the host checks both). */
  NxStatus* (*Synchronize)(NxEvent* self);
  /* (optional, may be NULL) When the event completed, on the host's profile clock
   * (Profiler_NowNs); false while it has not (or when the EP cannot tell). The host uses it to
   * show when queued work really ran (profile events of category "stream"). */
  bool (*GetCompletionTime)(const NxEvent* self, uint64_t* ns);
  /* The host is done with the event (it may still be pending). */
  void (*Release)(NxEvent* self);
};

/* An in-order queue of device work. The host creates the streams it needs per session (one for
 * the kernels of each device, one for copies to it and one for copies from it); concurrent runs
 * of a session use the same stream from several threads at once: it must be thread-safe. */
struct NxStream {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* A new event, recorded now: it completes when everything queued so far is done. Must not
   * wait for that work. */
  NxStatus* (*RecordEvent)(NxStream* self, NxEvent** event);
  /* Work queued on this stream after this call starts only once `event` (from RecordEvent of
   * another stream of the same EP) is complete. Must not block the calling thread. */
  NxStatus* (*WaitEvent)(NxStream* self, NxEvent* event);
  /* Block until everything queued so far is done. Returns the first error of work queued since
   * the previous Synchronize (and forgets it: the stream stays usable). */
  NxStatus* (*Synchronize)(NxStream* self);
  /* Free the stream: the host synchronised it first. Called once, before the factory goes. */
  void (*Release)(NxStream* self);
};

/* ============================================================================================
 * Control-flow helpers (version 4): device work the host's If/Loop/Scan kernels delegate to the
 * EP that registered them. Owned by the host once a Create*Kernel call succeeds (Release is
 * called when the kernel is released); still the EP's when the call fails.
 * ========================================================================================== */

typedef struct NxLoopHelper NxLoopHelper;
struct NxLoopHelper {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* Stack `count` per-iteration values of one Loop scan output (tensors of one type and shape,
   * in the kernel's memory) into `output`, allocated by the host in that memory with shape
   * [count, ...]: output = concat(per_iteration) along a new first axis. */
  NxStatus* (*ConcatOutput)(NxLoopHelper* self, const NxValue* const* per_iteration, size_t count,
                            NxValue* output);
  void (*Release)(NxLoopHelper* self);

  /* ---- version 13 (optional, may be NULL) -------------------------------------------------
   * As ConcatOutput, queued on `stream`: the stream of the Loop node's device when the EP makes
   * streams (NxEp::CreateStream). Called instead of ConcatOutput then; the host keeps the parts
   * and the output alive until the stream has passed the work. */
  NxStatus* (*ConcatOutputOnStream)(NxLoopHelper* self, const NxValue* const* per_iteration,
                                    size_t count, NxValue* output, NxStream* stream);
};

typedef struct NxScanHelper NxScanHelper;
struct NxScanHelper {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* output = transpose(input, perm): output axis i is input axis perm[i]; `output` is allocated
   * by the host in the kernel's memory. Used for non-zero scan_input_axes/scan_output_axes. */
  NxStatus* (*Transpose)(NxScanHelper* self, const size_t* perm, size_t rank, const NxValue* input,
                         NxValue* output);
  void (*Release)(NxScanHelper* self);

  /* ---- version 5: Scan over device memory (both may be NULL for host-memory EPs) ---------- *
   * Needed when the scan inputs or the body's outputs live in memory the host cannot read; the
   * host reports a clear error when one is missing then. `output` is allocated by the host in
   * the kernel's memory. */
  /* output = input[index] along axis 0: shape input.dims[1:], 0 <= index < input.dims[0]. */
  NxStatus* (*SliceAxis0)(NxScanHelper* self, const NxValue* input, int64_t index, NxValue* output);
  /* As NxLoopHelper::ConcatOutput: `count` tensors of one type and shape stacked along a new
   * first axis (per-iteration scan outputs, and for opset 8 the per-batch results). */
  NxStatus* (*ConcatOutput)(NxScanHelper* self, const NxValue* const* parts, size_t count,
                            NxValue* output);

  /* ---- version 13 (optional, may be NULL) -------------------------------------------------
   * Transpose, SliceAxis0 and ConcatOutput queued on `stream`, the stream of the Scan node's
   * device when the EP makes streams; called instead of the synchronous ones then (each may be
   * NULL on its own). The host synchronises the stream after a transpose or slice (the body or
   * the next step reads the result), and keeps every tensor alive until the stream has passed
   * the work. */
  NxStatus* (*TransposeOnStream)(NxScanHelper* self, const size_t* perm, size_t rank,
                                 const NxValue* input, NxValue* output, NxStream* stream);
  NxStatus* (*SliceAxis0OnStream)(NxScanHelper* self, const NxValue* input, int64_t index,
                                  NxValue* output, NxStream* stream);
  NxStatus* (*ConcatOutputOnStream)(NxScanHelper* self, const NxValue* const* parts, size_t count,
                                    NxValue* output, NxStream* stream);
};

/* ============================================================================================
 * EP instance: one per session.
 * ========================================================================================== */

struct NxEp {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* The EP's name; must equal its factory's name. Borrowed for the EP's lifetime. */
  const char* (*GetName)(const NxEp* self);
  /* (optional, may be NULL; default: claim every node the kernel registry has a kernel for)
   * Claim nodes of `graph` (borrowed for the call) with Capability_AddNode. A failing status is
   * logged and treated as "claims nothing". */
  NxStatus* (*GetCapability)(NxEp* self, const NxGraph* graph, NxCapability* capability);
  /* (optional, may be NULL: an EP that only compiles groups has no kernels)
   * The EP's kernels. The registry stays owned by the EP (or its factory) and must outlive the
   * EP instance. */
  NxStatus* (*GetKernelRegistry)(NxEp* self, const NxKernelRegistry** registry);

  /* ---- version 2 (optional, may be NULL) ---------------------------------------------------
   * A per-session allocator for `memory` (one of the factory's memories). When NULL or when it
   * sets *allocator to NULL, the host uses the factory's allocator. Released through
   * NxAllocator::Release when the session ends. */
  NxStatus* (*CreateAllocator)(NxEp* self, const NxMemoryInfo* memory, NxAllocator** allocator);

  /* ---- version 6 (optional, may be NULL for kernel-only EPs) ----------------------------------
   * Compile one group the EP claimed with Capability_AddFusedGroup. `group` (borrowed for the
   * call) is a graph view holding only the group's nodes, in execution order: its inputs are the
   * values the group reads from outside it (graph inputs, initializers with their constant
   * data, values other nodes produce), its outputs the values used after the group or returned
   * by the model. The kernel returned receives exactly those inputs and outputs, in that order,
   * in the EP's memory (like its kernels' default inputs and outputs), and is released with
   * NxKernel::Release when the session ends. `fused_name` is unique within the session. An
   * error (or a NULL kernel) makes the group's nodes fall back to the next EP; the assignment
   * report gives the reason "compile_failed" with the status message. */
  NxStatus* (*CompileGroup)(NxEp* self, const NxGraph* group, const char* fused_name,
                            NxKernel** kernel);

  /* ---- version 9: ahead-of-time compilation (optional, may be NULL) -------------------------
   * What CompileGroup compiled, for saving it: called by NxEnv_CompileModel right after a
   * successful CompileGroup with the kernel it returned. The EP fills `out` (see
   * NxCompiledGroupExport); the host copies the bytes and the string at once. An EP without
   * this callback (or returning an error) leaves its groups as ordinary nodes in the saved
   * model, which then compile again when loaded. */
  NxStatus* (*ExportCompiledGroup)(NxEp* self, const NxKernel* kernel, NxCompiledGroupExport* out);
  /* The kernel of a group saved earlier: `context` is a graph view holding one EPContext node
   * whose `source` is this EP (its inputs and outputs are the saved group's, in the order
   * CompileGroup saw them), `payload` the bytes ExportCompiledGroup gave (borrowed for the call;
   * the host read them from the node or from the file next to the model). The EP claims such
   * nodes in GetCapability like any group (Capability_AddFusedGroup with the one node); the
   * host then calls this instead of CompileGroup, after CheckCompatibility said the payload
   * suits the device. Errors are treated as for CompileGroup. */
  NxStatus* (*LoadCompiledGroup)(NxEp* self, const NxGraph* context, const void* payload,
                                 size_t payload_size, NxKernel** kernel);

  /* ---- version 11 (optional, may be NULL) --------------------------------------------------
   * A counter the EP keeps about this session, by name (the EP chooses its names; the CPU EP
   * has "reference_primitives", "primitives"). Sets *value, or returns NX_NOT_FOUND for a name
   * it does not keep. May be called from any thread at any time between CreateEp and ReleaseEp,
   * also while runs are in flight. Applications read it as the session statistic
   * "ep.<EP name>.<key>" (NxSession_GetStatistic). */
  NxStatus* (*GetStatistic)(const NxEp* self, const char* key, int64_t* value);

  /* ---- version 13 (optional, may be NULL: the EP runs synchronously) ---------------------
   * A new stream on `device` (the hardware device of one of this EP's devices; NULL for an EP
   * the session created without EP devices), or *stream = NULL: work on that device stays
   * synchronous in this session (e.g. an EP option turned streams off). The host asks while it
   * plans the session, for the kernels of each device and for copies to and from its memory
   * (when the factory's data transfer has CopyTensorsAsync), and releases the streams with the
   * session, before the EP. With a stream, Compute of the EP's kernels queues work on
   * KernelContext_GetStream and may return before the work is done. */
  NxStatus* (*CreateStream)(NxEp* self, const NxHardwareDevice* device, NxStream** stream);

  /* ---- version 15 (optional, may be NULL) ------------------------------------------------
   * Run boundaries. OnRunStart is called before a run of the session computes anything,
   * OnRunEnd once the run is over (every kernel has returned and the host has waited for the
   * EP's streams), both from the thread that called Run; OnRunEnd also when the run failed
   * (`failed` true). Runs of one session may overlap (one pair per run). An EP that recycles
   * device buffers per run, or must not run two runs at once, does it here (e.g. holds a lock
   * from OnRunStart to OnRunEnd). An error from OnRunStart fails the run before it computes
   * (OnRunEnd is not called for that EP); an error from OnRunEnd fails a run that succeeded.
   * Control-flow bodies run inside their parent's run and get no calls of their own. */
  NxStatus* (*OnRunStart)(NxEp* self);
  NxStatus* (*OnRunEnd)(NxEp* self, bool failed);

  /* Channels-last (version 15, optional, may be NULL: every node stays as the model has it).
   * For a layout-sensitive operator (Conv, ConvTranspose, MaxPool, AveragePool, LpPool,
   * GlobalAveragePool, GlobalMaxPool, LRN, BatchNormalization, InstanceNormalization,
   * DepthToSpace, SpaceToDepth) the host asks whether the EP wants its nodes of that op in
   * channels-last form; *yes = true, and where the EP's registry has a kernel for that form and
   * would run the node, the host rewrites it before placement: domain "com.ms.internal.nhwc"
   * (onnxruntime's name for it), same op type, opset and attributes, input 0 and output 0 in
   * NHWC (a 4-D tensor [N, H, W, C]), every other input as it was (Conv's weights stay OIHW).
   * Transposes go where NCHW and NHWC values meet; elementwise nodes and channel Concats between
   * channels-last nodes work on NHWC values, so chains of them need none. */
  NxStatus* (*PrefersChannelsLast)(NxEp* self, const char* domain, const char* op_type, bool* yes);
};

/* Filled by the EP in ExportCompiledGroup (the host sets `version` and zeroes the rest). The
 * pointers stay valid until the kernel is released. */
struct NxCompiledGroupExport {
  uint32_t version;    /* NXRT_EP_API_VERSION of the host */
  const void* payload; /* the compiled program: any bytes the EP can load again */
  size_t payload_size;
  /* What the payload needs to run, for CheckCompatibility later: the EP decides the format,
   * e.g. "ExampleCompiler;version=1;arch=a1". At most 4 KiB, printable ASCII. */
  const char* compatibility;
};

/* Filled by the EP for Capability_AddFusedGroup; read member by member up to `version`. */
typedef struct NxFusionOptions {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* The hardware device that runs the group (one of the EP's devices, from
   * EpDevice_GetHardwareDevice), for EPs spanning several devices; NULL = the EP's first
   * device. Reported (assignment report, profile), and the group's kernel works in that
   * device's memory (NxEpFactory::GetDeviceMemoryInfo; the EP's memory when it has none). */
  const NxHardwareDevice* hardware_device;
} NxFusionOptions;

/* Filled by the EP for Capability_AddNodeWithOptions (version 12); read member by member up to
 * `version`. */
typedef struct NxNodeOptions {
  uint32_t version; /* NXRT_EP_API_VERSION */
  /* The hardware device whose kernel runs the node (one of the EP's devices, from
   * EpDevice_GetHardwareDevice); NULL = the EP's first device. The kernel works in that
   * device's memory (NxEpFactory::GetDeviceMemoryInfo; the EP's memory when it has none). */
  const NxHardwareDevice* hardware_device;
} NxNodeOptions;

/* What a factory receives when it creates an EP for a session. */
typedef struct NxEpCreateArgs {
  uint32_t version; /* NXRT_EP_API_VERSION of the host */
  /* Session configuration, borrowed for the call only. Well-known keys:
   *   "session.intra_op_num_threads"  threads the EP may use for one node (decimal, >= 1)
   *   "ep.<ep name in lower case>.<key>" EP options given by the application */
  const NxConfig* session_config;
  const NxLogger* logger; /* the session's logger; valid for the EP's lifetime */

  /* ---- version 3 ---------------------------------------------------------------------------
   * The EP devices of this factory the session selected, in priority order (the EP decides how
   * to spread work over several). Borrowed for the EP's lifetime. Empty when the application
   * appended the EP by name and the factory has no EP device (a version 1-2 factory with its
   * own device memory). Their default options are already merged into session_config. */
  const NxEpDevice* const* devices;
  size_t num_devices;
} NxEpCreateArgs;

/* ============================================================================================
 * Factory: one or more per library, alive from registration to unregistration.
 * ========================================================================================== */

struct NxEpFactory {
  uint32_t version;                                   /* NXRT_EP_API_VERSION */
  const char* (*GetName)(const NxEpFactory* self);    /* EP name, e.g. "CPU" */
  const char* (*GetVendor)(const NxEpFactory* self);  /* vendor name */
  const char* (*GetVersion)(const NxEpFactory* self); /* EP version, SemVer "1.2.3" */
  uint32_t (*GetVendorId)(const NxEpFactory* self);   /* PCI vendor id of the EP's owner, or 0 */
  /* Create the EP for one session (see NxEpCreateArgs). */
  NxStatus* (*CreateEp)(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** ep);
  /* Destroy an EP this factory created. */
  void (*ReleaseEp)(NxEpFactory* self, NxEp* ep);

  /* ---- version 2 (optional, may be NULL) ---------------------------------------------------
   * The memory the factory's EP kernels read and write (borrowed for the factory's lifetime).
   * NULL (or a NULL member) means host memory: such an EP needs no allocator or transfer. */
  const NxMemoryInfo* (*GetMemoryInfo)(const NxEpFactory* self);
  /* An allocator for `memory` (the one GetMemoryInfo names). Required when GetMemoryInfo names
   * device memory. The host creates one per process and wraps it in an arena; released through
   * NxAllocator::Release before the factory is released. */
  NxStatus* (*CreateAllocator)(NxEpFactory* self, const NxMemoryInfo* memory,
                               NxAllocator** allocator);
  /* The factory's data transfer, or *transfer = NULL if it has none. Required when
   * GetMemoryInfo names device memory (the host must be able to move values in and out). */
  NxStatus* (*CreateDataTransfer)(NxEpFactory* self, NxDataTransfer** transfer);

  /* ---- version 3 (optional, may be NULL) ---------------------------------------------------
   * Create virtual devices: called at registration once per request the application made
   * (NxEnv_RegisterEpLibraryWithVirtualDevices), never without one. `type` is the requested
   * device type and `options` (borrowed for the call) the request's target options, such as
   * "arch". A factory that can target such a device adds it with VirtualDeviceList_Add (one or
   * more); one that cannot adds nothing, which is not an error. A returned error (an option it
   * does not understand) fails the registration with that message. The host copies what was
   * added, marks each device is_virtual = "1" and discovered_by = <EP name> (real devices carry
   * the discovery sources there, e.g. "drm,pci"), owns it until the library is unregistered and
   * offers it to this factory only. Put what identifies the target (e.g. "arch") in the
   * device's metadata: GetSupportedDevices and the EP read it back from there. */
  NxStatus* (*CreateVirtualDevices)(NxEpFactory* self, NxDeviceType type, const NxKeyValue* options,
                                    size_t num_options, NxVirtualDeviceList* created);
  /* Say which devices the EP supports: called once at registration (after
   * CreateVirtualDevices) with every hardware device of the process followed by the virtual
   * devices this factory created (borrowed until unregistration). For each supported device
   * call EpDeviceList_Add with the EP's metadata about it (well-known keys below) and default
   * EP options. Adding none is allowed (the EP can still be appended by name). A returned error
   * fails the registration.
   * When NULL (and for version 1-2 factories) the host decides: a factory that computes in host
   * memory gets one EP device on the CPU; one with its own device memory gets none.
   *
   * Well-known EP metadata keys (all optional; values are decimal strings):
   *   "performance_hint"  relative speed on typical models, 1-100 (higher is faster). Without
   *                       it the host assumes: discrete GPU 80, NPU 50, integrated GPU 40,
   *                       other GPU 60, CPU 10.
   *   "power_hint"        typical power drawn while running, in watts. Without it: NPU 5,
   *                       integrated GPU 15, CPU 45, other GPU 150, discrete GPU 250.
   * A hint that is not a positive decimal number is ignored (the default applies). The host
   * adds "version" (from GetVersion) and "library_path" itself.
   * Default options: when a session selects several EP devices of one EP whose defaults
   * disagree, the first selected device's value wins; options the application gives win over
   * all defaults. */
  NxStatus* (*GetSupportedDevices)(NxEpFactory* self, const NxHardwareDevice* const* devices,
                                   size_t num_devices, NxEpDeviceList* supported);

  /* ---- version 9 (optional, may be NULL) ---------------------------------------------------
   * Whether a payload saved with this compatibility string (NxCompiledGroupExport) runs on
   * `devices` (EP devices' hardware devices of this factory, borrowed for the call). Sets
   * *result. The host asks before loading a saved group and refuses (or, where the model kept
   * the original nodes and fallback is allowed, runs those instead) on
   * NX_COMPATIBILITY_NEEDS_RECOMPILATION or NX_COMPATIBILITY_UNSUPPORTED; applications ask
   * through NxEnv_GetModelCompatibility. When NULL the host assumes
   * NX_COMPATIBILITY_OPTIMAL. */
  NxStatus* (*CheckCompatibility)(NxEpFactory* self, const NxHardwareDevice* const* devices,
                                  size_t num_devices, const char* compatibility,
                                  NxCompatibility* result);

  /* ---- version 12 (optional, may be NULL) --------------------------------------------------
   * The memory the factory's kernels work in on `device` (the hardware device of one of its EP
   * devices), for an EP spanning devices with memories of their own; borrowed for the factory's
   * lifetime. NULL (or a NULL member) means GetMemoryInfo's memory. The host asks once per EP
   * device at registration, creates one allocator (CreateAllocator) and arena per distinct
   * memory, and moves values between them with the factory's data transfer, which must then
   * copy between any two of the factory's memories (and host memory). */
  const NxMemoryInfo* (*GetDeviceMemoryInfo)(const NxEpFactory* self,
                                             const NxHardwareDevice* device);

  /* ---- version 14 (optional, may be NULL) --------------------------------------------------
   * CreateVirtualDevices with the request's options in their versioned form (borrowed for the
   * call). When set, the host calls it instead of CreateVirtualDevices; everything else is as
   * there. */
  NxStatus* (*CreateVirtualDevices2)(NxEpFactory* self, NxDeviceType type,
                                     const NxKeyValue2* const* options, size_t num_options,
                                     NxVirtualDeviceList* created);
};

/* ============================================================================================
 * Host services: a table the host fills and hands to the library at load time. Valid until the
 * library is unloaded. Check `version` before using members added after version 1.
 * ========================================================================================== */

typedef struct NxHostApi {
  uint32_t version; /* NXRT_EP_API_VERSION of the host */

  /* ---- Status -------------------------------------------------------------------------- */
  /* A new status; the message is copied. Return it from a callback to report an error. */
  NxStatus* (*CreateStatus)(NxStatusCode code, const char* message);
  NxStatusCode (*Status_GetCode)(const NxStatus* status);
  const char* (*Status_GetMessage)(const NxStatus* status); /* borrowed until released */
  void (*ReleaseStatus)(NxStatus* status);

  /* ---- Logging and configuration ------------------------------------------------------- */
  void (*Log)(const NxLogger* logger, NxLogLevel level, const char* message);
  /* Value of `key`, or NULL if absent. Borrowed for the config's lifetime. */
  const char* (*Config_Get)(const NxConfig* config, const char* key);

  /* ---- Graph view (borrowed for the duration of GetCapability) ------------------------- */
  size_t (*Graph_GetNodeCount)(const NxGraph* graph);
  /* Nodes in a valid topological order. */
  const NxNode* (*Graph_GetNode)(const NxGraph* graph, size_t index);
  size_t (*Graph_GetInputCount)(const NxGraph* graph);
  const NxValueInfo* (*Graph_GetInput)(const NxGraph* graph, size_t index);
  size_t (*Graph_GetOutputCount)(const NxGraph* graph);
  const NxValueInfo* (*Graph_GetOutput)(const NxGraph* graph, size_t index);
  /* Opset version imported for `domain` ("" = ai.onnx), or -1 if not imported. */
  int32_t (*Graph_GetOpsetVersion)(const NxGraph* graph, const char* domain);

  const char* (*Node_GetName)(const NxNode* node);
  const char* (*Node_GetOpType)(const NxNode* node);
  const char* (*Node_GetDomain)(const NxNode* node); /* "" for ai.onnx */
  /* The opset version of the node's domain (what kernel definitions are matched against). */
  int32_t (*Node_GetOpsetVersion)(const NxNode* node);
  size_t (*Node_GetInputCount)(const NxNode* node);
  /* NULL for an omitted optional input. */
  const NxValueInfo* (*Node_GetInput)(const NxNode* node, size_t index);
  size_t (*Node_GetOutputCount)(const NxNode* node);
  /* NULL for an omitted optional output. */
  const NxValueInfo* (*Node_GetOutput)(const NxNode* node, size_t index);
  size_t (*Node_GetAttributeCount)(const NxNode* node);
  const NxAttribute* (*Node_GetAttributeAt)(const NxNode* node, size_t index);
  /* The attribute named `name`, or NULL if the node does not have it. */
  const NxAttribute* (*Node_GetAttribute)(const NxNode* node, const char* name);

  const char* (*ValueInfo_GetName)(const NxValueInfo* value);
  NxValueKind (*ValueInfo_GetKind)(const NxValueInfo* value);
  /* Element type of a tensor (or of a sequence's/optional's tensor); UNDEFINED if unknown. */
  NxElementType (*ValueInfo_GetElementType)(const NxValueInfo* value);
  /* Static shape. Returns false if the rank is unknown. Unknown or symbolic dimensions are -1. */
  bool (*ValueInfo_GetShape)(const NxValueInfo* value, const int64_t** dims, size_t* rank);
  /* The initializer behind this value, or NULL if it is not a constant. */
  const NxValue* (*ValueInfo_GetConstant)(const NxValueInfo* value);

  const char* (*Attribute_GetName)(const NxAttribute* attr);
  NxAttributeType (*Attribute_GetType)(const NxAttribute* attr);
  int64_t (*Attribute_GetInt)(const NxAttribute* attr);
  float (*Attribute_GetFloat)(const NxAttribute* attr);
  /* Bytes of a string attribute (not NUL-terminated in general; length in *size). */
  const char* (*Attribute_GetString)(const NxAttribute* attr, size_t* size);
  const int64_t* (*Attribute_GetInts)(const NxAttribute* attr, size_t* count);
  const float* (*Attribute_GetFloats)(const NxAttribute* attr, size_t* count);
  size_t (*Attribute_GetStringCount)(const NxAttribute* attr);
  const char* (*Attribute_GetStringAt)(const NxAttribute* attr, size_t index, size_t* size);
  /* The tensor of a TENSOR attribute. */
  const NxValue* (*Attribute_GetTensor)(const NxAttribute* attr);
  /* The subgraph of a GRAPH attribute (If/Loop/Scan bodies). */
  const NxGraph* (*Attribute_GetGraph)(const NxAttribute* attr);

  /* ---- Capability -------------------------------------------------------------------- */
  /* Claim one node to run through this EP's kernel registry. */
  NxStatus* (*Capability_AddNode)(NxCapability* capability, const NxNode* node);

  /* ---- Kernel registry (usually built once per factory) ------------------------------ */
  NxStatus* (*CreateKernelRegistry)(NxKernelRegistry** registry);
  /* Add a definition; everything it points to is copied except create_state. */
  NxStatus* (*KernelRegistry_Add)(NxKernelRegistry* registry, const NxKernelDef* def);
  /* Whether the registry has a kernel for `node` (op, domain, opset, types). When it has none
   * and `reason` is non-NULL, *reason is a short explanation borrowed until the next call on
   * this registry from the same thread. */
  bool (*KernelRegistry_HasKernel)(const NxKernelRegistry* registry, const NxNode* node,
                                   const char** reason);
  void (*ReleaseKernelRegistry)(NxKernelRegistry* registry);

  /* ---- Kernel info (borrowed for the duration of NxKernelCreateFn) -------------------- */
  /* The node being created; its attributes are read with the Node_ and Attribute_ calls. */
  const NxNode* (*KernelInfo_GetNode)(const NxKernelInfo* info);
  /* The session configuration (same keys as NxEpCreateArgs::session_config). */
  const NxConfig* (*KernelInfo_GetConfig)(const NxKernelInfo* info);

  /* ---- Kernel context (borrowed for the duration of NxKernel::Compute) ---------------- */
  size_t (*KernelContext_GetInputCount)(const NxKernelContext* ctx);
  /* The input value, or NULL for an omitted optional input. */
  const NxValue* (*KernelContext_GetInput)(const NxKernelContext* ctx, size_t index);
  size_t (*KernelContext_GetOutputCount)(const NxKernelContext* ctx);
  /* Allocate output `index` as a tensor of the given shape; the element type is the node's
   * declared output type unless `type` is not UNDEFINED. Each output may be allocated once. The
   * result is borrowed for the call. Outputs the node omits need not be allocated. The
   * contents are undefined (memory is reused across nodes and runs): write every element. */
  NxStatus* (*KernelContext_AllocateOutput)(NxKernelContext* ctx, size_t index, NxElementType type,
                                            const int64_t* dims, size_t rank, NxValue** output);
  /* Threads this kernel may use (the session's intra-op thread count). */
  int32_t (*KernelContext_GetThreadCount)(const NxKernelContext* ctx);

  /* ---- Values -------------------------------------------------------------------------- */
  /* A NULL value reads as an empty tensor (kind TENSOR, type UNDEFINED, rank 0, no data);
   * Value_SetString on NULL returns NX_INVALID_ARGUMENT. */
  NxValueKind (*Value_GetKind)(const NxValue* value);
  NxElementType (*Value_GetElementType)(const NxValue* value);
  /* Shape of a tensor; dims borrowed for the value's lifetime. */
  void (*Value_GetShape)(const NxValue* value, const int64_t** dims, size_t* rank);
  /* Number of elements of a tensor. */
  size_t (*Value_GetElementCount)(const NxValue* value);
  /* Raw data of a non-string tensor (64-byte aligned when the host allocated it). Sub-byte
   * types are packed: INT4/UINT4/FLOAT4E2M1 two per byte, low nibble first; INT2/UINT2 (version
   * 10) four per byte, lowest bits first; unused bits of the last byte are 0. Writing through
   * it is allowed only for outputs the kernel allocated. */
  void* (*Value_GetData)(const NxValue* value);
  /* Element `index` of a string tensor; bytes borrowed until the element is set again. */
  const char* (*Value_GetString)(const NxValue* value, size_t index, size_t* size);
  NxStatus* (*Value_SetString)(NxValue* value, size_t index, const char* data, size_t size);

  /* ---- Added later in version 1 (members only grow at the end) ------------------------- */
  /* Graph view: the opset in which the node's operator last changed at or before that import (ONNX
   * since-version, from the schemas of the onnx release nxrt pins), or -1 if unknown. */
  int32_t (*Node_GetSinceVersion)(const NxNode* node);

  /* ---- Version 2 ----------------------------------------------------------------------- */
  /* TENSORS and GRAPHS attributes: element count and one element (borrowed like the node). */
  size_t (*Attribute_GetTensorCount)(const NxAttribute* attr);
  const NxValue* (*Attribute_GetTensorAt)(const NxAttribute* attr, size_t index);
  size_t (*Attribute_GetGraphCount)(const NxAttribute* attr);
  const NxGraph* (*Attribute_GetGraphAt)(const NxAttribute* attr, size_t index);

  /* Kernel lookup during GetCapability: the definition `registry` would use for `node` (op,
   * domain, opset range, element types), or NULL with *reason (may be NULL) as in
   * KernelRegistry_HasKernel. The result is borrowed for the registry's lifetime; only the
   * members of NxKernelDef are meaningful (pointers are the registry's copies). */
  const NxKernelDef* (*KernelRegistry_FindKernel)(const NxKernelRegistry* registry,
                                                  const NxNode* node, const char** reason);

  /* The EP the kernel belongs to (to reach EP-wide state and options). */
  NxEp* (*KernelInfo_GetEp)(const NxKernelInfo* info);
  /* The memory the kernel's default inputs and outputs live in (host memory for host EPs). */
  const NxMemoryInfo* (*KernelInfo_GetMemoryInfo)(const NxKernelInfo* info);

  /* Memory the kernel may use until Compute returns: `size` bytes in the kernel's memory (or
   * in host memory when `host` is true), aligned to 64 bytes; contents undefined. */
  NxStatus* (*KernelContext_GetScratch)(NxKernelContext* ctx, size_t size, bool host,
                                        void** memory);
  /* Runs fn(user, begin, end) over [0, total) split into chunks of at least `grain` items on the
   * session's intra-op threads (the calling thread takes part) and returns when all are done.
   * Idle workers spin briefly before sleeping ("session.intra_op_spin_us"); the call never
   * waits for a worker that has not started, so a chunk may run on any thread, in any order.
   * A call from inside a chunk runs inline on that thread. fn must not let a C++ exception
   * escape (the C++ SDK's parallel_for catches and rethrows them for you). */
  NxStatus* (*KernelContext_ParallelFor)(NxKernelContext* ctx, size_t total, size_t grain,
                                         void (*fn)(void* user, size_t begin, size_t end),
                                         void* user);

  /* The memory a tensor lives in (host memory for tensors the host made in plain memory);
   * borrowed for the process lifetime. */
  const NxMemoryInfo* (*Value_GetMemoryInfo)(const NxValue* value);
  /* Whether two descriptions name the same memory (see NxMemoryInfo). */
  bool (*MemoryInfo_AreEqual)(const NxMemoryInfo* a, const NxMemoryInfo* b);

  /* Hand packed buffers (from the allocator PrePackWeight received) to the host for sharing.
   * On success the host owns them and frees them with that allocator; on failure the kernel
   * still owns them. A second call replaces the first. */
  NxStatus* (*PrePackCache_Store)(NxPrePackCache* cache, void* const* buffers, const size_t* sizes,
                                  size_t count);

  /* ---- Version 3 ----------------------------------------------------------------------- */
  /* Hardware devices (discovered or virtual), borrowed until the library is unregistered.
   * Metadata as in nxrt_c_api.h: "discovered_by", "pci_bus_id", "driver", "discrete", "isa",
   * "is_virtual", ... GetMetadataValue returns NULL for a missing key. */
  NxDeviceType (*HardwareDevice_GetType)(const NxHardwareDevice* device);
  const char* (*HardwareDevice_GetVendor)(const NxHardwareDevice* device);
  uint32_t (*HardwareDevice_GetVendorId)(const NxHardwareDevice* device);
  uint32_t (*HardwareDevice_GetDeviceId)(const NxHardwareDevice* device);
  size_t (*HardwareDevice_GetMetadataCount)(const NxHardwareDevice* device);
  bool (*HardwareDevice_GetMetadata)(const NxHardwareDevice* device, size_t index, const char** key,
                                     const char** value);
  const char* (*HardwareDevice_GetMetadataValue)(const NxHardwareDevice* device, const char* key);

  /* From CreateVirtualDevices: add one virtual device of `type` (strings and metadata are
   * copied; "is_virtual" and "discovered_by" are set by the host and may not be given). */
  NxStatus* (*VirtualDeviceList_Add)(NxVirtualDeviceList* list, NxDeviceType type,
                                     const char* vendor, uint32_t vendor_id, uint32_t device_id,
                                     const NxKeyValue* metadata, size_t num_metadata);
  /* From GetSupportedDevices: the EP supports `device` (one of those offered). Metadata and
   * default options are copied; "version" and "library_path" are the host's keys. Adding the
   * same device twice is an error. */
  NxStatus* (*EpDeviceList_Add)(NxEpDeviceList* list, const NxHardwareDevice* device,
                                const NxKeyValue* ep_metadata, size_t num_metadata,
                                const NxKeyValue* default_options, size_t num_options);

  /* EP devices (from NxEpCreateArgs::devices), borrowed like them. */
  const NxHardwareDevice* (*EpDevice_GetHardwareDevice)(const NxEpDevice* device);
  /* The EP metadata value of `key` (including "version"), or NULL. */
  const char* (*EpDevice_GetMetadataValue)(const NxEpDevice* device, const char* key);

  /* ---- Version 4: sequences and optionals ----------------------------------------------- */
  /* A sequence's length and its element `index` (a tensor, borrowed like the sequence; NULL out
   * of range). */
  size_t (*Value_GetSequenceLength)(const NxValue* sequence);
  const NxValue* (*Value_GetSequenceElement)(const NxValue* sequence, size_t index);
  /* Whether an optional holds a value, and the value (a tensor or a sequence; NULL if empty). */
  bool (*Value_OptionalHasValue)(const NxValue* optional);
  const NxValue* (*Value_GetOptionalValue)(const NxValue* optional);
  /* A tensor to put into a sequence or optional output, of the given shape, in the
   * kernel's memory (host memory when `host`), contents undefined. Owned by the context until
   * it is handed to an output; freed when Compute returns otherwise. Borrowed for the call. */
  NxStatus* (*KernelContext_CreateTensor)(NxKernelContext* ctx, NxElementType type,
                                          const int64_t* dims, size_t rank, bool host,
                                          NxValue** tensor);
  /* Output `index` becomes a sequence of `count` tensors of `element_type` (the type matters
   * when count is 0). Each element is a tensor from KernelContext_CreateTensor or one the
   * kernel can read this call (an input, an element of an input sequence, an optional's
   * value): the host shares it, it is not copied, and nobody may write it afterwards. The same
   * tensor may appear several times. Each output is set once (by one of the SetOutput calls or
   * AllocateOutput). */
  NxStatus* (*KernelContext_SetOutputSequence)(NxKernelContext* ctx, size_t index,
                                               NxElementType element_type,
                                               const NxValue* const* elements, size_t count);
  /* Output `index` becomes an optional holding `value` (a tensor or a sequence, shared under the
   * rules above), or an empty optional when `value` is NULL. */
  NxStatus* (*KernelContext_SetOutputOptional)(NxKernelContext* ctx, size_t index,
                                               const NxValue* value);
  /* Output `index` becomes `value` itself, shared (Identity, SequenceAt, OptionalGetElement):
   * any kind, same rules. */
  NxStatus* (*KernelContext_SetOutputValue)(NxKernelContext* ctx, size_t index,
                                            const NxValue* value);

  /* ---- Version 4: control flow ---------------------------------------------------------- *
   * The host's If / Loop / Scan kernels, for every opset of those ops (Scan from opset 8), to
   * return from an NxKernelCreateFn of the EP's definitions for them. Register the definitions
   * with value_kinds for sequences and optionals, and with the condition (If input 0; Loop
   * inputs 0 and 1) in host_inputs. Bodies run on the session's EPs; the kernel's outputs are
   * produced in the kernel's memory. Loop needs `helper` (ConcatOutput, for scan outputs); Scan
   * needs it when an axis is not 0 (Transpose). On success the host owns the helper. */
  NxStatus* (*CreateIfKernel)(const NxKernelInfo* info, NxKernel** kernel);
  NxStatus* (*CreateLoopKernel)(const NxKernelInfo* info, NxLoopHelper* helper, NxKernel** kernel);
  NxStatus* (*CreateScanKernel)(const NxKernelInfo* info, NxScanHelper* helper, NxKernel** kernel);

  /* The host's SequenceMap kernel (opset 17 on): runs its body once per element of the input
   * sequences (host memory; register it for the EP that runs sequence operators). */
  NxStatus* (*CreateSequenceMapKernel)(const NxKernelInfo* info, NxKernel** kernel);

  /* A TYPE_PROTO attribute (Optional's `type`): the kind and element type it names (for an
   * optional or sequence type, those of the tensors inside). False for other attributes. */
  bool (*Attribute_GetTypeInfo)(const NxAttribute* attr, NxValueKind* kind,
                                NxElementType* element_type);

  /* ---- Version 6: compiled groups -------------------------------------------------------- */
  /* From GetCapability: claim `nodes` (count >= 1, nodes of the graph passed to GetCapability,
   * none claimed before in this call) as one group for NxEp::CompileGroup. `options` may be
   * NULL. A node may be in one group or claimed with Capability_AddNode, not both. The host
   * rejects a group that is not convex (some path between two of its nodes passes a node
   * outside it) and every node of it falls back ("non_convex"); nodes a higher-priority EP
   * took are removed from the group first. Errors: bad node, duplicate, device not the EP's,
   * EP without CompileGroup. */
  NxStatus* (*Capability_AddFusedGroup)(NxCapability* capability, const NxNode* const* nodes,
                                        size_t count, const NxFusionOptions* options);

  /* ---- Version 6: profiling -------------------------------------------------------------- */
  /* The host's clock (steady, nanoseconds) that profile events are measured on. */
  uint64_t (*Profiler_NowNs)(void);
  /* Whether the run this Compute belongs to is being profiled (cheap; check before timing). */
  bool (*KernelContext_IsProfiling)(const NxKernelContext* ctx);
  /* Add an event of the EP to the run's profile: `name`, begin and end on Profiler_NowNs, and
   * `num_args` key/value pairs (all copied). Does nothing when the run is not profiled. */
  void (*KernelContext_AddProfileEvent)(NxKernelContext* ctx, const char* name, uint64_t begin_ns,
                                        uint64_t end_ns, const NxKeyValue* args, size_t num_args);

  /* ---- Version 7: stopping runs ----------------------------------------------------------- */
  /* True when the run this Compute belongs to must stop (its terminate flag was set or its time
   * limit passed). Cheap (an atomic load and, with a time limit, a clock read); callable from
   * any thread the kernel uses during Compute. A kernel that sees true returns any error
   * status; the host reports the run as cancelled (NX_CANCELLED) whatever the kernel said. */
  bool (*KernelContext_ShouldStop)(const NxKernelContext* ctx);

  /* ---- Version 8: placement ------------------------------------------------------------- */
  /* From GetCapability: whether an EP of higher priority already took `node` (the host asks EPs
   * in priority order). Claiming such a node is allowed but has no effect; an EP that claims
   * groups should leave such nodes out, since the host drops them from a group and rejects the
   * group whole when what remains is not convex. */
  bool (*Capability_IsNodeTaken)(const NxCapability* capability, const NxNode* node);

  /* ---- Version 12: a device per kernel node -------------------------------------------- */
  /* From GetCapability: claim `node` like Capability_AddNode, to run on the device `options`
   * names (`options` may be NULL: the EP's first device). Errors as Capability_AddNode, and a
   * device that is not one of the EP's devices in this session. */
  NxStatus* (*Capability_AddNodeWithOptions)(NxCapability* capability, const NxNode* node,
                                             const NxNodeOptions* options);
  /* The hardware device the kernel's node runs on (as claimed, else the EP's first device);
   * NULL for an EP the session created without EP devices. KernelInfo_GetMemoryInfo is that
   * device's memory. */
  const NxHardwareDevice* (*KernelInfo_GetHardwareDevice)(const NxKernelInfo* info);

  /* ---- Version 13: streams ---------------------------------------------------------------- */
  /* The stream this Compute queues its work on, or NULL: then the kernel finishes its work
   * before returning (EPs without CreateStream; the host's If and SequenceMap kernels; Loop and
   * Scan hand the stream to their helpers' *OnStream members). With a stream:
   *   - inputs in device memory may still be being produced by earlier work on the same stream
   *     (the host already made the stream wait for producers elsewhere), so read them only in
   *     queued work; inputs in host memory are complete and may be read in Compute;
   *   - outputs may be written by queued work; the host waits before anyone else reads them;
   *   - KernelContext_GetScratch and KernelContext_CreateTensor memory, and
   *     KernelContext_ParallelFor, are for Compute itself: queued work must not use them. */
  NxStream* (*KernelContext_GetStream)(const NxKernelContext* ctx);

  /* ---- Version 14: versioned key/value pairs ---------------------------------------------- */
  /* VirtualDeviceList_Add, EpDeviceList_Add and KernelContext_AddProfileEvent with their
   * key/value pairs in the versioned form (arrays of pointers, none NULL; each entry's version
   * at least 14). Everything else is as there. */
  NxStatus* (*VirtualDeviceList_Add2)(NxVirtualDeviceList* list, NxDeviceType type,
                                      const char* vendor, uint32_t vendor_id, uint32_t device_id,
                                      const NxKeyValue2* const* metadata, size_t num_metadata);
  NxStatus* (*EpDeviceList_Add2)(NxEpDeviceList* list, const NxHardwareDevice* device,
                                 const NxKeyValue2* const* ep_metadata, size_t num_metadata,
                                 const NxKeyValue2* const* default_options, size_t num_options);
  void (*KernelContext_AddProfileEvent2)(NxKernelContext* ctx, const char* name, uint64_t begin_ns,
                                         uint64_t end_ns, const NxKeyValue2* const* args,
                                         size_t num_args);
} NxHostApi;

/* ============================================================================================
 * Library entry points. A library exports both, with C linkage and default visibility.
 * ========================================================================================== */

/* Called once when the library is registered. `host` is valid until the library is unloaded;
 * `registration_name` is the name the application chose. Fill up to `max_factories` factories
 * and set *num_factories. Return an error to refuse registration. */
typedef NxStatus* (*NxCreateEpFactoriesFn)(const NxHostApi* host, const char* registration_name,
                                           NxEpFactory** factories, size_t max_factories,
                                           size_t* num_factories);
/* Called once per factory when the library is unregistered, before it is unloaded. */
typedef void (*NxReleaseEpFactoryFn)(NxEpFactory* factory);

#define NXRT_EP_CREATE_FACTORIES_SYMBOL "NxrtCreateEpFactories"
#define NXRT_EP_RELEASE_FACTORY_SYMBOL "NxrtReleaseEpFactory"

#ifdef __cplusplus
}
#endif

#endif /* NXRT_EP_API_H_ */
