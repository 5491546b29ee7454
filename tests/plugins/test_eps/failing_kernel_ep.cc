// "Misbehaving" EP for error-path tests, written against the raw C ABI. Its kernels misbehave
// only when the first input element is negative, so the same session can then run clean inputs:
//   Relu -> returns an error status;  Abs -> allocates output 0 twice;  Neg -> allocates the
//   output as int32 although the model declares float.  Otherwise they compute correctly.
#include <cstring>
#include <new>

#include <nxrt/nxrt_ep_api.h>

namespace {

// Written as an ABI version 1 plugin (no pre-packing, memory or definition extras): the host must
// read only the members version 1 had.
constexpr uint32_t kAbiVersion1 = 1;

const NxHostApi* g_host = nullptr;
NxKernelRegistry* g_registry = nullptr;

enum class Op { kRelu, kAbs, kNeg };

struct TestKernel {
  NxKernel base;
  Op op;
};

NxStatus* Compute(NxKernel* self, NxKernelContext* ctx) {
  Op op = reinterpret_cast<TestKernel*>(self)->op;
  const NxValue* x = g_host->KernelContext_GetInput(ctx, 0);
  const int64_t* dims = nullptr;
  size_t rank = 0;
  g_host->Value_GetShape(x, &dims, &rank);
  size_t n = g_host->Value_GetElementCount(x);
  const float* in = static_cast<const float*>(g_host->Value_GetData(x));
  bool misbehave = n > 0 && in[0] < 0;
  if (misbehave && op == Op::kRelu) return g_host->CreateStatus(NX_RUNTIME_ERROR, "Relu kernel failed on purpose");
  NxElementType type = misbehave && op == Op::kNeg ? NX_TYPE_INT32 : NX_TYPE_FLOAT;
  NxValue* y = nullptr;
  if (NxStatus* s = g_host->KernelContext_AllocateOutput(ctx, 0, type, dims, rank, &y)) return s;
  if (misbehave && op == Op::kAbs) {
    NxValue* again = nullptr;
    if (NxStatus* s = g_host->KernelContext_AllocateOutput(ctx, 0, type, dims, rank, &again)) return s;
  }
  float* out = static_cast<float*>(g_host->Value_GetData(y));
  for (size_t i = 0; i < n; ++i) {
    float v = in[i];
    out[i] = op == Op::kRelu ? (v > 0 ? v : 0) : op == Op::kAbs ? (v < 0 ? -v : v) : -v;
  }
  return nullptr;
}

void Release(NxKernel* self) { delete reinterpret_cast<TestKernel*>(self); }

NxStatus* Create(void* state, const NxKernelInfo*, NxKernel** out) {
  auto* k = new (std::nothrow) TestKernel{{kAbiVersion1, Compute, Release}, *static_cast<Op*>(state)};
  if (!k) return g_host->CreateStatus(NX_OUT_OF_MEMORY, "out of memory");
  *out = &k->base;
  return nullptr;
}

Op g_ops[] = {Op::kRelu, Op::kAbs, Op::kNeg};
const char* g_names[] = {"Relu", "Abs", "Neg"};

const char* EpName(const NxEp*) { return "Misbehaving"; }
NxStatus* EpRegistry(NxEp*, const NxKernelRegistry** out) {
  *out = g_registry;
  return nullptr;
}
NxEp g_ep = {kAbiVersion1, EpName, nullptr, EpRegistry};

const char* Name(const NxEpFactory*) { return "Misbehaving"; }
const char* Vendor(const NxEpFactory*) { return "test"; }
const char* Version(const NxEpFactory*) { return "1.0.0"; }
uint32_t VendorId(const NxEpFactory*) { return 0; }
NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp** out) {
  *out = &g_ep;
  return nullptr;
}
void ReleaseEp(NxEpFactory*, NxEp*) {}
NxEpFactory g_factory = {kAbiVersion1, Name, Vendor, Version, VendorId, CreateEp, ReleaseEp};

}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*, NxEpFactory** out,
                                                       size_t max, size_t* n) {
  g_host = host;
  if (NxStatus* s = host->CreateKernelRegistry(&g_registry)) return s;
  NxElementType f32 = NX_TYPE_FLOAT;
  int32_t zero = 0;
  NxTypeConstraint c = {"T", &f32, 1, &zero, 1, nullptr, 0};
  for (int i = 0; i < 3; ++i) {
    NxKernelDef def = {kAbiVersion1, g_names[i], "", 1, 0, &c, 1, Create, &g_ops[i]};
    if (NxStatus* s = host->KernelRegistry_Add(g_registry, &def)) return s;
  }
  out[0] = &g_factory;
  *n = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory*) {
  g_host->ReleaseKernelRegistry(g_registry);
  g_registry = nullptr;
}
