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
 *   "ort_test.failing_devices"   GetSupportedDevices creates a device, then fails
 *   "ort_test.failing_compile"   Compile fails: the nodes fall back to the next EP
 *   "ort_test.failing_compute"   Compute fails: runs report the plugin's message
 *   "ort_test.drop_initializers" claims nodes with drop_constant_initializers set
 *   "ort_test.garbage_compute"   Compute returns a status pointer the host never made
 *   "ort_test.null_compute_info" Compile succeeds without filling its compute info
 *   "ort_test.foreign_node"      GetCapability claims a pointer that is no node of the graph
 *   "ort_test.null_ep"           CreateEp succeeds without returning an EP
 *   "ort_test.garbage_context"   Compile returns an EPContext "node" it did not make
 *   "ort_test.context_not_epcontext"  Compile returns a Relu node as its EPContext node
 *
 * Virtual devices, as onnxruntime plugins make them: when the env's configuration entries
 * (OrtEpApi::GetEnvConfigEntries, read in CreateEpFactories) say "allow_virtual_devices" = "1",
 * the factory makes two NPUs of its own (OrtEpApi::CreateHardwareDevice, metadata
 * "is_virtual" = "1" and "arch" = "t1" / "t2") and offers an EP device on each (EP metadata
 * "target" = the arch); it releases them with the factory. CreateEp fails when handed a
 * non-CPU device that is not one of them: the host must give the plugin its own pointers back.
 *
 * Its EP (OrtTestEp) claims float Add, Sub, Mul and Relu nodes, each as a group of one, and
 * computes them (Add/Sub/Mul on equal shapes, or with a one-element second input).
 *
 * Compiled models, as onnxruntime plugins write them: when the session option
 * "ep.context_enable" is "1", Compile returns one EPContext node per group (made with
 * OrtModelEditorApi::CreateNode) whose "ep_cache_context" holds the group's "program" (its op
 * and scale as text): inside the node ("ep.context_embed_mode" "1") or in a file next to
 * "ep.context_file_path" that the plugin writes itself ("0"). Its GetCapability claims the
 * EPContext nodes whose "source" is OrtTestEp, and Compile rebuilds a group from one. */
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
typedef OrtStatus* (*GetEnvConfigEntriesFn)(OrtKeyValuePairs**);
typedef const char* (*GetKeyValueFn)(const OrtKeyValuePairs*, const char*);
typedef OrtStatus* (*CreateHardwareDeviceFn)(OrtHardwareDeviceType, uint32_t, uint32_t, const char*,
                                             const OrtKeyValuePairs*, OrtHardwareDevice**);
typedef void (*ReleaseHardwareDeviceFn)(OrtHardwareDevice*);
typedef OrtStatus* (*GetCountFn)(const void*, size_t*);
typedef OrtStatus* (*GetNodesFn)(const OrtGraph*, const OrtNode**, size_t);
typedef OrtStatus* (*GetStringFn)(const void*, const char**);
typedef OrtStatus* (*GetValueInfosFn)(const OrtNode*, const OrtValueInfo**, size_t);
typedef OrtStatus* (*GetTypeInfoFn)(const OrtValueInfo*, const void**);
typedef OrtStatus* (*CastTensorInfoFn)(const void*, const void**);
typedef OrtStatus* (*GetElementTypeFn)(const void*, int*);
typedef OrtStatus* (*AddNodesToFuseFn)(OrtEpGraphSupportInfo*, const OrtNode* const*, size_t,
                                       const OrtNodeFusionOptions*);
