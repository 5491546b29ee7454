/* frozen_abi_ep.c: an EP written in plain C11 against ABI version 1 only, built once against each
 * frozen copy of the ABI header (tests/plugins/abi_vN/include, see tests/plugins/README.md) as
 * libnxrt_ep_frozen_abi_vN.so. frozen_abi_test.cc loads every build into the current host: a
 * plugin built against an older header must keep loading and running.
 *
 * Only what the version 1 header declares is used, so this file compiles unchanged against every
 * later header (tables only grow at the end). Each struct's `version` is the NXRT_EP_API_VERSION
 * of the header it was compiled with; members a later header appends are left zero (NULL
 * optional callbacks, zero counts), which the rules make mean "none".
 *
 * The EP ("FrozenAbiV<N>", from FROZEN_ABI_EP_NAME) computes in host memory and has float32
 * kernels for Add and Mul (equal shapes; mismatched shapes are an error, no broadcasting), Relu
 * and Sigmoid. FrozenAbi_ComputeCalls counts kernel Compute calls, so a test can tell its nodes
 * ran here and not on the CPU EP; FrozenAbi_HeaderVersion says which header the build used. */
#include <math.h>
#include <nxrt/nxrt_ep_api.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FROZEN_ABI_EP_NAME
#error "build with -DFROZEN_ABI_EP_NAME=\"FrozenAbiV<N>\""
#endif
/* The build passes the version it means; a mismatch means <nxrt/nxrt_ep_api.h> resolved to the
 * wrong header (the repository's include/ instead of the frozen copy). */
#if defined(FROZEN_ABI_VERSION) && FROZEN_ABI_VERSION != NXRT_EP_API_VERSION
#error "<nxrt/nxrt_ep_api.h> is not the frozen header this library is built against"
#endif

/* Kernel Compute calls since the library was loaded (all threads, all sessions). */
static atomic_size_t g_compute_calls;

NXRT_EXPORT size_t FrozenAbi_ComputeCalls(void) { return atomic_load(&g_compute_calls); }

/* The NXRT_EP_API_VERSION of the header this build was compiled against. */
NXRT_EXPORT uint32_t FrozenAbi_HeaderVersion(void) { return NXRT_EP_API_VERSION; }

/* ---- Kernels ----------------------------------------------------------------------------- */

enum FrozenOp { FROZEN_ADD, FROZEN_MUL, FROZEN_RELU, FROZEN_SIGMOID, FROZEN_OP_COUNT };

static const char* const kOpTypes[FROZEN_OP_COUNT] = {"Add", "Mul", "Relu", "Sigmoid"};
/* First ai.onnx opset of each op with today's semantics (Add/Mul 7: no broadcast attribute;
 * Relu/Sigmoid 6: no consumed_inputs); no upper bound. */
static const int32_t kSinceVersions[FROZEN_OP_COUNT] = {7, 7, 6, 6};
static const size_t kInputCounts[FROZEN_OP_COUNT] = {2, 2, 1, 1};

typedef struct FrozenFactory FrozenFactory;

/* What each kernel definition's create_state points to (owned by the factory, which outlives
 * its registry). */
typedef struct FrozenOpState {
  FrozenFactory* factory;
  enum FrozenOp op;
} FrozenOpState;

struct FrozenFactory {
  NxEpFactory base; /* first member: the host sees &base */
  const NxHostApi* host;
  NxKernelRegistry* registry;
  FrozenOpState ops[FROZEN_OP_COUNT];
};

typedef struct FrozenKernel {
  NxKernel base; /* first member: the host sees &base */
  const NxHostApi* host;
  enum FrozenOp op;
} FrozenKernel;

typedef struct FrozenEp {
  NxEp base; /* first member: the host sees &base */
  FrozenFactory* factory;
} FrozenEp;

/* An error status with a formatted message (the host copies the message). */
static NxStatus* MakeError(const NxHostApi* host, NxStatusCode code, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return host->CreateStatus(code, message);
}

/* "[2,3]" into `out`. */
static void FormatShape(const int64_t* dims, size_t rank, char* out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  for (size_t i = 0; i < rank && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (used < size) snprintf(out + used, size - used, "]");
}

/* Input `index` as a float tensor (dims, rank, element count, data), or an error. */
static NxStatus* GetFloatInput(const NxHostApi* host, NxKernelContext* ctx, enum FrozenOp op,
                               size_t index, const int64_t** dims, size_t* rank, size_t* count,
                               const float** data) {
  const NxValue* value = host->KernelContext_GetInput(ctx, index);
  if (value == NULL)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: input %zu is missing", FROZEN_ABI_EP_NAME,
                     kOpTypes[op], index);
  if (host->Value_GetKind(value) != NX_VALUE_TENSOR ||
      host->Value_GetElementType(value) != NX_TYPE_FLOAT)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: input %zu is not a float tensor",
                     FROZEN_ABI_EP_NAME, kOpTypes[op], index);
  host->Value_GetShape(value, dims, rank);
  *count = host->Value_GetElementCount(value);
  *data = (const float*)host->Value_GetData(value);
  if (*count > 0 && *data == NULL)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: input %zu has no data", FROZEN_ABI_EP_NAME,
                     kOpTypes[op], index);
  return NULL;
}

