// One EP created for one session: the NxEp, the factory that made it and its kernel registry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/ep_library.h"
#include "plugins/kernel_registry.h"

namespace nxrt {

class Env;

class EpInstance {
 public:
  // Creates the EP through `factory` with the session configuration, for `devices` (EP devices
  // of that factory, in priority order; may be empty).
  EpInstance(Env& env, EpFactory& factory, std::vector<const NxEpDevice*> devices,
             const NxConfig* config, const NxLogger* logger);
  ~EpInstance();
  EpInstance(const EpInstance&) = delete;
  EpInstance& operator=(const EpInstance&) = delete;

  const std::string& name() const { return name_; }
  NxEp* raw() const { return ep_; }
  const KernelRegistry* registry() const { return registry_; }
  EpFactory& factory() const { return factory_; }
  // The memory the EP's kernels work in by default (null = host memory).
  const NxMemoryInfo* memory() const { return factory_.memory; }
  // The memory its kernels work in on `device` (null: its first device), ABI 12.
  const NxMemoryInfo* MemoryFor(const NxHardwareDevice* device) const {
    return factory_.MemoryFor(device != nullptr ? device : first_device());
  }
  // The hardware device of its first EP device (null when it has none).
  const NxHardwareDevice* first_device() const {
    return devices_.empty() ? nullptr : devices_.front()->device;
  }
  // The EP devices it was created for.
  const std::vector<const NxEpDevice*>& devices() const { return devices_; }
  // A counter the EP keeps about the session (NxEp::GetStatistic, version 11): false when the EP
  // keeps none by that name (or is older); throws the EP's error otherwise.
  bool Statistic(const std::string& key, int64_t* value) const;
  // Run boundaries (NxEp::OnRunStart / OnRunEnd, version 15); nothing for older EPs. Both throw
  // the EP's error.
  void OnRunStart() const;
  void OnRunEnd(bool failed) const;
  // Whether the EP wants its nodes of `domain`.`op_type` in channels-last form
  // (NxEp::PrefersChannelsLast, version 15); false for older EPs. Throws the EP's error.
  bool PrefersChannelsLast(const std::string& domain, const std::string& op_type) const;

 private:
  Env& env_;
  EpFactory& factory_;
  NxEp* ep_ = nullptr;
  std::string name_;
  std::vector<const NxEpDevice*> devices_;
  const KernelRegistry* registry_ = nullptr;
};

}  // namespace nxrt
