// Command-line pieces shared by `nxrt run`, `nxrt devices` and `nxrt partition`: EP libraries with virtual-device
// requests, `--ep NAME:key=value,...`, policy and fallback names, and device descriptions.
#pragma once

#include <nxrt/nxrt.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nxrt::cli {

// "NAME" or "NAME:key=value,key=value".
struct EpSpec {
  std::string name;
  KeyValueList options;
};
EpSpec ParseEpSpec(const std::string& text);

// "TYPE" or "TYPE:key=value,..." with TYPE cpu|gpu|npu|fpga|other.
VirtualDeviceRequest ParseVirtualSpec(const std::string& text);
NxEpSelectionPolicy ParsePolicyName(const std::string& text);
NxFallbackMode ParseFallbackName(const std::string& text);

// Registers each library (name: file stem + "#" + index) with every virtual request; returns
// the registration names in order.
std::vector<std::string> RegisterLibraries(Env& env, const std::vector<std::string>& paths,
                                           const std::vector<VirtualDeviceRequest>& requests);

const char* DeviceTypeText(NxDeviceType type);
// "0x10de"
std::string Hex(uint32_t v);
// "gpu NVIDIA 0x10de:0x2684 0000:01:00.0" (virtual devices: "virtual npu ...").
std::string DescribeHardware(const HardwareDevice& d);

// JSON pieces: a quoted, escaped string; an object of strings; a hardware device as in
// `nxrt devices --json` (type, vendor, vendor_id, device_id, metadata).
std::string JsonString(const std::string& s);
// Text for HTML element content or a quoted attribute (& < > " ' escaped).
std::string HtmlEscape(const std::string& s);
std::string JsonObject(const KeyValueList& kv);
std::string JsonHardware(const HardwareDevice& d);

}  // namespace nxrt::cli
