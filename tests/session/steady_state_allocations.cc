// A steady-state run allocates nothing: the executor's per-run vectors come from a scratch the
// session reuses, tensors from the session's buffer pools, tensor values and their control
// blocks from free lists (src/base/value.cc, src/base/free_list.h), and NxSession_Run's own
// vectors are reused per thread. This program replaces the global operator new to count every
// C++ allocation of the process (the runtime, the CPU EP library and oneDNN alike) while runs
// go on. Its own executable: the replacement would clash with the sanitizers' allocator, so the
// sanitizer build leaves it out (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <nxrt/nxrt_c_api.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* Allocate(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  return p;
}

}  // namespace

void* operator new(size_t n) {
  if (void* p = Allocate(n, alignof(std::max_align_t))) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = Allocate(n, alignof(std::max_align_t))) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = Allocate(n, static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) {
  if (void* p = Allocate(n, static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, alignof(std::max_align_t));
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, alignof(std::max_align_t));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;
using nxrt::test::cf::B;
using nxrt::test::cf::F;
using nxrt::test::cf::Graph;
using nxrt::test::cf::Info;
using nxrt::test::cf::Model;
using nxrt::test::cf::WithGraph;

void Check(NxStatus* st) {
  if (st == nullptr) return;
  std::string message = NxStatus_GetMessage(st);
  NxStatus_Release(st);
  FAIL() << message;
}

// `links` elementwise nodes in a chain (unary, binary with a constant, binary with the input),
// then an If whose branches read values of the main graph: the executor's steps, the tensors
// between them, and a control-flow body run per run.
std::string ChainModel(int links) {
  std::vector<onnx::NodeProto> nodes;
  std::string prev = "x";
  const char* unary[] = {"Relu", "Sigmoid", "Tanh", "Neg", "Abs"};
  for (int i = 0; i < links; ++i) {
    const std::string out = "v" + std::to_string(i);
    switch (i % 3) {
      case 0:
        nodes.push_back(MakeNode(unary[(i / 3) % 5], {prev}, {out}));
        break;
      case 1:
        nodes.push_back(MakeNode("Mul", {prev, "scale"}, {out}));
        break;
      default:
        nodes.push_back(MakeNode("Add", {prev, "x"}, {out}));
        break;
    }
    prev = out;
  }
  auto then_g = Graph("then", {MakeNode("Add", {prev, "x"}, {"t"})}, {}, {Info("t", F, {1, 256})});
  auto else_g = Graph("else", {MakeNode("Sub", {prev, "x"}, {"e"})}, {}, {Info("e", F, {1, 256})});
  nodes.push_back(WithGraph(WithGraph(MakeNode("If", {"c"}, {"y"}), "then_branch", then_g),
                            "else_branch", else_g));
  std::vector<float> scale(256, 0.5f);
  return Model(Graph("chain", nodes, {Info("x", F, {1, 256}), Info("c", B, {})},
                     {Info("y", F, {1, 256})}, {MakeFloatTensor("scale", {1, 256}, scale)}));
}

// Allocations per run in steady state, for a session at `threads` threads.
long AllocationsPerRun(int links, int threads, bool bound_output) {
  // The counter sees the whole process: first let the CPU EP library finish generating oneDNN's
  // kernels on its own thread (releasing an env waits for that), so it is not counted as a run's.
  static const bool library_warm = [] {
    NxEnv* env = nullptr;
    NxStatus* st = NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &env);
    size_t devices = 0;
    if (st == nullptr) st = NxEnv_GetEpDeviceCount(env, &devices);
    if (st != nullptr) NxStatus_Release(st);
    NxEnv_Release(env);
    return true;
  }();
  (void)library_warm;
  NxEnv* env = nullptr;
  NxSessionOptions* options = nullptr;
  NxSession* session = nullptr;
  NxValue *x = nullptr, *c = nullptr, *y = nullptr;
  const int64_t dims[] = {1, 256};
  long per_run = -1;
  [&] {
    Check(NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &env));
    Check(NxSessionOptions_Create(&options));
    Check(NxSessionOptions_SetIntraOpThreads(options, threads));
    const std::string bytes = ChainModel(links);
    Check(NxSession_CreateFromBuffer(env, bytes.data(), bytes.size(), options, &session));
    Check(NxValue_CreateTensor(NX_TYPE_FLOAT, dims, 2, &x));
    Check(NxValue_CreateTensor(NX_TYPE_BOOL, nullptr, 0, &c));
    float* xs = static_cast<float*>(NxValue_GetData(x));
    for (int i = 0; i < 256; ++i) xs[i] = 0.01f * static_cast<float>(i) - 1.0f;
    if (bound_output) Check(NxValue_CreateTensor(NX_TYPE_FLOAT, dims, 2, &y));
    const char* in_names[] = {"x", "c"};
    const NxValue* in_values[] = {x, c};
    const char* out_names[] = {"y"};
    auto run = [&](bool condition) {
      *static_cast<bool*>(NxValue_GetData(c)) = condition;
      NxValue* out = bound_output ? y : nullptr;
      Check(NxSession_Run(session, in_names, in_values, 2, out_names, 1, &out));
      if (!bound_output) NxValue_Release(out);
    };
    for (int i = 0; i < 20; ++i) run(i % 2 == 0);  // pools, scratch and free lists warm up
    constexpr int kRuns = 200;
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < kRuns; ++i) run(i % 2 == 0);
    g_counting = false;
    per_run = g_allocations.load() / kRuns;
    std::printf("%d nodes, %d thread(s), output %s: %ld allocations in %d runs\n", links + 1,
                threads, bound_output ? "bound" : "returned", g_allocations.load(), kRuns);
  }();
  NxValue_Release(y);
  NxValue_Release(c);
  NxValue_Release(x);
  NxSession_Release(session);
  NxSessionOptions_Release(options);
  NxEnv_Release(env);
  return per_run;
}

TEST(SteadyStateAllocations, ARunWithABoundOutputAllocatesNothing) {
  for (int threads : {1, 2}) {
    EXPECT_EQ(AllocationsPerRun(30, threads, true), 0) << threads << " thread(s)";
    EXPECT_EQ(AllocationsPerRun(120, threads, true), 0) << threads << " thread(s)";
  }
}

// An output handed to the caller is one value object; nothing grows with the nodes.
TEST(SteadyStateAllocations, AReturnedOutputCostsOneAllocationWhateverTheModelSize) {
  EXPECT_LE(AllocationsPerRun(30, 1, false), 2);
  EXPECT_EQ(AllocationsPerRun(30, 1, false), AllocationsPerRun(120, 1, false));
}

}  // namespace
