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
