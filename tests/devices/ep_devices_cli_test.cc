// `nxrt devices` and `nxrt run` with EP libraries, virtual devices, policies, EP options and
// fallback modes, on the fixture machines (NXRT_SYSFS_ROOT; each command is a child process
// because discovery runs once per process).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "devices/sysfs_fixture.h"
#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

std::string Lib(const std::string& file) {
  return "'" + std::string(NXRT_TEST_EP_DIR) + "/" + file + "'";
}
const std::string kGpu = Lib("libnxrt_ep_example_gpu.so");
const std::string kNpu = Lib("libnxrt_ep_example_npu.so");
const std::string kGeneric = Lib("libnxrt_test_generic_gpu_ep.so");

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr
};

Result Nxrt(const std::string& root, const std::string& args) {
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  const std::string cmd = "NXRT_SYSFS_ROOT='" + root + "' '" + cli + "' " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

std::string Line(const std::string& out, const std::string& prefix) {
  size_t pos = out.find("\n" + prefix);
  if (pos == std::string::npos) return "";
  size_t end = out.find('\n', pos + 1);
  return out.substr(pos + 1, end - pos - 1);
}

std::string Model() {
  static const std::string path = nxrt::test::WriteTempFile(
      "cli_selection/add_relu_sigmoid.onnx",
      nxrt::test::Serialize(MakeModel(
          {MakeNode("Add", {"x", "x"}, {"a"}, "add"), MakeNode("Relu", {"a"}, {"r"}, "relu"),
           MakeNode("Sigmoid", {"r"}, {"y"}, "sig")},
          {"x"}, {"y"}, {2, 3})));
  return "'" + path + "'";
}

TEST(DevicesCommand, ListsEpDevicesPerLibraryIncludingVirtualOnes) {
  const std::string root = nxrt::test::BuildWorkstation("cli_ep_devices");
  Result r = Nxrt(root, "devices --json --ep-library " + kGpu + " --ep-library " + kNpu +
                            " --virtual npu:arch=nx2");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string& o = r.out;
  // Three libraries: example_gpu, example_npu, the default CPU EP's.
  EXPECT_NE(o.find("\"name\": \"libnxrt_ep_example_gpu#0\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"name\": \"libnxrt_ep_example_npu#1\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"name\": \"cpu\""), std::string::npos) << o;
  // ExampleGpu on the NVIDIA dGPU (hardware device 2: CPU, iGPU, dGPU, NPU).
  EXPECT_NE(
      o.find("{\"ep\": \"ExampleGpu\", \"ep_vendor\": \"NVIDIA\", \"hardware_device_index\": 2"),
      std::string::npos)
      << o;
  EXPECT_NE(o.find("\"options\": {\"precision\": \"fp32\"}"), std::string::npos) << o;
  // ExampleNpu on its virtual NPU only (not on the Intel NPU, device 3).
  EXPECT_NE(o.find("{\"ep\": \"ExampleNpu\", \"ep_vendor\": \"nxrt examples\", "
                   "\"hardware_device_index\": -1"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("\"arch\": \"nx2\", \"is_virtual\": \"1\", \"discovered_by\": \"ExampleNpu\""),
            std::string::npos)
      << o;
  EXPECT_EQ(o.find("\"hardware_device_index\": 3"), std::string::npos) << o;

  // The text form says the same, per library.
  Result text = Nxrt(root, "devices --ep-library " + kGpu + " --ep-library " + kNpu);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("EP device: ExampleGpu (NVIDIA) on [2] gpu NVIDIA 0x10de:0x2684 "
                          "0000:01:00.0"),
            std::string::npos)
      << text.out;
  // Without a --virtual request ExampleNpu has no device at all.
  EXPECT_NE(text.out.find("no EP devices"), std::string::npos) << text.out;
}

TEST(RunCommand, PolicyChoosesPerFixtureMachine) {
  const std::string ws = nxrt::test::BuildWorkstation("cli_policy_ws");
  const std::string libs = " --ep-library " + kGpu + " --ep-library " + kGeneric;
  Result gpu = Nxrt(ws, "run " + Model() + libs + " --policy prefer-gpu");
  ASSERT_EQ(gpu.status, 0) << gpu.out;
  EXPECT_EQ(Line(gpu.out, "eps:"), "eps: ExampleGpu=2 GenericGpu=0 CPU=1 nodes") << gpu.out;
  const std::string devices = Line(gpu.out, "ep devices:");
  const std::string expected =
      "ep devices: ExampleGpu=[gpu NVIDIA 0x10de:0x2684 0000:01:00.0] "
      "GenericGpu=[gpu NVIDIA 0x10de:0x2684 0000:01:00.0],[gpu Intel 0x8086:0xa7a0 "
      "0000:00:02.0] CPU=[cpu ";
  EXPECT_EQ(devices.substr(0, expected.size()), expected) << gpu.out;
  Result power = Nxrt(ws, "run " + Model() + libs + " --policy min-power");
  ASSERT_EQ(power.status, 0) << power.out;
  EXPECT_EQ(Line(power.out, "eps:"), "eps: GenericGpu=2 CPU=1 nodes") << power.out;

  const std::string bare = nxrt::test::BuildCpuOnly("cli_policy_cpu");
  Result none = Nxrt(bare, "run " + Model() + libs + " --policy max-performance");
  ASSERT_EQ(none.status, 0) << none.out;
  EXPECT_EQ(Line(none.out, "eps:"), "eps: CPU=3 nodes") << none.out;
  Result npu = Nxrt(bare, "run " + Model() + " --ep-library " + kNpu +
                              " --virtual npu:arch=nx2 --policy prefer-npu --fallback forbid");
  ASSERT_EQ(npu.status, 0) << npu.out;
  EXPECT_EQ(Line(npu.out, "eps:"), "eps: ExampleNpu=3 nodes") << npu.out;
  EXPECT_EQ(Line(npu.out, "ep devices:"),
            "ep devices: ExampleNpu=[virtual npu nxrt examples 0x0000:0x0002]")
      << npu.out;
}

TEST(RunCommand, EpOptionsFallbackAndBadFlags) {
  const std::string ws = nxrt::test::BuildWorkstation("cli_options_ws");
  Result fp16 =
      Nxrt(ws, "run " + Model() + " --ep-library " + kGpu + " --ep ExampleGpu:precision=fp16");
  EXPECT_NE(fp16.status, 0) << fp16.out;
  EXPECT_NE(fp16.out.find("precision 'fp16' is not supported"), std::string::npos) << fp16.out;

  Result forbid =
      Nxrt(ws, "run " + Model() + " --ep-library " + kGpu + " --ep ExampleGpu --fallback forbid");
  EXPECT_NE(forbid.status, 0) << forbid.out;
  EXPECT_NE(forbid.out.find("Sigmoid node 'sig'"), std::string::npos) << forbid.out;

  Result warn =
      Nxrt(ws, "run " + Model() + " --ep-library " + kGpu + " --ep ExampleGpu --fallback warn");
  ASSERT_EQ(warn.status, 0) << warn.out;
  EXPECT_NE(warn.out.find("1 of 3 nodes fell back to the CPU EP"), std::string::npos) << warn.out;

  for (const std::string& bad :
       {std::string("--policy fastest"), std::string("--fallback maybe"),
        std::string("--ep-library ") + kNpu + " --virtual tpu",
        std::string("--ep ExampleGpu:precision"), std::string("--virtual npu"),
        std::string("--ep-library ") + kGpu + " --ep ExampleGpu --policy prefer-gpu"}) {
    Result r = Nxrt(ws, "run " + Model() + " " + bad);
    EXPECT_NE(r.status, 0) << bad << "\n" << r.out;
    EXPECT_EQ(r.out.find("Segmentation"), std::string::npos) << r.out;
  }
}

}  // namespace
