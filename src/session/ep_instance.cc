#include "session/ep_instance.h"

#include "base/error.h"
#include "plugins/host_objects.h"
#include "session/env.h"

namespace nxrt {

EpInstance::EpInstance(Env& env, EpFactory& factory, std::vector<const NxEpDevice*> devices,
                       const NxConfig* config, const NxLogger* logger)
    : env_(env), factory_(factory), name_(factory.name), devices_(std::move(devices)) {
  NxEpCreateArgs args{};
  args.version = NXRT_EP_API_VERSION;
  args.session_config = config;
  args.logger = logger;
  args.devices = devices_.data();
  args.num_devices = devices_.size();
  ThrowIfStatus(factory.raw->CreateEp(factory.raw, &args, &ep_),
                "EP '" + name_ + "' CreateEp failed");
  NXRT_CHECK(ep_ != nullptr, NX_INVALID_PLUGIN, "EP '" + name_ + "' CreateEp returned no EP");
  env_.AddUse(factory.library);
  try {
    NXRT_CHECK(ep_->version >= 1 && ep_->version <= NXRT_EP_API_VERSION, NX_INVALID_PLUGIN,
               "EP '" + name_ + "' has unsupported ABI version " + std::to_string(ep_->version));
    if (ep_->GetKernelRegistry != nullptr) {
      const NxKernelRegistry* reg = nullptr;
      ThrowIfStatus(ep_->GetKernelRegistry(ep_, &reg),
                    "EP '" + name_ + "' GetKernelRegistry failed");
      registry_ = reg;
    }
  } catch (...) {
    factory_.raw->ReleaseEp(factory_.raw, ep_);
    env_.ReleaseUse(factory_.library);
    throw;
  }
}

EpInstance::~EpInstance() {
  factory_.raw->ReleaseEp(factory_.raw, ep_);
  env_.ReleaseUse(factory_.library);
}

}  // namespace nxrt
