// The runtime's control-flow kernels on an EP with its own memory (SimDevice, whose memory faults
// if the host ever dereferences it): If, Loop and Scan are SimDevice kernels, their values stay
// in device memory across iterations, and the device work (stacking, slicing, transposing) is
// done by SimDevice's helpers. Every model is also run on the CPU EP alone for comparison.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;

std::string SimLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so"; }

// A SimDevice test hook (the library stays loaded while an env has it registered).
template <class Fn>
Fn* Hook(const char* name) {
  void* h = dlopen(SimLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  auto* fn = reinterpret_cast<Fn*>(dlsym(h, name));
  dlclose(h);
  return fn;
}
size_t HelperCalls(const char* which) {
  auto* fn = Hook<size_t(const char*)>("SimDevice_HelperCalls");
  return fn ? fn(which) : 0;
}
size_t Copies() {
  auto* fn = Hook<size_t()>("SimDevice_Copies");
  return fn ? fn() : 0;
}
size_t LiveBlocks() {
  auto* fn = Hook<size_t()>("SimDevice_LiveBlocks");
  return fn ? fn() : 0;
}
size_t BadFrees() {
  auto* fn = Hook<size_t()>("SimDevice_BadFrees");
  return fn ? fn() : 0;
}

nxrt::Value Floats(const std::vector<int64_t>& dims, const std::vector<float>& v) {
  auto t = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}
nxrt::Value Bool1(bool b) {
  auto t = nxrt::Value::Tensor(NX_TYPE_BOOL, std::vector<int64_t>{1});
  *t.data<bool>() = b;
  return t;
}
std::vector<float> ToVector(nxrt::Value& v) {
  return std::vector<float>(v.data<float>(), v.data<float>() + v.size());
}

// ---- The seed's three models, and harder variants ----------------------------------------------

std::string IfMul() {
  auto then_g =
      Graph("then", {MakeNode("Mul", {"B", "two"}, {"then_out"})}, {},
            {Info("then_out", F, {3, 2})}, {nxrt::test::MakeFloatTensor("two", {1}, {2})});
  auto else_g =
      Graph("else", {MakeNode("Mul", {"B", "three"}, {"else_out"})}, {},
            {Info("else_out", F, {3, 2})}, {nxrt::test::MakeFloatTensor("three", {1}, {3})});
  auto node = WithGraph(WithGraph(MakeNode("If", {"A"}, {"C"}), "then_branch", then_g),
                        "else_branch", else_g);
  return Model(
      Graph("if_mul", {node}, {Info("A", B, {1}), Info("B", F, {3, 2})}, {Info("C", F, {3, 2})}));
}

std::string LoopSubOne() {
  auto body = Graph(
      "body",
      {MakeNode("Identity", {"cond_in"}, {"cond_out"}), MakeNode("Sub", {"a_in", "one"}, {"a_out"}),
       MakeNode("Identity", {"a_out"}, {"scan_out"})},
      {Info("iter", I64, {}), Info("cond_in", B, {}), Info("a_in", F, {1})},
      {Info("cond_out", B, {}), Info("a_out", F, {1}), Info("scan_out", F, {1})},
      {nxrt::test::MakeFloatTensor("one", {1}, {1})});
  auto node = WithGraph(MakeNode("Loop", {"MAX_ITERS", "", "A"}, {"C", "D"}), "body", body);
  return Model(Graph("loop_sub_one", {node}, {Info("MAX_ITERS", I64, {1}), Info("A", F, {1})},
                     {Info("C", F, {1}), Info("D", F, {3, 1})}));
}

// Scan over `X` [rows, cols]: each slice doubled (Y), and a running sum carried (S). With
// `axis` 1 the scan runs over columns and the outputs are stacked back along axis 1. With
// opset 8, X carries a batch axis in front ([batch, rows, cols], axis 1 only).
std::string ScanMulSum(int64_t axis, int64_t opset = 17) {
  auto body = Graph(
      "body", {MakeNode("Mul", {"x", "two"}, {"y"}), MakeNode("Add", {"s_in", "x"}, {"s_out"})},
      {Info("s_in", F, {-1}), Info("x", F, {-1})}, {Info("s_out", F, {-1}), Info("y", F, {-1})},
      {nxrt::test::MakeFloatTensor("two", {1}, {2})});
  std::vector<std::string> inputs = {"S0", "X"};
  if (opset == 8) inputs.insert(inputs.begin(), "");  // no sequence_lens
  auto scan = WithGraph(MakeNode("Scan", inputs, {"S", "Y"}), "body", body);
  auto* n = scan.add_attribute();
  n->set_name("num_scan_inputs");
  n->set_type(onnx::AttributeProto::INT);
  n->set_i(1);
  if (axis != 0) {
    for (const char* name : {"scan_input_axes", "scan_output_axes"}) {
      auto* a = scan.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(axis);
    }
  }
  std::vector<int64_t> x_dims =
      opset == 8 ? std::vector<int64_t>{2, 3, 2} : std::vector<int64_t>{3, 3};
  std::vector<int64_t> s_dims = opset == 8 ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{3};
  return Model(Graph("scan_mul", {scan}, {Info("S0", F, s_dims), Info("X", F, x_dims)},
                     {Info("S", F, s_dims), Info("Y", F, x_dims)}),
               opset);
}

// A graph input or output that is a sequence of float tensors.
onnx::ValueInfoProto FloatSequenceInfo(const std::string& name) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(F);
  return v;
}

