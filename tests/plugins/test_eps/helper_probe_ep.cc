// "HelperProbe" EP for the control-flow helper ownership tests, written with the C++ SDK. It
// computes in host memory and registers only the host's Loop and Scan kernels, with helpers that
// count what happens to them. Its create functions also make the calls the host must refuse, to
// check that a refused helper stays the EP's:
//   - CreateLoopKernel with a helper lacking ConcatOutput (refused: incomplete helper);
//   - CreateScanKernel on a Loop node, and CreateLoopKernel on a Scan node (refused: wrong op).
// The EP releases refused helpers itself; if the host had released one too, the "released by
// host" count shows it (and AddressSanitizer would see the double free).
//
// Test hooks (dlsym): HelperProbe_Counts, HelperProbe_SetFailConcat (ConcatOutput returns an
// error while set, to test how a failing helper is reported).
#include <atomic>
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

namespace {

using namespace nxrt::ep;

constexpr const char* kEpName = "HelperProbe";
NxKernelRegistry* g_registry = nullptr;

std::atomic<size_t> g_taken{0};               // helpers the host accepted
std::atomic<size_t> g_released{0};            // ... and released (once each, at kernel release)
std::atomic<size_t> g_refused{0};             // Create*Kernel calls refused, as they should be
std::atomic<size_t> g_refused_released{0};    // refused helpers the host released anyway (a bug)
std::atomic<size_t> g_unexpected_success{0};  // calls the host should have refused but accepted
std::atomic<size_t> g_concat_calls{0};
std::atomic<bool> g_fail_concat{false};

// A helper records whether the host took it; Release counts accordingly and frees it.
struct LoopProbe {
  NxLoopHelper base;
  bool taken = false;     // the host accepted it
  bool ep_frees = false;  // refused: the EP releases it itself
};
struct ScanProbe {
  NxScanHelper base;
  bool taken = false;
  bool ep_frees = false;
};

// Release of a helper: by the host once it took it, by the EP after a refusal; the host
// releasing a helper it refused is the bug this EP looks for.
template <class Probe>
void CountRelease(Probe* probe) {
  if (probe->taken)
    ++g_released;
  else if (!probe->ep_frees)
    ++g_refused_released;
  delete probe;
}

NxStatus* Concat(const NxValue* const* parts, size_t count, NxValue* output) {
  return Guard([&] {
    ++g_concat_calls;
    if (g_fail_concat) Fail(NX_RUNTIME_ERROR, "HelperProbe ConcatOutput failed on purpose");
    char* dst = static_cast<char*>(Host().Value_GetData(output));
    size_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      ConstTensor part(parts[i]);
      if (part.bytes()) std::memcpy(dst + offset, part.raw(), part.bytes());
      offset += part.bytes();
    }
  });
}

LoopProbe* NewLoopProbe(bool complete) {
  auto* p = new LoopProbe{};
  p->base.version = NXRT_EP_API_VERSION;
  if (complete) {
    p->base.ConcatOutput = [](NxLoopHelper*, const NxValue* const* parts, size_t count,
                              NxValue* out) { return Concat(parts, count, out); };
  }
  p->base.Release = [](NxLoopHelper* self) { CountRelease(reinterpret_cast<LoopProbe*>(self)); };
  return p;
}

ScanProbe* NewScanProbe() {
  auto* p = new ScanProbe{};
  p->base.version = NXRT_EP_API_VERSION;
  p->base.Transpose = [](NxScanHelper*, const size_t*, size_t, const NxValue*, NxValue*) {
    return Host().CreateStatus(NX_NOT_IMPLEMENTED, "HelperProbe does not transpose");
  };
  p->base.Release = [](NxScanHelper* self) { CountRelease(reinterpret_cast<ScanProbe*>(self)); };
  p->base.ConcatOutput = [](NxScanHelper*, const NxValue* const* parts, size_t count,
                            NxValue* out) { return Concat(parts, count, out); };
  return p;
}

// A call the host must refuse: the helper stays ours, so we release it (not marked taken).
template <class Probe>
void ExpectRefused(NxStatus* status, NxKernel* kernel, Probe* probe) {
  if (status == nullptr) {
    ++g_unexpected_success;
    probe->taken = true;  // the host owns it now and releases it with the kernel
    kernel->Release(kernel);
    return;
  }
  Host().ReleaseStatus(status);
  ++g_refused;
  probe->ep_frees = true;
  probe->base.Release(&probe->base);
}

