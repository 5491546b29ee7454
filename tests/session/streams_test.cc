// Streams and events (ABI 13), on SimDevice in its asynchronous mode (EP option async=1): a
// worker thread per stream runs the kernels and copies Compute and CopyTensorsAsync queued.
// Outputs equal the synchronous mode's and the CPU EP's; copies to and from the device overlap
// (each copy made slow with the virtual NPU option copy_latency_us); the profile shows what ran
// when on each stream; errors and cross-device waits behave.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nxrt/nxrt.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

std::string SimLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so"; }

constexpr int kParts = 4;
constexpr int64_t kRows = 32, kK = 64, kN = 64;

// y_i = Relu(x_i x W) for i < kParts: every x_i goes to the device and every y_i comes back, so
// a run makes 2 * kParts host<->device copies around kParts independent MatMul -> Relu chains.
std::string PartsModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("parts");
  std::vector<float> w(static_cast<size_t>(kK * kN));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i)) * 0.1f;
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {kK, kN}, w);
  for (int p = 0; p < kParts; ++p) {
    const std::string i = std::to_string(p);
    *g->add_node() = MakeNode("MatMul", {"x" + i, "w"}, {"m" + i}, "matmul" + i);
    *g->add_node() = MakeNode("Relu", {"m" + i}, {"y" + i}, "relu" + i);
    for (const std::string& name : {"x" + i, "y" + i}) {
      auto* v = name[0] == 'x' ? g->add_input() : g->add_output();
      v->set_name(name);
      auto* t = v->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_value(kRows);
      t->mutable_shape()->add_dim()->set_dim_value(name[0] == 'x' ? kK : kN);
    }
  }
  return nxrt::test::Serialize(m);
}

std::vector<std::vector<float>> RunParts(nxrt::Session& s) {
  std::vector<nxrt::Value> xs;
  std::vector<std::string> names;
  for (int p = 0; p < kParts; ++p) {
    xs.push_back(nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{kRows, kK}));
    float* d = xs.back().data<float>();
    for (int64_t i = 0; i < kRows * kK; ++i) d[i] = std::cos(0.11f * static_cast<float>(i + p));
    names.push_back("x" + std::to_string(p));
  }
  std::vector<const nxrt::Value*> value_ptrs;
  for (const nxrt::Value& x : xs) value_ptrs.push_back(&x);
  auto out = s.Run(names, value_ptrs);
  std::vector<std::vector<float>> ys;
  for (auto& y : out) ys.emplace_back(y.data<float>(), y.data<float>() + y.size());
  return ys;
}

void ExpectNear(const std::vector<std::vector<float>>& got,
                const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size());
    for (size_t i = 0; i < got[o].size(); ++i)
      ASSERT_NEAR(got[o][i], want[o][i], 1e-4f) << "output " << o << " element " << i;
  }
}

double BestRunMs(nxrt::Session& s, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    RunParts(s);
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Streams : public ::testing::Test {
 protected:
  void Register(const std::string& latency_us) {
    env_.RegisterEpLibrary("sim", SimLib(), {{NX_DEVICE_NPU, {{"copy_latency_us", latency_us}}}});
  }
  nxrt::Session Make(const std::string& async, const std::string& profile = "") {
    nxrt::SessionOptions o;
    o.AppendEp("SimDevice", {{"async", async}});
    o.SetFallback(NX_FALLBACK_FORBID);
    if (!profile.empty()) o.SetProfileFile(profile);
    return nxrt::Session(env_, model_.data(), model_.size(), &o);
  }
  nxrt::Env env_{NX_LOG_ERROR};
  const std::string model_ = PartsModel();
};

TEST_F(Streams, AsynchronousRunsEqualSynchronousAndTheCpuEp) {
  Register("0");
  nxrt::SessionOptions cpu_only;
  nxrt::Session cpu(env_, model_.data(), model_.size(), &cpu_only);
  const auto want = RunParts(cpu);

  nxrt::Session sync = Make("0");
  nxrt::Session async = Make("1");
  EXPECT_EQ(sync.statistic("streams"), 0);
  // One stream for the kernels, one for copies to the device, one for copies back.
  EXPECT_EQ(async.statistic("streams"), 3);
  EXPECT_EQ(async.statistic("copies"), 2 * kParts);
  ExpectNear(RunParts(sync), want);
  for (int r = 0; r < 5; ++r) ExpectNear(RunParts(async), want);  // memory reused across runs
}

// z = m * m + x1 with m = x0 x W from a slow MatMul: the copy of x1 to the device is planned
// after the Mul, when m has had its last reader queued but (the kernels stream lagging behind)
// not run. m's block must not go to x1's copy on the to-device stream meanwhile, which would
// overwrite m before the Mul reads it.
TEST(StreamsMemory, QueuedReadersKeepTheirMemoryFromOtherStreams) {
  constexpr int64_t rows = 64, k = 1024, n = 64;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("reuse");
  std::vector<float> w(static_cast<size_t>(k * n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.21f * static_cast<float>(i)) * 0.05f;
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {k, n}, w);
  *g->add_node() = MakeNode("MatMul", {"x0", "w"}, {"m"}, "matmul");
  *g->add_node() = MakeNode("Mul", {"m", "m"}, {"r"}, "square");  // not in place: m is freed
  *g->add_node() = MakeNode("Add", {"r", "x1"}, {"z"}, "add");
  for (const auto& [name, cols] : {std::pair<std::string, int64_t>{"x0", k}, {"x1", n}, {"z", n}}) {
    auto* v = name == "z" ? g->add_output() : g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(rows);
    t->mutable_shape()->add_dim()->set_dim_value(cols);
  }
  const std::string model = nxrt::test::Serialize(m);
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", SimLib(), {{NX_DEVICE_NPU, {}}});
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{rows, k});
  auto x1 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{rows, n});
  for (int64_t i = 0; i < rows * k; ++i) x0.data<float>()[i] = std::cos(0.07f * i);
  for (int64_t i = 0; i < rows * n; ++i) x1.data<float>()[i] = -1000.0f - i;  // unlike m
  auto run = [&](nxrt::Session& s) {
    auto out = s.Run({"x0", "x1"}, {&x0, &x1});
    return std::vector<float>(out[0].data<float>(), out[0].data<float>() + rows * n);
  };
  nxrt::SessionOptions cpu_only;
  nxrt::Session cpu(env, model.data(), model.size(), &cpu_only);
  const std::vector<float> want = run(cpu);
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice", {{"async", "1"}});
  o.SetFallback(NX_FALLBACK_FORBID);
  nxrt::Session s(env, model.data(), model.size(), &o);
  for (int r = 0; r < 20; ++r) {
    const std::vector<float> got = run(s);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-3f) << "run " << r << " element " << i;
  }
}