typedef OrtStatus* (*CtxGetInputFn)(const OrtKernelContext*, size_t, const OrtValue**);
typedef OrtStatus* (*CtxGetOutputFn)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**);
typedef OrtStatus* (*GetTypeAndShapeFn)(const OrtValue*, void**);
typedef OrtStatus* (*GetDimsFn)(const void*, int64_t*, size_t);
typedef void (*ReleaseInfoFn)(void*);
typedef OrtStatus* (*GetDataFn)(const OrtValue*, const void**);
typedef OrtStatus* (*GetMutableDataFn)(OrtValue*, void**);
typedef OrtStatus* (*IsConstantFn)(const OrtValueInfo*, bool*);
typedef OrtStatus* (*GetInitializerFn)(const OrtValueInfo*, const OrtValue**);
typedef OrtStatus* (*GetConfigEntryFn)(const OrtSessionOptions*, const char*, char*, size_t*);
/* Attribute types are OrtOpAttrType values (INT 1, STRING 5). */
typedef OrtStatus* (*CreateOpAttrFn)(const char*, const void*, int, int, OrtOpAttr**);
typedef void (*ReleaseOpAttrFn)(OrtOpAttr*);
typedef OrtStatus* (*GetAttributeByNameFn)(const OrtNode*, const char*, const OrtOpAttr**);
typedef OrtStatus* (*ReadOpAttrFn)(const OrtOpAttr*, int, void*, size_t, size_t*);
typedef const OrtModelEditorApi* (*GetModelEditorApiFn)(void);
typedef OrtStatus* (*CreateNodeFn)(const char*, const char*, const char*, const char* const*,
                                   size_t, const char* const*, size_t, OrtOpAttr**, size_t,
                                   OrtNode**);
enum { ATTR_INT = 1, ATTR_STRING = 5 };

#define CALL(table, type, slot) ((type)(table)->slot)

static const OrtApi* api;
static const OrtEpApi* ep_api;
static const OrtModelEditorApi* editor_api;
static char mode[64];
/* "allow_virtual_devices" from the env's configuration entries, and the NPUs made then. */
static int allow_virtual_devices;
static OrtHardwareDevice* virtual_npus[2];
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

/* Makes the two virtual NPUs (once) and adds an EP device on each. */
static OrtStatus* AddVirtualNpus(OrtEpFactory* self, OrtEpDevice** ep_devices,
                                 size_t max_ep_devices, size_t* num_ep_devices) {
  static const char* const arch[2] = {"t1", "t2"};
  AddKeyValuePairFn add = CALL(api, AddKeyValuePairFn, AddKeyValuePair);
  for (int i = 0; i < 2 && *num_ep_devices < max_ep_devices; ++i) {
    OrtStatus* status = NULL;
    if (virtual_npus[i] == NULL) {
      OrtKeyValuePairs* hw = NULL;
      CALL(api, CreateKeyValuePairsFn, CreateKeyValuePairs)(&hw);
      add(hw, "is_virtual", "1");
      add(hw, "arch", arch[i]);
      status = CALL(ep_api, CreateHardwareDeviceFn, CreateHardwareDevice)(
          OrtHardwareDeviceType_NPU, 0x1234, 0x100 + (uint32_t)i, "nxrt tests", hw,
          &virtual_npus[i]);
      CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(hw);
      if (status != NULL) return status;
    }
    OrtKeyValuePairs* metadata = NULL;
    CALL(api, CreateKeyValuePairsFn, CreateKeyValuePairs)(&metadata);
    add(metadata, "target", arch[i]);
    status = CALL(ep_api, CreateEpDeviceFn, CreateEpDevice)(self, virtual_npus[i], metadata, NULL,
                                                            &ep_devices[*num_ep_devices]);
    CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(metadata);
    if (status != NULL) return status;
    ++*num_ep_devices;
  }
  return NULL;
}

static int IsVirtualNpu(const OrtHardwareDevice* device) {
  return device != NULL && (device == virtual_npus[0] || device == virtual_npus[1]);
}

