// Ownership of the control-flow helpers an EP passes to CreateLoopKernel / CreateScanKernel:
// the host owns a helper once the call succeeds and releases it exactly once, when the kernel
// goes; a refused call (incomplete helper, wrong op) leaves it with the EP, which releases it.
// The HelperProbe test EP counts both. A helper that fails at run time gives a clear error and
// leaves the session usable.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <nxrt/nxrt.hpp>
#include <string>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;

std::string ProbeLib() {
  return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_helper_probe_ep.so";
}

struct Counts {
  size_t taken, released, refused, refused_released, unexpected_success, concat_calls;
};

Counts Read() {
  std::array<size_t, 6> c{};
  void* h = dlopen(ProbeLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) {
    if (auto* fn = reinterpret_cast<void (*)(size_t*)>(dlsym(h, "HelperProbe_Counts")))
      fn(c.data());
    dlclose(h);
  }
  return {c[0], c[1], c[2], c[3], c[4], c[5]};
}

void SetFailConcat(bool fail) {
  void* h = dlopen(ProbeLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto* fn = reinterpret_cast<void (*)(bool)>(dlsym(h, "HelperProbe_SetFailConcat"));
  ASSERT_NE(fn, nullptr);
  fn(fail);
  dlclose(h);
}

// A Loop with a scan output (x + 1 per iteration, stacked) followed by a Scan over that stack
// (each row doubled): the probe EP takes both control-flow nodes; the Add/Mul in the bodies fall
// back to the CPU EP.
std::string LoopThenScan() {
  auto loop_body =
      Graph("loop_body",
            {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Add", {"x_in", "one"}, {"x_out"}),
             MakeNode("Identity", {"x_out"}, {"row"})},
            {Info("i", I64, {}), Info("c_in", B, {}), Info("x_in", F, {2})},
            {Info("c_out", B, {}), Info("x_out", F, {2}), Info("row", F, {2})},
            {nxrt::test::MakeFloatTensor("one", {1}, {1})});
  auto scan_body = Graph("scan_body", {MakeNode("Mul", {"r", "two"}, {"d"})}, {Info("r", F, {2})},
                         {Info("d", F, {2})}, {nxrt::test::MakeFloatTensor("two", {1}, {2})});
  auto scan = WithGraph(MakeNode("Scan", {"rows"}, {"doubled"}), "body", scan_body);
  auto* m = scan.add_attribute();
  m->set_name("num_scan_inputs");
  m->set_type(onnx::AttributeProto::INT);
  m->set_i(1);
  return Model(Graph(
      "loop_then_scan",
      {WithGraph(MakeNode("Loop", {"n", "", "x0"}, {"x", "rows"}), "body", loop_body), scan},
      {Info("n", I64, {}), Info("x0", F, {2})}, {Info("x", F, {2}), Info("doubled", F, {3, 2})}));
}

TEST(ControlFlowHelpers, TheHostOwnsAcceptedHelpersAndReleasesThemOnce) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const Counts before = Read();
  const std::string bytes = LoopThenScan();
  {
    nxrt::SessionOptions o;
    o.AppendEp("HelperProbe");
    nxrt::Session s(env, bytes.data(), bytes.size(), &o);
    EXPECT_EQ(s.ep_node_count(0), 2u);  // Loop and Scan
    const Counts created = Read();
    EXPECT_EQ(created.taken - before.taken, 2u);
    EXPECT_EQ(created.released, before.released) << "released while the kernels are alive";
    // Three refused calls (incomplete helper, Scan on a Loop node, Loop on a Scan node).
    EXPECT_EQ(created.refused - before.refused, 3u);
    EXPECT_EQ(created.unexpected_success, 0u);
    EXPECT_EQ(created.refused_released, 0u) << "the host released a helper it refused";

    auto n = Scalar64(3);
    auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{2});
    x0.data<float>()[0] = 0;
    x0.data<float>()[1] = 10;
    for (int run = 0; run < 2; ++run) {
      auto out = s.Run({"n", "x0"}, {&n, &x0});
      EXPECT_FLOAT_EQ(out[0].data<float>()[1], 13.0f);
      const float* d = out[1].data<float>();
      EXPECT_EQ(std::vector<float>(d, d + 6), (std::vector<float>{2, 22, 4, 24, 6, 26}));
    }
    // The Loop stacks its scan output through the probe's ConcatOutput once per run; the Scan's
    // per-row outputs are in host memory, which the runtime stacks itself.
    EXPECT_EQ(Read().concat_calls - created.concat_calls, 2u);
    EXPECT_EQ(Read().released, before.released);
  }
  const Counts after = Read();
  EXPECT_EQ(after.released - before.released, 2u) << "each accepted helper released once";
  EXPECT_EQ(after.refused_released, 0u);
}

TEST(ControlFlowHelpers, AFailingHelperIsReportedAndTheSessionStaysUsable) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe", ProbeLib());
  const std::string bytes = LoopThenScan();
  nxrt::SessionOptions o;
  o.AppendEp("HelperProbe");
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  auto n = Scalar64(2);
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{2});
  x0.data<float>()[0] = x0.data<float>()[1] = 0;
  SetFailConcat(true);
  try {
    s.Run({"n", "x0"}, {&n, &x0});
    ADD_FAILURE() << "the failing ConcatOutput was not reported";
  } catch (const nxrt::Exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Loop"), std::string::npos) << m;
    EXPECT_NE(m.find("ConcatOutput failed"), std::string::npos) << m;
    EXPECT_NE(m.find("on purpose"), std::string::npos) << m;
  }
  SetFailConcat(false);
  auto out = s.Run({"n", "x0"}, {&n, &x0});
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 2.0f);
}

}  // namespace
