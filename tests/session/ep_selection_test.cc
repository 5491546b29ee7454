// EP devices, virtual devices and EP selection on fixture machines, with real plugin libraries:
// ExampleGpu (an NVIDIA EP, supports NVIDIA GPUs), GenericGpu (a vendor-neutral test EP for any
// real GPU), ExampleNpu (runs only on a virtual NPU it creates on request) and the CPU EP.
// Every policy is checked on the workstation fixture (Intel iGPU, NVIDIA dGPU, Intel NPU) and on
// a machine with nothing but a CPU: which EPs the session gets, in which order, on which devices.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "devices/sysfs_fixture.h"
#include "model/model.h"
#include "session/env.h"
#include "session/session.h"
#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

std::string Lib(const std::string& file) { return std::string(NXRT_TEST_EP_DIR) + "/" + file; }
const std::string kGpuLib = "libnxrt_ep_example_gpu.so";
const std::string kNpuLib = "libnxrt_ep_example_npu.so";
const std::string kGenericLib = "libnxrt_test_generic_gpu_ep.so";

std::vector<NxHardwareDevice> Machine(const std::string& root) {
  std::vector<NxHardwareDevice> out;
  for (auto& d : nxrt::DiscoverHardware(root)) out.push_back(NxHardwareDevice{std::move(d)});
  return out;
}

struct Fixture {
  std::vector<std::string> log;
  std::unique_ptr<nxrt::Env> env;

  explicit Fixture(const std::string& root) {
    nxrt::Logger logger(NX_LOG_INFO, [this](NxLogLevel level, const std::string& m) {
      if (level >= NX_LOG_WARNING) log.push_back(m);
    });
    env = std::make_unique<nxrt::Env>(logger, Machine(root));
  }
  // ExampleGpu, GenericGpu, then ExampleNpu asked for `npu_requests`.
  void RegisterAll(const std::vector<nxrt::VirtualDeviceRequest>& npu_requests = {}) {
    env->RegisterLibrary("gpu", Lib(kGpuLib));
    env->RegisterLibrary("generic", Lib(kGenericLib));
    env->RegisterLibrary("npu", Lib(kNpuLib), npu_requests);
  }
  std::vector<const NxEpDevice*> Devices(const std::string& ep) {
    std::vector<const NxEpDevice*> out;
    for (const NxEpDevice* d : env->EpDevices())
      if (d->ep_name == ep) out.push_back(d);
    return out;
  }
};

std::string WorkstationRoot() {
  static const std::string root = nxrt::test::BuildWorkstation("selection_workstation");
  return root;
}
std::string CpuOnlyRoot() {
  static const std::string root = nxrt::test::BuildCpuOnly("selection_cpu_only");
  return root;
}

// x -> Add(x, x) -> Relu -> Sigmoid -> Softmax -> y: Add/Relu run on every test EP, Sigmoid only
// on ExampleNpu nx2 (and the CPU), Softmax only on the CPU.
std::shared_ptr<nxrt::Model> TestModel() {
  auto m = MakeModel(
      {MakeNode("Add", {"x", "x"}, {"a"}, "add"), MakeNode("Relu", {"a"}, {"r"}, "relu"),
       MakeNode("Sigmoid", {"r"}, {"s"}, "sig"), MakeNode("Softmax", {"s"}, {"y"}, "soft")},
      {"x"}, {"y"}, {2, 3});
  m.set_producer_name("selection-test");
  auto* md = m.add_metadata_props();
  md->set_key("target");
  md->set_value("edge");
  std::string bytes = nxrt::test::Serialize(m);
  return nxrt::LoadModelFromBuffer(bytes.data(), bytes.size());
}

