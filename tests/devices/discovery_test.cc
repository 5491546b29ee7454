// Hardware discovery against fixture sysfs trees built here: a workstation with an Intel iGPU,
// an NVIDIA dGPU and an Intel NPU (each seen through DRM/accel and PCI), a data-centre machine
// whose GPU is a compute-only "3D controller" without a DRM card, and a machine with nothing but
// a CPU. Also the real machine's CPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "devices/hardware_device.h"
#include "devices/sysfs_fixture.h"
#include "test_util.h"

namespace {

using nxrt::test::SysfsTree;

const nxrt::HardwareDevice* Find(const std::vector<nxrt::HardwareDevice>& all,
                                 const std::string& bus_id) {
  for (const auto& d : all)
    if (d.Get("pci_bus_id") == bus_id) return &d;
  return nullptr;
}

TEST(HardwareDiscovery, WorkstationWithIntegratedGpuDiscreteGpuAndNpu) {
  SysfsTree t("workstation");
  t.Cpus(4, 2);
  t.Pci("pci0000:00", "0000:00:01.0", "0x060400", "0x8086", "0xa70d");  // PCIe bridge
  t.Pci("pci0000:00", "0000:00:02.0", "0x030000", "0x8086", "0xa7a0", "i915");
  t.Pci("pci0000:00/0000:00:01.0", "0000:01:00.0", "0x030000", "0x10de", "0x2684", "nvidia");
  t.Pci("pci0000:00/0000:00:01.0", "0000:01:00.1", "0x040300", "0x10de", "0x22ba",
        "snd_hda_intel");  // its audio
  t.Pci("pci0000:00", "0000:00:0b.0", "0x120000", "0x8086", "0x7d1d", "intel_vpu");
  t.Pci("pci0000:00", "0000:00:1f.6", "0x020000", "0x8086", "0x550a", "e1000e");  // NIC
  t.Link("class/drm/card0/device", "devices/pci0000:00/0000:00:02.0");
  t.Link("class/drm/card1/device", "devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  t.File("class/drm/card0-HDMI-A-1/status", "connected");  // a connector, not a device
  t.Link("class/drm/renderD128/device", "devices/pci0000:00/0000:00:02.0");
  t.Link("class/accel/accel0/device", "devices/pci0000:00/0000:00:0b.0");

  auto all = nxrt::DiscoverHardware(t.root());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].type, NX_DEVICE_CPU);
  EXPECT_EQ(all[0].Get("cores"), "4");
  EXPECT_EQ(all[0].Get("threads"), "8");
  EXPECT_EQ(all[0].Get("discovered_by"), "cpuid");

  // GPUs first (by bus id), then the NPU; every device listed once.
  EXPECT_EQ(all[1].type, NX_DEVICE_GPU);
  EXPECT_EQ(all[1].Get("pci_bus_id"), "0000:00:02.0");
  EXPECT_EQ(all[2].Get("pci_bus_id"), "0000:01:00.0");
  EXPECT_EQ(all[3].type, NX_DEVICE_NPU);

  const auto* igpu = Find(all, "0000:00:02.0");
  ASSERT_NE(igpu, nullptr);
  EXPECT_EQ(igpu->vendor, "Intel");
  EXPECT_EQ(igpu->vendor_id, 0x8086u);
  EXPECT_EQ(igpu->device_id, 0xa7a0u);
  EXPECT_EQ(igpu->Get("discrete"), "0");
  EXPECT_EQ(igpu->Get("driver"), "i915");
  EXPECT_EQ(igpu->Get("discovered_by"), "drm,pci");
  EXPECT_EQ(igpu->Get("drm_card"), "card0");

  const auto* dgpu = Find(all, "0000:01:00.0");
  ASSERT_NE(dgpu, nullptr);
  EXPECT_EQ(dgpu->vendor, "NVIDIA");
  EXPECT_EQ(dgpu->vendor_id, 0x10deu);
  EXPECT_EQ(dgpu->device_id, 0x2684u);
  EXPECT_EQ(dgpu->Get("discrete"), "1");
  EXPECT_EQ(dgpu->Get("driver"), "nvidia");
  EXPECT_EQ(dgpu->Get("discovered_by"), "drm,pci");

  const auto* npu = Find(all, "0000:00:0b.0");
  ASSERT_NE(npu, nullptr);
  EXPECT_EQ(npu->type, NX_DEVICE_NPU);
  EXPECT_EQ(npu->Get("driver"), "intel_vpu");
  EXPECT_EQ(npu->Get("discovered_by"), "accel,pci");
  EXPECT_EQ(npu->Get("accel_node"), "accel0");

