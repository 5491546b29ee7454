// A steady-state run allocates nothing: the executor's per-run vectors come from a scratch the
// session reuses, tensors from the session's buffer pools, tensor values and their control
// blocks from free lists (src/base/value.cc, src/base/free_list.h), and NxSession_Run's own
// vectors are reused per thread. The CPU EP's kernels keep shapes and strides in inline vectors
// (eps/cpu/common/small_vector.h) and their working buffers in per-thread scratch; the kernel
// mix below checks that for the ops of the real models that run on our own kernels. Kernels
// that call oneDNN primitives (dense convolutions, MatMul/Gemm with packed weights, and the
// blocked-layout groups the CPU EP compiles from chains of convolutions, eps/cpu/blocked/) are
// left out: oneDNN's execute builds its argument maps on the heap, a few allocations per call. This
// program replaces the global operator new to count every C++ allocation of the process (the
// runtime, the CPU EP library and oneDNN alike) while runs go on. Its own executable: the
// replacement would clash with the sanitizers' allocator, so the sanitizer build leaves it out
// (tests/CMakeLists.txt).
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
using nxrt::test::cf::Int64s;
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

// The counter sees the whole process: first let the CPU EP library finish generating oneDNN's
// kernels on its own thread (releasing an env waits for that), so it is not counted as a run's.
void WarmLibrary() {
  static const bool warm = [] {
    NxEnv* env = nullptr;
    NxStatus* st = NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &env);
    size_t devices = 0;
    if (st == nullptr) st = NxEnv_GetEpDeviceCount(env, &devices);
    if (st != nullptr) NxStatus_Release(st);
    NxEnv_Release(env);
    return true;
  }();
  (void)warm;
}

// Allocations per run in steady state, for a session at `threads` threads.
long AllocationsPerRun(int links, int threads, bool bound_output) {
  WarmLibrary();
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

onnx::TensorProto Floats(const std::string& name, const std::vector<int64_t>& dims, float scale) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return MakeFloatTensor(name, dims, values);
}

onnx::NodeProto WithInts(onnx::NodeProto node, const std::string& name,
                         const std::vector<int64_t>& values) {
  nxrt::test::AddIntsAttribute(&node, name, values);
  return node;
}

onnx::NodeProto WithInt(onnx::NodeProto node, const std::string& name, int64_t value) {
  nxrt::test::AddIntAttribute(&node, name, value);
  return node;
}

// The ops of the CNN, transformer and recurrent models that run on the CPU EP's own kernels,
// one after the other on x [1,8,12,12] (opset 18: axes, pads, shapes and splits are inputs):
// 1x1 and depthwise Conv, Pad, MaxPool, GlobalAveragePool, broadcast Mul, Slice, Concat, Split,
// Add, Reshape, Transpose, LayerNormalization, Softmax, ReduceMean, Squeeze, Unsqueeze, Gather,
// Expand, LSTM and GRU with constant weights; y is [1, 496].
std::string KernelMixModel() {
  constexpr int64_t H = 5;
  std::vector<onnx::NodeProto> n = {
      MakeNode("Conv", {"x", "w1", "b1"}, {"c1"}),
      MakeNode("Relu", {"c1"}, {"r1"}),
      WithInts(WithInt(MakeNode("Conv", {"r1", "wd", "bd"}, {"dw"}), "group", 16), "pads",
               {1, 1, 1, 1}),
      MakeNode("Pad", {"dw", "pads"}, {"p"}),
      WithInts(WithInts(MakeNode("MaxPool", {"p"}, {"mp"}), "kernel_shape", {2, 2}), "strides",
               {2, 2}),
      MakeNode("GlobalAveragePool", {"mp"}, {"gap"}),
      MakeNode("Mul", {"mp", "gap"}, {"se"}),
      MakeNode("Slice", {"se", "starts", "ends", "axes1"}, {"sl"}),
      WithInt(MakeNode("Concat", {"sl", "sl"}, {"cat"}), "axis", 1),
      WithInt(MakeNode("Split", {"cat", "halves"}, {"s1", "s2"}), "axis", 1),
      MakeNode("Add", {"s1", "s2"}, {"add"}),
      MakeNode("Reshape", {"add", "shape3"}, {"rs"}),
      WithInts(MakeNode("Transpose", {"rs"}, {"tr"}), "perm", {0, 2, 1}),
      MakeNode("LayerNormalization", {"tr", "ln_scale", "ln_bias"}, {"ln"}),
      WithInt(MakeNode("Softmax", {"ln"}, {"sm"}), "axis", -1),
      MakeNode("ReduceMean", {"sm", "axes2"}, {"rm"}),
      MakeNode("Squeeze", {"rm", "axes2"}, {"sq"}),
      MakeNode("Unsqueeze", {"sq", "axes0"}, {"us"}),
      WithInt(MakeNode("Gather", {"us", "picks"}, {"g"}), "axis", 2),
      MakeNode("Expand", {"g", "shape_g"}, {"ge"}),
      WithInt(MakeNode("LSTM", {"ln", "lstm_w", "lstm_r", "lstm_b"}, {"", "lstm_h"}), "hidden_size",
              H),
      WithInt(MakeNode("GRU", {"ln", "gru_w", "gru_r", "gru_b"}, {"", "gru_h"}), "hidden_size", H),
      MakeNode("Reshape", {"ge", "flat"}, {"gf"}),
      MakeNode("Reshape", {"lstm_h", "flat"}, {"lf"}),
      MakeNode("Reshape", {"gru_h", "flat"}, {"rf"}),
      WithInt(MakeNode("Concat", {"gf", "lf", "rf"}, {"y"}), "axis", 1),
  };
  std::vector<onnx::TensorProto> init = {
      Floats("w1", {16, 8, 1, 1}, 0.05f),
      Floats("b1", {16}, 0.01f),
      Floats("wd", {16, 1, 3, 3}, 0.05f),
      Floats("bd", {16}, 0.01f),
      Int64s("pads", {0, 0, 1, 1, 0, 0, 1, 1}),
      Int64s("starts", {0}),
      Int64s("ends", {8}),
      Int64s("axes1", {1}),
      Int64s("halves", {8, 8}),
      Int64s("shape3", {1, 8, 49}),
      Floats("ln_scale", {8}, 0.2f),
      Floats("ln_bias", {8}, 0.03f),
      Int64s("axes2", {2}),
      Int64s("axes0", {0}),
      Int64s("picks", {0, 3, 5}),
      Int64s("shape_g", {1, 2, 3}),
      Int64s("flat", {1, -1}),
      Floats("lstm_w", {1, 4 * H, 8}, 0.05f),
      Floats("lstm_r", {1, 4 * H, H}, 0.05f),
      Floats("lstm_b", {1, 8 * H}, 0.01f),
      Floats("gru_w", {1, 3 * H, 8}, 0.05f),
      Floats("gru_r", {1, 3 * H, H}, 0.05f),
      Floats("gru_b", {1, 6 * H}, 0.01f),
  };
  return Model(
      Graph("mix", n, {Info("x", F, {1, 8, 12, 12})}, {Info("y", F, {1, 6 + 2 * 49 * H})}, init),
      18);
}