// "EP[bus id or type,...]" per EP, in session order, with "*" marking the CPU fallback.
std::string Placement(const nxrt::Session& s) {
  std::string out;
  for (size_t e = 0; e < s.ep_count(); ++e) {
    out +=
        (e ? " " : "") + s.ep_name(e) + (static_cast<int>(e) == s.fallback_ep() ? "*" : "") + "[";
    const auto& devices = s.ep_devices(e);
    for (size_t d = 0; d < devices.size(); ++d) {
      const NxHardwareDevice& hw = *devices[d]->device;
      std::string where = hw.Get("pci_bus_id");
      if (where.empty()) where = nxrt::IsVirtual(hw) ? "virtual-" + hw.Get("arch") : "cpu";
      out += (d ? "," : "") + where;
    }
    out += "]";
  }
  return out;
}

std::string WithPolicy(Fixture& f, NxEpSelectionPolicy policy,
                       NxFallbackMode fallback = NX_FALLBACK_ALLOW) {
  nxrt::SessionOptions o;
  o.policy = policy;
  o.fallback = fallback;
  nxrt::Session s(*f.env, TestModel(), o);
  return Placement(s);
}

constexpr const char* kDgpu = "0000:01:00.0";
constexpr const char* kIgpu = "0000:00:02.0";

// ---- EP devices ----------------------------------------------------------------------------

TEST(EpDevices, EachFactoryGetsTheDevicesItSupports) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  auto gpu = f.Devices("ExampleGpu");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0]->device->Get("pci_bus_id"), kDgpu);
  EXPECT_EQ(*nxrt::FindKey(gpu[0]->metadata, "performance_hint"), "90");
  EXPECT_EQ(*nxrt::FindKey(gpu[0]->metadata, "version"), "1.0.0");
  EXPECT_NE(nxrt::FindKey(gpu[0]->metadata, "library_path")->find(kGpuLib), std::string::npos);
  ASSERT_NE(nxrt::FindKey(gpu[0]->options, "precision"), nullptr);
  EXPECT_EQ(gpu[0]->library_name, "gpu");
  auto generic = f.Devices("GenericGpu");
  ASSERT_EQ(generic.size(), 2u);  // both GPUs, in discovery order
  EXPECT_EQ(generic[0]->device->Get("pci_bus_id"), kIgpu);
  EXPECT_EQ(generic[1]->device->Get("pci_bus_id"), kDgpu);
  // The real Intel NPU has no EP, and no virtual device exists without a request.
  EXPECT_TRUE(f.Devices("ExampleNpu").empty());
  ASSERT_EQ(f.Devices("CPU").size(), 1u);
  EXPECT_EQ(f.Devices("CPU")[0]->device->type, NX_DEVICE_CPU);
  // Order: libraries in registration order, then the default CPU EP.
  auto all = f.env->EpDevices();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]->ep_name, "ExampleGpu");
  EXPECT_EQ(all[3]->ep_name, "CPU");
}

TEST(EpDevices, CpuOnlyMachineHasOnlyTheCpuEpDevice) {
  Fixture f(CpuOnlyRoot());
  f.RegisterAll();
  auto all = f.env->EpDevices();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]->ep_name, "CPU");
}

// ---- Virtual devices ------------------------------------------------------------------------

TEST(VirtualDevices, CreatedOnRequestOnlyAndOfferedOnlyToTheirFactory) {
  Fixture f(CpuOnlyRoot());
  f.env->RegisterLibrary("gpu", Lib(kGpuLib), {{NX_DEVICE_NPU, {{"arch", "nx2"}}}});
  f.env->RegisterLibrary("npu", Lib(kNpuLib), {{NX_DEVICE_NPU, {{"arch", "nx2"}}}});
  // ExampleGpu cannot target an NPU: it created nothing (and a warning says so).
  EXPECT_TRUE(f.Devices("ExampleGpu").empty());
  ASSERT_FALSE(f.log.empty());
  EXPECT_NE(f.log[0].find("created no virtual npu device"), std::string::npos) << f.log[0];
  auto npu = f.Devices("ExampleNpu");
  ASSERT_EQ(npu.size(), 1u);
  const NxHardwareDevice& hw = *npu[0]->device;
  EXPECT_EQ(hw.type, NX_DEVICE_NPU);
  EXPECT_EQ(hw.Get("is_virtual"), "1");
  EXPECT_EQ(hw.Get("discovered_by"), "ExampleNpu");
  EXPECT_EQ(hw.Get("arch"), "nx2");
  EXPECT_EQ(*nxrt::FindKey(npu[0]->metadata, "arch"), "nx2");
  // The virtual device is the library's: not among the machine's devices.
  for (const NxHardwareDevice* d : f.env->hardware()) EXPECT_NE(d, &hw);
}

