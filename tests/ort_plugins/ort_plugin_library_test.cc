// Registering an EP library built for onnxruntime's plugin interface (tests' ort_test_ep.c): its
// factory becomes an nxrt factory with the EP devices, metadata, options and memory the plugin
// declared, the slots it calls that nxrt lacks are counted, and each way the plugin can break the
// contract gives a clear error and leaves the env usable.
#include "ort_plugins/ort_plugin_library.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "devices/ep_device.h"
#include "plugins/ep_library.h"
#include "session/env.h"

namespace nxrt {
namespace {

std::string OrtTestLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_ort_ep.so"; }

std::string Value(const KeyValues& kv, const std::string& key) {
  const std::string* v = FindKey(kv, key);
  return v ? *v : "<absent>";
}

TEST(OrtPluginLibrary, FactoryAndEpDevicesComeThroughTheAdapter) {
  Env env(Logger(NX_LOG_ERROR, nullptr));
  env.RegisterLibrary("ort_test", OrtTestLib());
  EpFactory* f = env.FindFactory("OrtTestEp");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(ort::IsWrappedFactory(f->raw));
  EXPECT_EQ(f->vendor, "nxrt tests");
  EXPECT_EQ(f->version, "0.3.1");
  EXPECT_EQ(f->vendor_id, 0x1234u);
  ASSERT_EQ(f->devices.size(), 1u);  // the CPU
  const NxEpDevice* d = f->devices[0];
  EXPECT_EQ(d->device->type, NX_DEVICE_CPU);
  EXPECT_EQ(d->ep_name, "OrtTestEp");
  EXPECT_EQ(d->ep_vendor, "nxrt tests");
  EXPECT_EQ(Value(d->metadata, "test_device"), "cpu");
  EXPECT_EQ(Value(d->metadata, "cpu_vendor"), d->device->vendor);
  EXPECT_EQ(Value(d->metadata, "version"), "0.3.1");
  EXPECT_EQ(Value(d->metadata, "library_path"), OrtTestLib());
  EXPECT_EQ(Value(d->options, "mode"), "fast");
  // The plugin called OrtApi::CreateEnv and got ORT_NOT_IMPLEMENTED naming it ("ok"), and the
  // call was counted against the library.
  EXPECT_EQ(Value(d->metadata, "stub_check"), "ok");
  auto counts = ort::UnimplementedCallCounts(f->raw);
  EXPECT_EQ(counts["OrtApi::CreateEnv"], 1u);
  EXPECT_EQ(counts.size(), 1u);
  // Sessions cannot run on it yet, and say so.
  env.UnregisterLibrary("ort_test");
  EXPECT_EQ(env.FindFactory("OrtTestEp"), nullptr);
  // Registering again works (the library was unloaded and is loaded afresh).
  env.RegisterLibrary("ort_test", OrtTestLib());
  EXPECT_NE(env.FindFactory("OrtTestEp"), nullptr);
}

// The virtual NPUs of OrtTestEp's EP devices, by their "arch" metadata.
std::vector<std::string> VirtualArchs(Env& env) {
  std::vector<std::string> out;
  EpFactory* f = env.FindFactory("OrtTestEp");
  if (f == nullptr) return out;
  for (const NxEpDevice* d : f->devices) {
    if (!IsVirtual(*d->device)) continue;
    EXPECT_EQ(d->device->type, NX_DEVICE_NPU);
    EXPECT_EQ(d->device->vendor_id, 0x1234u);
    EXPECT_EQ(d->device->Get("discovered_by"), "OrtTestEp");
    EXPECT_EQ(Value(d->metadata, "target"), d->device->Get("arch"));
    out.push_back(d->device->Get("arch"));
  }
  return out;
}

TEST(OrtPluginLibrary, VirtualDevicesThePluginMakesAnswerTheRequests) {
  std::vector<std::string> warnings;  // about virtual devices
  Env env(Logger(NX_LOG_WARNING, [&](NxLogLevel, const std::string& m) {
    if (m.find("virtual") != m.npos) warnings.push_back(m);
  }));
  using Archs = std::vector<std::string>;
  auto registered = [&](const std::string& name, const std::vector<VirtualDeviceRequest>& r) {
    env.RegisterLibrary(name, OrtTestLib(), r);
    Archs archs = VirtualArchs(env);
    env.UnregisterLibrary(name);
    return archs;
  };
  // No request: the plugin does not see "allow_virtual_devices" and makes none.
  EXPECT_EQ(registered("ort_test", {}), Archs{});
  // A request keeps the plugin's devices of its type whose metadata or EP metadata match.
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_NPU, {}}}), (Archs{"t1", "t2"}));
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_NPU, {{"arch", "t2"}}}}), Archs{"t2"});
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_NPU, {{"target", "t1"}}}}), Archs{"t1"});
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_NPU, {{"arch", "t1"}}}, {NX_DEVICE_NPU, {}}}),
            (Archs{"t1", "t2"}));
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // Nothing of the type, or nothing with the options: no device, and the warnings say why.
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_GPU, {}}}), Archs{});
  EXPECT_EQ(registered("ort_test", {{NX_DEVICE_NPU, {{"arch", "t9"}}}}), Archs{});
  bool offers = false;
  for (const std::string& w : warnings) offers |= w.find("offers: arch=t1, arch=t2") != w.npos;
  EXPECT_TRUE(offers);
  // onnxruntime's convention: a name ending in ".virtual" allows every type.
  EXPECT_EQ(registered("ort_test.virtual", {}), (Archs{"t1", "t2"}));
}

void ExpectRegisterError(Env& env, const std::string& name, NxStatusCode code,
                         const std::string& fragment) {
  try {
    env.RegisterLibrary(name, OrtTestLib());
    FAIL() << name << " should fail to register";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(OrtPluginLibrary, BrokenPluginsGiveClearErrorsAndLeaveTheEnvUsable) {
  Env env(Logger(NX_LOG_ERROR, nullptr));
  ExpectRegisterError(env, "ort_test.refuse", NX_FAIL, "registration refused on purpose");
  ExpectRegisterError(env, "ort_test.garbage_status", NX_INVALID_PLUGIN,
                      "status pointer the host did not create");
  ExpectRegisterError(env, "ort_test.no_factories", NX_INVALID_PLUGIN, "created no factory");
  ExpectRegisterError(env, "ort_test.too_many", NX_INVALID_PLUGIN, "factories, at most");
  ExpectRegisterError(env, "ort_test.no_name", NX_INVALID_PLUGIN, "factory has no name");
  ExpectRegisterError(env, "ort_test.garbage_device", NX_INVALID_PLUGIN,
                      "EP device the host did not create");
  ExpectRegisterError(env, "ort_test.unoffered_device", NX_INVALID_PLUGIN,
                      "hardware device it was not offered");
  ExpectRegisterError(env, "ort_test.failing_devices", NX_FAIL,
                      "GetSupportedDevices failed on purpose");
  env.RegisterLibrary("ort_test", OrtTestLib());
  EXPECT_NE(env.FindFactory("OrtTestEp"), nullptr);
}

}  // namespace
}  // namespace nxrt