// The real call: on success the host owns the helper.
template <class Probe>
NxStatus* Take(NxStatus* status, Probe* probe) {
  if (status != nullptr) {
    probe->taken = false;
    probe->ep_frees = true;
    probe->base.Release(&probe->base);
    return status;
  }
  ++g_taken;
  return nullptr;
}

NxStatus* CreateLoop(void*, const NxKernelInfo* info, NxKernel** out) {
  NxKernel* k = nullptr;
  LoopProbe* incomplete = NewLoopProbe(/*complete=*/false);
  ExpectRefused(Host().CreateLoopKernel(info, &incomplete->base, &k), k, incomplete);
  ScanProbe* wrong_op = NewScanProbe();
  ExpectRefused(Host().CreateScanKernel(info, &wrong_op->base, &k), k, wrong_op);
  LoopProbe* probe = NewLoopProbe(/*complete=*/true);
  probe->taken = true;  // set before the call: Release may only come after success
  return Take(Host().CreateLoopKernel(info, &probe->base, out), probe);
}

NxStatus* CreateScan(void*, const NxKernelInfo* info, NxKernel** out) {
  NxKernel* k = nullptr;
  LoopProbe* wrong_op = NewLoopProbe(/*complete=*/true);
  ExpectRefused(Host().CreateLoopKernel(info, &wrong_op->base, &k), k, wrong_op);
  ScanProbe* probe = NewScanProbe();
  probe->taken = true;
  return Take(Host().CreateScanKernel(info, &probe->base, out), probe);
}

// Identity (any tensor) so Loop bodies can pass their condition through on this EP.
class Identity : public Kernel {
 public:
  explicit Identity(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape());
    if (x.bytes() && y.raw() != x.raw()) std::memcpy(y.mutable_raw(), x.raw(), x.bytes());
  }
};

struct ProbeEp {
  NxEp base;
};

NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp** out) {
  return Guard([&] {
    auto* ep = new ProbeEp{};
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = [](const NxEp*) { return kEpName; };
    ep->base.GetKernelRegistry = [](NxEp*, const NxKernelRegistry** registry) -> NxStatus* {
      *registry = g_registry;
      return nullptr;
    };
    *out = &ep->base;
  });
}

}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  if (host == nullptr) return nullptr;
  if (host->version < 5) return host->CreateStatus(NX_INVALID_PLUGIN, "HelperProbe needs ABI 5");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&g_registry));
    KernelDefBuilder("Loop").Versions(1).HostInput(0).HostInput(1).BuildRaw(g_registry, &CreateLoop,
                                                                            nullptr);
    KernelDefBuilder("Scan").Versions(9).BuildRaw(g_registry, &CreateScan, nullptr);
    KernelDefBuilder("Identity").Versions(1).Alias(0, 0).Build<Identity>(g_registry);
  });
  if (status != nullptr) {
    if (g_registry != nullptr) host->ReleaseKernelRegistry(g_registry);
    g_registry = nullptr;
    return status;
  }
  auto* f = new NxEpFactory{};
  f->version = NXRT_EP_API_VERSION;
  f->GetName = [](const NxEpFactory*) { return kEpName; };
  f->GetVendor = [](const NxEpFactory*) { return "nxrt tests"; };
  f->GetVersion = [](const NxEpFactory*) { return "1.0.0"; };
  f->GetVendorId = [](const NxEpFactory*) -> uint32_t { return 0; };
  f->CreateEp = &CreateEp;
  f->ReleaseEp = [](NxEpFactory*, NxEp* ep) { delete reinterpret_cast<ProbeEp*>(ep); };
  factories[0] = f;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  if (g_registry != nullptr) Host().ReleaseKernelRegistry(g_registry);
  g_registry = nullptr;
  delete factory;
}

// taken, released, refused, refused-but-released-by-host, unexpected successes, ConcatOutput
// calls.
extern "C" NXRT_EXPORT void HelperProbe_Counts(size_t out[6]) {
  out[0] = g_taken;
  out[1] = g_released;
  out[2] = g_refused;
  out[3] = g_refused_released;
  out[4] = g_unexpected_success;
  out[5] = g_concat_calls;
}

extern "C" NXRT_EXPORT void HelperProbe_SetFailConcat(bool fail) { g_fail_concat = fail; }