TEST(VirtualDevices, AGpuRequestGoesToTheGpuEpOnly) {
  Fixture f(CpuOnlyRoot());
  const std::vector<nxrt::VirtualDeviceRequest> req = {{NX_DEVICE_GPU, {{"arch", "sm80"}}}};
  f.env->RegisterLibrary("gpu", Lib(kGpuLib), req);
  f.env->RegisterLibrary("generic", Lib(kGenericLib), req);  // no CreateVirtualDevices
  auto gpu = f.Devices("ExampleGpu");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0]->device->Get("discovered_by"), "ExampleGpu");
  EXPECT_EQ(gpu[0]->device->device_id, 0x20b0u);
  // GenericGpu supports any real GPU: it was not offered ExampleGpu's virtual one.
  EXPECT_TRUE(f.Devices("GenericGpu").empty());
}

TEST(VirtualDevices, ReleasedOnUnregisterAndRefusedWhileASessionLives) {
  Fixture f(WorkstationRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {}}});
  ASSERT_EQ(f.Devices("ExampleNpu").size(), 1u);
  {
    nxrt::SessionOptions o;
    o.policy = NX_POLICY_PREFER_NPU;
    nxrt::Session s(*f.env, TestModel(), o);
    EXPECT_EQ(Placement(s), "ExampleNpu[virtual-nx1] CPU*[cpu]");
    try {
      f.env->UnregisterLibrary("npu");
      FAIL() << "unregistered a library a live session uses";
    } catch (const nxrt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("still used by 1 live session"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(f.Devices("ExampleNpu").size(), 1u);  // still there, still usable
    nxrt::Session again(*f.env, TestModel(), o);
  }
  f.env->UnregisterLibrary("npu");
  EXPECT_TRUE(f.Devices("ExampleNpu").empty());
  // Registering again without a request: no virtual device.
  f.env->RegisterLibrary("npu", Lib(kNpuLib));
  EXPECT_TRUE(f.Devices("ExampleNpu").empty());
}

TEST(VirtualDevices, AFactoryRefusingTheRequestFailsRegistrationAndTheEnvStaysUsable) {
  Fixture f(CpuOnlyRoot());
  try {
    f.env->RegisterLibrary("npu", Lib(kNpuLib), {{NX_DEVICE_NPU, {{"arch", "nx9"}}}});
    FAIL() << "unknown arch accepted";
  } catch (const nxrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nx9"), std::string::npos) << e.what();
  }
  f.env->RegisterLibrary("npu", Lib(kNpuLib), {{NX_DEVICE_NPU, {{"arch", "nx1"}}}});
  EXPECT_EQ(f.Devices("ExampleNpu").size(), 1u);
}

TEST(VirtualDevices, TheNpuEpRefusesToRunWithoutItsVirtualDevice) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  nxrt::SessionOptions o;
  o.eps.push_back({"ExampleNpu", {}, {}});
  try {
    nxrt::Session s(*f.env, TestModel(), o);
    FAIL() << "ExampleNpu ran without a virtual NPU";
  } catch (const nxrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("virtual NPU"), std::string::npos) << e.what();
  }
}

// ---- Policies on the workstation ------------------------------------------------------------

TEST(SelectionPolicy, WorkstationPreferGpu) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  // Discrete before integrated, NVIDIA's own EP before the generic one; CPU as fallback.
  EXPECT_EQ(
      WithPolicy(f, NX_POLICY_PREFER_GPU),
      std::string("ExampleGpu[") + kDgpu + "] GenericGpu[" + kDgpu + "," + kIgpu + "] CPU*[cpu]");
}

