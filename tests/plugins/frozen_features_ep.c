/* frozen_features_ep.c: an EP in plain C11 that uses what ABI versions 2 to 14 added, each
 * feature guarded by `#if NXRT_EP_API_VERSION >= N`. It is built once against each frozen copy
 * of the ABI header from version 2 on (tests/plugins/abi_vN/include, see
 * tests/plugins/README.md) as libnxrt_ep_frozen_features_vN.so, so each build uses exactly what
 * version N offered: every struct's `version` is that header's NXRT_EP_API_VERSION and members a
 * later header appended stay zero. frozen_features_test.cc loads every build into the current
 * host. Where frozen_abi_ep.c (version 1 only, never changed) shows that old tables keep
 * loading, this file shows that old uses of the later features keep working.
 *
 * Two factories:
 *   "FrozenFeaturesV<N>"    computes in host memory (one EP device on the CPU from version 3);
 *   "FrozenFeaturesV<N>Dev" names a memory of its own (version 2: GetMemoryInfo, an allocator,
 *                           a data transfer). It is plain malloc memory, but the host must treat
 *                           it as device memory: only the allocator, the transfer and the
 *                           kernels touch it, so Scan needs the version 5 helpers there.
 * Features by version:
 *   2  float MatMul [M,K]x[K,N] that pre-packs a constant B (PrePackWeight, transposed, with K
 *      and N stored in the buffer), shared between sessions when the host offers a cache
 *      (PrePackCache_Store, UseSharedPrePackedWeight) and owned otherwise; without a packed
 *      weight it transposes B into KernelContext_GetScratch memory. Rows are computed through
 *      KernelContext_ParallelFor. Identity declares an alias (NxKernelDef::aliases).
 *   4  Loop and Scan (opset 9 on) through the host's kernels (CreateLoopKernel,
 *      CreateScanKernel) with this EP's NxLoopHelper and NxScanHelper as the header of the build
 *      defines them (version 4: Transpose only, no SliceAxis0); value_kinds.
 *   5  NxScanHelper::SliceAxis0 and ConcatOutput.
 *   6  The host-memory EP claims Add -> Relu as one group (Capability_AddFusedGroup) on its CPU
 *      EP device (NxFusionOptions::hardware_device) and compiles it (NxEp::CompileGroup) into one
 *      kernel, which adds a profile event when the run is profiled.
 *   9  ExportCompiledGroup, LoadCompiledGroup and NxEpFactory::CheckCompatibility: the group's
 *      "program" saved into an EPContext node and restored from it; GetCapability claims its
 *      own EPContext nodes.
 *  11  NxEp::GetStatistic: "matmul_packed", read by applications as a session statistic.
 *  13  The Dev EP makes streams (NxEp::CreateStream) and its transfer has CopyTensorsAsync; it
 *      finishes all work at once, so its streams and events are immediate (complete when
 *      recorded) and kernels count the Computes that were given a stream.
 *  14  The versioned lists: Identity's alias (NxKernelDef::aliases2), Loop's type constraints
 *      (type_constraints2) and the fused kernel's profile event args
 *      (KernelContext_AddProfileEvent2).
 * FrozenFeatures_Count(name) counts each path (see kCounterNames), so a test can tell what ran
 * here and how often. */
#include <nxrt/nxrt_ep_api.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FROZEN_FEATURES_EP_NAME
#error "build with -DFROZEN_FEATURES_EP_NAME=\"FrozenFeaturesV<N>\""
#endif
/* A mismatch means <nxrt/nxrt_ep_api.h> resolved to the wrong header (not the frozen copy). */
#if defined(FROZEN_FEATURES_VERSION) && FROZEN_FEATURES_VERSION != NXRT_EP_API_VERSION
#error "<nxrt/nxrt_ep_api.h> is not the frozen header this library is built against"
#endif
#if NXRT_EP_API_VERSION < 2
#error "frozen_features_ep.c needs ABI version 2 or later (version 1 is frozen_abi_ep.c's)"
#endif

#define EP_NAME FROZEN_FEATURES_EP_NAME
#define DEV_EP_NAME FROZEN_FEATURES_EP_NAME "Dev"

/* ---- Counters (test hooks) ------------------------------------------------------------------ */

enum Counter {
  C_COMPUTE,          /* kernel Compute calls (MatMul, Add, Mul, Relu, Identity, fused) */
  C_PREPACK,          /* PrePackWeight calls */
  C_PACKED,           /* ... that packed (into the cache or owned) */
  C_PACKED_OWNED,     /* ... of which the kernel owns the packing (no cache offered) */
  C_USE_SHARED,       /* UseSharedPrePackedWeight calls */
  C_MATMUL_PACKED,    /* MatMul computes on a packed weight */
  C_MATMUL_UNPACKED,  /* MatMul computes on B given as an input (transposed into scratch) */
  C_SCRATCH,          /* KernelContext_GetScratch calls that succeeded */
  C_PARALLEL_CHUNKS,  /* chunks KernelContext_ParallelFor ran */
  C_DEV_ALLOC,        /* blocks of the Dev memory allocated */
  C_DEV_FREE,         /* ... and freed */
  C_DEV_COPY,         /* tensors the Dev data transfer copied */
  C_LOOP_KERNELS,     /* host Loop kernels created for this EP */
  C_SCAN_KERNELS,     /* host Scan kernels created for this EP */
  C_LOOP_CONCAT,      /* NxLoopHelper::ConcatOutput calls */
  C_SCAN_TRANSPOSE,   /* NxScanHelper::Transpose calls */
  C_SCAN_SLICE,       /* NxScanHelper::SliceAxis0 calls (version 5) */
  C_SCAN_CONCAT,      /* NxScanHelper::ConcatOutput calls (version 5) */
  C_HELPER_RELEASE,   /* helpers the host released */
  C_COMPILE,          /* CompileGroup calls */
  C_FUSED_COMPUTE,    /* compiled-group kernel Compute calls */
  C_PROFILE_EVENTS,   /* profile events added */
  C_EXPORT,           /* ExportCompiledGroup calls */
  C_LOAD,             /* LoadCompiledGroup calls */
  C_CHECK_COMPAT,     /* CheckCompatibility calls */
  C_STATISTIC,        /* GetStatistic calls (version 11) */
  C_STREAMS,          /* streams made (version 13) */
  C_STREAMS_FREED,    /* ... and released */
  C_EVENTS,           /* events recorded (version 13) */
  C_ASYNC_COPIES,     /* CopyTensorsAsync calls (version 13) */
  C_STREAM_COMPUTES,  /* Computes that were given a stream (version 13) */
  C_IDENTITY_ALIASED, /* Identity Computes whose output is its input's buffer (the alias) */
  C_COUNT
};

static const char* const kCounterNames[C_COUNT] = {
    "compute",         "prepack",        "packed",          "packed_owned",
    "use_shared",      "matmul_packed",  "matmul_unpacked", "scratch",
    "parallel_chunks", "dev_alloc",      "dev_free",        "dev_copy",
    "loop_kernels",    "scan_kernels",   "loop_concat",     "scan_transpose",
    "scan_slice",      "scan_concat",    "helper_release",  "compile",
    "fused_compute",   "profile_events", "export",          "load",
    "check_compat",    "statistic",      "streams",         "streams_freed",
    "events",          "async_copies",   "stream_computes", "identity_aliased"};

static atomic_size_t g_counters[C_COUNT];

static void Count(enum Counter c) { atomic_fetch_add(&g_counters[c], 1); }

/* The counter called `name` since the library was loaded (all sessions and threads), or
 * SIZE_MAX for a name this build does not keep. */
NXRT_EXPORT size_t FrozenFeatures_Count(const char* name) {
  for (int c = 0; c < C_COUNT; ++c)
    if (name != NULL && strcmp(name, kCounterNames[c]) == 0) return atomic_load(&g_counters[c]);
  return SIZE_MAX;
}

