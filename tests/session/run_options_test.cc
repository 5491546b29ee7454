// Runs that must stop: a terminate flag set from another thread, a time limit, a session memory
// limit, the CLI's --timeout; and a kernel that must never see a type it was not created for.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "controlflow/cf_models.h"

namespace {

using namespace nxrt::test::cf;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A Loop whose body has no node at all (its outputs are its inputs) and whose trip count is a
// constant 2^62: the executor has no step to check, only the Loop kernel's iterations.
std::string EmptyBodyEndlessLoop() {
  auto body = Graph("body", {}, {Info("i", I64, {}), Info("c", B, {}), Info("x", F, {1})},
                    {Info("c", B, {}), Info("x", F, {1})});
  auto main =
      Graph("endless", {WithGraph(MakeNode("Loop", {"n", "", "x0"}, {"x"}), "body", body)},
            {Info("x0", F, {1})}, {Info("x", F, {1})}, {Int64Scalar("n", int64_t{1} << 62)});
  return Model(main);
}

// x -> Loop n times with a scan output of 256 Ki floats (1 MiB) per iteration.
std::string GrowingScanLoop() {
  auto body =
      Graph("body",
            {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Identity", {"x_in"}, {"x_out"}),
             MakeNode("Add", {"x_in", "one"}, {"grown"})},
            {Info("i", I64, {}), Info("c_in", B, {}), Info("x_in", F, {262144})},
            {Info("c_out", B, {}), Info("x_out", F, {262144}), Info("grown", F, {262144})},
            {nxrt::test::MakeFloatTensor("one", {1}, {1.0f})});
  auto main =
      Graph("growing", {WithGraph(MakeNode("Loop", {"n", "", "x0"}, {"x", "all"}), "body", body)},
            {Info("n", I64, {}), Info("x0", F, {262144})},
            {Info("x", F, {262144}), Info("all", F, {-1, 262144})});
  return Model(main);
}

NxStatusCode CodeOf(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const nxrt::Exception& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return NX_OK;
}

TEST(RunOptions, TerminateFromAnotherThreadStopsTheRunWithin100ms) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = CountingLoop(16);
  nxrt::SessionOptions o;
  o.SetIntraOpThreads(1);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  nxrt::RunOptions run;
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{16});
  auto forever = Scalar64(int64_t{1} << 62);

  std::atomic<bool> started{false};
  Clock::time_point flag_set;
  std::thread stopper([&] {
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    flag_set = Clock::now();
    run.SetTerminate(true);
  });
  std::string message;
  started = true;
  const NxStatusCode code = CodeOf([&] { s.Run(run, {"n", "x0"}, {&forever, &x0}); }, &message);
  const double latency_ms = MsSince(flag_set);
  stopper.join();
  EXPECT_EQ(code, NX_CANCELLED) << message;
  EXPECT_NE(message.find("terminate"), std::string::npos) << message;
  std::printf("terminate flag -> run returned in %.3f ms\n", latency_ms);
  EXPECT_LT(latency_ms, 100.0);

  // While the flag stays set, runs fail at once; cleared, the session runs again.
  EXPECT_EQ(CodeOf([&] { s.Run(run, {"n", "x0"}, {&forever, &x0}); }), NX_CANCELLED);
  run.SetTerminate(false);
  auto five = Scalar64(5);
  auto out = s.Run(run, {"n", "x0"}, {&five, &x0});
  EXPECT_FLOAT_EQ(out[0].data<float>()[15], 5.0f);
}

TEST(RunOptions, TimeLimitStopsALoopWhoseBodyHasNoNodes) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = EmptyBodyEndlessLoop();
  nxrt::Session s(env, bytes.data(), bytes.size());
  nxrt::RunOptions run;
  run.SetTimeout(0.2);
  auto x0 = Vec1(3.0f);
  std::string message;
  const auto t0 = Clock::now();
  EXPECT_EQ(CodeOf([&] { s.Run(run, {"x0"}, {&x0}); }, &message), NX_CANCELLED);
  const double took_ms = MsSince(t0);
  EXPECT_NE(message.find("time limit of 0.2 s was reached"), std::string::npos) << message;
  EXPECT_NE(message.find("Loop"), std::string::npos) << message;
  EXPECT_GE(took_ms, 190.0);
  EXPECT_LT(took_ms, 1000.0);  // generous: sanitizer builds and busy CI machines
}

TEST(RunOptions, TimeLimitLeavesFastRunsAloneAndTheSessionUsable) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = CountingLoop(16);
  nxrt::Session s(env, bytes.data(), bytes.size());
  nxrt::RunOptions run;
  run.SetTimeout(0.05);
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{16});
  auto forever = Scalar64(int64_t{1} << 62);
  EXPECT_EQ(CodeOf([&] { s.Run(run, {"n", "x0"}, {&forever, &x0}); }), NX_CANCELLED);
  auto three = Scalar64(3);
  for (int k = 0; k < 3; ++k) {  // each run gets its own 50 ms
    auto out = s.Run(run, {"n", "x0"}, {&three, &x0});
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], 3.0f);
  }
}