TEST(SelectionPolicy, WorkstationPreferNpuWithoutAndWithAVirtualNpu) {
  {
    Fixture f(WorkstationRoot());
    f.RegisterAll();
    // The Intel NPU has no EP: nothing preferred, the CPU EP runs the model.
    EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_NPU), "CPU*[cpu]");
    try {
      WithPolicy(f, NX_POLICY_PREFER_NPU, NX_FALLBACK_FORBID);
      FAIL() << "forbid accepted a policy that chose nothing";
    } catch (const nxrt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("prefer-npu found no EP device"), std::string::npos)
          << e.what();
    }
  }
  Fixture f(WorkstationRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {{"arch", "nx2"}}}});
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_NPU), "ExampleNpu[virtual-nx2] CPU*[cpu]");
}

TEST(SelectionPolicy, WorkstationPreferCpu) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_CPU), "CPU[cpu]");  // chosen, not a fallback
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_CPU, NX_FALLBACK_FORBID), "CPU[cpu]");
}

TEST(SelectionPolicy, WorkstationMaxPerformanceLeavesVirtualDevicesOut) {
  Fixture f(WorkstationRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {}}});
  // Fastest first by hint/default (ExampleGpu says 90, a discrete GPU defaults to 80, an
  // integrated one to 40, the CPU to 10); the CPU EP is part of the choice, not a fallback.
  EXPECT_EQ(
      WithPolicy(f, NX_POLICY_MAX_PERFORMANCE),
      std::string("ExampleGpu[") + kDgpu + "] GenericGpu[" + kDgpu + "," + kIgpu + "] CPU[cpu]");
}

TEST(SelectionPolicy, WorkstationMinPowerSkipsDevicesHungrierThanTheCpu) {
  Fixture f(WorkstationRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {}}});
  // The integrated GPU (15 W by default) beats the CPU (45 W); both discrete-GPU EP devices
  // (250 W) and the virtual NPU are left out.
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MIN_POWER), std::string("GenericGpu[") + kIgpu + "] CPU[cpu]");
}

TEST(SelectionPolicy, EpDeclaredHintsChangeTheOrder) {
  setenv("NXRT_TEST_GENERIC_GPU_HINTS", "perf=95,power=10", 1);
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  unsetenv("NXRT_TEST_GENERIC_GPU_HINTS");
  // GenericGpu now claims to be faster than ExampleGpu on the same dGPU ...
  EXPECT_EQ(
      WithPolicy(f, NX_POLICY_MAX_PERFORMANCE),
      std::string("GenericGpu[") + kDgpu + "," + kIgpu + "] ExampleGpu[" + kDgpu + "] CPU[cpu]");
  // ... and frugal on both GPUs, so min-power takes the discrete one too.
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MIN_POWER),
            std::string("GenericGpu[") + kDgpu + "," + kIgpu + "] CPU[cpu]");
  // prefer-gpu still orders by the device facts first: NVIDIA's own EP on its dGPU leads.
  EXPECT_EQ(
      WithPolicy(f, NX_POLICY_PREFER_GPU),
      std::string("ExampleGpu[") + kDgpu + "] GenericGpu[" + kDgpu + "," + kIgpu + "] CPU*[cpu]");
}

TEST(EpDevices, AFailingGetSupportedDevicesFailsRegistrationAndTheEnvStaysUsable) {
  setenv("NXRT_TEST_GENERIC_GPU_HINTS", "perf=fast", 1);  // GenericGpu rejects it
  Fixture f(WorkstationRoot());
  try {
    f.env->RegisterLibrary("generic", Lib(kGenericLib));
    unsetenv("NXRT_TEST_GENERIC_GPU_HINTS");
    FAIL() << "registration succeeded";
  } catch (const nxrt::Error& e) {
    unsetenv("NXRT_TEST_GENERIC_GPU_HINTS");
    EXPECT_NE(std::string(e.what()).find("GetSupportedDevices failed"), std::string::npos)
        << e.what();
  }
  f.env->RegisterLibrary("generic", Lib(kGenericLib));  // the name is free, the env usable
  EXPECT_EQ(f.Devices("GenericGpu").size(), 2u);
}