/* The NXRT_EP_API_VERSION of the header this build was compiled against. */
NXRT_EXPORT uint32_t FrozenFeatures_HeaderVersion(void) { return NXRT_EP_API_VERSION; }

/* sizeof(NxScanHelper) in this build's header (0 before version 4): a version 4 helper ends
 * before the members version 5 appended. */
NXRT_EXPORT size_t FrozenFeatures_ScanHelperSize(void) {
#if NXRT_EP_API_VERSION >= 4
  return sizeof(NxScanHelper);
#else
  return 0;
#endif
}

/* ---- Common ------------------------------------------------------------------------------- */

typedef struct FeaturesFactory FeaturesFactory;

enum Op { OP_ADD, OP_MUL, OP_RELU, OP_IDENTITY, OP_MATMUL, OP_LOOP, OP_SCAN, OP_COUNT };
static const char* const kOpTypes[OP_COUNT] = {"Add",    "Mul",  "Relu", "Identity",
                                               "MatMul", "Loop", "Scan"};

typedef struct OpState {
  FeaturesFactory* factory;
  enum Op op;
} OpState;

struct FeaturesFactory {
  NxEpFactory base; /* first member: the host sees &base */
  const NxHostApi* host;
  const char* name;
  int device_memory; /* the Dev factory */
  NxKernelRegistry* registry;
  OpState ops[OP_COUNT];
};

static NxStatus* MakeError(const NxHostApi* host, NxStatusCode code, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return host->CreateStatus(code, message);
}

/* Bytes per element of the fixed-size types this EP moves, 0 for others. */
static size_t ElementSize(NxElementType type) {
  switch (type) {
    case NX_TYPE_UINT8:
    case NX_TYPE_INT8:
    case NX_TYPE_BOOL:
      return 1;
    case NX_TYPE_UINT16:
    case NX_TYPE_INT16:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
      return 2;
    case NX_TYPE_FLOAT:
    case NX_TYPE_INT32:
    case NX_TYPE_UINT32:
      return 4;
    case NX_TYPE_INT64:
    case NX_TYPE_UINT64:
    case NX_TYPE_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

/* Bytes of a tensor of a fixed-size type, or an error naming `what`. */
static NxStatus* TensorBytes(const NxHostApi* host, const NxValue* value, const char* what,
                             size_t* bytes) {
  const size_t size = ElementSize(host->Value_GetElementType(value));
  if (size == 0 || host->Value_GetKind(value) != NX_VALUE_TENSOR)
    return MakeError(host, NX_NOT_IMPLEMENTED, "%s: %s is not a tensor of a fixed-size type",
                     EP_NAME, what);
  *bytes = size * host->Value_GetElementCount(value);
  return NULL;
}

/* ---- The Dev memory (version 2) ----------------------------------------------------------- */

/* The host tells memories apart by device type, vendor id, device id and kind (the name is for
 * people): a vendor id of its own keeps this one apart from SimDevice's NPU memory, and the
 * device id is the build's version, so that no two builds' memories are taken for one. */
static const NxMemoryInfo kDevMemory = {.version = 1,
                                        .name = "FrozenFeaturesDev",
                                        .device_type = NX_DEVICE_NPU,
                                        .vendor_id = 0xFEA7,
                                        .device_id = NXRT_EP_API_VERSION,
                                        .kind = NX_MEMORY_DEVICE,
                                        .alignment = 64};

static void* DevAlloc(NxAllocator* self, size_t size) {
  (void)self;
  void* block = aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  if (block != NULL) Count(C_DEV_ALLOC);
  return block;
}
static void DevFree(NxAllocator* self, void* block) {
  (void)self;
  if (block == NULL) return;
  Count(C_DEV_FREE);
  free(block);
}
static const NxMemoryInfo* DevAllocatorMemory(const NxAllocator* self) {
  (void)self;
  return &kDevMemory;
}
static void DevAllocatorRelease(NxAllocator* self) { free(self); }

static NxStatus* FactoryCreateAllocator(NxEpFactory* self, const NxMemoryInfo* memory,
                                        NxAllocator** out) {
  const FeaturesFactory* factory = (const FeaturesFactory*)self;
  const NxHostApi* host = factory->host;
  if (memory == NULL || !host->MemoryInfo_AreEqual(memory, &kDevMemory))
    return MakeError(host, NX_INVALID_ARGUMENT, "%s: an allocator for a memory it does not have",
                     factory->name);
  NxAllocator* allocator = (NxAllocator*)calloc(1, sizeof *allocator);
  if (allocator == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, DEV_EP_NAME ": no memory");
  allocator->version = NXRT_EP_API_VERSION;
  allocator->Alloc = DevAlloc;
  allocator->Free = DevFree;
  allocator->GetMemoryInfo = DevAllocatorMemory;
  allocator->Release = DevAllocatorRelease;
  *out = allocator;
  return NULL;
}

typedef struct DevTransfer {
  NxDataTransfer base; /* first member */
  const NxHostApi* host;
} DevTransfer;

static int IsDev(const NxHostApi* host, const NxMemoryInfo* m) {
  return m != NULL && host->MemoryInfo_AreEqual(m, &kDevMemory);
}
static int IsHost(const NxMemoryInfo* m) { return m == NULL || m->device_type == NX_DEVICE_CPU; }

static bool TransferCanCopy(const NxDataTransfer* self, const NxMemoryInfo* src,
                            const NxMemoryInfo* dst) {
  const NxHostApi* host = ((const DevTransfer*)self)->host;
  return (IsDev(host, src) || IsHost(src)) && (IsDev(host, dst) || IsHost(dst)) &&
         (IsDev(host, src) || IsDev(host, dst));
}

static NxStatus* TransferCopy(NxDataTransfer* self, const NxValue* const* src, NxValue* const* dst,
                              size_t count) {
  const NxHostApi* host = ((DevTransfer*)self)->host;
  for (size_t i = 0; i < count; ++i) {
    size_t bytes = 0, dst_bytes = 0;
    NxStatus* status = TensorBytes(host, src[i], "a copied value", &bytes);
    if (status == NULL) status = TensorBytes(host, dst[i], "a copy's destination", &dst_bytes);
    if (status != NULL) return status;
    if (bytes != dst_bytes)
      return MakeError(host, NX_INVALID_ARGUMENT, "%s: copy of %zu bytes into %zu", DEV_EP_NAME,
                       bytes, dst_bytes);
    if (bytes > 0) memcpy(host->Value_GetData(dst[i]), host->Value_GetData(src[i]), bytes);
    Count(C_DEV_COPY);
  }
  return NULL;
}
static void TransferRelease(NxDataTransfer* self) { free(self); }

#if NXRT_EP_API_VERSION >= 13
/* ---- Streams (version 13) ------------------------------------------------------------------
 * The Dev EP finishes its work inside Compute and CopyTensorsAsync, so its streams are
 * immediate: every event is complete when recorded, waiting and synchronising have nothing to
 * do. That is a valid EP with streams, and it shows the version 13 plumbing from plain C. */

typedef struct ImmediateEvent {
  NxEvent base; /* first member */
  uint64_t done_ns;
} ImmediateEvent;

static NxStatus* EventSynchronize(NxEvent* self) {
  (void)self;
  return NULL;
}
static bool EventCompletionTime(const NxEvent* self, uint64_t* ns) {
  *ns = ((const ImmediateEvent*)self)->done_ns;
  return true;
}
static void EventRelease(NxEvent* self) { free(self); }

typedef struct ImmediateStream {
  NxStream base; /* first member */
  const NxHostApi* host;
} ImmediateStream;

static NxStatus* StreamRecordEvent(NxStream* self, NxEvent** event) {
  const NxHostApi* host = ((ImmediateStream*)self)->host;
  ImmediateEvent* e = (ImmediateEvent*)calloc(1, sizeof *e);
  if (e == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, DEV_EP_NAME ": no memory");
  e->base.version = NXRT_EP_API_VERSION;
  e->base.Synchronize = EventSynchronize;
  e->base.GetCompletionTime = EventCompletionTime;
  e->base.Release = EventRelease;
  e->done_ns = host->Profiler_NowNs();
  Count(C_EVENTS);
  *event = &e->base;
  return NULL;
}
static NxStatus* StreamWaitEvent(NxStream* self, NxEvent* event) {
  (void)self;
  (void)event;
  return NULL;
}
static NxStatus* StreamSynchronize(NxStream* self) {
  (void)self;
  return NULL;
}
static void StreamRelease(NxStream* self) {
  Count(C_STREAMS_FREED);
  free(self);
}

/* Copies "queued" on a stream: done at once, like everything on an immediate stream. */
static NxStatus* TransferCopyAsync(NxDataTransfer* self, const NxValue* const* src,
                                   NxValue* const* dst, size_t count, NxStream* stream) {
  (void)stream;
  Count(C_ASYNC_COPIES);
  return TransferCopy(self, src, dst, count);
}
#endif

static NxStatus* FactoryCreateDataTransfer(NxEpFactory* self, NxDataTransfer** out) {
  const FeaturesFactory* factory = (const FeaturesFactory*)self;
  DevTransfer* transfer = (DevTransfer*)calloc(1, sizeof *transfer);
  if (transfer == NULL)
    return factory->host->CreateStatus(NX_OUT_OF_MEMORY, DEV_EP_NAME ": no memory");
  transfer->base.version = NXRT_EP_API_VERSION;
  transfer->base.CanCopy = TransferCanCopy;
  transfer->base.CopyTensors = TransferCopy;
  transfer->base.Release = TransferRelease;
#if NXRT_EP_API_VERSION >= 13
  transfer->base.CopyTensorsAsync = TransferCopyAsync;
#endif
  transfer->host = factory->host;
  *out = &transfer->base;
  return NULL;
}

static const NxMemoryInfo* FactoryGetMemoryInfo(const NxEpFactory* self) {
  (void)self;
  return &kDevMemory;
}

/* ---- Elementwise kernels and Identity ------------------------------------------------------ */

typedef struct BasicKernel {
  NxKernel base; /* first member */
  const NxHostApi* host;
  enum Op op;
} BasicKernel;

/* A float tensor input, or an error. */
static NxStatus* FloatInput(const NxHostApi* host, NxKernelContext* ctx, const char* op,
                            size_t index, const int64_t** dims, size_t* rank, size_t* count,
                            const float** data) {
  const NxValue* value = host->KernelContext_GetInput(ctx, index);
  if (value == NULL || host->Value_GetKind(value) != NX_VALUE_TENSOR ||
      host->Value_GetElementType(value) != NX_TYPE_FLOAT)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: input %zu is not a float tensor", EP_NAME,
                     op, index);
  host->Value_GetShape(value, dims, rank);
  *count = host->Value_GetElementCount(value);
  *data = (const float*)host->Value_GetData(value);
  return NULL;
}

/* y = op(a, b) for Add and Mul (equal shapes, or one operand of one element), y = relu(a + b)
 * for a compiled Add -> Relu group (`relu`). */
static NxStatus* Binary(const NxHostApi* host, NxKernelContext* ctx, const char* op, size_t a_index,
                        size_t b_index, int mul, int relu) {
  const int64_t *a_dims = NULL, *b_dims = NULL;
  size_t a_rank = 0, b_rank = 0, a_count = 0, b_count = 0;
  const float *a = NULL, *b = NULL;
  NxStatus* status = FloatInput(host, ctx, op, a_index, &a_dims, &a_rank, &a_count, &a);
  if (status == NULL) status = FloatInput(host, ctx, op, b_index, &b_dims, &b_rank, &b_count, &b);
  if (status != NULL) return status;
  int same = a_rank == b_rank && a_count == b_count;
  for (size_t i = 0; same && i < a_rank; ++i) same = a_dims[i] == b_dims[i];
  if (!same && a_count != 1 && b_count != 1)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: shapes differ (no broadcasting)", EP_NAME,
                     op);
  const int a_wide = same || b_count == 1;
  const int64_t* dims = a_wide ? a_dims : b_dims;
  const size_t rank = a_wide ? a_rank : b_rank, count = a_wide ? a_count : b_count;
  NxValue* output = NULL;
  status = host->KernelContext_AllocateOutput(ctx, 0, NX_TYPE_FLOAT, dims, rank, &output);
  if (status != NULL) return status;
  float* y = (float*)host->Value_GetData(output);
  for (size_t i = 0; i < count; ++i) {
    const float x = a[a_count == 1 ? 0 : i], w = b[b_count == 1 ? 0 : i];
    float v = mul ? x * w : x + w;
    if (relu && v < 0.0f) v = 0.0f;
    y[i] = v;
  }
  return NULL;
}

