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

bool EpInstance::Statistic(const std::string& key, int64_t* value) const {
  if (ep_->version < 11 || ep_->GetStatistic == nullptr) return false;
  int64_t v = 0;
  try {
    ThrowIfStatus(ep_->GetStatistic(ep_, key.c_str(), &v),
                  "EP '" + name_ + "' GetStatistic(\"" + key + "\")");
  } catch (const Error& e) {
    if (e.code() == NX_NOT_FOUND) return false;
    throw;
  }
  *value = v;
  return true;
}

EpInstance::~EpInstance() {
  factory_.raw->ReleaseEp(factory_.raw, ep_);
  env_.ReleaseUse(factory_.library);
}

void EpInstance::OnRunStart() const {
  if (ep_->version < 15 || ep_->OnRunStart == nullptr) return;
  ThrowIfStatus(ep_->OnRunStart(ep_), "EP '" + name_ + "' OnRunStart failed");
}

void EpInstance::OnRunEnd(bool failed) const {
  if (ep_->version < 15 || ep_->OnRunEnd == nullptr) return;
  ThrowIfStatus(ep_->OnRunEnd(ep_, failed), "EP '" + name_ + "' OnRunEnd failed");
}

bool EpInstance::PrefersChannelsLast(const std::string& domain, const std::string& op_type) const {
  if (ep_->version < 15 || ep_->PrefersChannelsLast == nullptr) return false;
  bool yes = false;
  ThrowIfStatus(ep_->PrefersChannelsLast(ep_, domain.c_str(), op_type.c_str(), &yes),
                "EP '" + name_ + "' PrefersChannelsLast(" + op_type + ") failed");
  return yes;
}

}  // namespace nxrt