// x -> Loop N times: x = x + 1 (the condition passes through on the CPU EP).
std::string CountingLoop() {
  auto body = Graph(
      "body",
      {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Add", {"x_in", "one"}, {"x_out"})},
      {Info("i", I64, {}), Info("c_in", B, {}), Info("x_in", F, {64})},
      {Info("c_out", B, {}), Info("x_out", F, {64})},
      {nxrt::test::MakeFloatTensor("one", {1}, {1.0f})});
  return Model(Graph("counting",
                     {WithGraph(MakeNode("Loop", {"n", "", "x0"}, {"x"}), "body", body)},
                     {Info("n", I64, {}), Info("x0", F, {64})}, {Info("x", F, {64})}));
}

// Parameter: SimDevice's EP option async, "0" (synchronous) or "1" (ABI 13 streams: kernels
// and helpers queued on a worker thread per stream).
class DeviceControlFlow : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    // Our own reference keeps the library (and its counters) loaded after the env is gone.
    lib_ = dlopen(SimLib().c_str(), RTLD_NOW);
    ASSERT_NE(lib_, nullptr) << dlerror();
    live_before_ = LiveBlocks();
    bad_before_ = BadFrees();
    env_ = std::make_unique<nxrt::Env>(NX_LOG_ERROR);
    env_->RegisterEpLibrary("sim", SimLib());
  }
  void TearDown() override {
    // Sessions and env gone (arenas included): no device block may be left, none freed twice.
    env_.reset();
    EXPECT_EQ(LiveBlocks(), live_before_);
    EXPECT_EQ(BadFrees(), bad_before_);
    if (lib_ != nullptr) dlclose(lib_);
  }

  // Runs `bytes` on SimDevice (when `sim`) or the CPU EP alone; all outputs as floats.
  std::vector<std::vector<float>> Run(const std::string& bytes, bool sim,
                                      const std::vector<std::string>& names,
                                      const std::vector<const nxrt::Value*>& inputs) {
    nxrt::SessionOptions o;
    o.SetIntraOpThreads(1);
    if (sim) o.AppendEp("SimDevice", {{"async", GetParam()}});
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    if (sim) {
      // The control-flow node itself runs on SimDevice.
      EXPECT_EQ(s.ep_name(0), "SimDevice");
      EXPECT_EQ(s.ep_node_count(0), 1u);
    }
    std::vector<std::vector<float>> out;
    for (auto& v : s.Run(names, inputs)) out.push_back(ToVector(v));
    return out;
  }

  void* lib_ = nullptr;
  std::unique_ptr<nxrt::Env> env_;
  size_t live_before_ = 0, bad_before_ = 0;
};

