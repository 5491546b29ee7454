// The runtime's control-flow kernels on the CPU EP: a Loop inside an If inside a Loop reading
// values from every enclosing scope, a 10,000-iteration Loop that must not grow memory, and a
// body that fails mid-loop (a clear error; the session stays usable).
#include <gtest/gtest.h>

#include <fstream>
#include <nxrt/nxrt.hpp>
#include <string>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;
using nxrt::test::MakeNode;

TEST(ControlFlow, LoopInsideIfInsideLoopReadsEveryScope) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = NestedModel();
  nxrt::Session s(env, bytes.data(), bytes.size());
  for (int64_t n : {0, 1, 4, 5}) {
    auto trips = Scalar64(n);
    auto acc0 = Vec1(1.0f);
    auto step = Vec1(0.5f);
    auto out = s.Run({"n", "acc0", "step"}, {&trips, &acc0, &step});
    float expected = 1.0f;
    for (int64_t i = 0; i < n; ++i) expected += (i % 2 == 0) ? 2 * 0.5f : -0.5f;
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], expected) << "n=" << n;
  }
}

size_t ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(ControlFlow, TenThousandIterationsDoNotGrowMemory) {
  // AddressSanitizer keeps freed blocks in a quarantine of up to 256 MiB, so resident memory
  // grows with every small allocation there; leaks are LeakSanitizer's job in that build.
  if (kAddressSanitizer) GTEST_SKIP() << "resident memory is not a measure under AddressSanitizer";
  constexpr int64_t kElements = 16384;  // 64 KiB per carried value
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = CountingLoop(kElements);
  nxrt::SessionOptions o;
  o.SetIntraOpThreads(1);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{kElements});
  // A first run brings pools, arenas and the allocator to their steady size; a second, long one
  // must not add to it.
  auto warm = Scalar64(100);
  s.Run({"n", "x0"}, {&warm, &x0});
  const size_t before = ResidentKiB();
  auto n = Scalar64(10000);
  auto out = s.Run({"n", "x0"}, {&n, &x0});
  const size_t after = ResidentKiB();
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 10000.0f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[kElements - 1], 10000.0f);
  // A leak of one carried value per iteration would be 625 MiB; allow noise of 16 MiB.
  std::printf("10000-iteration loop: resident memory %zu KiB -> %zu KiB\n", before, after);
  EXPECT_LT(after, before + 16 * 1024) << before << " KiB -> " << after << " KiB";
}

// A Loop whose body gathers element i of a 5-element constant: iteration 5 is out of range.
std::string FailingLoop() {
  auto body = Graph(
      "body",
      {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Gather", {"table", "i"}, {"picked"}),
       MakeNode("Add", {"s_in", "picked"}, {"s_out"})},
      {Info("i", I64, {}), Info("c_in", B, {}), Info("s_in", F, {})},
      {Info("c_out", B, {}), Info("s_out", F, {})},
      {nxrt::test::MakeFloatTensor("table", {5}, {1, 2, 3, 4, 5})});
  auto main =
      Graph("failing", {WithGraph(MakeNode("Loop", {"n", "", "s0"}, {"s"}, "loop"), "body", body)},
            {Info("n", I64, {}), Info("s0", F, {})}, {Info("s", F, {})});
  return Model(main);
}

TEST(ControlFlow, ABodyFailingMidLoopGivesAClearErrorAndTheSessionStaysUsable) {
  nxrt::Env env(NX_LOG_ERROR);
  std::string bytes = FailingLoop();
  nxrt::Session s(env, bytes.data(), bytes.size());
  auto s0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{});
  auto bad = Scalar64(8);
  try {
    s.Run({"n", "s0"}, {&bad, &s0});
    FAIL() << "the out-of-range gather was not reported";
  } catch (const nxrt::Exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Loop node 'loop'"), std::string::npos) << m;
    EXPECT_NE(m.find("iteration 5"), std::string::npos) << m;
    EXPECT_NE(m.find("Gather"), std::string::npos) << m;
  }
  auto good = Scalar64(5);
  auto out = s.Run({"n", "s0"}, {&good, &s0});
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 15.0f);
}

}  // namespace