static NxStatus* BasicCompute(NxKernel* self, NxKernelContext* ctx) {
  const BasicKernel* kernel = (const BasicKernel*)self;
  const NxHostApi* host = kernel->host;
  Count(C_COMPUTE);
#if NXRT_EP_API_VERSION >= 13
  if (host->KernelContext_GetStream(ctx) != NULL) Count(C_STREAM_COMPUTES);
#endif
  switch (kernel->op) {
    case OP_ADD:
      return Binary(host, ctx, "Add", 0, 1, 0, 0);
    case OP_MUL:
      return Binary(host, ctx, "Mul", 0, 1, 1, 0);
    case OP_RELU: {
      const int64_t* dims = NULL;
      size_t rank = 0, count = 0;
      const float* x = NULL;
      NxStatus* status = FloatInput(host, ctx, "Relu", 0, &dims, &rank, &count, &x);
      if (status != NULL) return status;
      NxValue* output = NULL;
      status = host->KernelContext_AllocateOutput(ctx, 0, NX_TYPE_FLOAT, dims, rank, &output);
      if (status != NULL) return status;
      float* y = (float*)host->Value_GetData(output);
      for (size_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return NULL;
    }
    case OP_IDENTITY: {
      /* Declared as an alias of its input (version 2): the host may have handed the input's
       * buffer out as the output, and then the data is already in place. */
      const NxValue* input = host->KernelContext_GetInput(ctx, 0);
      size_t bytes = 0;
      NxStatus* status = TensorBytes(host, input, "Identity's input", &bytes);
      if (status != NULL) return status;
      const int64_t* dims = NULL;
      size_t rank = 0;
      host->Value_GetShape(input, &dims, &rank);
      NxValue* output = NULL;
      status = host->KernelContext_AllocateOutput(ctx, 0, host->Value_GetElementType(input), dims,
                                                  rank, &output);
      if (status != NULL) return status;
      void* to = host->Value_GetData(output);
      const void* from = host->Value_GetData(input);
      if (bytes > 0 && to != from) memcpy(to, from, bytes);
      if (to == from) Count(C_IDENTITY_ALIASED);
      return NULL;
    }
    default:
      return MakeError(host, NX_FAIL, "%s: op %d is not a basic kernel", EP_NAME, (int)kernel->op);
  }
}

static void FreeKernel(NxKernel* self) { free(self); }

/* ---- MatMul with a pre-packed weight (version 2) -------------------------------------------- */

/* A packing: K and N, then B transposed ([N, K], row j = column j of B). Stored in the buffer so
 * that a kernel handed a shared packing without packing it itself knows its shape. */
typedef struct PackHeader {
  int64_t k, n;
} PackHeader;
#define PACK_HEADER_BYTES 64 /* keeps the floats 64-byte aligned */

typedef struct MatMulKernel {
  NxKernel base; /* first member */
  const NxHostApi* host;
  const void* packed;     /* the packing in use (owned or shared), NULL when B is an input */
  void* owned;            /* a packing the kernel owns (no cache offered), freed at release */
  NxAllocator* allocator; /* ... with the allocator PrePackWeight received */
} MatMulKernel;

static NxStatus* MatMulPrePack(NxKernel* self, const NxValue* weight, size_t input_index,
                               NxAllocator* allocator, NxPrePackCache* cache, bool* packed) {
  MatMulKernel* kernel = (MatMulKernel*)self;
  const NxHostApi* host = kernel->host;
  Count(C_PREPACK);
  *packed = false;
  if (input_index != 1) return NULL; /* only B: declining leaves A an ordinary input */
  const int64_t* dims = NULL;
  size_t rank = 0;
  host->Value_GetShape(weight, &dims, &rank);
  if (host->Value_GetElementType(weight) != NX_TYPE_FLOAT || rank != 2) return NULL;
  const size_t k = (size_t)dims[0], n = (size_t)dims[1];
  const size_t size = PACK_HEADER_BYTES + k * n * sizeof(float);
  void* buffer = allocator->Alloc(allocator, size);
  if (buffer == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory to pack");
  PackHeader header = {(int64_t)k, (int64_t)n};
  memcpy(buffer, &header, sizeof header);
  float* bt = (float*)((char*)buffer + PACK_HEADER_BYTES);
  const float* b = (const float*)host->Value_GetData(weight);
  for (size_t r = 0; r < k; ++r)
    for (size_t c = 0; c < n; ++c) bt[c * k + r] = b[r * n + c];
  if (cache != NULL) {
    /* Shared: the host owns the buffer from here and hands the canonical copy back through
     * UseSharedPrePackedWeight (possibly another session's identical packing). */
    void* const buffers[1] = {buffer};
    const size_t sizes[1] = {size};
    NxStatus* status = host->PrePackCache_Store(cache, buffers, sizes, 1);
    if (status != NULL) {
      allocator->Free(allocator, buffer);
      return status;
    }
  } else {
    if (kernel->owned != NULL) kernel->allocator->Free(kernel->allocator, kernel->owned);
    kernel->owned = buffer;
    kernel->allocator = allocator;
    kernel->packed = buffer;
    Count(C_PACKED_OWNED);
  }
  Count(C_PACKED);
  *packed = true;
  return NULL;
}

static NxStatus* MatMulUseShared(NxKernel* self, size_t input_index, const void* const* buffers,
                                 const size_t* sizes, size_t count) {
  MatMulKernel* kernel = (MatMulKernel*)self;
  Count(C_USE_SHARED);
  if (input_index != 1 || count != 1 || sizes[0] < PACK_HEADER_BYTES)
    return MakeError(kernel->host, NX_INVALID_ARGUMENT,
                     "%s MatMul: a shared packing for input %zu with %zu buffers", EP_NAME,
                     input_index, count);
  kernel->packed = buffers[0];
  return NULL;
}

/* One ParallelFor job: rows [begin, end) of y = a * b, with b given transposed. */
typedef struct MatMulJob {
  const float* a;
  const float* bt;
  float* y;
  size_t k, n;
} MatMulJob;

static void MatMulRows(void* user, size_t begin, size_t end) {
  const MatMulJob* job = (const MatMulJob*)user;
  Count(C_PARALLEL_CHUNKS);
  for (size_t i = begin; i < end; ++i)
    for (size_t j = 0; j < job->n; ++j) {
      float sum = 0.0f;
      for (size_t r = 0; r < job->k; ++r) sum += job->a[i * job->k + r] * job->bt[j * job->k + r];
      job->y[i * job->n + j] = sum;
    }
}

static NxStatus* MatMulCompute(NxKernel* self, NxKernelContext* ctx) {
  const MatMulKernel* kernel = (const MatMulKernel*)self;
  const NxHostApi* host = kernel->host;
  Count(C_COMPUTE);
  const int64_t* a_dims = NULL;
  size_t a_rank = 0, a_count = 0;
  const float* a = NULL;
  NxStatus* status = FloatInput(host, ctx, "MatMul", 0, &a_dims, &a_rank, &a_count, &a);
  if (status != NULL) return status;
  if (a_rank != 2) return MakeError(host, NX_NOT_IMPLEMENTED, "%s MatMul: A must be 2-D", EP_NAME);
  size_t k = 0, n = 0;
  const float* bt = NULL;
  if (kernel->packed != NULL) {
    /* Packed: the host passes NULL for B. */
    if (host->KernelContext_GetInput(ctx, 1) != NULL)
      return MakeError(host, NX_RUNTIME_ERROR, "%s MatMul: B packed but still passed", EP_NAME);
    PackHeader header;
    memcpy(&header, kernel->packed, sizeof header);
    k = (size_t)header.k;
    n = (size_t)header.n;
    bt = (const float*)((const char*)kernel->packed + PACK_HEADER_BYTES);
    Count(C_MATMUL_PACKED);
  } else {
    const int64_t* b_dims = NULL;
    size_t b_rank = 0, b_count = 0;
    const float* b = NULL;
    status = FloatInput(host, ctx, "MatMul", 1, &b_dims, &b_rank, &b_count, &b);
    if (status != NULL) return status;
    if (b_rank != 2)
      return MakeError(host, NX_NOT_IMPLEMENTED, "%s MatMul: B must be 2-D", EP_NAME);
    k = (size_t)b_dims[0];
    n = (size_t)b_dims[1];
    void* scratch = NULL;
    status = host->KernelContext_GetScratch(ctx, k * n * sizeof(float) + 1, false, &scratch);
    if (status != NULL) return status;
    Count(C_SCRATCH);
    float* t = (float*)scratch;
    for (size_t r = 0; r < k; ++r)
      for (size_t c = 0; c < n; ++c) t[c * k + r] = b[r * n + c];
    bt = t;
    Count(C_MATMUL_UNPACKED);
  }
  if ((size_t)a_dims[1] != k)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s MatMul: A has %lld columns, B %zu rows",
                     EP_NAME, (long long)a_dims[1], k);
  const int64_t y_dims[2] = {a_dims[0], (int64_t)n};
  NxValue* output = NULL;
  status = host->KernelContext_AllocateOutput(ctx, 0, NX_TYPE_FLOAT, y_dims, 2, &output);
  if (status != NULL) return status;
  MatMulJob job = {a, bt, (float*)host->Value_GetData(output), k, n};
  return host->KernelContext_ParallelFor(ctx, (size_t)a_dims[0], 1, MatMulRows, &job);
}

static void MatMulRelease(NxKernel* self) {
  MatMulKernel* kernel = (MatMulKernel*)self;
  if (kernel->owned != NULL) kernel->allocator->Free(kernel->allocator, kernel->owned);
  free(kernel);
}

/* ---- Control flow through the host's kernels (version 4) ----------------------------------- */

#if NXRT_EP_API_VERSION >= 4
/* `count` tensors of one type and shape stacked into `output` along a new first axis (for
 * NxLoopHelper::ConcatOutput and, from version 5, NxScanHelper::ConcatOutput). */
static NxStatus* Stack(const NxHostApi* host, const NxValue* const* parts, size_t count,
                       NxValue* output) {
  size_t part_bytes = 0, out_bytes = 0;
  NxStatus* status = TensorBytes(host, output, "a stacked output", &out_bytes);
  if (status != NULL) return status;
  char* to = (char*)host->Value_GetData(output);
  for (size_t i = 0; i < count; ++i) {
    status = TensorBytes(host, parts[i], "a stacked part", &part_bytes);
    if (status != NULL) return status;
    if (part_bytes * count != out_bytes)
      return MakeError(host, NX_INVALID_ARGUMENT, "%s: %zu parts of %zu bytes into %zu", EP_NAME,
                       count, part_bytes, out_bytes);
    if (part_bytes > 0) memcpy(to + i * part_bytes, host->Value_GetData(parts[i]), part_bytes);
  }
  return NULL;
}

typedef struct LoopHelper {
  NxLoopHelper base; /* first member */
  const NxHostApi* host;
} LoopHelper;

static NxStatus* LoopConcat(NxLoopHelper* self, const NxValue* const* per_iteration, size_t count,
                            NxValue* output) {
  Count(C_LOOP_CONCAT);
  return Stack(((LoopHelper*)self)->host, per_iteration, count, output);
}
static void LoopHelperRelease(NxLoopHelper* self) {
  Count(C_HELPER_RELEASE);
  free(self);
}

typedef struct ScanHelper {
  NxScanHelper base; /* first member: as large as this build's header says, no more */
  const NxHostApi* host;
} ScanHelper;

#define MAX_RANK 8

static NxStatus* ScanTranspose(NxScanHelper* self, const size_t* perm, size_t rank,
                               const NxValue* input, NxValue* output) {
  const NxHostApi* host = ((ScanHelper*)self)->host;
  Count(C_SCAN_TRANSPOSE);
  const int64_t* dims = NULL;
  size_t in_rank = 0, bytes = 0;
  host->Value_GetShape(input, &dims, &in_rank);
  NxStatus* status = TensorBytes(host, input, "a transposed input", &bytes);
  if (status != NULL) return status;
  if (rank != in_rank || rank > MAX_RANK)
    return MakeError(host, NX_NOT_IMPLEMENTED, "%s: transpose of rank %zu", EP_NAME, rank);
  const size_t element = ElementSize(host->Value_GetElementType(input));
  size_t in_strides[MAX_RANK], out_dims[MAX_RANK], index[MAX_RANK] = {0};
  size_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    in_strides[d] = stride;
    stride *= (size_t)dims[d];
  }
  for (size_t d = 0; d < rank; ++d) out_dims[d] = (size_t)dims[perm[d]];
  const char* from = (const char*)host->Value_GetData(input);
  char* to = (char*)host->Value_GetData(output);
  const size_t total = element ? bytes / element : 0;
  for (size_t o = 0; o < total; ++o) {
    size_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * in_strides[perm[d]];
    memcpy(to + o * element, from + offset * element, element);
    for (size_t d = rank; d-- > 0;) { /* next output index, last axis fastest */
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
  return NULL;
}

#if NXRT_EP_API_VERSION >= 5
static NxStatus* ScanSlice(NxScanHelper* self, const NxValue* input, int64_t index,
                           NxValue* output) {
  const NxHostApi* host = ((ScanHelper*)self)->host;
  Count(C_SCAN_SLICE);
  const int64_t* dims = NULL;
  size_t rank = 0, in_bytes = 0, out_bytes = 0;
  host->Value_GetShape(input, &dims, &rank);
  NxStatus* status = TensorBytes(host, input, "a sliced input", &in_bytes);
  if (status == NULL) status = TensorBytes(host, output, "a slice", &out_bytes);
  if (status != NULL) return status;
  if (rank == 0 || index < 0 || index >= dims[0] || out_bytes * (size_t)dims[0] != in_bytes)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s: slice %lld out of range", EP_NAME,
                     (long long)index);
  if (out_bytes > 0)
    memcpy(host->Value_GetData(output),
           (const char*)host->Value_GetData(input) + (size_t)index * out_bytes, out_bytes);
  return NULL;
}

static NxStatus* ScanConcat(NxScanHelper* self, const NxValue* const* parts, size_t count,
                            NxValue* output) {
  Count(C_SCAN_CONCAT);
  return Stack(((ScanHelper*)self)->host, parts, count, output);
}
#endif

static void ScanHelperRelease(NxScanHelper* self) {
  Count(C_HELPER_RELEASE);
  free(self);
}

/* The host's Loop kernel with this EP's helper (owned by the host once the call succeeds). */
static NxStatus* CreateLoop(const NxHostApi* host, const NxKernelInfo* info, NxKernel** out) {
  LoopHelper* helper = (LoopHelper*)calloc(1, sizeof *helper);
  if (helper == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
  helper->base.version = NXRT_EP_API_VERSION;
  helper->base.ConcatOutput = LoopConcat;
  helper->base.Release = LoopHelperRelease;
  helper->host = host;
  NxStatus* status = host->CreateLoopKernel(info, &helper->base, out);
  if (status != NULL) {
    free(helper); /* still ours when the call fails */
    return status;
  }
  Count(C_LOOP_KERNELS);
  return NULL;
}

/* The host's Scan kernel with this EP's helper: Transpose always, SliceAxis0 and ConcatOutput
 * from version 5 (a version 4 helper does not have them: the host must not look for them). */
static NxStatus* CreateScan(const NxHostApi* host, const NxKernelInfo* info, NxKernel** out) {
  ScanHelper* helper = (ScanHelper*)calloc(1, sizeof *helper);
  if (helper == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
  helper->base.version = NXRT_EP_API_VERSION;
  helper->base.Transpose = ScanTranspose;
  helper->base.Release = ScanHelperRelease;
#if NXRT_EP_API_VERSION >= 5
  helper->base.SliceAxis0 = ScanSlice;
  helper->base.ConcatOutput = ScanConcat;
#endif
  helper->host = host;
  NxStatus* status = host->CreateScanKernel(info, &helper->base, out);
  if (status != NULL) {
    free(helper);
    return status;
  }
  Count(C_SCAN_KERNELS);
  return NULL;
}
#endif /* NXRT_EP_API_VERSION >= 4 */

/* NxKernelCreateFn for every definition. */
static NxStatus* KernelCreate(void* state, const NxKernelInfo* info, NxKernel** out) {
  const OpState* op_state = (const OpState*)state;
  const NxHostApi* host = op_state->factory->host;
  switch (op_state->op) {
    case OP_MATMUL: {
      MatMulKernel* kernel = (MatMulKernel*)calloc(1, sizeof *kernel);
      if (kernel == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
      kernel->base.version = NXRT_EP_API_VERSION;
      kernel->base.Compute = MatMulCompute;
      kernel->base.Release = MatMulRelease;
      kernel->base.PrePackWeight = MatMulPrePack;
      kernel->base.UseSharedPrePackedWeight = MatMulUseShared;
      kernel->host = host;
      *out = &kernel->base;
      return NULL;
    }
#if NXRT_EP_API_VERSION >= 4
    case OP_LOOP:
      return CreateLoop(host, info, out);
    case OP_SCAN:
      return CreateScan(host, info, out);
#endif
    default: {
      BasicKernel* kernel = (BasicKernel*)calloc(1, sizeof *kernel);
      if (kernel == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
      kernel->base.version = NXRT_EP_API_VERSION;
      kernel->base.Compute = BasicCompute;
      kernel->base.Release = FreeKernel;
      kernel->host = host;
      kernel->op = op_state->op;
      (void)info;
      *out = &kernel->base;
      return NULL;
    }
  }
}

/* ---- Compiled groups (version 6) and their export (version 9) ------------------------------ */

#if NXRT_EP_API_VERSION >= 6
/* The program of a compiled Add -> Relu group: y = relu(in[a] + in[b]), where a and b are the
 * group inputs Add reads. Its text ("add_relu:a,b") is what version 9 saves. */
typedef struct FusedKernel {
  NxKernel base; /* first member */
  const NxHostApi* host;
  size_t a, b;
  char program[32];
} FusedKernel;

/* What this EP's payloads need: checked by CheckCompatibility when a saved model is loaded. */
#define COMPATIBILITY "FrozenFeatures;format=1"

static NxStatus* FusedCompute(NxKernel* self, NxKernelContext* ctx) {
  const FusedKernel* kernel = (const FusedKernel*)self;
  const NxHostApi* host = kernel->host;
  Count(C_COMPUTE);
  Count(C_FUSED_COMPUTE);
  const int profiling = host->KernelContext_IsProfiling(ctx);
  const uint64_t begin = profiling ? host->Profiler_NowNs() : 0;
  NxStatus* status = Binary(host, ctx, "add_relu", kernel->a, kernel->b, 0, 1);
  if (status == NULL && profiling) {
#if NXRT_EP_API_VERSION >= 14
    /* Version 14: the args in the versioned form, an array of pointers. */
    const NxKeyValue2 program = {NXRT_EP_API_VERSION, "program", kernel->program};
    const NxKeyValue2* const args[1] = {&program};
    host->KernelContext_AddProfileEvent2(ctx, EP_NAME " add_relu", begin, host->Profiler_NowNs(),
                                         args, 1);
#else
    const NxKeyValue args[1] = {{"program", kernel->program}};
    host->KernelContext_AddProfileEvent(ctx, EP_NAME " add_relu", begin, host->Profiler_NowNs(),
                                        args, 1);
#endif
    Count(C_PROFILE_EVENTS);
  }
  return status;
}

static NxStatus* NewFusedKernel(const NxHostApi* host, size_t a, size_t b, NxKernel** out) {
  FusedKernel* kernel = (FusedKernel*)calloc(1, sizeof *kernel);
  if (kernel == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
  kernel->base.version = NXRT_EP_API_VERSION;
  kernel->base.Compute = FusedCompute;
  kernel->base.Release = FreeKernel;
  kernel->host = host;
  kernel->a = a;
  kernel->b = b;
  snprintf(kernel->program, sizeof kernel->program, "add_relu:%zu,%zu", a, b);
  *out = &kernel->base;
  return NULL;
}

/* Whether `name` is the name of value `info` (NULL for an omitted one). */
static int NameIs(const NxHostApi* host, const NxValueInfo* info, const char* name) {
  return info != NULL && strcmp(host->ValueInfo_GetName(info), name) == 0;
}

static NxStatus* EpCompileGroup(NxEp* self, const NxGraph* group, const char* fused_name,
                                NxKernel** kernel);
#endif /* NXRT_EP_API_VERSION >= 6 */

/* ---- EP ----------------------------------------------------------------------------------- */

typedef struct FeaturesEp {
  NxEp base; /* first member */
  FeaturesFactory* factory;
  /* The EP device's hardware device the groups are declared on (version 3; NULL when none). */
  const NxHardwareDevice* device;
} FeaturesEp;

static const char* EpGetName(const NxEp* self) { return ((const FeaturesEp*)self)->factory->name; }

#if NXRT_EP_API_VERSION >= 6
/* Whether the only consumer of node `add`'s output is `relu`, and the model does not return it:
 * then Add -> Relu compiles into one kernel. */
static int FusesWith(const NxHostApi* host, const NxGraph* graph, const NxNode* add,
                     const NxNode* relu) {
  const NxValueInfo* sum = host->Node_GetOutput(add, 0);
  if (sum == NULL || host->Node_GetInputCount(relu) != 1 ||
      !NameIs(host, host->Node_GetInput(relu, 0), host->ValueInfo_GetName(sum)))
    return 0;
  const char* name = host->ValueInfo_GetName(sum);
  for (size_t o = 0; o < host->Graph_GetOutputCount(graph); ++o)
    if (NameIs(host, host->Graph_GetOutput(graph, o), name)) return 0;
  for (size_t i = 0; i < host->Graph_GetNodeCount(graph); ++i) {
    const NxNode* node = host->Graph_GetNode(graph, i);
    if (node == relu) continue;
    for (size_t k = 0; k < host->Node_GetInputCount(node); ++k)
      if (NameIs(host, host->Node_GetInput(node, k), name)) return 0;
  }
  return 1;
}

#if NXRT_EP_API_VERSION >= 9
/* An EPContext node this EP wrote (its `source` attribute names the EP). */
static int IsOwnContext(const NxHostApi* host, const NxNode* node, const char* ep_name) {
  if (strcmp(host->Node_GetOpType(node), "EPContext") != 0 ||
      strcmp(host->Node_GetDomain(node), "com.microsoft") != 0)
    return 0;
  const NxAttribute* source = host->Node_GetAttribute(node, "source");
  if (source == NULL || host->Attribute_GetType(source) != NX_ATTR_STRING) return 0;
  size_t size = 0;
  const char* text = host->Attribute_GetString(source, &size);
  return size == strlen(ep_name) && memcmp(text, ep_name, size) == 0;
}
#endif
#endif /* NXRT_EP_API_VERSION >= 6 */

/* Claims every node the registry has a kernel for; the host-memory EP (version 6 on) claims
 * each Add whose sum only a Relu reads as a group with that Relu, declared on its EP device,
 * and (version 9 on) each EPContext node it saved as a group of its own. */
static NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const FeaturesEp* ep = (const FeaturesEp*)self;
  const FeaturesFactory* factory = ep->factory;
  const NxHostApi* host = factory->host;
  const size_t count = host->Graph_GetNodeCount(graph);
  /* Nodes already claimed in a group (small models: a flag per node, up to 64 of them). */
  unsigned char grouped[64] = {0};
  NxStatus* status = NULL;
#if NXRT_EP_API_VERSION >= 6
  if (!factory->device_memory && count <= sizeof grouped) {
    const NxFusionOptions options = {.version = NXRT_EP_API_VERSION, .hardware_device = ep->device};
    for (size_t i = 0; i < count && status == NULL; ++i) {
      const NxNode* node = host->Graph_GetNode(graph, i);
#if NXRT_EP_API_VERSION >= 9
      if (IsOwnContext(host, node, factory->name)) {
        const NxNode* one[1] = {node};
        status = host->Capability_AddFusedGroup(capability, one, 1, &options);
        grouped[i] = 1;
        continue;
      }
#endif
      if (strcmp(host->Node_GetOpType(node), "Add") != 0 || grouped[i] ||
          !host->KernelRegistry_HasKernel(factory->registry, node, NULL))
        continue;
      for (size_t j = i + 1; j < count; ++j) {
        const NxNode* relu = host->Graph_GetNode(graph, j);
        if (grouped[j] || strcmp(host->Node_GetOpType(relu), "Relu") != 0 ||
            !host->KernelRegistry_HasKernel(factory->registry, relu, NULL) ||
            !FusesWith(host, graph, node, relu))
          continue;
        const NxNode* pair[2] = {node, relu};
        status = host->Capability_AddFusedGroup(capability, pair, 2, &options);
        grouped[i] = grouped[j] = 1;
        break;
      }
    }
  }
#endif
  for (size_t i = 0; i < count && status == NULL; ++i) {
    const NxNode* node = host->Graph_GetNode(graph, i);
    if ((i < sizeof grouped && grouped[i]) ||
        !host->KernelRegistry_HasKernel(factory->registry, node, NULL))
      continue;
    status = host->Capability_AddNode(capability, node);
  }
  return status;
}

static NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = ((FeaturesEp*)self)->factory->registry;
  return NULL;
}

#if NXRT_EP_API_VERSION >= 6
/* Compiles Add -> Relu: the group's graph view holds the two nodes in order; its inputs are
 * what Add reads (one input when Add reads the same value twice). */
static NxStatus* EpCompileGroup(NxEp* self, const NxGraph* group, const char* fused_name,
                                NxKernel** kernel) {
  const NxHostApi* host = ((FeaturesEp*)self)->factory->host;
  Count(C_COMPILE);
  if (host->Graph_GetNodeCount(group) != 2 || host->Graph_GetOutputCount(group) != 1)
    return MakeError(host, NX_NOT_IMPLEMENTED, "%s: %s is not Add -> Relu", EP_NAME, fused_name);
  const NxNode* add = host->Graph_GetNode(group, 0);
  if (strcmp(host->Node_GetOpType(add), "Add") != 0 ||
      strcmp(host->Node_GetOpType(host->Graph_GetNode(group, 1)), "Relu") != 0)
    return MakeError(host, NX_NOT_IMPLEMENTED, "%s: %s is not Add -> Relu", EP_NAME, fused_name);
  size_t at[2] = {SIZE_MAX, SIZE_MAX};
  for (size_t k = 0; k < 2; ++k) {
    const NxValueInfo* input = host->Node_GetInput(add, k);
    for (size_t i = 0; input != NULL && i < host->Graph_GetInputCount(group); ++i)
      if (NameIs(host, host->Graph_GetInput(group, i), host->ValueInfo_GetName(input))) at[k] = i;
    if (at[k] == SIZE_MAX)
      return MakeError(host, NX_INVALID_ARGUMENT, "%s: %s: Add's input %zu is not a group input",
                       EP_NAME, fused_name, k);
  }
  return NewFusedKernel(host, at[0], at[1], kernel);
}
#endif

#if NXRT_EP_API_VERSION >= 9
static NxStatus* EpExportCompiledGroup(NxEp* self, const NxKernel* kernel,
                                       NxCompiledGroupExport* out) {
  const NxHostApi* host = ((FeaturesEp*)self)->factory->host;
  Count(C_EXPORT);
  if (kernel == NULL || kernel->Compute != FusedCompute)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s: not one of its compiled kernels", EP_NAME);
  const FusedKernel* fused = (const FusedKernel*)kernel;
  /* Valid until the kernel is released; the host copies both at once. */
  out->payload = fused->program;
  out->payload_size = strlen(fused->program);
  out->compatibility = COMPATIBILITY;
  return NULL;
}

static NxStatus* EpLoadCompiledGroup(NxEp* self, const NxGraph* context, const void* payload,
                                     size_t payload_size, NxKernel** kernel) {
  const NxHostApi* host = ((FeaturesEp*)self)->factory->host;
  Count(C_LOAD);
  char text[32];
  size_t a = 0, b = 0;
  char tail = 0;
  if (payload_size == 0 || payload_size >= sizeof text)
    return MakeError(host, NX_INVALID_MODEL, "%s: a payload of %zu bytes", EP_NAME, payload_size);
  memcpy(text, payload, payload_size);
  text[payload_size] = '\0';
  if (sscanf(text, "add_relu:%zu,%zu%c", &a, &b, &tail) != 2)
    return MakeError(host, NX_INVALID_MODEL, "%s: unknown program '%s'", EP_NAME, text);
  if (host->Graph_GetNodeCount(context) != 1 || a >= host->Graph_GetInputCount(context) ||
      b >= host->Graph_GetInputCount(context) || host->Graph_GetOutputCount(context) != 1)
    return MakeError(host, NX_INVALID_MODEL, "%s: program '%s' does not fit its EPContext node",
                     EP_NAME, text);
  return NewFusedKernel(host, a, b, kernel);
}
#endif

/* ---- Factory ------------------------------------------------------------------------------ */

static const char* FactoryGetName(const NxEpFactory* self) {
  return ((const FeaturesFactory*)self)->name;
}
static const char* FactoryGetVendor(const NxEpFactory* self) {
  (void)self;
  return "nxrt tests";
}
static const char* FactoryGetVersion(const NxEpFactory* self) {
  (void)self;
  return "1.0.0";
}
static uint32_t FactoryGetVendorId(const NxEpFactory* self) {
  (void)self;
  return 0;
}

#if NXRT_EP_API_VERSION >= 11
/* One counter (version 11): "matmul_packed", the MatMul Computes on a packed weight so far. */
static NxStatus* EpGetStatistic(const NxEp* self, const char* key, int64_t* value) {
  const NxHostApi* host = ((const FeaturesEp*)self)->factory->host;
  Count(C_STATISTIC);
  if (key == NULL || strcmp(key, "matmul_packed") != 0)
    return host->CreateStatus(NX_NOT_FOUND, EP_NAME ": no such statistic");
  *value = (int64_t)atomic_load(&g_counters[C_MATMUL_PACKED]);
  return NULL;
}
#endif

#if NXRT_EP_API_VERSION >= 13
static NxStatus* EpCreateStream(NxEp* self, const NxHardwareDevice* device, NxStream** stream) {
  (void)device;
  const NxHostApi* host = ((const FeaturesEp*)self)->factory->host;
  ImmediateStream* s = (ImmediateStream*)calloc(1, sizeof *s);
  if (s == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, DEV_EP_NAME ": no memory");
  s->base.version = NXRT_EP_API_VERSION;
  s->base.RecordEvent = StreamRecordEvent;
  s->base.WaitEvent = StreamWaitEvent;
  s->base.Synchronize = StreamSynchronize;
  s->base.Release = StreamRelease;
  s->host = host;
  Count(C_STREAMS);
  *stream = &s->base;
  return NULL;
}
#endif

static NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  FeaturesFactory* factory = (FeaturesFactory*)self;
  const NxHostApi* host = factory->host;
  if (args == NULL || args->version < 1)
    return host->CreateStatus(NX_INVALID_ARGUMENT, EP_NAME ": bad create arguments");
  FeaturesEp* ep = (FeaturesEp*)calloc(1, sizeof *ep);
  if (ep == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
  ep->base.version = NXRT_EP_API_VERSION;
  ep->base.GetName = EpGetName;
  ep->base.GetCapability = EpGetCapability;
  ep->base.GetKernelRegistry = EpGetKernelRegistry;
  ep->factory = factory;
#if NXRT_EP_API_VERSION >= 3
  if (args->num_devices > 0) ep->device = host->EpDevice_GetHardwareDevice(args->devices[0]);
#endif
#if NXRT_EP_API_VERSION >= 6
  if (!factory->device_memory) ep->base.CompileGroup = EpCompileGroup;
#endif
#if NXRT_EP_API_VERSION >= 9
  if (!factory->device_memory) {
    ep->base.ExportCompiledGroup = EpExportCompiledGroup;
    ep->base.LoadCompiledGroup = EpLoadCompiledGroup;
  }
#endif
#if NXRT_EP_API_VERSION >= 11
  ep->base.GetStatistic = EpGetStatistic;
#endif
#if NXRT_EP_API_VERSION >= 13
  if (factory->device_memory) ep->base.CreateStream = EpCreateStream;
#endif
  *out = &ep->base;
  return NULL;
}

static void FactoryReleaseEp(NxEpFactory* self, NxEp* ep) {
  (void)self;
  free(ep);
}

#if NXRT_EP_API_VERSION >= 9
/* Payloads of this EP's own format run anywhere it runs; anything else is not its own. */
static NxStatus* FactoryCheckCompatibility(NxEpFactory* self,
                                           const NxHardwareDevice* const* devices,
                                           size_t num_devices, const char* compatibility,
                                           NxCompatibility* result) {
  (void)self;
  (void)devices;
  (void)num_devices;
  Count(C_CHECK_COMPAT);
  *result = compatibility != NULL && strcmp(compatibility, COMPATIBILITY) == 0
                ? NX_COMPATIBILITY_OPTIMAL
                : NX_COMPATIBILITY_UNSUPPORTED;
  return NULL;
}
#endif

static void FreeFactory(FeaturesFactory* factory) {
  if (factory->registry != NULL) factory->host->ReleaseKernelRegistry(factory->registry);
  free(factory);
}

static NxStatus* AddDefinitions(FeaturesFactory* factory) {
  const NxHostApi* host = factory->host;
  const NxElementType float_only[] = {NX_TYPE_FLOAT};
  const NxElementType moved[] = {NX_TYPE_FLOAT, NX_TYPE_INT64, NX_TYPE_BOOL};
  const int32_t every[] = {-1};
#if NXRT_EP_API_VERSION >= 4
  const NxElementType int64_only[] = {NX_TYPE_INT64};
  const NxElementType bool_only[] = {NX_TYPE_BOOL};
  const int32_t first[] = {0}, second[] = {1};
#endif
  const NxTypeConstraint floats = {.name = "T",
                                   .allowed_types = float_only,
                                   .num_allowed_types = 1,
                                   .input_indices = every,
                                   .num_input_indices = 1,
                                   .output_indices = every,
                                   .num_output_indices = 1};
  NxTypeConstraint any = floats;
  any.allowed_types = moved;
  any.num_allowed_types = 3;
  const NxIoPair same = {0, 0};
#if NXRT_EP_API_VERSION >= 14
  /* Version 14: Identity's alias and Loop's constraints in the versioned form. */
  const NxIoPair2 same2 = {NXRT_EP_API_VERSION, 0, 0};
  const NxIoPair2* const same2_list[1] = {&same2};
#endif
  for (int op = 0; op < OP_COUNT; ++op) {
    factory->ops[op].factory = factory;
    factory->ops[op].op = (enum Op)op;
    NxKernelDef def = {.version = NXRT_EP_API_VERSION,
                       .op_type = kOpTypes[op],
                       .domain = "",
                       .since_version_start = 1,
                       .since_version_end = INT32_MAX,
                       .type_constraints = &floats,
                       .num_type_constraints = 1,
                       .create = KernelCreate,
                       .create_state = &factory->ops[op]};
    switch ((enum Op)op) {
      case OP_ADD:
      case OP_MUL:
        def.since_version_start = 7; /* no broadcast attribute */
        break;
      case OP_RELU:
        def.since_version_start = 6;
        break;
      case OP_IDENTITY:
        /* Loop bodies pass their condition through Identity: bool too. */
        def.type_constraints = &any;
#if NXRT_EP_API_VERSION >= 14
        def.aliases2 = same2_list;
        def.num_aliases2 = 1;
        (void)same;
#else
        def.aliases = &same;
        def.num_aliases = 1;
#endif
        break;
      case OP_LOOP:
      case OP_SCAN: {
#if NXRT_EP_API_VERSION >= 4
        /* Loop: trip count (int64) and condition (bool) read on the host, float state and scan
         * outputs. Scan from opset 9 (no sequence_lens input): float throughout. */
        static const int32_t loop_host_inputs[] = {0, 1};
        NxTypeConstraint loop[3] = {floats, floats, floats};
        loop[0].name = "I";
        loop[0].allowed_types = int64_only;
        loop[0].input_indices = first;
        loop[0].num_output_indices = 0;
        loop[1].name = "B";
        loop[1].allowed_types = bool_only;
        loop[1].input_indices = second;
        loop[1].num_output_indices = 0;
        loop[2].name = "V";
        loop[2].num_input_indices = 0;
#if NXRT_EP_API_VERSION >= 14
        NxTypeConstraint2 loop2[3];
        const NxTypeConstraint2* loop2_list[3];
        for (int c = 0; c < 3; ++c) {
          loop2[c].version = NXRT_EP_API_VERSION;
          loop2[c].name = loop[c].name;
          loop2[c].allowed_types = loop[c].allowed_types;
          loop2[c].num_allowed_types = loop[c].num_allowed_types;
          loop2[c].input_indices = loop[c].input_indices;
          loop2[c].num_input_indices = loop[c].num_input_indices;
          loop2[c].output_indices = loop[c].output_indices;
          loop2[c].num_output_indices = loop[c].num_output_indices;
          loop2_list[c] = &loop2[c];
        }
#endif
        if (op == OP_LOOP) {
#if NXRT_EP_API_VERSION >= 14
          def.type_constraints = NULL;
          def.num_type_constraints = 0;
          def.type_constraints2 = loop2_list;
          def.num_type_constraints2 = 3;
#else
          def.type_constraints = loop;
          def.num_type_constraints = 3;
#endif
          def.host_inputs = loop_host_inputs;
          def.num_host_inputs = 2;
        } else {
          def.since_version_start = 9;
        }
        def.value_kinds = NX_KIND_TENSOR;
        NxStatus* status = host->KernelRegistry_Add(factory->registry, &def);
        if (status != NULL) return status;
#endif
        continue;
      }
      default:
        break;
    }
    NxStatus* status = host->KernelRegistry_Add(factory->registry, &def);
    if (status != NULL) return status;
  }
  return NULL;
}

static NxStatus* NewFactory(const NxHostApi* host, int device_memory, FeaturesFactory** out) {
  FeaturesFactory* factory = (FeaturesFactory*)calloc(1, sizeof *factory);
  if (factory == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, EP_NAME ": no memory");
  factory->base.version = NXRT_EP_API_VERSION;
  factory->base.GetName = FactoryGetName;
  factory->base.GetVendor = FactoryGetVendor;
  factory->base.GetVersion = FactoryGetVersion;
  factory->base.GetVendorId = FactoryGetVendorId;
  factory->base.CreateEp = FactoryCreateEp;
  factory->base.ReleaseEp = FactoryReleaseEp;
  if (device_memory) {
    factory->base.GetMemoryInfo = FactoryGetMemoryInfo;
    factory->base.CreateAllocator = FactoryCreateAllocator;
    factory->base.CreateDataTransfer = FactoryCreateDataTransfer;
  }
#if NXRT_EP_API_VERSION >= 9
  if (!device_memory) factory->base.CheckCompatibility = FactoryCheckCompatibility;
#endif
  factory->host = host;
  factory->name = device_memory ? DEV_EP_NAME : EP_NAME;
  factory->device_memory = device_memory;
  NxStatus* status = host->CreateKernelRegistry(&factory->registry);
  if (status != NULL) factory->registry = NULL;
  if (status == NULL) status = AddDefinitions(factory);
  if (status != NULL) {
    FreeFactory(factory);
    return status;
  }
  *out = factory;
  return NULL;
}

/* ---- Library entry points ----------------------------------------------------------------- */

NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char* registration_name,
                                            NxEpFactory** factories, size_t max_factories,
                                            size_t* num_factories) {
  (void)registration_name;
  if (num_factories != NULL) *num_factories = 0;
  if (host == NULL || host->CreateStatus == NULL) return NULL;
  /* Runs before the host has seen our version: check that it has what this build calls. */
  if (host->version < NXRT_EP_API_VERSION)
    return MakeError(host, NX_INVALID_PLUGIN, "%s needs plugin ABI %d, the host has %u", EP_NAME,
                     NXRT_EP_API_VERSION, (unsigned)host->version);
  if (factories == NULL || num_factories == NULL || max_factories < 2)
    return host->CreateStatus(NX_INVALID_ARGUMENT, EP_NAME ": no room for two factories");
  FeaturesFactory* plain = NULL;
  FeaturesFactory* dev = NULL;
  NxStatus* status = NewFactory(host, 0, &plain);
  if (status != NULL) return status;
  status = NewFactory(host, 1, &dev);
  if (status != NULL) {
    FreeFactory(plain);
    return status;
  }
  factories[0] = &plain->base;
  factories[1] = &dev->base;
  *num_factories = 2;
  return NULL;
}

NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  if (factory != NULL) FreeFactory((FeaturesFactory*)factory);
}