// Allocations per run of KernelMixModel at `threads` threads, its output bound.
long KernelMixAllocationsPerRun(int threads) {
  WarmLibrary();
  NxEnv* env = nullptr;
  NxSessionOptions* options = nullptr;
  NxSession* session = nullptr;
  NxValue *x = nullptr, *y = nullptr;
  const int64_t x_dims[] = {1, 8, 12, 12}, y_dims[] = {1, 496};
  long per_run = -1;
  [&] {
    Check(NxEnv_Create(NX_LOG_ERROR, nullptr, nullptr, &env));
    Check(NxSessionOptions_Create(&options));
    Check(NxSessionOptions_SetIntraOpThreads(options, threads));
    // Our own kernels, node by node: no blocked-layout group of oneDNN primitives.
    Check(NxSessionOptions_SetConfig(options, "ep.cpu.blocked_layout", "0"));
    const std::string bytes = KernelMixModel();
    Check(NxSession_CreateFromBuffer(env, bytes.data(), bytes.size(), options, &session));
    Check(NxValue_CreateTensor(NX_TYPE_FLOAT, x_dims, 4, &x));
    Check(NxValue_CreateTensor(NX_TYPE_FLOAT, y_dims, 2, &y));
    float* xs = static_cast<float*>(NxValue_GetData(x));
    for (int i = 0; i < 8 * 144; ++i) xs[i] = 0.003f * static_cast<float>(i % 97) - 0.1f;
    const char* in_names[] = {"x"};
    const NxValue* in_values[] = {x};
    const char* out_names[] = {"y"};
    auto run = [&] {
      NxValue* out = y;
      Check(NxSession_Run(session, in_names, in_values, 1, out_names, 1, &out));
    };
    for (int i = 0; i < 20; ++i) run();
    constexpr int kRuns = 100;
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < kRuns; ++i) run();
    g_counting = false;
    per_run = g_allocations.load() / kRuns;
    std::printf("kernel mix, %d thread(s): %ld allocations in %d runs\n", threads,
                g_allocations.load(), kRuns);
  }();
  NxValue_Release(y);
  NxValue_Release(x);
  NxSession_Release(session);
  NxSessionOptions_Release(options);
  NxEnv_Release(env);
  return per_run;
}

TEST(SteadyStateAllocations, TheCpuKernelsOfRealModelsAllocateNothingPerRun) {
  for (int threads : {1, 2}) EXPECT_EQ(KernelMixAllocationsPerRun(threads), 0) << threads;
}

}  // namespace