TEST_P(DeviceControlFlow, IfMulGivesTheSeedOutputsOnSimDevice) {
  const std::string bytes = IfMul();
  auto b = Floats({3, 2}, {2, 3, 4, -5, 6, 7});
  for (bool a : {true, false}) {
    auto cond = Bool1(a);
    auto out = Run(bytes, true, {"A", "B"}, {&cond, &b});
    const float k = a ? 2.0f : 3.0f;
    EXPECT_EQ(out[0], (std::vector<float>{2 * k, 3 * k, 4 * k, -5 * k, 6 * k, 7 * k}));
    EXPECT_EQ(out, Run(bytes, false, {"A", "B"}, {&cond, &b}));
  }
}

TEST_P(DeviceControlFlow, LoopSubOneStacksItsScanOutputOnTheDevice) {
  const std::string bytes = LoopSubOne();
  auto iters = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{1});
  *iters.data<int64_t>() = 3;
  auto a = Floats({1}, {10});
  const size_t concat_before = HelperCalls("concat"), queued_before = HelperCalls("queued");
  auto out = Run(bytes, true, {"MAX_ITERS", "A"}, {&iters, &a});
  EXPECT_EQ(out[0], (std::vector<float>{7}));
  EXPECT_EQ(out[1], (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(HelperCalls("concat"), concat_before + 1);  // D, stacked by SimDevice
  // With streams the stacking was queued on the Loop node's stream (ConcatOutputOnStream).
  EXPECT_EQ(HelperCalls("queued"), queued_before + (std::string(GetParam()) == "1" ? 1 : 0));
  EXPECT_EQ(out, Run(bytes, false, {"MAX_ITERS", "A"}, {&iters, &a}));
}

TEST_P(DeviceControlFlow, ScanMulSlicesAndStacksOnTheDevice) {
  const std::string bytes = ScanMulSum(0);
  auto x = Floats({3, 3}, {1, 2, 3, 10, 20, 30, 100, 200, 300});
  auto s0 = Floats({3}, {0, 0, 0});
  const size_t slices = HelperCalls("slice"), concats = HelperCalls("concat");
  const size_t queued = HelperCalls("queued");
  auto out = Run(bytes, true, {"S0", "X"}, {&s0, &x});
  EXPECT_EQ(out[0], (std::vector<float>{111, 222, 333}));
  EXPECT_EQ(out[1], (std::vector<float>{2, 4, 6, 20, 40, 60, 200, 400, 600}));
  EXPECT_EQ(HelperCalls("slice"), slices + 3);  // one per row
  EXPECT_EQ(HelperCalls("concat"), concats + 1);
  EXPECT_EQ(HelperCalls("queued"), queued + (std::string(GetParam()) == "1" ? 4 : 0));
  EXPECT_EQ(out, Run(bytes, false, {"S0", "X"}, {&s0, &x}));
}

TEST_P(DeviceControlFlow, ScanOverAxisOneTransposesOnTheDevice) {
  const std::string bytes = ScanMulSum(1);
  auto x = Floats({3, 3}, {1, 2, 3, 10, 20, 30, 100, 200, 300});
  auto s0 = Floats({3}, {0.5f, 0.5f, 0.5f});
  const size_t transposes = HelperCalls("transpose");
  auto out = Run(bytes, true, {"S0", "X"}, {&s0, &x});
  EXPECT_EQ(out[0], (std::vector<float>{6.5f, 60.5f, 600.5f}));  // sums of the rows
  EXPECT_EQ(out[1], (std::vector<float>{2, 4, 6, 20, 40, 60, 200, 400, 600}));
  EXPECT_EQ(HelperCalls("transpose"), transposes + 2);  // the input in, the output back
  EXPECT_EQ(out, Run(bytes, false, {"S0", "X"}, {&s0, &x}));
}

TEST_P(DeviceControlFlow, ScanOpset8BatchesOnTheDevice) {
  const std::string bytes = ScanMulSum(0, 8);
  auto x = Floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  auto s0 = Floats({2, 2}, {0, 0, 1, 1});
  auto out = Run(bytes, true, {"S0", "X"}, {&s0, &x});
  EXPECT_EQ(out[0], (std::vector<float>{9, 12, 91, 121}));
  EXPECT_EQ(out[1], (std::vector<float>{2, 4, 6, 8, 10, 12, 20, 40, 60, 80, 100, 120}));
  EXPECT_EQ(out, Run(bytes, false, {"S0", "X"}, {&s0, &x}));
}

TEST_P(DeviceControlFlow, LoopInsideIfInsideLoopOnSimDevice) {
  const std::string bytes = NestedModel();
  for (int64_t n : {0, 3, 6}) {
    auto trips = Scalar64(n);
    auto acc0 = Vec1(1.0f);
    auto step = Vec1(0.5f);
    auto out = Run(bytes, true, {"n", "acc0", "step"}, {&trips, &acc0, &step});
    float expected = 1.0f;
    for (int64_t i = 0; i < n; ++i) expected += (i % 2 == 0) ? 2 * 0.5f : -0.5f;
    EXPECT_FLOAT_EQ(out[0][0], expected) << "n=" << n;
  }
}

TEST_P(DeviceControlFlow, CarriedValuesStayInDeviceMemoryAcrossIterations) {
  const std::string bytes = CountingLoop();
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice", {{"async", GetParam()}});
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  auto x0 = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{64});
  std::fill(x0.data<float>(), x0.data<float>() + 64, 0.0f);
  // Copies per run: x0 to the device, x back to the host, and the body's constant `one`
  // uploaded once with the body plan; none per iteration.
  auto copies_for = [&](int64_t n) {
    auto trips = Scalar64(n);
    const size_t before = Copies();
    auto out = s.Run({"n", "x0"}, {&trips, &x0});
    EXPECT_FLOAT_EQ(out[0].data<float>()[63], static_cast<float>(n));
    return Copies() - before;
  };
  const size_t ten = copies_for(10);
  EXPECT_EQ(copies_for(1000), ten);
  EXPECT_LE(ten, 2u);
}

}  // namespace

