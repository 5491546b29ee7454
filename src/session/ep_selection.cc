#include "session/ep_selection.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "devices/vulkan_software_gpu.h"
#include "plugins/ep_library.h"

namespace nxrt {
namespace {

bool SameVendorName(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// A hint the EP declared, when it parses as a positive number.
std::optional<double> Hint(const NxEpDevice& d, const char* key) {
  const std::string* v = FindKey(d.metadata, key);
  if (v == nullptr || v->empty()) return std::nullopt;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(x > 0)) return std::nullopt;
  return x;
}

double DefaultPerformance(NxDeviceType type, int discrete) {
  switch (type) {
    case NX_DEVICE_GPU:
      return discrete == 1 ? 80 : discrete == 0 ? 40 : 60;
    case NX_DEVICE_NPU:
      return 50;
    case NX_DEVICE_CPU:
      return 10;
    default:
      return 20;
  }
}

double DefaultPower(NxDeviceType type, int discrete) {
  switch (type) {
    case NX_DEVICE_GPU:
      return discrete == 1 ? 250 : discrete == 0 ? 15 : 150;
    case NX_DEVICE_NPU:
      return 5;
    case NX_DEVICE_CPU:
      return 45;
    default:
      return 50;
  }
}

struct Ranked {
  const NxEpDevice* device;
  EpDeviceFacts facts;
  size_t index;  // env order: the last tie-break
};

std::vector<Ranked> Collect(const std::vector<const NxEpDevice*>& all, const EpFactory* default_cpu,
                            bool (*keep)(const EpDeviceFacts&)) {
  std::vector<Ranked> out;
  for (size_t i = 0; i < all.size(); ++i) {
    EpDeviceFacts f = FactsOf(*all[i], default_cpu);
    if (!f.is_software && keep(f)) out.push_back({all[i], f, i});
  }
  return out;
}

// Among devices of one type: real before virtual, discrete before unknown before integrated,
// the device vendor's own EP first, the runtime's CPU EP last, then faster first.
bool BetterOfOneType(const Ranked& a, const Ranked& b) {
  const EpDeviceFacts &x = a.facts, &y = b.facts;
  if (x.is_virtual != y.is_virtual) return !x.is_virtual;
  // discrete is 1 / -1 (unknown) / 0: rank it 2 / 1 / 0.
  auto rank = [](int discrete) { return discrete == 1 ? 2 : discrete == 0 ? 0 : 1; };
  if (x.discrete != y.discrete) return rank(x.discrete) > rank(y.discrete);
  if (x.vendor_match != y.vendor_match) return x.vendor_match;
  if (x.default_cpu != y.default_cpu) return !x.default_cpu;
  if (x.performance != y.performance) return x.performance > y.performance;
  return a.index < b.index;
}

std::vector<const NxEpDevice*> Devices(const std::vector<Ranked>& r) {
  std::vector<const NxEpDevice*> out;
  for (const Ranked& x : r) out.push_back(x.device);
  return out;
}

std::vector<const NxEpDevice*> PreferType(NxDeviceType type,
                                          const std::vector<const NxEpDevice*>& all,
                                          const EpFactory* default_cpu) {
  std::vector<Ranked> r;
  for (size_t i = 0; i < all.size(); ++i) {
    EpDeviceFacts f = FactsOf(*all[i], default_cpu);
    if (f.type == type && !f.is_software) r.push_back({all[i], f, i});
  }
  std::sort(r.begin(), r.end(), BetterOfOneType);
  return Devices(r);
}

}  // namespace

EpDeviceFacts FactsOf(const NxEpDevice& d, const EpFactory* default_cpu) {
  EpDeviceFacts f;
  const NxHardwareDevice& hw = *d.device;
  f.type = hw.type;
  f.is_virtual = IsVirtual(hw);
  f.is_software = IsSoftwareGpu(hw);
  if (const std::string* disc = hw.Find("discrete")) f.discrete = *disc == "1" ? 1 : 0;
  if (hw.type != NX_DEVICE_GPU) f.discrete = -1;
  f.vendor_match = (d.factory->vendor_id != 0 && d.factory->vendor_id == hw.vendor_id) ||
                   SameVendorName(d.factory->vendor, hw.vendor);
  f.default_cpu = d.factory == default_cpu;
  f.performance = Hint(d, "performance_hint").value_or(DefaultPerformance(f.type, f.discrete));
  f.power = Hint(d, "power_hint").value_or(DefaultPower(f.type, f.discrete));
  return f;
}

std::vector<const NxEpDevice*> RankByPolicy(NxEpSelectionPolicy policy,
                                            const std::vector<const NxEpDevice*>& all,
                                            const EpFactory* default_cpu) {
  switch (policy) {
    case NX_POLICY_PREFER_CPU:
      return PreferType(NX_DEVICE_CPU, all, default_cpu);
    case NX_POLICY_PREFER_GPU:
      return PreferType(NX_DEVICE_GPU, all, default_cpu);
    case NX_POLICY_PREFER_NPU:
      return PreferType(NX_DEVICE_NPU, all, default_cpu);
    case NX_POLICY_MAX_PERFORMANCE: {
      // Everything real, fastest first; the CPU EPs come last by their low default score.
      auto r = Collect(all, default_cpu, [](const EpDeviceFacts& f) { return !f.is_virtual; });
      std::sort(r.begin(), r.end(), [](const Ranked& a, const Ranked& b) {
        if (a.facts.performance != b.facts.performance)
          return a.facts.performance > b.facts.performance;
        return BetterOfOneType(a, b);
      });
      return Devices(r);
    }
    case NX_POLICY_MIN_POWER: {
      // Accelerators that draw less than the CPU, frugal first; then the CPU EPs. A device that
      // draws more than the CPU (a discrete GPU) would save time, not energy: left out.
      auto cpus = Collect(all, default_cpu, [](const EpDeviceFacts& f) {
        return !f.is_virtual && f.type == NX_DEVICE_CPU;
      });
      // The bar: the most frugal CPU EP device (its hint, else the CPU default).
      double cpu_power = DefaultPower(NX_DEVICE_CPU, -1);
      for (size_t i = 0; i < cpus.size(); ++i)
        cpu_power = i == 0 ? cpus[i].facts.power : std::min(cpu_power, cpus[i].facts.power);
      auto r = Collect(all, default_cpu, [](const EpDeviceFacts& f) {
        return !f.is_virtual && f.type != NX_DEVICE_CPU;
      });
      std::erase_if(r, [&](const Ranked& x) { return x.facts.power >= cpu_power; });
      std::sort(r.begin(), r.end(), [](const Ranked& a, const Ranked& b) {
        if (a.facts.power != b.facts.power) return a.facts.power < b.facts.power;
        return BetterOfOneType(a, b);
      });
      std::sort(cpus.begin(), cpus.end(), BetterOfOneType);
      r.insert(r.end(), cpus.begin(), cpus.end());
      return Devices(r);
    }
  }
  return {};
}

std::vector<EpChoice> FoldByEp(const std::vector<const NxEpDevice*>& ordered) {
  std::vector<EpChoice> out;
  for (const NxEpDevice* d : ordered) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const EpChoice& c) { return c.factory == d->factory; });
    if (it == out.end()) {
      out.push_back({d->factory, {d}});
    } else if (std::find(it->devices.begin(), it->devices.end(), d) == it->devices.end()) {
      it->devices.push_back(d);
    }
  }
  return out;
}

