// "CapabilityProbe": an EP whose GetCapability misbehaves on request, for the fallback reasons
// the host reports when an EP's capability goes wrong. Written against the raw C ABI. It has
// one kernel (Relu, float) and its option "mode" (ep.capabilityprobe.mode) picks what
// GetCapability does:
//   "fail"       returns an error (the host treats it as "claims nothing": capability_failed)
//   "claim_all"  claims every node, also those it has no kernel for (claimed_without_kernel)
// and the hostile modes, for the host's checks of what a plugin hands back:
//   "garbage_status"   returns a status pointer the host never made
//   "unknown_code"     returns a status with code 12345
//   "remember"         claims as usual and keeps its first node's pointer ...
//   "stale_node"       ... which it then passes to Capability_AddNode for another graph
//   "garbage_compute"  claims as usual; its Relu kernel returns a garbage status pointer
//   otherwise    claims the nodes it has a kernel for
#include <nxrt/nxrt_ep_api.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

namespace {

const NxHostApi* g_host = nullptr;
NxKernelRegistry* g_registry = nullptr;

bool g_garbage_compute = false;        // set by "garbage_compute"
const NxNode* g_remembered = nullptr;  // set by "remember": a node of an earlier graph

// A pointer that is no status: the host must neither read nor free it.
NxStatus* Garbage() { return reinterpret_cast<NxStatus*>(static_cast<uintptr_t>(0xdead0000)); }

NxStatus* ReluCompute(NxKernel*, NxKernelContext* ctx) {
  if (g_garbage_compute) return Garbage();
  const NxValue* x = g_host->KernelContext_GetInput(ctx, 0);
  const int64_t* dims = nullptr;
  size_t rank = 0;
  g_host->Value_GetShape(x, &dims, &rank);
  NxValue* y = nullptr;
  if (NxStatus* s = g_host->KernelContext_AllocateOutput(ctx, 0, NX_TYPE_FLOAT, dims, rank, &y))
    return s;
  const float* in = static_cast<const float*>(g_host->Value_GetData(x));
  float* out = static_cast<float*>(g_host->Value_GetData(y));
  for (size_t i = 0, n = g_host->Value_GetElementCount(x); i < n; ++i)
    out[i] = in[i] > 0 ? in[i] : 0;
  return nullptr;
}
void ReluRelease(NxKernel* self) { delete self; }
NxStatus* ReluCreate(void*, const NxKernelInfo*, NxKernel** out) {
  auto* k = new (std::nothrow) NxKernel{};
  if (!k) return g_host->CreateStatus(NX_OUT_OF_MEMORY, "out of memory");
  k->version = NXRT_EP_API_VERSION;
  k->Compute = ReluCompute;
  k->Release = ReluRelease;
  *out = k;
  return nullptr;
}

struct ProbeEp {
  NxEp base;
  std::string mode;
};

const char* EpName(const NxEp*) { return "CapabilityProbe"; }
NxStatus* EpRegistry(NxEp*, const NxKernelRegistry** out) {
  *out = g_registry;
  return nullptr;
}
NxStatus* EpCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const std::string& mode = reinterpret_cast<ProbeEp*>(self)->mode;
  if (mode == "fail")
    return g_host->CreateStatus(NX_RUNTIME_ERROR, "capability probe failed on purpose");
  if (mode == "garbage_status") return Garbage();
  if (mode == "unknown_code")
    return g_host->CreateStatus(static_cast<NxStatusCode>(12345), "a code from the future");
  if (mode == "stale_node") return g_host->Capability_AddNode(capability, g_remembered);
  if (mode == "remember" && g_host->Graph_GetNodeCount(graph) > 0)
    g_remembered = g_host->Graph_GetNode(graph, 0);
  for (size_t i = 0, n = g_host->Graph_GetNodeCount(graph); i < n; ++i) {
    const NxNode* node = g_host->Graph_GetNode(graph, i);
    if (mode != "claim_all" && !g_host->KernelRegistry_HasKernel(g_registry, node, nullptr))
      continue;
    if (NxStatus* s = g_host->Capability_AddNode(capability, node)) return s;
  }
  return nullptr;
}

const char* Name(const NxEpFactory*) { return "CapabilityProbe"; }
const char* Vendor(const NxEpFactory*) { return "test"; }
const char* Version(const NxEpFactory*) { return "1.0.0"; }
uint32_t VendorId(const NxEpFactory*) { return 0; }
NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs* args, NxEp** out) {
  auto* ep = new (std::nothrow) ProbeEp{};
  if (!ep) return g_host->CreateStatus(NX_OUT_OF_MEMORY, "out of memory");
  ep->base.version = NXRT_EP_API_VERSION;
  ep->base.GetName = EpName;
  ep->base.GetCapability = EpCapability;
  ep->base.GetKernelRegistry = EpRegistry;
  const char* mode = g_host->Config_Get(args->session_config, "ep.capabilityprobe.mode");
  ep->mode = mode ? mode : "";
  g_garbage_compute = ep->mode == "garbage_compute";
  *out = &ep->base;
  return nullptr;
}
void ReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<ProbeEp*>(ep); }
NxEpFactory g_factory{};

}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** out, size_t max, size_t* n) {
  g_host = host;
  if (max < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  if (NxStatus* s = host->CreateKernelRegistry(&g_registry)) return s;
  NxElementType f32 = NX_TYPE_FLOAT;
  int32_t zero = 0;
  NxTypeConstraint c{"T", &f32, 1, &zero, 1, nullptr, 0};
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = "Relu";
  def.domain = "";
  def.since_version_start = 6;
  def.type_constraints = &c;
  def.num_type_constraints = 1;
  def.create = ReluCreate;
  if (NxStatus* s = host->KernelRegistry_Add(g_registry, &def)) return s;
  g_factory.version = NXRT_EP_API_VERSION;
  g_factory.GetName = Name;
  g_factory.GetVendor = Vendor;
  g_factory.GetVersion = Version;
  g_factory.GetVendorId = VendorId;
  g_factory.CreateEp = CreateEp;
  g_factory.ReleaseEp = ReleaseEp;
  out[0] = &g_factory;
  *n = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory*) {
  g_host->ReleaseKernelRegistry(g_registry);
  g_registry = nullptr;
}