static NxStatus* KernelCompute(NxKernel* self, NxKernelContext* ctx) {
  const FrozenKernel* kernel = (const FrozenKernel*)self;
  const NxHostApi* host = kernel->host;
  const enum FrozenOp op = kernel->op;
  atomic_fetch_add(&g_compute_calls, 1);

  const size_t inputs = host->KernelContext_GetInputCount(ctx);
  if (inputs != kInputCounts[op])
    return MakeError(host, NX_INVALID_ARGUMENT, "%s %s: expected %zu inputs, got %zu",
                     FROZEN_ABI_EP_NAME, kOpTypes[op], kInputCounts[op], inputs);
  const int64_t* dims = NULL;
  size_t rank = 0, count = 0;
  const float* a = NULL;
  NxStatus* status = GetFloatInput(host, ctx, op, 0, &dims, &rank, &count, &a);
  if (status != NULL) return status;
  const float* b = NULL;
  if (inputs == 2) {
    const int64_t* b_dims = NULL;
    size_t b_rank = 0, b_count = 0;
    status = GetFloatInput(host, ctx, op, 1, &b_dims, &b_rank, &b_count, &b);
    if (status != NULL) return status;
    int same = b_rank == rank && b_count == count;
    for (size_t i = 0; same && i < rank; ++i) same = dims[i] == b_dims[i];
    if (!same) {
      char sa[128], sb[128];
      FormatShape(dims, rank, sa, sizeof sa);
      FormatShape(b_dims, b_rank, sb, sizeof sb);
      return MakeError(host, NX_INVALID_ARGUMENT,
                       "%s %s: input shapes %s and %s differ (this EP does not broadcast)",
                       FROZEN_ABI_EP_NAME, kOpTypes[op], sa, sb);
    }
  }

  /* Version 1 rule: each output is allocated once through the context, its contents are
   * undefined, every element is written. */
  NxValue* output = NULL;
  status = host->KernelContext_AllocateOutput(ctx, 0, NX_TYPE_FLOAT, dims, rank, &output);
  if (status != NULL) return status;
  float* y = (float*)host->Value_GetData(output);
  if (count > 0 && y == NULL)
    return MakeError(host, NX_RUNTIME_ERROR, "%s %s: the output has no data", FROZEN_ABI_EP_NAME,
                     kOpTypes[op]);
  switch (op) {
    case FROZEN_ADD:
      for (size_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
      break;
    case FROZEN_MUL:
      for (size_t i = 0; i < count; ++i) y[i] = a[i] * b[i];
      break;
    case FROZEN_RELU:
      for (size_t i = 0; i < count; ++i) y[i] = a[i] > 0.0f ? a[i] : 0.0f;
      break;
    case FROZEN_SIGMOID:
      for (size_t i = 0; i < count; ++i) y[i] = 1.0f / (1.0f + expf(-a[i]));
      break;
    default:
      return MakeError(host, NX_FAIL, "%s: unknown op %d", FROZEN_ABI_EP_NAME, (int)op);
  }
  return NULL;
}

static void KernelRelease(NxKernel* self) { free(self); }

/* NxKernelCreateFn: one kernel per node per session. */
static NxStatus* KernelCreate(void* state, const NxKernelInfo* info, NxKernel** out) {
  const FrozenOpState* op_state = (const FrozenOpState*)state;
  const NxHostApi* host = op_state->factory->host;
  const char* op_type = host->Node_GetOpType(host->KernelInfo_GetNode(info));
  if (op_type == NULL || strcmp(op_type, kOpTypes[op_state->op]) != 0)
    return MakeError(host, NX_INVALID_ARGUMENT, "%s: %s kernel asked for a %s node",
                     FROZEN_ABI_EP_NAME, kOpTypes[op_state->op], op_type ? op_type : "(null)");
  FrozenKernel* kernel = (FrozenKernel*)calloc(1, sizeof *kernel);
  if (kernel == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, FROZEN_ABI_EP_NAME ": no memory");
  kernel->base.version = NXRT_EP_API_VERSION;
  kernel->base.Compute = KernelCompute;
  kernel->base.Release = KernelRelease;
  kernel->host = host;
  kernel->op = op_state->op;
  *out = &kernel->base;
  return NULL;
}

/* ---- EP ---------------------------------------------------------------------------------- */

static const char* EpGetName(const NxEp* self) {
  (void)self;
  return FROZEN_ABI_EP_NAME;
}

/* Claims every node the registry has a kernel for (what a NULL GetCapability would do, spelt
 * out so the graph-view calls are exercised too). */
static NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const FrozenFactory* factory = ((const FrozenEp*)self)->factory;
  const NxHostApi* host = factory->host;
  const size_t count = host->Graph_GetNodeCount(graph);
  for (size_t i = 0; i < count; ++i) {
    const NxNode* node = host->Graph_GetNode(graph, i);
    if (!host->KernelRegistry_HasKernel(factory->registry, node, NULL)) continue;
    NxStatus* status = host->Capability_AddNode(capability, node);
    if (status != NULL) return status;
  }
  return NULL;
}

static NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = ((FrozenEp*)self)->factory->registry;
  return NULL;
}

/* ---- Factory ----------------------------------------------------------------------------- */

static const char* FactoryGetName(const NxEpFactory* self) {
  (void)self;
  return FROZEN_ABI_EP_NAME;
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

static NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  FrozenFactory* factory = (FrozenFactory*)self;
  const NxHostApi* host = factory->host;
  if (args == NULL || args->version < 1)
    return host->CreateStatus(NX_INVALID_ARGUMENT, FROZEN_ABI_EP_NAME ": bad create arguments");
  FrozenEp* ep = (FrozenEp*)calloc(1, sizeof *ep);
  if (ep == NULL) return host->CreateStatus(NX_OUT_OF_MEMORY, FROZEN_ABI_EP_NAME ": no memory");
  ep->base.version = NXRT_EP_API_VERSION;
  ep->base.GetName = EpGetName;
  ep->base.GetCapability = EpGetCapability;
  ep->base.GetKernelRegistry = EpGetKernelRegistry;
  ep->factory = factory;
  if (args->logger != NULL) {
    char message[160];
    snprintf(message, sizeof message, "%s: EP created (built against ABI %d, host ABI %u)",
             FROZEN_ABI_EP_NAME, NXRT_EP_API_VERSION, (unsigned)host->version);
    host->Log(args->logger, NX_LOG_VERBOSE, message);
  }
  *out = &ep->base;
  return NULL;
}

static void FactoryReleaseEp(NxEpFactory* self, NxEp* ep) {
  (void)self;
  free(ep);
}

static void FreeFactory(FrozenFactory* factory) {
  if (factory->registry != NULL) factory->host->ReleaseKernelRegistry(factory->registry);
  free(factory);
}

/* ---- Library entry points ---------------------------------------------------------------- */

NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char* registration_name,
                                            NxEpFactory** factories, size_t max_factories,
                                            size_t* num_factories) {
  (void)registration_name;
  if (num_factories != NULL) *num_factories = 0;
  /* Without a host table no error can be reported: "no factory" makes the host refuse us. */
  if (host == NULL || host->version < 1 || host->CreateStatus == NULL) return NULL;
  if (factories == NULL || num_factories == NULL || max_factories < 1)
    return host->CreateStatus(NX_INVALID_ARGUMENT, FROZEN_ABI_EP_NAME ": no room for a factory");
  FrozenFactory* factory = (FrozenFactory*)calloc(1, sizeof *factory);
  if (factory == NULL)
    return host->CreateStatus(NX_OUT_OF_MEMORY, FROZEN_ABI_EP_NAME ": no memory");
  factory->base.version = NXRT_EP_API_VERSION;
  factory->base.GetName = FactoryGetName;
  factory->base.GetVendor = FactoryGetVendor;
  factory->base.GetVersion = FactoryGetVersion;
  factory->base.GetVendorId = FactoryGetVendorId;
  factory->base.CreateEp = FactoryCreateEp;
  factory->base.ReleaseEp = FactoryReleaseEp;
  factory->host = host;

  NxStatus* status = host->CreateKernelRegistry(&factory->registry);
  if (status != NULL) {
    factory->registry = NULL;
    FreeFactory(factory);
    return status;
  }
  /* T = float for every input and output (-1 = all of them); copied by KernelRegistry_Add. */
  const NxElementType float_only[] = {NX_TYPE_FLOAT};
  const int32_t every[] = {-1};
  const NxTypeConstraint constraint = {.name = "T",
                                       .allowed_types = float_only,
                                       .num_allowed_types = 1,
                                       .input_indices = every,
                                       .num_input_indices = 1,
                                       .output_indices = every,
                                       .num_output_indices = 1};
  for (int op = 0; op < FROZEN_OP_COUNT; ++op) {
    factory->ops[op].factory = factory;
    factory->ops[op].op = (enum FrozenOp)op;
    const NxKernelDef def = {.version = NXRT_EP_API_VERSION,
                             .op_type = kOpTypes[op],
                             .domain = "",
                             .since_version_start = kSinceVersions[op],
                             .since_version_end = INT32_MAX,
                             .type_constraints = &constraint,
                             .num_type_constraints = 1,
                             .create = KernelCreate,
                             .create_state = &factory->ops[op]};
    status = host->KernelRegistry_Add(factory->registry, &def);
    if (status != NULL) {
      FreeFactory(factory);
      return status;
    }
  }
  factories[0] = &factory->base;
  *num_factories = 1;
  return NULL;
}

NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  if (factory != NULL) FreeFactory((FrozenFactory*)factory);
}