TEST(RunOptions, BadTimeLimitsAreRefused) {
  NxRunOptions* run = nullptr;
  ASSERT_EQ(NxRunOptions_Create(&run), nullptr);
  for (double bad : {-1.0, std::nan(""), static_cast<double>(INFINITY)}) {
    NxStatus* st = NxRunOptions_SetTimeout(run, bad);
    ASSERT_NE(st, nullptr) << bad;
    EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
    NxStatus_Release(st);
  }
  EXPECT_EQ(NxRunOptions_SetTimeout(run, 0), nullptr);
  NxRunOptions_Release(run);
}

TEST(MemoryLimit, AGrowingLoopFailsClearlyAndTheSessionStaysUsable) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = GrowingScanLoop();
  nxrt::SessionOptions o;
  o.SetMemoryLimit(size_t{64} << 20);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{262144});
  auto many = Scalar64(1000);  // 1 GiB of scan outputs
  std::string message;
  EXPECT_EQ(CodeOf([&] { s.Run({"n", "x0"}, {&many, &x0}); }, &message), NX_OUT_OF_MEMORY);
  EXPECT_NE(message.find("memory limit of 64.0 MiB"), std::string::npos) << message;
  auto few = Scalar64(10);  // 10 MiB of scan outputs + 10 MiB stacked: fits
  for (int k = 0; k < 2; ++k) {
    auto out = s.Run({"n", "x0"}, {&few, &x0});
    EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{10, 262144}));
    EXPECT_FLOAT_EQ(out[1].data<float>()[9 * 262144], 1.0f);
  }
}

// A graph input whose element type the model leaves undefined feeds a kernel that takes int64
// targets: a uint8 tensor must be refused, not read 8 bytes per element.
TEST(RunTimeTypes, AnUndeclaredInputTypeIsCheckedAgainstTheKernel) {
  onnx::ValueInfoProto target;
  target.set_name("t");
  target.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  auto main = Graph("nll", {MakeNode("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll")},
                    {Info("x", F, {2, 3}), target}, {Info("loss", F, {})});
  const std::string bytes = Model(main);
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, bytes.data(), bytes.size());
  auto x = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{2, 3});
  for (size_t i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i);
  auto bad = nxrt::Value::Tensor(NX_TYPE_UINT8, std::vector<int64_t>{2});
  std::string message;
  EXPECT_EQ(CodeOf([&] { s.Run({"x", "t"}, {&x, &bad}); }, &message), NX_INVALID_ARGUMENT);
  EXPECT_NE(message.find("uint8"), std::string::npos) << message;
  EXPECT_NE(message.find("NegativeLogLikelihoodLoss node 'nll'"), std::string::npos) << message;
  auto good = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{2});
  good.data<int64_t>()[0] = 1;
  good.data<int64_t>()[1] = 2;
  auto out = s.Run({"x", "t"}, {&x, &good});
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], -(1.0f + 5.0f) / 2.0f);
}

// TfIdfVectorizer with max_skip_count near INT64_MAX: skips longer than the row count nothing,
// so the kernel must finish at once (it used to spin for hours).
TEST(LongKernels, TfIdfWithAHugeSkipCountFinishesAtOnce) {
  auto node = MakeNode("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
  auto add_int = [&](const char* name, int64_t v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
  auto add_ints = [&](const char* name, std::vector<int64_t> v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t e : v) a->add_ints(e);
  };
  add_int("min_gram_length", 2);
  add_int("max_gram_length", 2);
  add_int("max_skip_count", INT64_MAX - 1);
  auto* mode = node.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("TF");
  add_ints("ngram_counts", {0, 0});
  add_ints("ngram_indexes", {0});
  add_ints("pool_int64s", {1, 2});
  auto main = Graph("tfidf", {node}, {Info("x", I64, {6})}, {Info("y", F, {1})});
  const std::string bytes = Model(main, 9);
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, bytes.data(), bytes.size());
  auto x = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{6});
  const int64_t tokens[] = {1, 2, 1, 5, 5, 2};  // (1,2) at skips 1, 5 and 3
  for (size_t i = 0; i < 6; ++i) x.data<int64_t>()[i] = tokens[i];
  const auto t0 = Clock::now();
  auto out = s.Run({"x"}, {&x});
  EXPECT_LT(MsSince(t0), 1000.0);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 3.0f);
}

TEST(RunOptions, CliTimeoutSaysTheTimeLimitWasReached) {
  const std::string path = nxrt::test::WriteTempFile("endless.onnx", EmptyBodyEndlessLoop());
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  const auto t0 = Clock::now();
  FILE* p = popen(("'" + cli + "' run '" + path + "' --timeout 0.3 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) text += buf;
  const int status = pclose(p);
  EXPECT_NE(status, 0) << text;
  EXPECT_NE(text.find("the time limit of 0.3 s (--timeout) was reached"), std::string::npos)
      << text;
  EXPECT_LT(MsSince(t0), 5000.0);
}

}  // namespace