// ---- Policies on a machine with nothing but a CPU -------------------------------------------

TEST(SelectionPolicy, CpuOnlyMachine) {
  Fixture f(CpuOnlyRoot());
  f.RegisterAll();
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_GPU), "CPU*[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_NPU), "CPU*[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_CPU), "CPU[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MAX_PERFORMANCE), "CPU[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MIN_POWER), "CPU[cpu]");
}

TEST(SelectionPolicy, CpuOnlyMachineWithAVirtualNpu) {
  Fixture f(CpuOnlyRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {{"arch", "nx2"}}}});
  EXPECT_EQ(WithPolicy(f, NX_POLICY_PREFER_NPU), "ExampleNpu[virtual-nx2] CPU*[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MAX_PERFORMANCE), "CPU[cpu]");
  EXPECT_EQ(WithPolicy(f, NX_POLICY_MIN_POWER), "CPU[cpu]");
}

TEST(SelectionPolicy, GpusOfUnknownKindRankBetweenDiscreteAndIntegrated) {
  // Synthetic EP devices: one generic EP on three GPUs that say "discrete" 1, nothing, and 0.
  nxrt::EpFactory ep;
  ep.name = "AnyGpu";
  std::vector<NxHardwareDevice> hw(3);
  const char* discrete[] = {"0", nullptr, "1"};
  std::vector<NxEpDevice> devices(3);
  std::vector<const NxEpDevice*> all;
  for (int i = 0; i < 3; ++i) {
    hw[i].type = NX_DEVICE_GPU;
    hw[i].vendor = "V" + std::to_string(i);
    if (discrete[i]) hw[i].Set("discrete", discrete[i]);
    devices[i].factory = &ep;
    devices[i].device = &hw[i];
    all.push_back(&devices[i]);
  }
  auto ranked = nxrt::RankByPolicy(NX_POLICY_PREFER_GPU, all, nullptr);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0], all[2]);  // discrete
  EXPECT_EQ(ranked[1], all[1]);  // unknown
  EXPECT_EQ(ranked[2], all[0]);  // integrated
  // min-power: the integrated GPU (15 W) only; an unknown GPU defaults to 150 W.
  auto frugal = nxrt::RankByPolicy(NX_POLICY_MIN_POWER, all, nullptr);
  ASSERT_EQ(frugal.size(), 1u);
  EXPECT_EQ(frugal[0], all[0]);
}

TEST(SelectionPolicy, NoPolicyPicksASoftwareGpu) {
  // A CPU, a real GPU and a software renderer listed as a GPU (NXRT_SOFTWARE_GPU), one EP each.
  nxrt::EpFactory cpu_ep, gpu_ep, soft_ep;
  cpu_ep.name = "Cpu";
  gpu_ep.name = "RealGpu";
  soft_ep.name = "AnyGpu";
  std::vector<NxHardwareDevice> hw(3);
  hw[0].type = NX_DEVICE_CPU;
  hw[1].type = NX_DEVICE_GPU;
  hw[2].type = NX_DEVICE_GPU;
  hw[2].vendor = "Mesa";
  hw[2].Set("software", "1");
  hw[2].Set("discrete", "1");  // even a claim to be discrete does not make it a policy's pick
  std::vector<NxEpDevice> devices(3);
  nxrt::EpFactory* factories[] = {&cpu_ep, &gpu_ep, &soft_ep};
  std::vector<const NxEpDevice*> all;
  for (int i = 0; i < 3; ++i) {
    devices[i].factory = factories[i];
    devices[i].device = &hw[i];
    all.push_back(&devices[i]);
  }
  const NxEpDevice* soft = all[2];
  for (NxEpSelectionPolicy p : {NX_POLICY_PREFER_CPU, NX_POLICY_PREFER_GPU, NX_POLICY_PREFER_NPU,
                                NX_POLICY_MAX_PERFORMANCE, NX_POLICY_MIN_POWER}) {
    auto ranked = nxrt::RankByPolicy(p, all, &cpu_ep);
    EXPECT_EQ(std::count(ranked.begin(), ranked.end(), soft), 0) << nxrt::PolicyName(p);
  }
  auto gpus = nxrt::RankByPolicy(NX_POLICY_PREFER_GPU, all, &cpu_ep);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0], all[1]);
  // Only the software GPU: prefer-gpu finds nothing (the caller falls back to the CPU EP).
  EXPECT_TRUE(nxrt::RankByPolicy(NX_POLICY_PREFER_GPU, {all[0], soft}, &cpu_ep).empty());
}

