// The default CPU execution provider: a plugin built only from include/nxrt/. One factory; one
// EP per session. Nodes run through the kernel registry built once per library load, except
// connected runs of convolutions, pooling and activations, which the EP claims as fused groups
// and compiles to keep their activations in a channel-blocked layout (blocked/).
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "blocked/blocked_capability.h"
#include "blocked/blocked_program.h"
#include "common/cpu_features.h"
#include "kernels/all_kernels.h"
#include "kernels/linalg/primitive_audit.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu {
namespace {

constexpr const char* kEpName = "CPU";
constexpr const char* kVendor = "nxrt";
constexpr const char* kVersion = "0.1.0";

struct CpuEp {
  NxEp base;  // first member
  const NxKernelRegistry* registry;
  // Blocked-layout groups: off (0), or the channels per block (8 or 16).
  int block = 0;
  bool fail_groups = false;  // tests: every group fails to compile
  int threads = 1;
  bool winograd = true;  // "ep.cpu.winograd": "0" keeps 3x3 convolutions on oneDNN's kernels
  blocked::FailedGroups failed;
  // Every oneDNN primitive the session's kernels create (kernels hold it too: they may outlive
  // the EP by a little during teardown).
  std::shared_ptr<linalg::PrimitiveAudit> audit;
};

// "ep.cpu.blocked_layout": "1" (default) blocks by the ISA's vector (8 floats on AVX2, 16 on
// AVX-512), "0" runs every node on its own kernel, "8" / "16" force a block size (tests),
// "fail-for-tests" claims the groups but fails to compile them (tests of the fallback).
// Optimization level 0 turns the groups off too.
int BlockSize(const NxConfig* config) {
  const NxHostApi& host = ep::Host();
  auto get = [&](const char* key) -> std::string {
    const char* v = config ? host.Config_Get(config, key) : nullptr;
    return v ? v : "";
  };
  if (get("session.optimization_level") == "0") return 0;
  const std::string v = get("ep.cpu.blocked_layout");
  if (v == "0") return 0;
  if (v == "8") return 8;
  if (v == "16" || v == "fail-for-tests") return 16;
  NXRT_EP_ENFORCE(v.empty() || v == "1",
                  "ep.cpu.blocked_layout must be 0, 1, 8, 16 or fail-for-tests, got '" + v + "'");
  return IsaFromOption(get("ep.cpu.isa")) == Isa::kAvx512 ? 16 : 8;
}

int SessionThreads(const NxConfig* config) {
  const char* v = config ? ep::Host().Config_Get(config, "session.intra_op_num_threads") : nullptr;
  return v ? std::max(1, std::atoi(v)) : 1;
}

struct CpuFactory {
  NxEpFactory base;  // first member
  NxKernelRegistry* registry = nullptr;
};

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<CpuEp*>(self)->registry;
  return nullptr;
}

NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  return ep::Guard([&] {
    auto* ep = reinterpret_cast<CpuEp*>(self);
    blocked::ClaimNodes(graph, ep->registry, capability, ep->block, ep->failed);
  });
}

NxStatus* EpGetStatistic(const NxEp* self, const char* key, int64_t* value) {
  const auto* ep = reinterpret_cast<const CpuEp*>(self);
  const std::string k = key != nullptr ? key : "";
  if (k == "primitives") {
    *value = ep->audit->primitives();
  } else if (k == "reference_primitives") {
    *value = ep->audit->reference_primitives();
  } else {
    return ep::Host().CreateStatus(NX_NOT_FOUND,
                                   ("the CPU EP keeps no statistic '" + k + "'").c_str());
  }
  return nullptr;
}

NxStatus* EpCompileGroup(NxEp* self, const NxGraph* group, const char* fused_name,
                         NxKernel** kernel) {
  auto* ep = reinterpret_cast<CpuEp*>(self);
  NxStatus* status = ep::Guard([&] {
    blocked::BlockedOptions options;
    options.block = ep->block;
    options.threads = ep->threads;
    options.winograd = ep->winograd;
    options.audit = ep->audit;
    options.name = fused_name != nullptr ? fused_name : "";
    if (ep->fail_groups) ep::Fail(NX_NOT_IMPLEMENTED, "blocked groups fail (fail-for-tests)");
    *kernel = ep::BoxKernel(blocked::CompileBlockedGroup(group, options));
  });
  if (status != nullptr) {  // the host places the graph again: claim these nodes one by one
    std::vector<const NxNode*> nodes;
    for (size_t i = 0; i < ep::Host().Graph_GetNodeCount(group); ++i)
      nodes.push_back(ep::Host().Graph_GetNode(group, i));
    ep->failed.Add(blocked::GroupKey(nodes));
  }
  return status;
}

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return kVendor; }
const char* FactoryGetVersion(const NxEpFactory*) { return kVersion; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return 0; }

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  return ep::Guard([&] {
    auto ep = std::make_unique<CpuEp>();
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->base.CompileGroup = &EpCompileGroup;
    ep->base.GetStatistic = &EpGetStatistic;
    const NxLogger* logger = args != nullptr ? args->logger : nullptr;
    ep->audit = std::make_shared<linalg::PrimitiveAudit>([logger](const std::string& message) {
      if (logger != nullptr) ep::Host().Log(logger, NX_LOG_WARNING, message.c_str());
    });
    ep->registry = reinterpret_cast<CpuFactory*>(self)->registry;
    const NxConfig* config = args != nullptr ? args->session_config : nullptr;
    ep->block = BlockSize(config);
    const char* layout = config ? ep::Host().Config_Get(config, "ep.cpu.blocked_layout") : nullptr;
    ep->fail_groups = layout != nullptr && std::string(layout) == "fail-for-tests";
    ep->threads = SessionThreads(config);
    const char* winograd = config ? ep::Host().Config_Get(config, "ep.cpu.winograd") : nullptr;
    if (winograd != nullptr) {
      const std::string w = winograd;
      NXRT_EP_ENFORCE(w == "0" || w == "1", "ep.cpu.winograd must be 0 or 1, got '" + w + "'");
      ep->winograd = w == "1";
    }
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<CpuEp*>(ep); }

}  // namespace

std::shared_ptr<linalg::PrimitiveAudit> SessionAudit(const NxEp* ep) {
  // Only an EP this library made is a CpuEp (its GetName is ours).
  if (ep == nullptr || ep->GetName != &EpGetName) return nullptr;
  return reinterpret_cast<const CpuEp*>(ep)->audit;
}

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