static OrtStatus* GetSupportedDevices(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                      size_t num_devices, OrtEpDevice** ep_devices,
                                      size_t max_ep_devices, size_t* num_ep_devices) {
  *num_ep_devices = 0;
  if (allow_virtual_devices) {
    OrtStatus* status = AddVirtualNpus(self, ep_devices, max_ep_devices, num_ep_devices);
    if (status != NULL) return status;
  }
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

/* ---- The EP ---------------------------------------------------------------------------- */

enum Op { OP_ADD, OP_SUB, OP_MUL, OP_RELU, OP_NONE };

static enum Op OpOf(const char* op_type) {
  if (strcmp(op_type, "Add") == 0) return OP_ADD;
  if (strcmp(op_type, "Sub") == 0) return OP_SUB;
  if (strcmp(op_type, "Mul") == 0) return OP_MUL;
  if (strcmp(op_type, "Relu") == 0) return OP_RELU;
  return OP_NONE;
}

typedef struct TestEp {
  OrtEp base;
  float scale; /* EP option "scale" (session config "ep.orttestep.scale"), multiplies outputs */
  int write_context;       /* "ep.context_enable" = "1" */
  int embed_mode;          /* "ep.context_embed_mode" (default 1) */
  char context_path[1024]; /* "ep.context_file_path": the compiled model being written */
} TestEp;

typedef struct TestCompute {
  OrtNodeComputeInfo base;
  enum Op op;
  float scale;
  /* With drop_constant_initializers: the second input when it is an initializer, copied at
   * Compile (the host no longer passes it). */
  float* constant;
  size_t constant_count;
} TestCompute;

#define RETURN_IF(expr)                  \
  do {                                   \
    OrtStatus* status_ = (expr);         \
    if (status_ != NULL) return status_; \
  } while (0)

static const char* EpName(const OrtEp* self) {
  (void)self;
  return "OrtTestEp";
}

/* Element type of a node's first output (0 when unknown). */
static OrtStatus* OutputType(const OrtNode* node, int* type) {
  *type = 0;
  size_t n = 0;
  RETURN_IF(CALL(api, GetCountFn, Node_GetNumOutputs)(node, &n));
  if (n == 0) return NULL;
  const OrtValueInfo* outputs[8];
  if (n > 8) return NULL;
  RETURN_IF(CALL(api, GetValueInfosFn, Node_GetOutputs)(node, outputs, n));
  const void* type_info = NULL;
  const void* tensor = NULL;
  RETURN_IF(CALL(api, GetTypeInfoFn, GetValueInfoTypeInfo)(outputs[0], &type_info));
  RETURN_IF(CALL(api, CastTensorInfoFn, CastTypeInfoToTensorInfo)(type_info, &tensor));
  if (tensor == NULL) return NULL;
  return CALL(api, GetElementTypeFn, GetTensorElementType)(tensor, type);
}

/* A string attribute into `buf` (NUL-terminated); 0 when absent or too long. */
static int StringAttr(const OrtNode* node, const char* name, char* buf, size_t size) {
  const OrtOpAttr* attr = NULL;
  OrtStatus* status = CALL(api, GetAttributeByNameFn, Node_GetAttributeByName)(node, name, &attr);
  if (status != NULL) {
    CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
    return 0;
  }
  if (attr == NULL) return 0;
  size_t len = 0;
  status = CALL(api, ReadOpAttrFn, ReadOpAttr)(attr, ATTR_STRING, buf, size - 1, &len);
  if (status != NULL) {
    CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
    return 0;
  }
  buf[len] = '\0';
  return 1;
}

static int IsOurContextNode(const OrtNode* node, const char* op_type, const char* domain) {
  char source[64];
  return strcmp(op_type, "EPContext") == 0 && strcmp(domain, "com.microsoft") == 0 &&
         StringAttr(node, "source", source, sizeof source) && strcmp(source, "OrtTestEp") == 0;
}

static OrtStatus* GetCapability(OrtEp* self, const OrtGraph* graph,
                                OrtEpGraphSupportInfo* support) {
  (void)self;
  size_t n = 0;
  RETURN_IF(CALL(api, GetCountFn, Graph_GetNumNodes)(graph, &n));
  const OrtNode** nodes = calloc(n ? n : 1, sizeof *nodes);
  if (nodes == NULL) return Error("out of memory");
  OrtStatus* status = CALL(api, GetNodesFn, Graph_GetNodes)(graph, nodes, n);
  OrtNodeFusionOptions options = {NXRT_ORT_API_LEVEL, Mode("drop_initializers")};
  if (Mode("foreign_node") && n > 0) {
    static char not_a_node[64];
    const OrtNode* foreign = (const OrtNode*)not_a_node;
    free(nodes);
    return CALL(ep_api, AddNodesToFuseFn, EpGraphSupportInfo_AddNodesToFuse)(support, &foreign, 1,
                                                                             &options);
  }
  for (size_t i = 0; status == NULL && i < n; ++i) {
    const char* op_type = NULL;
    const char* domain = NULL;
    int type = 0;
    status = CALL(api, GetStringFn, Node_GetOperatorType)(nodes[i], &op_type);
    if (status == NULL) status = CALL(api, GetStringFn, Node_GetDomain)(nodes[i], &domain);
    if (status == NULL) status = OutputType(nodes[i], &type);
    int claim = status == NULL && OpOf(op_type) != OP_NONE && domain[0] == '\0' && type == 1;
    if (status == NULL && IsOurContextNode(nodes[i], op_type, domain)) claim = 1;
    if (claim)
      status = CALL(ep_api, AddNodesToFuseFn, EpGraphSupportInfo_AddNodesToFuse)(support, &nodes[i],
                                                                                 1, &options);
  }
  free(nodes);
  return status;
}

static OrtStatus* CreateState(OrtNodeComputeInfo* self, OrtNodeComputeContext* context,
                              void** state) {
  (void)context;
  *state = self;
  return NULL;
}

static void ReleaseState(OrtNodeComputeInfo* self, void* state) { (void)self, (void)state; }

/* Shape and data of input `index`. */
static OrtStatus* Input(OrtKernelContext* ctx, size_t index, int64_t* dims, size_t* rank,
                        size_t* count, const float** data) {
  const OrtValue* value = NULL;
  RETURN_IF(CALL(api, CtxGetInputFn, KernelContext_GetInput)(ctx, index, &value));
  if (value == NULL) return Error("missing input");
  void* info = NULL;
  RETURN_IF(CALL(api, GetTypeAndShapeFn, GetTensorTypeAndShape)(value, &info));
  OrtStatus* status = CALL(api, GetCountFn, GetDimensionsCount)(info, rank);
  if (status == NULL && *rank > 8) status = Error("rank above 8");
  if (status == NULL) status = CALL(api, GetDimsFn, GetDimensions)(info, dims, *rank);
  if (status == NULL) status = CALL(api, GetCountFn, GetTensorShapeElementCount)(info, count);
  CALL(api, ReleaseInfoFn, ReleaseTensorTypeAndShapeInfo)(info);
  if (status != NULL) return status;
  return CALL(api, GetDataFn, GetTensorData)(value, (const void**)data);
}

static OrtStatus* Compute(OrtNodeComputeInfo* self, void* state, OrtKernelContext* ctx) {
  (void)state;
  const TestCompute* c = (const TestCompute*)self;
  if (Mode("failing_compute")) return Error("OrtTestEp compute failed on purpose");
  if (Mode("garbage_compute")) {
    static char not_a_status[32];
    return (OrtStatus*)not_a_status;
  }
  int64_t a_dims[8], b_dims[8];
  size_t a_rank = 0, b_rank = 0, a_count = 0, b_count = 0;
  const float* a = NULL;
  const float* b = NULL;
  RETURN_IF(Input(ctx, 0, a_dims, &a_rank, &a_count, &a));
  if (c->constant != NULL) {
    size_t inputs = 0;
    RETURN_IF(CALL(api, GetCountFn, KernelContext_GetInputCount)(ctx, &inputs));
    if (inputs != 1) return Error("OrtTestEp: a dropped initializer was passed as an input");
    b = c->constant;
    b_count = c->constant_count;
  } else if (c->op != OP_RELU) {
    RETURN_IF(Input(ctx, 1, b_dims, &b_rank, &b_count, &b));
    if (b_count != a_count && b_count != 1) return Error("OrtTestEp: shapes differ");
  }
  OrtValue* out = NULL;
  RETURN_IF(CALL(api, CtxGetOutputFn, KernelContext_GetOutput)(ctx, 0, a_dims, a_rank, &out));
  float* y = NULL;
  RETURN_IF(CALL(api, GetMutableDataFn, GetTensorMutableData)(out, (void**)&y));
  for (size_t i = 0; i < a_count; ++i) {
    const float bi = b ? b[b_count == 1 ? 0 : i] : 0.0f;
    float v = 0;
    switch (c->op) {
      case OP_ADD:
        v = a[i] + bi;
        break;
      case OP_SUB:
        v = a[i] - bi;
        break;
      case OP_MUL:
        v = a[i] * bi;
        break;
      default:
        v = a[i] > 0 ? a[i] : 0;
        break;
    }
    y[i] = v * c->scale;
  }
  return NULL;
}

/* Copies the node's second input when it is a constant initializer. */
static OrtStatus* KeepConstant(const OrtNode* node, TestCompute* c) {
  const OrtValueInfo* inputs[2];
  size_t n = 0;
  RETURN_IF(CALL(api, GetCountFn, Node_GetNumInputs)(node, &n));
  if (n != 2) return Error("OrtTestEp: a binary op without two inputs");
  RETURN_IF(CALL(api, GetValueInfosFn, Node_GetInputs)(node, inputs, 2));
  bool constant = false;
  RETURN_IF(CALL(api, IsConstantFn, ValueInfo_IsConstantInitializer)(inputs[1], &constant));
  if (!constant) return NULL;
  const OrtValue* value = NULL;
  RETURN_IF(CALL(api, GetInitializerFn, ValueInfo_GetInitializerValue)(inputs[1], &value));
  void* info = NULL;
  RETURN_IF(CALL(api, GetTypeAndShapeFn, GetTensorTypeAndShape)(value, &info));
  OrtStatus* status = CALL(api, GetCountFn, GetTensorShapeElementCount)(info, &c->constant_count);
  CALL(api, ReleaseInfoFn, ReleaseTensorTypeAndShapeInfo)(info);
  if (status != NULL) return status;
  const float* data = NULL;
  RETURN_IF(CALL(api, GetDataFn, GetTensorData)(value, (const void**)&data));
  c->constant = malloc((c->constant_count ? c->constant_count : 1) * sizeof(float));
  if (c->constant == NULL) return Error("out of memory");
  memcpy(c->constant, data, c->constant_count * sizeof(float));
  return NULL;
}

/* The file an EPContext node names, next to the model that holds it (or next to the model being
 * written). */
static void SiblingPath(const char* model_path, const char* file, char* out, size_t size) {
  const char* slash = model_path ? strrchr(model_path, '/') : NULL;
  if (slash == NULL)
    snprintf(out, size, "%s", file);
  else
    snprintf(out, size, "%.*s/%s", (int)(slash - model_path), model_path, file);
}

/* Rebuilds a group from one of our EPContext nodes. */
static OrtStatus* LoadContext(const OrtGraph* graph, const OrtNode* node, TestCompute* c) {
  char program[256];
  if (!StringAttr(node, "ep_cache_context", program, sizeof program))
    return Error("OrtTestEp: EPContext node without ep_cache_context");
  int64_t embed_mode = 1;
  const OrtOpAttr* attr = NULL;
  OrtStatus* status =
      CALL(api, GetAttributeByNameFn, Node_GetAttributeByName)(node, "embed_mode", &attr);
  if (status != NULL) CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
  if (status == NULL && attr != NULL) {
    size_t len = 0;
    RETURN_IF(
        CALL(api, ReadOpAttrFn, ReadOpAttr)(attr, ATTR_INT, &embed_mode, sizeof embed_mode, &len));
  }
  if (embed_mode == 0) {
    const char* model_path = NULL;
    RETURN_IF(CALL(api, GetStringFn, Graph_GetModelPath)(graph, &model_path));
    char path[1400];
    SiblingPath(model_path, program, path, sizeof path);
    FILE* f = fopen(path, "rb");
    if (f == NULL) return Error("OrtTestEp: cannot open the EPContext file");
    size_t n = fread(program, 1, sizeof program - 1, f);
    fclose(f);
    program[n] = '\0';
  }
  char op[16];
  float scale = 0;
  if (sscanf(program, "%15s %f", op, &scale) != 2 || OpOf(op) == OP_NONE)
    return Error("OrtTestEp: EPContext program unreadable");
  c->op = OpOf(op);
  c->scale = scale;
  return NULL;
}

/* The names of a node's inputs or outputs (at most 8). */
static OrtStatus* ValueNames(const OrtNode* node, int outputs, const char** names, size_t* n) {
  const OrtValueInfo* infos[8];
  RETURN_IF(outputs ? CALL(api, GetCountFn, Node_GetNumOutputs)(node, n)
                    : CALL(api, GetCountFn, Node_GetNumInputs)(node, n));
  if (*n > 8) return Error("OrtTestEp: more than 8 values");
  RETURN_IF(outputs ? CALL(api, GetValueInfosFn, Node_GetOutputs)(node, infos, *n)
                    : CALL(api, GetValueInfosFn, Node_GetInputs)(node, infos, *n));
  for (size_t i = 0; i < *n; ++i)
    RETURN_IF(CALL(api, GetStringFn, GetValueInfoName)(infos[i], &names[i]));
  return NULL;
}

/* The EPContext node of a compiled group, as onnxruntime plugins return it from Compile. */
static OrtStatus* MakeContextNode(const TestEp* e, const OrtNode* fused, const TestCompute* c,
                                  OrtNode** out) {
  if (Mode("garbage_context")) {
    static char not_a_node[64];
    *out = (OrtNode*)not_a_node;
    return NULL;
  }
  static const char* op_names[] = {"Add", "Sub", "Mul", "Relu"};
  const char* name = NULL;
  RETURN_IF(CALL(api, GetStringFn, Node_GetName)(fused, &name));
  char program[64];
  snprintf(program, sizeof program, "%s %.9g", op_names[c->op], c->scale);
  char cache[512];
  snprintf(cache, sizeof cache, "%s", program);
  if (e->embed_mode == 0) {
    /* "<model stem>_<group>.orttest" next to the model being written. */
    const char* base = strrchr(e->context_path, '/');
    base = base ? base + 1 : e->context_path;
    const char* dot = strrchr(base, '.');
    snprintf(cache, sizeof cache, "%.*s_%s.orttest", (int)(dot ? dot - base : (long)strlen(base)),
             base, name);
    char path[1600];
    SiblingPath(e->context_path, cache, path, sizeof path);
    FILE* f = fopen(path, "wb");
    if (f == NULL) return Error("OrtTestEp: cannot write the EPContext file");
    fputs(program, f);
    fclose(f);
  }
  const char* inputs[8];
  const char* outputs[8];
  size_t num_inputs = 0, num_outputs = 0;
  RETURN_IF(ValueNames(fused, 0, inputs, &num_inputs));
  RETURN_IF(ValueNames(fused, 1, outputs, &num_outputs));
  const int64_t one = 1, embed = e->embed_mode;
  OrtOpAttr* attrs[4] = {NULL, NULL, NULL, NULL};
  CreateOpAttrFn create_attr = CALL(api, CreateOpAttrFn, CreateOpAttr);
  OrtStatus* status = create_attr("main_context", &one, 1, ATTR_INT, &attrs[0]);
  if (status == NULL) status = create_attr("embed_mode", &embed, 1, ATTR_INT, &attrs[1]);
  if (status == NULL)
    status = create_attr("ep_cache_context", cache, (int)strlen(cache), ATTR_STRING, &attrs[2]);
  if (status == NULL) status = create_attr("source", "OrtTestEp", 9, ATTR_STRING, &attrs[3]);
  const int wrong = Mode("context_not_epcontext");
  if (status == NULL)
    status = CALL(editor_api, CreateNodeFn, CreateNode)(
        wrong ? "Relu" : "EPContext", wrong ? "" : "com.microsoft", name, inputs, num_inputs,
        outputs, num_outputs, attrs, 4, out);
  for (int i = 0; i < 4; ++i) CALL(api, ReleaseOpAttrFn, ReleaseOpAttr)(attrs[i]); /* copied */
  return status;
}

static OrtStatus* Compile(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes,
                          size_t count, OrtNodeComputeInfo** infos, OrtNode** context_nodes) {
  const TestEp* e = (const TestEp*)self;
  if (Mode("failing_compile")) return Error("OrtTestEp compile failed on purpose");
  if (Mode("null_compute_info")) return NULL;
  for (size_t i = 0; i < count; ++i) {
    size_t n = 0;
    const OrtNode* node = NULL;
    const char* op_type = NULL;
    const char* domain = NULL;
    RETURN_IF(CALL(api, GetCountFn, Graph_GetNumNodes)(graphs[i], &n));
    if (n != 1) return Error("OrtTestEp compiles groups of one node");
    RETURN_IF(CALL(api, GetNodesFn, Graph_GetNodes)(graphs[i], &node, 1));
    RETURN_IF(CALL(api, GetStringFn, Node_GetOperatorType)(node, &op_type));
    RETURN_IF(CALL(api, GetStringFn, Node_GetDomain)(node, &domain));
    TestCompute* c = calloc(1, sizeof *c);
    if (c == NULL) return Error("out of memory");
    c->base.ort_version_supported = NXRT_ORT_API_LEVEL;
    c->base.CreateState = CreateState;
    c->base.Compute = Compute;
    c->base.ReleaseState = ReleaseState;
    infos[i] = &c->base;
    if (IsOurContextNode(node, op_type, domain)) {
      RETURN_IF(LoadContext(graphs[i], node, c));
      continue;
    }
    c->op = OpOf(op_type);
    c->scale = e->scale;
    if (Mode("drop_initializers") && c->op != OP_RELU) RETURN_IF(KeepConstant(node, c));
    if (e->write_context && context_nodes != NULL)
      RETURN_IF(MakeContextNode(e, fused_nodes[i], c, &context_nodes[i]));
  }
  return NULL;
}

static const char* CompatibilityInfo(OrtEp* self, const OrtGraph* graph) {
  (void)self, (void)graph;
  return "orttestep;program-v1";
}

/* A session config entry into `buf`; 0 when absent. */
static int ConfigEntry(const OrtSessionOptions* options, const char* key, char* buf, size_t size) {
  OrtStatus* status = CALL(api, GetConfigEntryFn, GetSessionConfigEntry)(options, key, buf, &size);
  if (status == NULL) return 1;
  CALL(api, ReleaseStatusFn, ReleaseStatus)(status);
  return 0;
}

static void ReleaseNodeComputeInfos(OrtEp* self, OrtNodeComputeInfo** infos, size_t count) {
  (void)self;
  for (size_t i = 0; i < count; ++i) {
    free(((TestCompute*)infos[i])->constant);
    free(infos[i]);
  }
}

static OrtStatus* CreateEp(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                           const OrtKeyValuePairs* const* metadata, size_t num_devices,
                           const OrtSessionOptions* options, const OrtLogger* logger, OrtEp** ep) {
  (void)self, (void)devices, (void)metadata, (void)logger;
  *ep = NULL;
  if (num_devices == 0) return Error("CreateEp: no device");
  for (size_t i = 0; i < num_devices; ++i) {
    if (CALL(api, HardwareDeviceTypeFn, HardwareDevice_Type)(devices[i]) !=
            OrtHardwareDeviceType_CPU &&
        !IsVirtualNpu(devices[i]))
      return Error("CreateEp was handed a hardware device this plugin did not make");
  }
  if (Mode("null_ep")) return NULL;
  TestEp* e = calloc(1, sizeof *e);
  if (e == NULL) return Error("out of memory");
  e->scale = 1.0f;
  char value[32];
  if (ConfigEntry(options, "ep.orttestep.scale", value, sizeof value))
    e->scale = strtof(value, NULL);
  e->write_context =
      ConfigEntry(options, "ep.context_enable", value, sizeof value) && strcmp(value, "1") == 0;
  e->embed_mode = 1;
  if (ConfigEntry(options, "ep.context_embed_mode", value, sizeof value))
    e->embed_mode = atoi(value);
  if (!ConfigEntry(options, "ep.context_file_path", e->context_path, sizeof e->context_path))
    e->context_path[0] = '\0';
  e->base.ort_version_supported = NXRT_ORT_API_LEVEL;
  e->base.GetName = EpName;
  e->base.GetCapability = GetCapability;
  e->base.Compile = Compile;
  e->base.ReleaseNodeComputeInfos = ReleaseNodeComputeInfos;
  e->base.GetCompiledModelCompatibilityInfo = CompatibilityInfo;
  *ep = &e->base;
  return NULL;
}

static void ReleaseEp(OrtEpFactory* self, OrtEp* ep) {
  (void)self;
  free(ep);
}

/* Our own programs run anywhere (an older "program-v0" still runs, but a recompile would do
 * better); other versions of ours are unsupported; anything else is not ours to judge. */
static OrtStatus* ValidateCompatibility(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                        size_t num_devices, const char* info,
                                        OrtCompiledModelCompatibility* result) {
  (void)self, (void)devices, (void)num_devices;
  if (info == NULL || result == NULL) return Error("ValidateCompatibility: null argument");
  *result =
      strcmp(info, "orttestep;program-v1") == 0 ? OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL
      : strcmp(info, "orttestep;program-v0") == 0
          ? OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION
      : strncmp(info, "orttestep;", 10) == 0 ? OrtCompiledModelCompatibility_EP_UNSUPPORTED
                                             : OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  return NULL;
}

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
  editor_api = CALL(api, GetModelEditorApiFn, GetModelEditorApi)();
  const char* dot = strchr(registration_name, '.');
  snprintf(mode, sizeof mode, "%s", dot ? dot + 1 : "");
  if (Mode("refuse")) return Error("registration refused on purpose");
  if (Mode("garbage_status")) {
    static char not_a_status[32];
    return (OrtStatus*)not_a_status;
  }
  if (Mode("no_factories")) return NULL;
  OrtKeyValuePairs* env_config = NULL;
  OrtStatus* status = CALL(ep_api, GetEnvConfigEntriesFn, GetEnvConfigEntries)(&env_config);
  if (status != NULL) return status;
  const char* allow = CALL(api, GetKeyValueFn, GetKeyValue)(env_config, "allow_virtual_devices");
  allow_virtual_devices = allow != NULL && strcmp(allow, "1") == 0;
  CALL(api, ReleaseKeyValuePairsFn, ReleaseKeyValuePairs)(env_config);
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
  factory.ValidateCompiledModelCompatibilityInfo = ValidateCompatibility;
  factories[0] = &factory;
  *num_factories = Mode("too_many") ? max_factories + 5 : 1;
  return NULL;
}

EXPORT OrtStatus* ReleaseEpFactory(OrtEpFactory* released) {
  if (released != &factory) return Error("ReleaseEpFactory: not this library's factory");
  for (int i = 0; i < 2; ++i) {
    CALL(ep_api, ReleaseHardwareDeviceFn, ReleaseHardwareDevice)(virtual_npus[i]);
    virtual_npus[i] = NULL;
  }
  return NULL;
}