// ---- Custom callback --------------------------------------------------------------------------

TEST(SelectionCallback, SeesEveryEpDeviceAndTheModelMetadata) {
  Fixture f(WorkstationRoot());
  f.RegisterAll({{NX_DEVICE_NPU, {}}});
  std::vector<std::string> seen;
  nxrt::KeyValues metadata;
  nxrt::SessionOptions o;
  o.selector = [&](const std::vector<const NxEpDevice*>& all, const nxrt::KeyValues& md) {
    for (const NxEpDevice* d : all) seen.push_back(d->ep_name);
    metadata = md;
    // An "edge" model: the integrated GPU only.
    std::vector<const NxEpDevice*> pick;
    for (const NxEpDevice* d : all)
      if (d->ep_name == "GenericGpu" && d->device->Get("discrete") == "0") pick.push_back(d);
    return pick;
  };
  nxrt::Session s(*f.env, TestModel(), o);
  EXPECT_EQ(Placement(s), std::string("GenericGpu[") + kIgpu + "] CPU*[cpu]");
  EXPECT_EQ(seen, (std::vector<std::string>{"ExampleGpu", "GenericGpu", "GenericGpu", "ExampleNpu",
                                            "CPU"}));
  EXPECT_EQ(*nxrt::FindKey(metadata, "producer_name"), "selection-test");
  EXPECT_EQ(*nxrt::FindKey(metadata, "target"), "edge");
}

TEST(SelectionCallback, AnEmptyOrForeignChoiceFailsSessionCreation) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  nxrt::SessionOptions o;
  o.selector = [](const std::vector<const NxEpDevice*>&, const nxrt::KeyValues&) {
    return std::vector<const NxEpDevice*>{};
  };
  EXPECT_THROW(nxrt::Session(*f.env, TestModel(), o), nxrt::Error);
  NxEpDevice stranger;
  o.selector = [&](const std::vector<const NxEpDevice*>&, const nxrt::KeyValues&) {
    return std::vector<const NxEpDevice*>{&stranger};
  };
  try {
    nxrt::Session s(*f.env, TestModel(), o);
    FAIL() << "a device that was not offered was accepted";
  } catch (const nxrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not offered"), std::string::npos) << e.what();
  }
}

// ---- Explicit selection and fallback ----------------------------------------------------------

TEST(ExplicitSelection, EpDevicesWithOptionsOverridingDefaults) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  auto gpu = f.Devices("ExampleGpu");
  nxrt::SessionOptions o;
  o.eps.push_back({"", gpu, {}});
  {
    nxrt::Session s(*f.env, TestModel(), o);
    EXPECT_EQ(Placement(s), std::string("ExampleGpu[") + kDgpu + "] CPU*[cpu]");
    EXPECT_EQ(s.graph().nodes.size(), 4u);
    // The EP was told which devices it runs on.
    void* h = dlopen(Lib(kGpuLib).c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    auto count = reinterpret_cast<size_t (*)()>(dlsym(h, "ExampleGpu_LastDeviceCount"));
    auto buses = reinterpret_cast<const char* (*)()>(dlsym(h, "ExampleGpu_LastDeviceBusIds"));
    ASSERT_TRUE(count && buses);
    EXPECT_EQ(count(), 1u);
    EXPECT_EQ(std::string(buses()), kDgpu);
    dlclose(h);
  }
  // Options given at selection override the EP device's default (precision=fp32) and reach the
  // EP, which refuses this one with its own message.
  o.eps[0].options["precision"] = "fp16";
  try {
    nxrt::Session s(*f.env, TestModel(), o);
    FAIL() << "the option did not reach the EP";
  } catch (const nxrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'fp16'"), std::string::npos) << e.what();
  }
}

