// nxrt devices [--json] [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...]
// The hardware devices the runtime discovers (type, vendor, ids, metadata), then the EP devices
// of each registered EP library (the default CPU EP's always; those of --ep-library libraries,
// asked for the --virtual devices, after registration).
#include <cstdio>
#include <nxrt/nxrt.hpp>
#include <string>

#include "nxrt/commands.h"
#include "nxrt/ep_args.h"

namespace nxrt::cli {
namespace {

std::string MemoryText(const NxMemoryInfo* m) {
  return std::string(m->name) + " (" + DeviceTypeText(m->device_type) +
         (m->kind == NX_MEMORY_DEVICE ? ", device memory)" : ", host-accessible)");
}

// Index of `d` among the discovered devices, or -1 (virtual).
int HardwareIndex(const std::vector<HardwareDevice>& all, const HardwareDevice& d) {
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].get() == d.get()) return static_cast<int>(i);
  return -1;
}

}  // namespace

int DevicesCommand(const std::vector<std::string>& args) {
  bool json = false;
  std::vector<std::string> libraries;
  std::vector<VirtualDeviceRequest> requests;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      json = true;
    else if (a == "--ep-library")
      libraries.push_back(TakeValue(args, i, a));
    else if (a == "--virtual")
      requests.push_back(ParseVirtualSpec(TakeValue(args, i, a)));
    else
      throw UsageError(
          "unknown option '" + a +
          "' (nxrt devices [--json] [--ep-library PATH ...] [--virtual TYPE[:k=v,...]])");
  }
  if (!requests.empty() && libraries.empty())
    throw UsageError("--virtual asks EP libraries for devices: give them with --ep-library");
  Env env(NX_LOG_ERROR);
  std::vector<std::string> names = RegisterLibraries(env, libraries, requests);
  names.push_back("cpu");  // the default CPU EP's library
  const std::vector<HardwareDevice> hardware = HardwareDevice::All();
  const std::vector<EpDevice> ep_devices = env.ep_devices();
  std::vector<std::string> paths = libraries;
  paths.push_back("");
  for (const EpDevice& d : ep_devices)
    if (d.library() == "cpu") paths.back() = d.metadata("library_path");

  if (json) {
    std::string out = "{\"hardware_devices\": [";
    for (size_t i = 0; i < hardware.size(); ++i)
      out += (i ? ",\n  " : "\n  ") + JsonHardware(hardware[i]);
    out += "\n],\n\"ep_libraries\": [";
    for (size_t l = 0; l < names.size(); ++l) {
      out += (l ? ",\n  " : "\n  ");
      out += "{\"name\": " + JsonString(names[l]) + ", \"path\": " + JsonString(paths[l]) +
             ", \"ep_devices\": [";
      bool first = true;
      for (const EpDevice& d : ep_devices) {
        if (d.library() != names[l]) continue;
        out += first ? "\n    " : ",\n    ";
        first = false;
        const HardwareDevice hw = d.hardware();
        out += "{\"ep\": " + JsonString(d.ep_name()) +
               ", \"ep_vendor\": " + JsonString(d.ep_vendor()) +
               ", \"hardware_device_index\": " + std::to_string(HardwareIndex(hardware, hw)) +
               ", \"device\": " + JsonHardware(hw) + ", \"metadata\": " + JsonObject(d.metadata()) +
               ", \"options\": " + JsonObject(d.options()) +
               ", \"memory\": " + JsonString(MemoryText(d.memory())) + "}";
      }
      out += first ? "]}" : "\n  ]}";
    }
    out += "\n]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  }

  std::printf("hardware devices: %zu\n", hardware.size());
  for (size_t i = 0; i < hardware.size(); ++i) {
    const HardwareDevice& d = hardware[i];
    std::printf("  [%zu] %s  vendor=%s vendor_id=%s device_id=%s\n", i, DeviceTypeText(d.type()),
                d.vendor().c_str(), Hex(d.vendor_id()).c_str(), Hex(d.device_id()).c_str());
    for (const auto& [k, v] : d.metadata()) std::printf("      %s: %s\n", k.c_str(), v.c_str());
  }
  for (size_t l = 0; l < names.size(); ++l) {
    std::printf("EP library %s (%s):\n", names[l].c_str(), paths[l].c_str());
    size_t count = 0;
    for (const EpDevice& d : ep_devices) {
      if (d.library() != names[l]) continue;
      ++count;
      const HardwareDevice hw = d.hardware();
      const int index = HardwareIndex(hardware, hw);
      std::printf("  EP device: %s (%s) on %s%s\n", d.ep_name().c_str(), d.ep_vendor().c_str(),
                  index >= 0 ? ("[" + std::to_string(index) + "] ").c_str() : "",
                  DescribeHardware(hw).c_str());
      if (index < 0)
        for (const auto& [k, v] : hw.metadata())
          std::printf("      device %s: %s\n", k.c_str(), v.c_str());
      for (const auto& [k, v] : d.metadata())
        std::printf("      metadata %s: %s\n", k.c_str(), v.c_str());
      for (const auto& [k, v] : d.options())
        std::printf("      option %s: %s\n", k.c_str(), v.c_str());
      std::printf("      memory: %s\n", MemoryText(d.memory()).c_str());
    }
    if (count == 0)
      std::printf("  no EP devices (its EPs can still be appended by name with --ep)\n");
  }
  return 0;
}

}  // namespace nxrt::cli
