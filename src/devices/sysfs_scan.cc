#include "devices/sysfs_scan.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace nxrt {
namespace {

namespace fs = std::filesystem;

std::string ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// A hex file such as "0x10de" or "0x030200"; -1 if absent or malformed.
long long ReadHex(const fs::path& p) {
  const std::string s = ReadLine(p);
  if (s.empty()) return -1;
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used, 16);
    return used == s.size() ? v : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// Names sorted so the scan order does not depend on the directory order.
std::vector<std::string> SortedEntries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool IsPciBusId(const std::string& s) {
  // dddd:bb:dd.f
  return s.size() == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

struct Found {
  HardwareDevice device;
  std::string key;  // PCI bus id, or the device's canonical sysfs path
  std::vector<std::string> sources;
};

class Scanner {
 public:
  explicit Scanner(std::string root) : root_(std::move(root)) {}

  // One device directory (a PCI function or a platform device) seen through `source`.
  void Add(const fs::path& device_dir, const std::string& source, NxDeviceType fallback_type,
           const std::string& node_key, const std::string& node_name) {
    std::error_code ec;
    fs::path real = fs::weakly_canonical(device_dir, ec);
    if (ec) real = device_dir;
    const std::string name = real.filename().string();
    const bool on_pci = IsPciBusId(name);
    const long long cls = ReadHex(real / "class");
    NxDeviceType type = fallback_type;
    if (cls >= 0) {
      const long long base = (cls >> 16) & 0xff;
      if (base == 0x03)
        type = NX_DEVICE_GPU;
      else if (base == 0x12)
        type = NX_DEVICE_NPU;
      else if (source == "pci")
        return;  // bridges, NICs, storage...: not compute devices
    } else if (source == "pci") {
      return;
    }
    const std::string key = on_pci ? name : real.string();
    Found& f = found_[key];
    if (f.key.empty()) {
      f.key = key;
      f.device.type = type;
      const long long vendor = ReadHex(real / "vendor");
      const long long device = ReadHex(real / "device");
      f.device.vendor_id = vendor > 0 ? static_cast<uint32_t>(vendor) : 0;
      f.device.device_id = device > 0 ? static_cast<uint32_t>(device) : 0;
      f.device.vendor = PciVendorName(f.device.vendor_id);
      if (f.device.vendor.empty()) f.device.vendor = "unknown";
      if (on_pci) f.device.Set("pci_bus_id", name);
      if (cls >= 0) {
        char buf[24];
        std::snprintf(buf, sizeof(buf), "0x%06llx", cls);
        f.device.Set("pci_class", buf);
      }
      fs::path driver = fs::read_symlink(real / "driver", ec);
      if (!ec) f.device.Set("driver", driver.filename().string());
      if (type == NX_DEVICE_GPU && on_pci) {
        // Integrated GPUs sit on the root bus next to the CPU; discrete ones behind a bridge.
        f.device.Set("discrete", name.substr(5, 2) == "00" ? "0" : "1");
      }
    } else if (f.device.type == NX_DEVICE_OTHER) {
      f.device.type = type;
    }
    if (std::find(f.sources.begin(), f.sources.end(), source) == f.sources.end())
      f.sources.push_back(source);
    if (!node_key.empty()) f.device.Set(node_key, node_name);
  }

  void ScanClass(const char* cls, const char* prefix, const std::string& source, NxDeviceType type,
                 const char* node_key) {
    const fs::path dir = fs::path(root_) / "class" / cls;
    for (const std::string& n : SortedEntries(dir)) {
      // cardN / accelN only: not connectors (card0-HDMI-A-1) or render nodes.
      if (n.rfind(prefix, 0) != 0 ||
          n.find_first_not_of("0123456789", std::strlen(prefix)) != std::string::npos ||
          n.size() == std::strlen(prefix)) {
        continue;
      }
      std::error_code ec;
      if (!fs::exists(dir / n / "device", ec)) continue;
      Add(dir / n / "device", source, type, node_key, n);
    }
  }

  void ScanPci() {
    const fs::path dir = fs::path(root_) / "bus/pci/devices";
    for (const std::string& n : SortedEntries(dir)) Add(dir / n, "pci", NX_DEVICE_OTHER, "", "");
  }

  std::vector<HardwareDevice> Result() {
    std::vector<Found*> all;
    for (auto& [key, f] : found_) all.push_back(&f);
    auto rank = [](NxDeviceType t) { return t == NX_DEVICE_GPU ? 0 : t == NX_DEVICE_NPU ? 1 : 2; };
    std::stable_sort(all.begin(), all.end(), [&](const Found* a, const Found* b) {
      if (rank(a->device.type) != rank(b->device.type))
        return rank(a->device.type) < rank(b->device.type);
      return a->key < b->key;
    });
    std::vector<HardwareDevice> out;
    for (Found* f : all) {
      if (f->device.type != NX_DEVICE_GPU && f->device.type != NX_DEVICE_NPU) continue;
      std::string by;
      for (const auto& s : f->sources) by += (by.empty() ? "" : ",") + s;
      f->device.Set("discovered_by", by);
      out.push_back(f->device);
    }
    return out;
  }

 private:
  std::string root_;
  std::map<std::string, Found> found_;
};

}  // namespace

std::string PciVendorName(uint32_t vendor_id) {
  switch (vendor_id) {
    case 0x10de:
      return "NVIDIA";
    case 0x8086:
      return "Intel";
    case 0x1002:
    case 0x1022:
      return "AMD";
    case 0x13b5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x1af4:
      return "Red Hat (virtio)";
    case 0x1234:
      return "QEMU";
    case 0x15ad:
      return "VMware";
    case 0x1414:
      return "Microsoft";
    case 0x1d0f:
      return "Amazon";
    case 0x1ae0:
      return "Google";
    case 0x1e52:
      return "Tenstorrent";
    case 0x1f0b:
      return "Hailo";
    default:
      return "";
  }
}

std::vector<HardwareDevice> ScanSysfsDevices(const std::string& sysfs_root) {
  Scanner s(sysfs_root);
  s.ScanClass("drm", "card", "drm", NX_DEVICE_GPU, "drm_card");
  s.ScanClass("accel", "accel", "accel", NX_DEVICE_NPU, "accel_node");
  s.ScanPci();
  return s.Result();
}

}  // namespace nxrt