TEST_F(Streams, CopiesOverlapEachOtherAndTheKernels) {
  // 20 ms per copy: synchronous, a run waits for all 8 copies one after the other (160 ms);
  // with streams the copies to the device run back to back while the copies back overlap them.
  Register("20000");
  nxrt::Session sync = Make("0");
  nxrt::Session async = Make("1");
  const double sync_ms = BestRunMs(sync, 2);
  const double async_ms = BestRunMs(async, 2);
  EXPECT_GE(sync_ms, 2 * kParts * 20.0);
  EXPECT_LT(async_ms, 0.8 * sync_ms)
      << "synchronous " << sync_ms << " ms, with streams " << async_ms << " ms";
  std::printf("[ info ] 8 copies of 20 ms: synchronous %.1f ms, with streams %.1f ms\n", sync_ms,
              async_ms);
}

TEST_F(Streams, TheProfileShowsQueuedAndExecutedSpansPerStream) {
  Register("2000");
  const std::string profile = ::testing::TempDir() + "/streams_profile.json";
  {
    nxrt::Session s = Make("1", profile);
    RunParts(s);
    s.EndProfiling();
  }
  const std::string json = ReadFile(profile);
  std::remove(profile.c_str());
  // Executed spans: category "stream", each on its stream's track, named after the stream.
  for (const char* track : {"stream SimDevice:0x0000:kernels", "stream SimDevice:0x0000:to-device",
                            "stream SimDevice:0x0000:from-device"})
    EXPECT_NE(json.find(track), std::string::npos) << track;
  for (const std::string name : {"matmul0", "relu3", "copy:x1", "copy:y2"})
    EXPECT_NE(json.find("{\"name\":\"" + name + "\",\"cat\":\"stream\""), std::string::npos)
        << name;
  // The queued span (the node's Compute on the host) names its stream.
  const size_t node = json.find("{\"name\":\"matmul0\",\"cat\":\"node\"");
  ASSERT_NE(node, std::string::npos);
  const std::string event = json.substr(node, json.find("}}", node) - node);
  EXPECT_NE(event.find("\"stream\":\"SimDevice:0x0000:kernels\""), std::string::npos) << event;
}

TEST_F(Streams, AFailedRunLeavesTheSessionUsable) {
  Register("0");
  nxrt::Session s = Make("1");
  // A wrong shape fails in the host's checks or in a kernel's Compute, with work still queued.
  auto bad = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{kRows, kK + 1});
  std::vector<nxrt::Value> good;
  std::vector<std::string> names;
  std::vector<const nxrt::Value*> values;
  for (int p = 0; p < kParts; ++p) {
    good.push_back(nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{kRows, kK}));
    std::fill(good.back().data<float>(), good.back().data<float>() + kRows * kK, 1.0f);
  }
  static const char* kNames[kParts] = {"x0", "x1", "x2", "x3"};
  for (int p = 0; p < kParts; ++p) {
    names.push_back(kNames[p]);
    values.push_back(p == 3 ? &bad : &good[static_cast<size_t>(p)]);
  }
  EXPECT_THROW(s.Run(names, values), nxrt::Exception);
  nxrt::SessionOptions cpu_only;
  nxrt::Session cpu(env_, model_.data(), model_.size(), &cpu_only);
  ExpectNear(RunParts(s), RunParts(cpu));
}

TEST_F(Streams, AnUnknownAsyncValueIsAClearError) {
  Register("0");
  try {
    nxrt::Session s = Make("yes");
    FAIL() << "the session was created";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("async is 'yes'"), std::string::npos) << e.what();
  }
}

TEST_F(Streams, ABadCopyLatencyIsRefusedAtRegistration) {
  EXPECT_THROW(Register("-5"), nxrt::Exception);
  EXPECT_THROW(Register("soon"), nxrt::Exception);
}

}  // namespace
