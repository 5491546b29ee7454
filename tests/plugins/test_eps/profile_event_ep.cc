// "ProfileProbe" EP for the profiling tests, written with the C++ SDK: host memory, one EP
// device on the CPU (the host's default), float Relu only. When the run is profiled its Relu
// adds two events of its own through the kernel context: "probe:compute" around its loop (with
// the element count) and "probe:\"quoted\"\n" (a name that needs JSON escaping, with an
// argument that does too). It also checks the host's clock is monotonic.
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

namespace {

using namespace nxrt::ep;

constexpr const char* kEpName = "ProfileProbe";
NxKernelRegistry* g_registry = nullptr;

class ReluKernel : public Kernel {
 public:
  explicit ReluKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    const bool profiling = ctx.IsProfiling();
    const uint64_t begin = profiling ? ProfilerNowNs() : 0;
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape());
    for (size_t i = 0; i < x.size(); ++i) {
      const float v = x.data<float>()[i];
      y.data<float>()[i] = v < 0.0f ? 0.0f : v;
    }
    if (!profiling) return;
    const uint64_t end = ProfilerNowNs();
    NXRT_EP_ENFORCE(end >= begin, "ProfileProbe: the host's clock went backwards");
    ctx.AddProfileEvent("probe:compute", begin, end, {{"elements", std::to_string(x.size())}});
    ctx.AddProfileEvent("probe:\"quoted\"\n", end, end,
                        {{"note", "tab\there \\ \x01 caf\xc3\xa9"}});
  }
};

struct ProbeEp {
  NxEp base;
};

NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp** out) {
  return Guard([&] {
    auto ep = std::make_unique<ProbeEp>();
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = [](const NxEp*) { return kEpName; };
    ep->base.GetKernelRegistry = [](NxEp*, const NxKernelRegistry** registry) -> NxStatus* {
      *registry = g_registry;
      return nullptr;
    };
    // GetCapability NULL: the host claims every node the registry has a kernel for.
    *out = &ep.release()->base;
  });
}

}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  if (host == nullptr) return nullptr;
  if (host->version < 6) return host->CreateStatus(NX_INVALID_PLUGIN, "ProfileProbe needs ABI 6");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&g_registry));
    const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
    KernelDefBuilder("Relu")
        .Versions(6)
        .Constraint("T", f32, {0}, {0})
        .Build<ReluKernel>(g_registry);
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
