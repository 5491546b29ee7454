// The default CPU execution provider: a plugin built only from include/nxrt/. One factory; one
// EP per session; every node runs through the kernel registry built once per library load.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "kernels/all_kernels.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu {
namespace {

constexpr const char* kEpName = "CPU";
constexpr const char* kVendor = "nxrt";
constexpr const char* kVersion = "0.1.0";

struct CpuEp {
  NxEp base;  // first member
  const NxKernelRegistry* registry;
};

struct CpuFactory {
  NxEpFactory base;  // first member
  NxKernelRegistry* registry = nullptr;
};

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<CpuEp*>(self)->registry;
  return nullptr;
}

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return kVendor; }
const char* FactoryGetVersion(const NxEpFactory*) { return kVersion; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return 0; }

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs*, NxEp** out) {
  return ep::Guard([&] {
    auto ep = std::make_unique<CpuEp>();
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = nullptr;  // default: every node the registry has a kernel for
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->registry = reinterpret_cast<CpuFactory*>(self)->registry;
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<CpuEp*>(ep); }

}  // namespace
}  // namespace nxrt::cpu

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  using namespace nxrt::cpu;
  if (host == nullptr || host->version < 1) return nullptr;  // cannot even report an error
  nxrt::ep::SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  auto factory = std::make_unique<CpuFactory>();
  NxStatus* status = nxrt::ep::Guard([&] {
    nxrt::ep::ThrowIfError(host->CreateKernelRegistry(&factory->registry));
    RegisterAllKernels(factory->registry);
  });
  if (status != nullptr) {
    if (factory->registry) host->ReleaseKernelRegistry(factory->registry);
    return status;
  }
  factory->base.version = NXRT_EP_API_VERSION;
  factory->base.GetName = &FactoryGetName;
  factory->base.GetVendor = &FactoryGetVendor;
  factory->base.GetVersion = &FactoryGetVersion;
  factory->base.GetVendorId = &FactoryGetVendorId;
  factory->base.CreateEp = &FactoryCreateEp;
  factory->base.ReleaseEp = &FactoryReleaseEp;
  factories[0] = &factory.release()->base;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  auto* cpu = reinterpret_cast<nxrt::cpu::CpuFactory*>(factory);
  nxrt::cpu::linalg::JoinSgemmWarmUp();
  if (cpu->registry) nxrt::ep::Host().ReleaseKernelRegistry(cpu->registry);
  delete cpu;
}
