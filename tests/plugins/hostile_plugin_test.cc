// A plugin that hands the host garbage: status pointers the host never made, status codes it
// does not know, node handles of another (released) graph. Each is a clear error naming the EP,
// never a crash (the sanitizer build runs these too).
#include <gtest/gtest.h>

#include <memory>
#include <nxrt/nxrt.hpp>

#include "controlflow/cf_models.h"

namespace {

using namespace nxrt::test::cf;

std::string ProbeLib() {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_capability_probe_ep.so";
}

std::string ReluModel() {
  return Model(Graph("relu", {MakeNode("Relu", {"x"}, {"y"}, "relu")}, {Info("x", F, {4})},
                     {Info("y", F, {4})}));
}

// The fallback detail the report gives for the Relu node when the probe runs in `mode`.
std::string CapabilityFailure(nxrt::Env& env, const std::string& mode) {
  const std::string bytes = ReluModel();
  nxrt::SessionOptions o;
  o.AppendEp("CapabilityProbe", {{"mode", mode}});
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  const nxrt::AssignmentReport r = s.assignment_report();
  if (r.fallbacks.size() != 1 || r.fallbacks[0].reason != NX_FALLBACK_CAPABILITY_FAILED)
    return "(no capability failure)";
  EXPECT_EQ(r.fallbacks[0].assigned_ep, "CPU");
  return r.fallbacks[0].detail;
}

TEST(HostilePlugin, AGarbageStatusFromGetCapabilityIsNotRead) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string d = CapabilityFailure(env, "garbage_status");
  EXPECT_NE(d.find("status pointer the host did not create"), std::string::npos) << d;
}

TEST(HostilePlugin, AnUnknownStatusCodeBecomesAGenericError) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string d = CapabilityFailure(env, "unknown_code");
  EXPECT_NE(d.find("(unknown status code 12345) a code from the future"), std::string::npos) << d;
}

TEST(HostilePlugin, ANodeOfAnotherSessionsGraphIsRefusedWithoutBeingRead) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string bytes = ReluModel();
  nxrt::SessionOptions o;
  o.AppendEp("CapabilityProbe", {{"mode", "remember"}});
  auto first = std::make_unique<nxrt::Session>(env, bytes.data(), bytes.size(), &o);
  // The node belongs to the live first session's graph, not to the one being asked.
  std::string d = CapabilityFailure(env, "stale_node");
  EXPECT_NE(d.find("Capability_AddNode: the node is not in this graph"), std::string::npos) << d;
  // Released: the pointer dangles. The host decides from the address alone (the sanitizer
  // build would report a read of freed memory); if the allocator gave the new graph the same
  // memory, the address is a node of that graph and may be claimed.
  first.reset();
  d = CapabilityFailure(env, "stale_node");
  EXPECT_TRUE(d.find("the node is not in this graph") != std::string::npos ||
              d == "(no capability failure)")
      << d;
}

TEST(HostilePlugin, AGarbageStatusFromComputeFailsTheRunNamingTheEp) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string bytes = ReluModel();
  nxrt::SessionOptions o;
  o.AppendEp("CapabilityProbe", {{"mode", "garbage_compute"}});
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  auto x4 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{4});
  try {
    s.Run({"x"}, {&x4});
    FAIL() << "the garbage status was taken for success";
  } catch (const nxrt::Exception& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), NX_INVALID_PLUGIN) << m;
    EXPECT_NE(m.find("EP CapabilityProbe"), std::string::npos) << m;
    EXPECT_NE(m.find("status pointer the host did not create"), std::string::npos) << m;
  }
}

TEST(HostilePlugin, ApplicationsCannotCrashTheStatusCallsEither) {
  NxStatus* bogus = reinterpret_cast<NxStatus*>(static_cast<uintptr_t>(0xbad0000));
  EXPECT_EQ(NxStatus_GetCode(bogus), NX_FAIL);
  EXPECT_NE(std::string(NxStatus_GetMessage(bogus)).find("not a status"), std::string::npos);
  NxStatus_Release(bogus);  // ignored
  NxStatus* real = NxStatus_Create(NX_NOT_FOUND, "x");
  NxStatus_Release(real);
  NxStatus_Release(real);  // a second release is ignored too
}

}  // namespace
