// "GenericGpu" EP for the device-selection tests, written with the C++ SDK: a vendor-neutral EP
// (vendor id 0) that supports every real GPU, whoever made it, and computes in host memory.
// Beside ExampleGpu (NVIDIA's own EP) it shows how policies rank a vendor's EP against a
// generic one on the same GPU.
//
// EP metadata: none, so the host's defaults apply, unless NXRT_TEST_GENERIC_GPU_HINTS is set
// (at registration) to "perf=N,power=M" (either part may be left out): then every EP device gets
// performance_hint = N and power_hint = M, to show that hints an EP declares change the policy's
// choice. A malformed value fails the registration.
//
// Kernels (float): Add (numpy broadcasting), Relu.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace nxrt::ep;

constexpr const char* kEpName = "GenericGpu";
NxKernelRegistry* g_registry = nullptr;

// Add with broadcasting, one flat output index at a time: slow and short, fine for tests.
class AddKernel : public Kernel {
 public:
  explicit AddKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0), b = ctx.input(1);
    const auto sa = a.shape(), sb = b.shape();
    const size_t rank = std::max(sa.size(), sb.size());
    std::vector<int64_t> dims(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t da = i < sa.size() ? sa[sa.size() - 1 - i] : 1;
      const int64_t db = i < sb.size() ? sb[sb.size() - 1 - i] : 1;
      NXRT_EP_ENFORCE(da == db || da == 1 || db == 1, "GenericGpu Add: shapes do not broadcast");
      dims[rank - 1 - i] = da == 1 ? db : da;
    }
    Tensor y = ctx.output(0, dims);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    for (size_t flat = 0; flat < y.size(); ++flat) {
      // Split the output index into coordinates (last dimension fastest) and map each input.
      size_t rest = flat, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
      for (size_t d = 0; d < rank; ++d) {
        const size_t coord = rest % dims[rank - 1 - d];
        rest /= dims[rank - 1 - d];
        if (d < sa.size()) {
          const auto n = static_cast<size_t>(sa[sa.size() - 1 - d]);
          if (n != 1) ia += coord * stride_a;
          stride_a *= n;
        }
        if (d < sb.size()) {
          const auto n = static_cast<size_t>(sb[sb.size() - 1 - d]);
          if (n != 1) ib += coord * stride_b;
          stride_b *= n;
        }
      }
      py[flat] = pa[ia] + pb[ib];
    }
  }
};

class ReluKernel : public Kernel {
 public:
  explicit ReluKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape());
    for (size_t i = 0; i < x.size(); ++i) {
      const float v = x.data<float>()[i];
      y.data<float>()[i] = v < 0.0f ? 0.0f : v;
    }
  }
};

// Parses NXRT_TEST_GENERIC_GPU_HINTS ("perf=N,power=M") into EP metadata.
KeyValues HintsFromEnvironment() {
  KeyValues hints;
  const char* env = std::getenv("NXRT_TEST_GENERIC_GPU_HINTS");
  if (env == nullptr || *env == '\0') return hints;
  std::string_view rest = env;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? std::string_view()
                                                         : item.substr(eq + 1));
    const bool number =
        !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    if (key == "perf" && number)
      hints.Set("performance_hint", value);
    else if (key == "power" && number)
      hints.Set("power_hint", value);
    else
      Fail(NX_INVALID_ARGUMENT, "GenericGpu: bad NXRT_TEST_GENERIC_GPU_HINTS '" + std::string(env) +
                                    "' (want perf=N,power=M)");
  }
  return hints;
}

NxStatus* GetSupportedDevices(NxEpFactory*, const NxHardwareDevice* const* devices, size_t count,
                              NxEpDeviceList* supported) {
  return Guard([&] {
    const KeyValues hints = HintsFromEnvironment();
    for (size_t i = 0; i < count; ++i) {
      HardwareDeviceView device(devices[i]);
      if (device.type() == NX_DEVICE_GPU && !device.is_virtual())
        AddEpDevice(supported, device.handle(), hints);
    }
  });
}

struct GenericEp {
  NxEp base;
};

NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp** out) {
  return Guard([&] {
    auto ep = std::make_unique<GenericEp>();
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
  if (host->version < 3) return host->CreateStatus(NX_INVALID_PLUGIN, "GenericGpu needs ABI 3");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&g_registry));
    const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
    KernelDefBuilder("Add")
        .Versions(7)
        .Constraint("T", f32, {0, 1}, {0})
        .Build<AddKernel>(g_registry);
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
  f->ReleaseEp = [](NxEpFactory*, NxEp* ep) { delete reinterpret_cast<GenericEp*>(ep); };
  f->GetSupportedDevices = &GetSupportedDevices;
  factories[0] = f;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  if (g_registry != nullptr) Host().ReleaseKernelRegistry(g_registry);
  g_registry = nullptr;
  delete factory;
}