// A sequence output whose tensors a device EP made (SequenceMap with its body on SimDevice) comes
// back with every tensor in host memory: the caller reads it directly.
TEST_P(DeviceControlFlow, SequenceOfDeviceTensorsIsDeliveredInHostMemory) {
  auto body = Graph("body", {MakeNode("Add", {"x", "x"}, {"y"})}, {Info("x", F, {-1})},
                    {Info("y", F, {-1})});
  const std::string bytes =
      Model(Graph("seq_map", {WithGraph(MakeNode("SequenceMap", {"xs"}, {"ys"}), "body", body)},
                  {FloatSequenceInfo("xs")}, {FloatSequenceInfo("ys")}));
  auto a = Floats({2}, {1, 2});
  auto b = Floats({3}, {3, 4, 5});
  auto xs = nxrt::Value::Sequence(NX_TYPE_FLOAT, {&a, &b});
  nxrt::SessionOptions o;
  o.SetIntraOpThreads(1);
  o.AppendEp("SimDevice", {{"async", GetParam()}});
  nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
  size_t body_nodes_on_sim = 0;
  for (const auto& sub : s.assignment_report().subgraphs)
    if (!sub.graph.empty() && sub.ep_name == "SimDevice") body_nodes_on_sim += sub.nodes.size();
  ASSERT_EQ(body_nodes_on_sim, 1u);
  auto out = s.Run({"xs"}, {&xs});
  ASSERT_EQ(NxValue_GetKind(out[0].get()), NX_VALUE_SEQUENCE);
  const size_t n = NxValue_GetSequenceLength(out[0].get());
  ASSERT_EQ(n, 2u);
  const std::vector<std::vector<float>> want = {{2, 4}, {6, 8, 10}};
  for (size_t i = 0; i < n; ++i) {
    const NxValue* e = NxValue_GetSequenceElement(out[0].get(), i);
    const NxMemoryInfo* where = NxValue_GetMemoryInfo(e);
    ASSERT_TRUE(where == nullptr || where->kind != NX_MEMORY_DEVICE) << "element " << i;
    const float* p = static_cast<const float*>(NxValue_GetConstData(e));
    EXPECT_EQ(std::vector<float>(p, p + want[i].size()), want[i]);
  }
}

