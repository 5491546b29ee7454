#include "nxrt/ep_args.h"

#include <cstdio>
#include <filesystem>

#include "nxrt/commands.h"

namespace nxrt::cli {
namespace {

// "k=v,k=v" after the first ':' of `text`; `what` names the flag in errors.
KeyValueList ParsePairs(const std::string& text, const std::string& what) {
  KeyValueList out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(what + " expects key=value pairs separated by commas, got '" + item + "'");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

EpSpec ParseEpSpec(const std::string& text) {
  EpSpec spec;
  size_t colon = text.find(':');
  spec.name = text.substr(0, colon);
  if (spec.name.empty()) throw UsageError("--ep expects NAME[:key=value,...], got '" + text + "'");
  if (colon != std::string::npos) spec.options = ParsePairs(text.substr(colon + 1), "--ep");
  return spec;
}

VirtualDeviceRequest ParseVirtualSpec(const std::string& text) {
  VirtualDeviceRequest req;
  size_t colon = text.find(':');
  std::string type = text.substr(0, colon);
  if (type == "cpu")
    req.type = NX_DEVICE_CPU;
  else if (type == "gpu")
    req.type = NX_DEVICE_GPU;
  else if (type == "npu")
    req.type = NX_DEVICE_NPU;
  else if (type == "fpga")
    req.type = NX_DEVICE_FPGA;
  else if (type == "other")
    req.type = NX_DEVICE_OTHER;
  else
    throw UsageError(
        "--virtual expects TYPE[:key=value,...] with TYPE cpu, gpu, npu, fpga or "
        "other, got '" +
        text + "'");
  if (colon != std::string::npos) req.options = ParsePairs(text.substr(colon + 1), "--virtual");
  return req;
}

NxEpSelectionPolicy ParsePolicyName(const std::string& text) {
  for (NxEpSelectionPolicy p : {NX_POLICY_PREFER_CPU, NX_POLICY_PREFER_GPU, NX_POLICY_PREFER_NPU,
                                NX_POLICY_MAX_PERFORMANCE, NX_POLICY_MIN_POWER}) {
    if (text == Nx_EpSelectionPolicyName(p)) return p;
  }
  throw UsageError("unknown policy '" + text +
                   "' (prefer-cpu, prefer-gpu, prefer-npu, max-performance, min-power)");
}

NxFallbackMode ParseFallbackName(const std::string& text) {
  if (text == "allow") return NX_FALLBACK_ALLOW;
  if (text == "warn") return NX_FALLBACK_WARN;
  if (text == "forbid") return NX_FALLBACK_FORBID;
  throw UsageError("--fallback expects allow, warn or forbid, got '" + text + "'");
}

std::vector<std::string> RegisterLibraries(Env& env, const std::vector<std::string>& paths,
                                           const std::vector<VirtualDeviceRequest>& requests) {
  std::vector<std::string> names;
  for (size_t i = 0; i < paths.size(); ++i) {
    // Registration names only need to be unique: the library's file stem, numbered.
    std::string name = std::filesystem::path(paths[i]).stem().string() + "#" + std::to_string(i);
    env.RegisterEpLibrary(name, paths[i], requests);
    names.push_back(name);
  }
  return names;
}

const char* DeviceTypeText(NxDeviceType t) {
  switch (t) {
    case NX_DEVICE_CPU:
      return "cpu";
    case NX_DEVICE_GPU:
      return "gpu";
    case NX_DEVICE_NPU:
      return "npu";
    case NX_DEVICE_FPGA:
      return "fpga";
    default:
      return "other";
  }
}

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

std::string DescribeHardware(const HardwareDevice& d) {
  std::string out = std::string(d.is_virtual() ? "virtual " : "") + DeviceTypeText(d.type()) + " " +
                    d.vendor() + " " + Hex(d.vendor_id()) + ":" + Hex(d.device_id());
  std::string bus = d.metadata("pci_bus_id");
  if (!bus.empty()) out += " " + bus;
  return out;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string JsonObject(const KeyValueList& kv) {
  std::string out = "{";
  for (size_t i = 0; i < kv.size(); ++i)
    out += (i ? ", " : "") + JsonString(kv[i].first) + ": " + JsonString(kv[i].second);
  return out + "}";
}

std::string JsonHardware(const HardwareDevice& d) {
  return "{\"type\": " + JsonString(DeviceTypeText(d.type())) +
         ", \"vendor\": " + JsonString(d.vendor()) +
         ", \"vendor_id\": " + std::to_string(d.vendor_id()) +
         ", \"device_id\": " + std::to_string(d.device_id()) +
         ", \"metadata\": " + JsonObject(d.metadata()) + "}";
}

}  // namespace nxrt::cli
