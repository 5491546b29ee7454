// Registering EP libraries: good ones, and each way a library can be broken. The env must stay
// usable after every failure.
#include <gtest/gtest.h>

#include "base/error.h"
#include "session/env.h"

namespace nxrt {
namespace {

std::string Lib(const std::string& name) { return std::string(NXRT_TEST_EP_DIR) + "/lib" + name + ".so"; }

void ExpectRegisterError(Env& env, const std::string& path, NxStatusCode code, const std::string& fragment,
                         const std::string& name = "broken") {
  try {
    env.RegisterLibrary(name, path);
    FAIL() << "registering " << path << " should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(EpLibrary, BrokenLibrariesGiveClearErrorsAndLeaveTheEnvUsable) {
  Env env(Logger(NX_LOG_ERROR, nullptr));
  ExpectRegisterError(env, Lib("does_not_exist"), NX_NOT_FOUND, "no such EP library");
  ExpectRegisterError(env, Lib("nxrt_test_no_entry_ep"), NX_INVALID_PLUGIN, "not an EP library (it exports neither");
  ExpectRegisterError(env, Lib("nxrt_test_newer_abi_ep"), NX_INVALID_PLUGIN, "newer than this runtime");
  ExpectRegisterError(env, Lib("nxrt_test_newer_abi_ep"), NX_INVALID_PLUGIN, "factory has ABI version 0",
                      "version0");
  ExpectRegisterError(env, Lib("nxrt_test_failing_factory_ep"), NX_FAIL, "refused on purpose");
  // The name "broken" was never taken, and a good library still registers.
  env.RegisterLibrary("broken", Lib("nxrt_test_failing_kernel_ep"));
  EXPECT_NE(env.FindFactory("misbehaving"), nullptr);
  EXPECT_THROW(env.RegisterLibrary("broken", Lib("nxrt_test_failing_kernel_ep")), Error);  // name taken
  env.UnregisterLibrary("broken");
  EXPECT_EQ(env.FindFactory("Misbehaving"), nullptr);
  EXPECT_THROW(env.UnregisterLibrary("broken"), Error);
}

TEST(EpLibrary, DefaultCpuEpLoads) {
  Env env(Logger(NX_LOG_ERROR, nullptr));
  EpFactory* cpu = env.DefaultCpuFactory();
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->name, "CPU");
  EXPECT_EQ(cpu->version, "0.1.0");
}

}  // namespace
}  // namespace nxrt
