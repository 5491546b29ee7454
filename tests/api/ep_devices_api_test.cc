// EP devices and selection through the public C API and its C++ wrapper, on this machine: EP
// devices listed per library, virtual devices on request, explicit selection with options, a
// policy, a C selection callback (including one that fails), and what a session reports.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <string>

#include "test_util.h"

namespace {

using nxrt::test::MakeModel;
using nxrt::test::MakeNode;

std::string Lib(const std::string& file) { return std::string(NXRT_TEST_EP_DIR) + "/" + file; }

std::string AddReluSoftmax() {
  return nxrt::test::Serialize(
      MakeModel({MakeNode("Add", {"x", "x"}, {"a"}, "add"), MakeNode("Relu", {"a"}, {"r"}, "relu"),
                 MakeNode("Softmax", {"r"}, {"y"}, "soft")},
                {"x"}, {"y"}, {2, 3}));
}

std::vector<float> RunOnce(nxrt::Session& s) {
  std::vector<float> x = {-1, 0.5f, 2, -3, 4, 0};
  auto in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, std::vector<int64_t>{2, 3}, x.data(),
                                    x.size() * sizeof(float));
  auto out = s.Run({"x"}, {&in});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].size());
}

TEST(EpDevicesApi, ListsTheCpuEpDeviceOnThisMachine) {
  nxrt::Env env(NX_LOG_ERROR);
  auto devices = env.ep_devices();
  ASSERT_FALSE(devices.empty());
  const nxrt::EpDevice& cpu = devices.back();
  EXPECT_EQ(cpu.ep_name(), "CPU");
  EXPECT_EQ(cpu.library(), "cpu");
  EXPECT_EQ(cpu.hardware().type(), NX_DEVICE_CPU);
  EXPECT_EQ(cpu.hardware().get(), Nx_GetHardwareDevice(0));  // the discovered CPU itself
  EXPECT_FALSE(cpu.metadata("version").empty());
  EXPECT_EQ(cpu.memory()->device_type, NX_DEVICE_CPU);
  EXPECT_EQ(NxEnv_GetEpDevice(env.get(), devices.size()), nullptr);
}

TEST(EpDevicesApi, VirtualGpuSelectedExplicitlyRunsTheModel) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("gpu", Lib("libnxrt_ep_example_gpu.so"),
                        {{NX_DEVICE_GPU, {{"arch", "sm80"}}}});
  std::vector<nxrt::EpDevice> gpu;
  // The virtual GPU only: on a machine with a real NVIDIA GPU, ExampleGpu offers it too.
  for (const auto& d : env.ep_devices())
    if (d.ep_name() == "ExampleGpu" && d.hardware().is_virtual()) gpu.push_back(d);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].hardware().metadata("discovered_by"), "ExampleGpu");
  EXPECT_EQ(gpu[0].hardware().metadata("arch"), "sm80");
  EXPECT_EQ(gpu[0].options(), (nxrt::KeyValueList{{"precision", "fp32"}}));

  std::string bytes = AddReluSoftmax();
  nxrt::SessionOptions plain;
  nxrt::Session cpu_only(env, bytes.data(), bytes.size(), &plain);
  nxrt::SessionOptions o;
  o.AppendEpDevices(gpu, {{"precision", "fp32"}});
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  ASSERT_EQ(s.ep_count(), 2u);
  EXPECT_EQ(s.ep_name(0), "ExampleGpu");
  EXPECT_EQ(s.ep_node_count(0), 2u);
  EXPECT_EQ(s.ep_devices(0).size(), 1u);
  EXPECT_EQ(s.ep_devices(0)[0].get(), gpu[0].get());
  EXPECT_EQ(s.ep_name(1), "CPU");
  EXPECT_EQ(RunOnce(s), RunOnce(cpu_only));
  // A live session keeps the library (and its virtual device) registered.
  EXPECT_THROW(env.UnregisterEpLibrary("gpu"), nxrt::Exception);
}