  // Deterministic: a second scan gives the same list.
  auto again = nxrt::DiscoverHardware(t.root());
  ASSERT_EQ(again.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(again[i].metadata, all[i].metadata);
}

TEST(HardwareDiscovery, ComputeOnlyGpuWithoutDrmIsStillAGpu) {
  SysfsTree t("datacentre");
  t.Cpus(2, 1);
  t.Pci("pci0000:00", "0000:00:03.0", "0x030000", "0x1234", "0x1111");  // emulated VGA
  t.Pci("pci0000:00/0000:00:05.0", "0000:17:00.0", "0x030200", "0x10de", "0x2330", "nvidia");
  t.Pci("pci0000:00", "0000:00:05.0", "0x060400", "0x8086", "0x2030");  // bridge
  auto all = nxrt::DiscoverHardware(t.root());
  ASSERT_EQ(all.size(), 3u);
  const auto* h100 = Find(all, "0000:17:00.0");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->type, NX_DEVICE_GPU);
  EXPECT_EQ(h100->Get("pci_class"), "0x030200");
  EXPECT_EQ(h100->Get("discovered_by"), "pci");
  EXPECT_EQ(h100->Get("discrete"), "1");
  const auto* vga = Find(all, "0000:00:03.0");
  ASSERT_NE(vga, nullptr);
  EXPECT_EQ(vga->vendor, "QEMU");
}

TEST(HardwareDiscovery, MachineWithNothingButACpu) {
  SysfsTree t("cpu_only");
  t.Cpus(1, 2);
  t.Pci("pci0000:00", "0000:00:00.0", "0x060000", "0x8086", "0x1237");  // host bridge
  t.Pci("pci0000:00", "0000:00:04.0", "0x010000", "0x1af4", "0x1001");  // virtio disk
  auto all = nxrt::DiscoverHardware(t.root());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].type, NX_DEVICE_CPU);
  EXPECT_EQ(all[0].Get("cores"), "1");
  EXPECT_EQ(all[0].Get("threads"), "2");
  // A tree that does not exist: still the CPU, nothing else, no error.
  auto none = nxrt::DiscoverHardware(t.root() + "/missing");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].type, NX_DEVICE_CPU);
}

// The command line reads the tree NXRT_SYSFS_ROOT names (the C API discovers once per process,
// so this runs `nxrt devices --json` as a child process).
TEST(HardwareDiscovery, CommandLineListsTheFixtureDevicesAsJson) {
  SysfsTree t("cli_fixture");
  t.Cpus(2, 2);
  t.Pci("pci0000:00", "0000:00:02.0", "0x030000", "0x8086", "0xa7a0", "i915");
  t.Pci("pci0000:00/0000:00:01.0", "0000:01:00.0", "0x030200", "0x10de", "0x2684", "nvidia");
  t.Pci("pci0000:00", "0000:00:0b.0", "0x120000", "0x8086", "0x7d1d", "intel_vpu");
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  const std::string cmd = "NXRT_SYSFS_ROOT='" + t.root() + "' '" + cli + "' devices --json";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  out = out.substr(0, out.find("\"ep_libraries\""));  // the hardware part
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t pos = out.find(needle); pos != std::string::npos; pos = out.find(needle, pos + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("\"type\": \"cpu\""), 1u) << out;
  EXPECT_EQ(count("\"type\": \"gpu\""), 2u) << out;
  EXPECT_EQ(count("\"type\": \"npu\""), 1u) << out;
  EXPECT_NE(out.find("\"vendor_id\": 4318, \"device_id\": 9860"), std::string::npos)
      << out;  // 0x10de, 0x2684
  EXPECT_NE(out.find("\"pci_bus_id\": \"0000:01:00.0\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"isa\": "), std::string::npos) << out;
}

TEST(HardwareDiscovery, RealCpuHasVendorModelAndIsaFeatures) {
  auto all = nxrt::DiscoverHardware("/sys");
  ASSERT_FALSE(all.empty());
  const auto& cpu = all[0];
  EXPECT_EQ(cpu.type, NX_DEVICE_CPU);
  EXPECT_FALSE(cpu.vendor.empty());
  EXPECT_FALSE(cpu.Get("threads").empty());
#if defined(__x86_64__)
  EXPECT_NE(cpu.vendor_id, 0u);
  // Every x86-64 CPU has SSE2; the CPU EP is built for AVX2 machines.
  EXPECT_NE(cpu.Get("isa").find("sse2"), std::string::npos) << cpu.Get("isa");
  EXPECT_NE(cpu.Get("isa").find("avx2"), std::string::npos) << cpu.Get("isa");
  EXPECT_FALSE(cpu.Get("model_name").empty());
#endif
}

}  // namespace