const char* PolicyName(NxEpSelectionPolicy policy) {
  switch (policy) {
    case NX_POLICY_PREFER_CPU:
      return "prefer-cpu";
    case NX_POLICY_PREFER_GPU:
      return "prefer-gpu";
    case NX_POLICY_PREFER_NPU:
      return "prefer-npu";
    case NX_POLICY_MAX_PERFORMANCE:
      return "max-performance";
    case NX_POLICY_MIN_POWER:
      return "min-power";
  }
  return "unknown";
}

std::optional<NxEpSelectionPolicy> ParsePolicy(const std::string& name) {
  for (NxEpSelectionPolicy p : {NX_POLICY_PREFER_CPU, NX_POLICY_PREFER_GPU, NX_POLICY_PREFER_NPU,
                                NX_POLICY_MAX_PERFORMANCE, NX_POLICY_MIN_POWER}) {
    if (name == PolicyName(p)) return p;
  }
  return std::nullopt;
}

KeyValues SelectionMetadata(const Model& model) {
  KeyValues kv = {{"producer_name", model.producer_name},
                  {"producer_version", model.producer_version},
                  {"domain", model.domain},
                  {"model_version", std::to_string(model.model_version)},
                  {"doc_string", model.doc_string},
                  {"graph_name", model.graph ? model.graph->name : ""}};
  for (const auto& [k, v] : model.metadata) kv.emplace_back(k, v);
  return kv;
}

}  // namespace nxrt