TEST(EpDevicesApi, PolicyAndFallbackThroughTheCApi) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("npu", Lib("libnxrt_ep_example_npu.so"), {{NX_DEVICE_NPU, {}}});
  std::string bytes = AddReluSoftmax();
  nxrt::SessionOptions o;
  o.SetEpSelectionPolicy(NX_POLICY_PREFER_NPU);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  ASSERT_EQ(s.ep_count(), 2u);
  EXPECT_EQ(s.ep_name(0), "ExampleNpu");
  EXPECT_EQ(s.ep_node_count(0), 2u);
  EXPECT_EQ(s.ep_devices(0)[0].hardware().metadata("is_virtual"), "1");
  // Softmax has no NPU kernel: forbidding fallback makes that an error naming it.
  o.SetFallback(NX_FALLBACK_FORBID);
  try {
    nxrt::Session bad(env, bytes.data(), bytes.size(), &o);
    FAIL() << "forbid accepted an unclaimed node";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("Softmax node 'soft'"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(Nx_EpSelectionPolicyName(NX_POLICY_MIN_POWER), "min-power");
  EXPECT_THROW(o.SetEpSelectionPolicy(static_cast<NxEpSelectionPolicy>(42)), nxrt::Exception);
  EXPECT_THROW(o.SetFallback(static_cast<NxFallbackMode>(7)), nxrt::Exception);
}

struct CallbackState {
  size_t offered = 0;
  std::string producer;
  bool fail = false;
};

NxStatus* PickLastDevice(void* user, const NxEpDevice* const* devices, size_t n,
                         const NxKeyValue* md, size_t num_md, const NxEpDevice** selected,
                         size_t max_selected, size_t* num_selected) {
  auto* st = static_cast<CallbackState*>(user);
  st->offered = n;
  for (size_t i = 0; i < num_md; ++i)
    if (std::string(md[i].key) == "producer_name") st->producer = md[i].value;
  *num_selected = 0;
  if (st->fail || max_selected < 1) return nullptr;  // chooses nothing
  selected[0] = devices[n - 1];
  *num_selected = 1;
  return nullptr;
}

TEST(EpDevicesApi, SelectionCallbackThroughTheCApi) {
  nxrt::Env env(NX_LOG_ERROR);
  auto model = MakeModel({MakeNode("Relu", {"x"}, {"y"})}, {"x"}, {"y"}, {2, 3});
  model.set_producer_name("callback-test");
  std::string bytes = nxrt::test::Serialize(model);
  CallbackState st;
  nxrt::SessionOptions o;
  o.SetEpSelectionCallback(&PickLastDevice, &st);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  EXPECT_EQ(st.offered, env.ep_devices().size());
  EXPECT_EQ(st.producer, "callback-test");
  ASSERT_EQ(s.ep_count(), 1u);
  EXPECT_EQ(s.ep_name(0), "CPU");
  // A callback that chooses nothing fails session creation with a clear message.
  st.fail = true;
  try {
    nxrt::Session bad(env, bytes.data(), bytes.size(), &o);
    FAIL() << "an empty choice was accepted";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("chose no EP device"), std::string::npos) << e.what();
  }
}

NxStatus* FailingCallback(void*, const NxEpDevice* const*, size_t, const NxKeyValue*, size_t,
                          const NxEpDevice**, size_t, size_t*) {
  return NxStatus_Create(NX_NOT_FOUND, "no device fits this model");
}

TEST(EpDevicesApi, AFailingCallbackFailsSessionCreation) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = AddReluSoftmax();
  nxrt::SessionOptions o;
  o.SetEpSelectionCallback(&FailingCallback, nullptr);
  try {
    nxrt::Session bad(env, bytes.data(), bytes.size(), &o);
    FAIL() << "a failing callback was ignored";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("selection callback failed: no device fits this model"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.code(), NX_NOT_FOUND);
  }
}

TEST(EpDevicesApi, BadArgumentsGiveClearErrors) {
  nxrt::Env env(NX_LOG_ERROR);
  NxVirtualDeviceRequest bad_type{static_cast<NxDeviceType>(99), nullptr, 0};
  NxStatus* st = NxEnv_RegisterEpLibraryWithVirtualDevices(
      env.get(), "gpu", Lib("libnxrt_ep_example_gpu.so").c_str(), &bad_type, 1);
  ASSERT_NE(st, nullptr);
  EXPECT_NE(std::string(NxStatus_GetMessage(st)).find("unknown device type"), std::string::npos);
  NxStatus_Release(st);
  NxSessionOptions* o = nullptr;
  ASSERT_EQ(NxSessionOptions_Create(&o), nullptr);
  st = NxSessionOptions_AppendEpDevices(o, nullptr, 0, nullptr, 0);
  ASSERT_NE(st, nullptr);
  NxStatus_Release(st);
  NxSessionOptions_Release(o);
  // The env is still usable.
  env.RegisterEpLibrary("gpu", Lib("libnxrt_ep_example_gpu.so"));
  EXPECT_FALSE(env.ep_devices().empty());
}

}  // namespace
