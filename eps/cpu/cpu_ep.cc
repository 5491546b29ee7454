// The default CPU execution provider: a plugin built only from include/nxrt/. One factory; one
// EP per session; every node runs through the kernel registry built once per library load.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "common/background_work.h"
#include "kernels/all_kernels.h"
#include "kernels/linalg/dnnl_util.h"

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

// oneDNN generates its sgemm kernels on the first call, about 30 ms (more than onnxruntime's
// whole creation of a small model). A thread of the library does it while the application loads
// its model and creates its session (the host loads the CPU EP before it reads a model); a first
// run that calls sgemm before it is done waits inside oneDNN for the rest.
//
// The thread must be finished before the process tears oneDNN down: oneDNN registers the
// destructors of the kernels it generates (atexit order: last registered, first run), so a
// process that exits right after loading the library without releasing its env (a fuzzer, an
// interpreter at exit) destroyed kernels under the running generator (3 crashes in 50 such
// exits). exit() runs the exiting thread's thread_local destructors before any atexit handler,
// so a thread_local guard in the thread that loaded the library joins first; releasing the
// factory joins too. What remains: a process ended within those 30 ms by a thread that never
// loaded the library, with the env still alive (an atexit handler of ours would run after
// oneDNN's, too late).
class SgemmWarmUp {
 public:
  static void Start() {
    std::lock_guard lock(mutex_);
    if (thread_ != nullptr) return;
    // Counted from here, not from inside the thread, so that a session created right after
    // the library loads already sees it (common/background_work.h).
    BackgroundWork::Begin();
    try {
      thread_ = new std::thread([] {
        try {
          linalg::WarmUpSgemm();
        } catch (...) {  // the first kernel that calls sgemm reports the error
        }
        BackgroundWork::End();
      });
    } catch (const std::system_error&) {  // no thread to spare: the first sgemm call does it
      BackgroundWork::End();
      return;
    }
    thread_local JoinAtThreadExit guard;
  }

  static void Join() noexcept {
    std::lock_guard lock(mutex_);
    if (thread_ != nullptr && thread_->joinable()) thread_->join();
  }

 private:
  struct JoinAtThreadExit {
    ~JoinAtThreadExit() { Join(); }
  };
  // Never deleted: a std::thread destroyed while joinable would terminate the process, and
  // joined it is only a handle.
  static inline std::mutex mutex_;
  static inline std::thread* thread_ = nullptr;
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
  SgemmWarmUp::Start();
  factories[0] = &factory.release()->base;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  auto* cpu = reinterpret_cast<nxrt::cpu::CpuFactory*>(factory);
  nxrt::cpu::SgemmWarmUp::Join();
  if (cpu->registry) nxrt::ep::Host().ReleaseKernelRegistry(cpu->registry);
  delete cpu;
}
