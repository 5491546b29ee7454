// Counters EPs keep about a session (NxEp::GetStatistic, plugin ABI version 11), read as the
// session statistics "ep.<EP>.<key>": the CPU EP's oneDNN primitive counts, NX_NOT_FOUND for a
// name the EP does not keep, for an EP the session does not use, and for an EP built against an
// older ABI that has no such callback.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <string>

#include "test_util.h"

namespace {

using nxrt::test::AddIntsAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeModel;
using nxrt::test::MakeNode;
using nxrt::test::Serialize;

// Conv (3x3, 16 -> 16) -> Relu over [1, 16, 12, 12]: oneDNN primitives in the CPU EP.
std::string ConvModel() {
  auto conv = MakeNode("Conv", {"x", "w"}, {"c"}, "conv");
  AddIntsAttribute(&conv, "kernel_shape", {3, 3});
  AddIntsAttribute(&conv, "pads", {1, 1, 1, 1});
  onnx::ModelProto m =
      MakeModel({conv, MakeNode("Relu", {"c"}, {"y"}, "relu")}, {"x"}, {"y"}, {1, 16, 12, 12});
  *m.mutable_graph()->add_initializer() =
      MakeFloatTensor("w", {16, 16, 3, 3}, std::vector<float>(16 * 16 * 9, 0.01f));
  return Serialize(m);
}

NxStatusCode StatisticError(const nxrt::Session& s, const std::string& key, std::string* message) {
  try {
    s.statistic(key);
  } catch (const nxrt::Exception& e) {
    *message = e.what();
    return e.code();
  }
  return NX_OK;
}

TEST(EpStatistics, TheCpuEpCountsItsPrimitivesAndNoReferenceOnes) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = ConvModel();
  for (const char* layout : {"0", "1"}) {  // node by node, and as a blocked group
    SCOPED_TRACE(std::string("blocked_layout ") + layout);
    nxrt::SessionOptions o;
    o.SetConfig("ep.cpu.blocked_layout", layout);
    nxrt::Session s(env, bytes.data(), bytes.size(), &o);
    EXPECT_GT(s.statistic("ep.CPU.primitives"), 0);
    EXPECT_EQ(s.statistic("ep.CPU.reference_primitives"), 0);
    std::string message;
    EXPECT_EQ(StatisticError(s, "ep.CPU.no_such_counter", &message), NX_NOT_FOUND);
    EXPECT_NE(message.find("no_such_counter"), std::string::npos) << message;
    EXPECT_EQ(StatisticError(s, "ep.NoSuchEp.primitives", &message), NX_NOT_FOUND);
    EXPECT_EQ(StatisticError(s, "ep.CPU.", &message), NX_NOT_FOUND);
  }
}

TEST(EpStatistics, AnEpOfAnOlderAbiKeepsNone) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("frozen", std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_frozen_abi_v10.so");
  const std::string bytes =
      Serialize(MakeModel({MakeNode("Relu", {"x"}, {"y"}, "relu")}, {"x"}, {"y"}, {2, 3}));
  nxrt::SessionOptions o;
  o.AppendEp("FrozenAbiV10");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  std::string message;
  EXPECT_EQ(StatisticError(s, "ep.FrozenAbiV10.reference_primitives", &message), NX_NOT_FOUND);
  EXPECT_NE(message.find("FrozenAbiV10"), std::string::npos) << message;
  EXPECT_EQ(s.statistic("copies"), 0);  // the host's own counters are unaffected
}

}  // namespace
