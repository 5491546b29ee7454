// nxrt devices [--json]: the hardware devices the runtime discovers (type, vendor, ids and
// metadata). EP devices (which EP runs on which device) come with the device-selection work.
#include <nxrt/nxrt_c_api.h>

#include <cstdio>
#include <string>

#include "nxrt/commands.h"

namespace nxrt::cli {
namespace {

const char* TypeName(NxDeviceType t) {
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

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

}  // namespace

int DevicesCommand(const std::vector<std::string>& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json")
      json = true;
    else
      throw UsageError("unknown option '" + a + "' (nxrt devices [--json])");
  }
  const size_t n = Nx_GetHardwareDeviceCount();
  if (json) {
    std::string out = "{\"hardware_devices\": [";
    for (size_t i = 0; i < n; ++i) {
      const NxHardwareDevice* d = Nx_GetHardwareDevice(i);
      out += i ? ",\n  " : "\n  ";
      out += "{\"type\": " + JsonString(TypeName(NxHardwareDevice_GetType(d))) +
             ", \"vendor\": " + JsonString(NxHardwareDevice_GetVendor(d)) +
             ", \"vendor_id\": " + std::to_string(NxHardwareDevice_GetVendorId(d)) +
             ", \"device_id\": " + std::to_string(NxHardwareDevice_GetDeviceId(d)) +
             ", \"metadata\": {";
      for (size_t m = 0; m < NxHardwareDevice_GetMetadataCount(d); ++m) {
        const char* key = nullptr;
        const char* value = nullptr;
        NxHardwareDevice_GetMetadata(d, m, &key, &value);
        out += (m ? ", " : "") + JsonString(key) + ": " + JsonString(value);
      }
      out += "}}";
    }
    out += "\n]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  std::printf("hardware devices: %zu\n", n);
  for (size_t i = 0; i < n; ++i) {
    const NxHardwareDevice* d = Nx_GetHardwareDevice(i);
    std::printf("  [%zu] %s  vendor=%s vendor_id=%s device_id=%s\n", i,
                TypeName(NxHardwareDevice_GetType(d)), NxHardwareDevice_GetVendor(d),
                Hex(NxHardwareDevice_GetVendorId(d)).c_str(),
                Hex(NxHardwareDevice_GetDeviceId(d)).c_str());
    for (size_t m = 0; m < NxHardwareDevice_GetMetadataCount(d); ++m) {
      const char* key = nullptr;
      const char* value = nullptr;
      NxHardwareDevice_GetMetadata(d, m, &key, &value);
      std::printf("      %s: %s\n", key, value);
    }
  }
  return 0;
}

}  // namespace nxrt::cli