TEST(ExplicitSelection, RejectsMixingWithAPolicyAndDevicesOfTwoEps) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  nxrt::SessionOptions o;
  o.eps.push_back({"ExampleGpu", {}, {}});
  o.policy = NX_POLICY_PREFER_GPU;
  EXPECT_THROW(nxrt::Session(*f.env, TestModel(), o), nxrt::Error);
  nxrt::SessionOptions two;
  two.eps.push_back({"", {f.Devices("ExampleGpu")[0], f.Devices("GenericGpu")[0]}, {}});
  try {
    nxrt::Session s(*f.env, TestModel(), two);
    FAIL() << "devices of two EPs appended together";
  } catch (const nxrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("must belong to one EP"), std::string::npos) << e.what();
  }
}

TEST(Fallback, WarnNamesTheNodesThatFellBack) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  nxrt::SessionOptions o;
  o.eps.push_back({"ExampleGpu", {}, {}});
  o.fallback = NX_FALLBACK_WARN;
  nxrt::Session s(*f.env, TestModel(), o);
  // One warning lists the nodes; the per-EP placement summary lines (warning level, since
  // nodes fell back) come with it.
  auto lists = [&] {
    size_t n = 0;
    for (const std::string& line : f.log)
      n += line.find("fell back to the CPU EP:") != std::string::npos;
    return n;
  };
  ASSERT_EQ(lists(), 1u);
  std::string list;
  for (const std::string& line : f.log)
    if (line.find("fell back to the CPU EP:") != std::string::npos) list = line;
  EXPECT_NE(list.find("2 of 4 nodes fell back to the CPU EP"), std::string::npos) << list;
  EXPECT_NE(list.find("Sigmoid node 'sig'"), std::string::npos) << list;
  EXPECT_NE(list.find("Softmax node 'soft'"), std::string::npos) << list;
  // allow: the same placement, no node list (the summary still says nodes fell back).
  o.fallback = NX_FALLBACK_ALLOW;
  nxrt::Session quiet(*f.env, TestModel(), o);
  EXPECT_EQ(lists(), 1u);
  EXPECT_EQ(Placement(quiet), Placement(s));
}

TEST(Fallback, ForbidFailsNamingTheFirstUnclaimedNodeAndOp) {
  Fixture f(WorkstationRoot());
  f.RegisterAll();
  nxrt::SessionOptions o;
  o.eps.push_back({"ExampleGpu", {}, {}});
  o.fallback = NX_FALLBACK_FORBID;
  try {
    nxrt::Session s(*f.env, TestModel(), o);
    FAIL() << "forbid let a node fall back";
  } catch (const nxrt::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fallback to the CPU EP is forbidden"), std::string::npos) << m;
    EXPECT_NE(m.find("Sigmoid node 'sig' (op Sigmoid"), std::string::npos) << m;
    EXPECT_NE(m.find("ExampleGpu: "), std::string::npos) << m;  // and why ExampleGpu left it
  }
  // A model the chosen EP covers entirely runs without the CPU EP.
  auto m = MakeModel({MakeNode("Add", {"x", "x"}, {"a"}), MakeNode("Relu", {"a"}, {"y"})}, {"x"},
                     {"y"}, {2, 3});
  std::string bytes = nxrt::test::Serialize(m);
  nxrt::Session s(*f.env, nxrt::LoadModelFromBuffer(bytes.data(), bytes.size()), o);
  EXPECT_EQ(Placement(s), std::string("ExampleGpu[") + kDgpu + "]");
}

}  // namespace
