// Fixture sysfs trees for hardware-discovery and device-selection tests: a SysfsTree builder and
// the machines the tests share (a workstation with an Intel iGPU, an NVIDIA dGPU and an Intel
// NPU; a machine with nothing but a CPU).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

namespace nxrt::test {

namespace fs = std::filesystem;

class SysfsTree {
 public:
  explicit SysfsTree(const std::string& name) : root_(fs::path(nxrt::test::TempDir()) / name) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  std::string root() const { return root_.string(); }

  void File(const std::string& rel, const std::string& content) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << content << "\n";
  }
  // A relative symlink, as sysfs has them.
  void Link(const std::string& rel, const std::string& target_rel) {
    fs::path link = root_ / rel;
    fs::create_directories(link.parent_path());
    fs::create_symlink(fs::relative(root_ / target_rel, link.parent_path()), link);
  }
  // A PCI function under devices/<parent>/<bus_id>, listed in bus/pci/devices.
  void Pci(const std::string& parent, const std::string& bus_id, const std::string& cls,
           const std::string& vendor, const std::string& device, const std::string& driver = "") {
    const std::string dir = "devices/" + parent + "/" + bus_id;
    File(dir + "/class", cls);
    File(dir + "/vendor", vendor);
    File(dir + "/device", device);
    if (!driver.empty()) {
      fs::create_directories(root_ / "bus/pci/drivers" / driver);
      Link(dir + "/driver", "bus/pci/drivers/" + driver);
    }
    Link("bus/pci/devices/" + bus_id, dir);
  }
  void Cpus(int cores, int threads_per_core) {
    int n = 0;
    for (int c = 0; c < cores; ++c)
      for (int t = 0; t < threads_per_core; ++t, ++n) {
        const std::string dir = "devices/system/cpu/cpu" + std::to_string(n) + "/topology/";
        File(dir + "core_id", std::to_string(c));
        File(dir + "physical_package_id", "0");
      }
  }

 private:
  fs::path root_;
};

// Workstation: 4 cores / 8 threads; Intel iGPU 0000:00:02.0 (card0), NVIDIA dGPU 0x10de:0x2684
// at 0000:01:00.0 behind a bridge (card1), Intel NPU 0000:00:0b.0 (accel0), plus a bridge, the
// dGPU's audio function and a NIC that are not devices. Returns the root.
inline std::string BuildWorkstation(const std::string& name) {
  SysfsTree t(name);
  t.Cpus(4, 2);
  t.Pci("pci0000:00", "0000:00:01.0", "0x060400", "0x8086", "0xa70d");  // PCIe bridge
  t.Pci("pci0000:00", "0000:00:02.0", "0x030000", "0x8086", "0xa7a0", "i915");
  t.Pci("pci0000:00/0000:00:01.0", "0000:01:00.0", "0x030000", "0x10de", "0x2684", "nvidia");
  t.Pci("pci0000:00/0000:00:01.0", "0000:01:00.1", "0x040300", "0x10de", "0x22ba", "snd_hda_intel");
  t.Pci("pci0000:00", "0000:00:0b.0", "0x120000", "0x8086", "0x7d1d", "intel_vpu");
  t.Pci("pci0000:00", "0000:00:1f.6", "0x020000", "0x8086", "0x550a", "e1000e");
  t.Link("class/drm/card0/device", "devices/pci0000:00/0000:00:02.0");
  t.Link("class/drm/card1/device", "devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  t.Link("class/accel/accel0/device", "devices/pci0000:00/0000:00:0b.0");
  return t.root();
}

// A machine with nothing but a CPU (1 core, 2 threads; a host bridge and a virtio disk).
inline std::string BuildCpuOnly(const std::string& name) {
  SysfsTree t(name);
  t.Cpus(1, 2);
  t.Pci("pci0000:00", "0000:00:00.0", "0x060000", "0x8086", "0x1237");
  t.Pci("pci0000:00", "0000:00:04.0", "0x010000", "0x1af4", "0x1001");
  return t.root();
}

}  // namespace nxrt::test