// A Loop on SimDevice carrying a sequence: the sequence starts on the host (SequenceEmpty on the
// CPU EP), crosses into the Loop's device memory and back element by element, and each
// iteration appends a tensor made on the device (Add) by a SequenceInsert on the CPU EP.
TEST_P(DeviceControlFlow, LoopCarriesASequenceOfDeviceTensors) {
  auto body = Graph("body",
                    {MakeNode("Identity", {"c_in"}, {"c_out"}), MakeNode("Add", {"x", "x"}, {"y"}),
                     MakeNode("SequenceInsert", {"s_in", "y"}, {"s_out"})},
                    {Info("i", I64, {}), Info("c_in", B, {}), FloatSequenceInfo("s_in")},
                    {Info("c_out", B, {}), FloatSequenceInfo("s_out")});
  auto empty = MakeNode("SequenceEmpty", {}, {"s0"});
  nxrt::test::AddIntAttribute(&empty, "dtype", F);
  const std::string bytes = Model(
      Graph("seq_loop", {empty, WithGraph(MakeNode("Loop", {"n", "", "s0"}, {"s"}), "body", body)},
            {Info("n", I64, {}), Info("x", F, {3})}, {FloatSequenceInfo("s")}));
  auto run = [&](bool sim) {
    nxrt::SessionOptions o;
    o.SetIntraOpThreads(1);
    if (sim) o.AppendEp("SimDevice", {{"async", GetParam()}});
    nxrt::Session s(*env_, bytes.data(), bytes.size(), &o);
    if (sim) {
      bool loop_on_sim = false;
      for (const auto& sub : s.assignment_report().subgraphs)
        for (const auto& node : sub.nodes)
          if (sub.graph.empty() && sub.ep_name == "SimDevice" && node.op_type == "Loop")
            loop_on_sim = true;
      std::string why;
      for (const auto& f : s.assignment_report().fallbacks)
        why += f.node.op_type + ": " + f.detail + "\n";
      EXPECT_TRUE(loop_on_sim) << why;
      bool sequence_copied = false;  // s0, from the host into the Loop's device memory
      for (const auto& c : s.assignment_report().copies)
        if (c.graph.empty() && c.value == "s0" && c.to_ep == "SimDevice") sequence_copied = true;
      EXPECT_TRUE(sequence_copied);
    }
    auto trips = Scalar64(3);
    auto x = Floats({3}, {1, 2, 3});
    const size_t copies_before = Copies();
    auto out = s.Run({"n", "x"}, {&trips, &x});
    // Each iteration's y crosses from the device to SequenceInsert on the host, and the
    // sequence (growing to 3 tensors) back into the Loop's memory.
    if (sim) {
      EXPECT_GE(Copies() - copies_before, 3u + 1u + 2u);
    }
    EXPECT_EQ(NxValue_GetKind(out[0].get()), NX_VALUE_SEQUENCE);
    std::vector<std::vector<float>> got;
    for (size_t i = 0; i < NxValue_GetSequenceLength(out[0].get()); ++i) {
      const NxValue* e = NxValue_GetSequenceElement(out[0].get(), i);
      const NxMemoryInfo* where = NxValue_GetMemoryInfo(e);
      EXPECT_TRUE(where == nullptr || where->kind != NX_MEMORY_DEVICE) << "element " << i;
      const float* p = static_cast<const float*>(NxValue_GetConstData(e));
      got.emplace_back(p, p + 3);
    }
    return got;
  };
  const std::vector<std::vector<float>> want(3, std::vector<float>{2, 4, 6});
  EXPECT_EQ(run(false), want);
  EXPECT_EQ(run(true), want);
}

INSTANTIATE_TEST_SUITE_P(Modes, DeviceControlFlow, ::testing::Values("0", "1"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "1" ? "streams" : "synchronous";
                         });
