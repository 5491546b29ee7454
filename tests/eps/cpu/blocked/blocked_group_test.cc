// Blocked-layout groups (eps/cpu/blocked/): chains of convolutions, activations, pooling,
// Add/Mul and Concat compiled into one kernel that keeps its activations in nChw8c / nChw16c
// give the same outputs as the same nodes run one by one (ep.cpu.blocked_layout=0, whose kernels
// are tested against references elsewhere), for both block sizes, 1 to 3 threads, channel
// counts that are not multiples of the block, batches of 2, values that leave the group midway,
// fused activations, residual sums, squeeze-and-excitation scales and concatenations. A group
// oneDNN cannot compile falls back to the nodes' own kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "eps/cpu/blocked/group_model_builder.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::blocked;
using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::AddIntsAttribute;
using nxrt::test::AddStringAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

TEST(BlockedGroup, ResidualChainWithOddChannelsAndAPlainFirstLayer) {
  Builder b;
  b.Input("x", {1, 3, 17, 19});
  b.Conv("x", "c1", 3, 12, 3, 2);  // plain RGB-like input
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 12, 12, 3);
  b.Op("Relu", {"c2"}, "r2");
  b.Conv("r2", "c3", 12, 12, 3);
  b.Op("Add", {"c3", "r1"}, "s");  // residual: in place over r1
  b.Op("Relu", {"s"}, "y");
  b.Output("y", {1, 12, 9, 10});
  auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 3, 17, 19}});
  EXPECT_EQ(ref, 3u);      // node by node, the host fuses each Conv with what follows it
  EXPECT_EQ(blocked, 1u);  // one compiled group
}

TEST(BlockedGroup, MobileBlockWithSqueezeAndExcitationAndClip) {
  Builder b;
  const int64_t c = 5, e = 30;
  b.Input("x", {2, c, 14, 14});
  b.Conv("x", "ex", c, e, 1);
  b.Op("HardSwish", {"ex"}, "hs");
  b.Conv("hs", "dw", e, e, 3, 2, 1, e);  // depthwise, stride 2
  b.Clip("dw", "r6", 0.0f, 6.0f);
  b.Op("GlobalAveragePool", {"r6"}, "gap");
  b.Conv("gap", "sq", e, 6, 1);
  b.Op("Relu", {"sq"}, "sqr");
  b.Conv("sqr", "exc", 6, e, 1);
  b.Op("HardSigmoid", {"exc"}, "scale");
  b.Op("Mul", {"r6", "scale"}, "se");  // [2, 30, 7, 7] * [2, 30, 1, 1]
  b.Conv("se", "y", e, 7, 1);
  b.Output("y", {2, 7, 7, 7});
  b.Output("gap", {2, e, 1, 1});  // leaves the group midway and is read inside
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, c, 14, 14}});
}

TEST(BlockedGroup, FireModulesConcatenateInPlaceByCopyAndThroughOneDnn) {
  Builder b;
  b.Input("x", {1, 16, 24, 24});
  b.Conv("x", "sq", 16, 8, 1);
  b.Op("Relu", {"sq"}, "sqr");
  b.Conv("sqr", "e1", 8, 16, 1);
  b.Op("Relu", {"e1"}, "e1r");
  b.Conv("sqr", "e3", 8, 16, 3);
  b.Op("Relu", {"e3"}, "e3r");
  b.Concat({"e1r", "e3r"}, "fire");  // written in place by the two convolutions
  b.Pool("MaxPool", "fire", "mp", 3, 2, 0, /*ceil_mode=*/true);  // 24 -> 12 (floor: 11)
  b.Conv("mp", "a", 32, 8, 1);
  b.Concat({"a", "mp"}, "copied");  // mp is read twice: copied
  b.Conv("copied", "odd", 40, 6, 3);
  b.Concat({"odd", "a"}, "unaligned");  // 6 + 8 channels: oneDNN's concat
  b.Pool("AveragePool", "unaligned", "y", 3, 1, 1, false, /*count_pad=*/true);
  b.Output("y", {1, 14, 12, 12});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 16, 24, 24}});
}

TEST(BlockedGroup, SwishStandaloneActivationsAndPooling) {
  Builder b;
  b.Input("x", {1, 8, 15, 15});
  b.Input("z", {1, 20, 15, 15});
  b.Conv("x", "c", 8, 20, 3);
  b.Op("Sigmoid", {"c"}, "sig");
  b.Op("Mul", {"c", "sig"}, "swish");     // fused as Swish
  b.Op("Add", {"swish", "z"}, "sum");     // fused as a sum over the (entered) kernel input z
  b.Op("Tanh", {"sum"}, "t");             // sum leaves the group: a standalone activation
  b.Clip("t", "clipped", 0.1f, 0.5f);     // Clip run by nxrt: padding lanes zeroed again
  b.Op("Add", {"t", "clipped"}, "both");  // both operands computed: a binary primitive
  b.Pool("AveragePool", "both", "ap", 3, 1, 1);
  b.Op("GlobalMaxPool", {"ap"}, "y");
  b.Output("y", {1, 20, 1, 1});
  b.Output("clipped", {1, 20, 15, 15});
  b.Output("sum", {1, 20, 15, 15});
  ExpectSameAsNodeByNode(b.Bytes(), {"x", "z"}, {{1, 8, 15, 15}, {1, 20, 15, 15}});
}

// ONNX's Clip keeps NaN; oneDNN's clip turns it into a bound, so groups run Clip themselves.
// (Other activations follow oneDNN, as the fused convolutions outside groups do: Relu turns NaN
// into 0, like onnxruntime's fused activations.)
TEST(BlockedGroup, ClipKeepsNaNInsideGroups) {
  Builder b;
  b.Input("x", {1, 8, 9, 9});
  b.Conv("x", "c", 8, 16, 3);
  b.Clip("c", "fused", 0.0f, 6.0f);  // fused into the convolution
  b.Conv("fused", "d", 16, 16, 3, 1, 1, 16);
  b.Op("Add", {"d", "fused"}, "a");  // a sum post-op, then the Clip below
  b.Clip("a", "y", -1.0f, 1.5f);     // standalone: a leaves the group
  b.Clip("y", "z", 0.5f, 1.0f);      // standalone after a standalone one
  b.Output("z", {1, 16, 9, 9});
  b.Output("a", {1, 16, 9, 9});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 8, 9, 9}}, /*nan_first=*/true);
}

TEST(BlockedGroup, DilatedAndStridedConvolutionsWithABatch) {
  Builder b;
  b.Input("x", {2, 9, 20, 18});
  b.Conv("x", "a", 9, 24, 3, 1, -1, 1, 2);  // dilation 2
  b.Op("LeakyRelu", {"a"}, "la");
  b.Conv("la", "d", 24, 24, 5, 2, 2, 24);  // 5x5 depthwise, stride 2
  b.Op("Relu", {"d"}, "dr");
  b.Conv("dr", "y", 24, 17, 3, 2, 0);
  b.Output("y", {2, 17, 4, 4});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, 9, 20, 18}});
}

TEST(BlockedGroup, AGroupThatFailsToCompileFallsBackToTheNodes) {
  Builder b;
  b.Input("x", {1, 8, 10, 10});
  b.Conv("x", "c", 8, 8, 3);
  b.Pool("MaxPool", "c", "m", 2, 1, 0);
  b.Conv("m", "y", 8, 4, 1);
  b.Output("y", {1, 4, 9, 9});
  const std::string bytes = b.Bytes();
  const Result ref = RunModel(bytes, {"x"}, {{1, 8, 10, 10}}, "0", 1);
  const Result got = RunModel(bytes, {"x"}, {{1, 8, 10, 10}}, "fail-for-tests", 2);
  EXPECT_EQ(ref.kernels, 3u);
  EXPECT_EQ(got.kernels, ref.kernels);  // the group's nodes, each on its kernel
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_EQ(got.outputs[0], ref.outputs[0]);  // the same kernels
  // A max pooling whose padding is as wide as its window stays out of groups: oneDNN gives such
  // windows the lowest float, nxrt's MaxPool -inf.
  Builder p;
  p.Input("x", {1, 8, 10, 10});
  p.Conv("x", "c", 8, 8, 3);
  p.Pool("MaxPool", "c", "y", 2, 1, 2);
  p.Output("y", {1, 8, 13, 13});
  EXPECT_EQ(RunModel(p.Bytes(), {"x"}, {{1, 8, 10, 10}}, "1", 1).kernels, 2u);
}

// An EP of higher priority (SimDevice, which has Relu and Add) takes nodes in the middle of the
// chain: the CPU EP leaves them out of its groups (Capability_IsNodeTaken) instead of claiming a
// group the host would reject as not convex, so every convolution still finds its EP.
TEST(BlockedGroup, NodesAnEarlierEpTookStayOutOfGroups) {
  Builder b;
  b.Input("x", {1, 8, 12, 12});
  b.Conv("x", "c1", 8, 16, 3);
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 16, 16, 3);
  b.Pool("MaxPool", "c2", "m", 3, 1, 1);
  b.Op("Add", {"m", "r1"}, "s");
  b.Conv("s", "c3", 16, 8, 1);
  b.Pool("MaxPool", "c3", "y", 2, 2, 0);
  b.Output("y", {1, 8, 6, 6});
  const std::string bytes = b.Bytes();
  const Result ref = RunModel(bytes, {"x"}, {{1, 8, 12, 12}}, "0", 1);

  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("sim", std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so");
  nxrt::SessionOptions options;
  options.AppendEp("SimDevice").AppendEp("CPU").SetIntraOpThreads(2);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{1, 8, 12, 12});
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 2.0f * normal(rng);
  std::vector<nxrt::Value> out = session.Run({"x"}, {&x});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), ref.outputs[0].size());
  for (size_t i = 0; i < out[0].size(); ++i)
    EXPECT_NEAR(out[0].data<float>()[i], ref.outputs[0][i], 1e-4f) << i;
}

// PaddleOCR's blocks: Conv -> BatchNormalization (folded into the weights) -> HardSwish written
// out (one post-op), Conv -> Mul(c, x) -> Add(x, c) (a learnable affine: composed into one linear
// step) -> Relu, a BatchNormalization after a Relu (standalone), Sub and Div by constants.
TEST(BlockedGroup, PaddleBlocksBatchNormsAndScalarConstants) {
  Builder b;
  b.Input("x", {1, 3, 20, 16});
  b.Conv("x", "c1", 3, 16, 3, 2);
  b.BatchNorm("c1", "n1", 16);
  b.WrittenHardSwish("n1", "h1");
  b.Conv("h1", "d1", 16, 16, 3, 1, 1, 16);
  b.Constant("scale", {1}, {0.8f});
  b.Constant("shift", {1, 1, 1, 1}, {-0.3f});
  b.Op("Mul", {"scale", "d1"}, "s1");
  b.Op("Add", {"s1", "shift"}, "a1");
  b.Op("Relu", {"a1"}, "r1");
  b.BatchNorm("r1", "n2", 16);  // after a Relu: standalone
  b.Conv("n2", "c2", 16, 12, 1);
  b.Constant("five", {}, {5.0f});
  b.Op("Sub", {"five", "c2"}, "sub");  // 5 - x
  b.Constant("two", {}, {2.0f});
  b.Op("Div", {"sub", "two"}, "div");
  b.Op("GlobalAveragePool", {"div"}, "gap");
  b.Conv("gap", "y", 12, 4, 1);
  b.Output("y", {1, 4, 1, 1});
  b.Output("h1", {1, 16, 10, 8});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 3, 20, 16}});
}

// PP-OCRv6's blocks: Gelu written out with Erf on a group's input (one Gelu step) and after a
// convolution (its post-op), in both scale forms; the group takes all of them. An Erf whose
// pattern is broken (its value also leaves the graph) stays a node, and the rest still groups.
TEST(BlockedGroup, WrittenGelusRunInsideTheGroup) {
  Builder b;
  b.Input("x", {1, 20, 9, 11});
  b.WrittenGelu("x", "g0");  // a group input: a standalone Gelu step
  b.Conv("g0", "c1", 20, 24, 1);
  b.WrittenGelu("c1", "g1", true);  // the convolution's post-op
  b.Conv("g1", "c2", 24, 24, 3, 1, 1, 24);
  b.Op("Relu", {"c2"}, "r2");
  b.WrittenGelu("r2", "g2");  // after a Relu: a standalone step again
  b.Conv("g2", "y", 24, 8, 1);
  b.Output("y", {1, 8, 9, 11});
  auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 20, 9, 11}});
  EXPECT_EQ(blocked, 1u);  // every node in one compiled group

  Builder broken;
  broken.Input("x", {1, 16, 8, 8});
  broken.Conv("x", "c0", 16, 16, 1);
  broken.Conv("c0", "c1", 16, 16, 1);
  broken.WrittenGelu("c1", "g1");
  broken.Conv("g1", "g2", 16, 16, 3);
  broken.Conv("g2", "y", 16, 16, 1);
  broken.Output("y", {1, 16, 8, 8});
  broken.Output("g1_e", {1, 16, 8, 8});  // the Erf's value leaves the graph
  ExpectSameAsNodeByNode(broken.Bytes(), {"x"}, {{1, 16, 8, 8}});
}

// PP-LCNet's squeeze-and-excitation: ReduceMean over H and W with kept dimensions is a global
// average pool inside the group (axes as an attribute and, from opset 18, as an input; negative
// axes too). A ReduceMean over the channels, or without kept dimensions, stays a node.
TEST(BlockedGroup, SpatialReduceMeansPoolInsideTheGroup) {
  for (int opset : {13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Builder b(opset);
    b.Input("x", {1, 24, 10, 12});
    b.Conv("x", "c1", 24, 24, 3, 1, 1, 24);
    b.ReduceMean("c1", "m", opset == 18 ? std::vector<int64_t>{-1, -2} : std::vector<int64_t>{2, 3},
                 opset);
    b.Conv("m", "s1", 24, 6, 1);
    b.Op("Relu", {"s1"}, "s1r");
    b.Conv("s1r", "s2", 6, 24, 1);
    b.Op("HardSigmoid", {"s2"}, "g");
    b.Op("Mul", {"c1", "g"}, "scaled");
    b.Conv("scaled", "y", 24, 16, 1);
    b.Output("y", {1, 16, 10, 12});
    auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 24, 10, 12}});
    EXPECT_EQ(blocked, 1u);
  }
  Builder channels(13);
  channels.Input("x", {1, 16, 6, 6});
  channels.Conv("x", "c1", 16, 16, 1);
  channels.Conv("c1", "r1", 16, 16, 3);  // the two convolutions: the group
  channels.ReduceMean("r1", "m", {1}, 13);
  channels.Conv("m", "y", 1, 8, 1);
  channels.Output("y", {1, 8, 6, 6});
  ExpectSameAsNodeByNode(channels.Bytes(), {"x"}, {{1, 16, 6, 6}});
}

// GhostNetV2's attention gate: a pooled branch (AvgPool, convolutions, Sigmoid) resized back to
// the block's size by a nearest Resize and multiplied in. The Resize is a member: by constant
// sizes, by constant scales, and by sizes torch computes from the gate's own shape (Shape ->
// Slice -> Concat, which the session makes a constant before placement, so no cycle cuts the
// group), under each coordinate rule; factors that are not integers (7 -> 12, 12 -> 5) and
// downscales too. Channel counts are not multiples of the block.
TEST(BlockedGroup, NearestResizesRunInsideTheGroup) {
  struct Case {
    const char* coord;
    const char* nearest;
    const char* how;  // "sizes", "scales", "shape"
  };
  const Case cases[] = {{"asymmetric", "floor", "shape"},
                        {"half_pixel", "round_prefer_floor", "sizes"},
                        {"pytorch_half_pixel", "round_prefer_ceil", "sizes"},
                        {"align_corners", "round_prefer_floor", "sizes"},
                        {"tf_half_pixel_for_nn", "ceil", "scales"},
                        {"asymmetric", "floor", "scales"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.coord) + " / " + k.nearest + " / " + k.how);
    Builder b(13);
    const int64_t c = 20;
    b.Input("x", {1, c, 14, 10});
    b.Conv("x", "c1", c, c, 1);
    b.Pool("AveragePool", "c1", "p", 2, 2, 0);  // 7 x 5
    b.Conv("p", "g1", c, c, 3, 1, 1, c);
    b.Op("Sigmoid", {"g1"}, "gate");
    std::vector<std::string> ins = {"gate", "", ""};
    if (std::string(k.how) == "scales") {
      b.Constant("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
      ins[2] = "scales";
    } else if (std::string(k.how) == "sizes") {
      b.Int64Constant("sizes", {4}, {1, c, 14, 10});
      ins.push_back("sizes");
    } else {
      b.Op("Shape", {"gate"}, "gshape");
      b.Int64Constant("s0", {1}, {0});
      b.Int64Constant("s2", {1}, {2});
      b.Op("Slice", {"gshape", "s0", "s2"}, "nc");
      b.Int64Constant("hw", {2}, {14, 10});
      auto cat = MakeNode("Concat", {"nc", "hw"}, {"sizes"}, "cat");
      AddIntAttribute(&cat, "axis", 0);
      b.Raw(cat);
      ins.push_back("sizes");
    }
    auto resize = MakeNode("Resize", ins, {"up"}, "resize");
    AddStringAttribute(&resize, "mode", "nearest");
    AddStringAttribute(&resize, "coordinate_transformation_mode", k.coord);
    AddStringAttribute(&resize, "nearest_mode", k.nearest);
    b.Raw(resize);
    b.Op("Mul", {"c1", "up"}, "gated");
    b.Conv("gated", "y", c, 12, 3);
    b.Output("y", {1, 12, 14, 10});
    auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, c, 14, 10}});
    EXPECT_EQ(blocked, 1u) << "the Resize left the group";
  }
  // Factors that are not integers, up and down, with a batch of 2.
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners"}) {
    SCOPED_TRACE(coord);
    Builder b(13);
    b.Input("x", {2, 9, 7, 12});
    b.Conv("x", "c1", 9, 9, 3);
    b.Int64Constant("sizes", {4}, {2, 9, 12, 5});
    auto resize = MakeNode("Resize", {"c1", "", "", "sizes"}, {"r"}, "resize");
    AddStringAttribute(&resize, "coordinate_transformation_mode", coord);
    b.Raw(resize);
    b.Conv("r", "y", 9, 10, 3);
    b.Output("y", {2, 10, 12, 5});
    auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, 9, 7, 12}});
    EXPECT_EQ(blocked, 1u);
  }
  // Linear resizes, nearest ones of the channels, and downscales by scales (whose output could
  // be empty at some run-time size) stay nodes: the group is cut around them.
  for (const std::string mode : {"linear", "channels", "down"}) {
    SCOPED_TRACE(mode);
    Builder b(13);
    b.Input("x", {1, 8, 12, 12});
    b.Conv("x", "c1", 8, 8, 3);
    b.Conv("c1", "c2", 8, 8, 3);
    const float hw = mode == "down" ? 0.5f : 2.0f;
    b.Constant("scales", {4}, {1.0f, mode == "channels" ? 2.0f : 1.0f, hw, hw});
    auto resize = MakeNode("Resize", {"c2", "", "scales"}, {"r"}, "resize");
    if (mode == "linear") AddStringAttribute(&resize, "mode", "linear");
    b.Raw(resize);
    b.Conv("r", "c3", mode == "channels" ? 16 : 8, 8, 3);
    b.Conv("c3", "y", 8, 8, 3);
    const int64_t side = mode == "down" ? 6 : 24;
    b.Output("y", {1, 8, side, side});
    auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 8, 12, 12}});
    EXPECT_EQ(blocked, 3u);  // two groups and the Resize
  }
}

// Channel Splits are members: YOLOv8's C2f (halves, one through a bottleneck, concatenated with
// both), MixNet's mixed kernels (parts of 5, 7 and 12 channels, each through its own depthwise
// kernel, concatenated) and a part that leaves the group; split sizes as an attribute (opset
// 11), an input (13) and num_outputs (18); halves on and off block boundaries.
TEST(BlockedGroup, ChannelSplitsRunInsideTheGroup) {
  for (int opset : {11, 13, 18}) {
    for (int64_t c : {24, 32}) {
      SCOPED_TRACE("opset " + std::to_string(opset) + ", " + std::to_string(c) + " channels");
      Builder b(opset);
      b.Input("x", {1, 8, 12, 10});
      b.Conv("x", "cv1", 8, c, 1);
      auto split = MakeNode("Split", {"cv1"}, {"a", "b"}, "split");
      AddIntAttribute(&split, "axis", 1);
      if (opset == 11) AddIntsAttribute(&split, "split", {c / 2, c / 2});
      if (opset == 13) {
        b.Int64Constant("halves", {2}, {c / 2, c / 2});
        split = MakeNode("Split", {"cv1", "halves"}, {"a", "b"}, "split");
        AddIntAttribute(&split, "axis", 1);
      }
      if (opset == 18) AddIntAttribute(&split, "num_outputs", 2);
      b.Raw(split);
      b.Conv("b", "m1", c / 2, c / 2, 3);
      b.Op("Relu", {"m1"}, "m1r");
      b.Conv("m1r", "m2", c / 2, c / 2, 3);
      b.Op("Add", {"m2", "b"}, "m");
      b.Concat({"a", "b", "m"}, "cat");
      b.Conv("cat", "y", 3 * c / 2, 16, 1);
      b.Output("y", {1, 16, 12, 10});
      auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 8, 12, 10}});
      EXPECT_EQ(blocked, 1u) << "the Split left the group";
    }
  }
  Builder mix(13);
  mix.Input("x", {2, 6, 9, 11});
  mix.Conv("x", "e", 6, 24, 1);
  mix.Int64Constant("parts", {3}, {5, 7, 12});
  auto split = MakeNode("Split", {"e", "parts"}, {"p0", "p1", "p2"}, "split");
  AddIntAttribute(&split, "axis", 1);
  mix.Raw(split);
  mix.Conv("p0", "d0", 5, 5, 3, 1, 1, 5);
  mix.Conv("p1", "d1", 7, 7, 5, 1, 2, 7);
  mix.Conv("p2", "d2", 12, 12, 7, 1, 3, 12);
  mix.Concat({"d0", "d1", "d2"}, "cat");
  mix.Conv("cat", "y", 24, 10, 1);
  mix.Output("y", {2, 10, 9, 11});
  mix.Output("p1", {2, 7, 9, 11});  // a part that also leaves the group
  auto [ref, blocked] = ExpectSameAsNodeByNode(mix.Bytes(), {"x"}, {{2, 6, 9, 11}});
  EXPECT_EQ(blocked, 1u);
}

// ShuffleNetV2's unit: half the channels pass through (a Slice outside the group), the other
// half through convolutions, then both are concatenated for a shuffle outside. That Concat stays
// a node: inside the group it would reorder the passed-through half in only to reorder it out.
TEST(BlockedGroup, AConcatThatOnlyPassesValuesThroughStaysANode) {
  Builder b(13);
  b.Input("x", {1, 16, 8, 8});
  b.Int64Constant("zero", {1}, {0});
  b.Int64Constant("half", {1}, {8});
  b.Int64Constant("all", {1}, {16});
  b.Int64Constant("axis", {1}, {1});
  b.Op("Slice", {"x", "zero", "half", "axis"}, "a");
  b.Op("Slice", {"x", "half", "all", "axis"}, "b");
  b.Conv("b", "c1", 8, 8, 1);
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 8, 8, 3, 1, 1, 8);
  b.Concat({"a", "c2"}, "y");
  b.Output("y", {1, 16, 8, 8});
  auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 16, 8, 8}});
  EXPECT_EQ(ref, 5u);      // Slice, Slice, Conv + Relu, Conv, Concat
  EXPECT_EQ(blocked, 4u);  // Slice, Slice, the group, Concat
}

// A global average pool inside a group sums a large plane exactly enough: PP-OCRv6 det's
// ReduceMean over 160 x 160 was 2e-4 off (relative) when oneDNN's pooling added the pixels one
// after another in float. Values near 100 (a 1 x 1 identity convolution with bias 100) over
// 192 x 192 pixels: the group's mean, at both block sizes and through GlobalAveragePool and
// ReduceMean, equals the float64 mean to 1e-6.
TEST(BlockedGroup, GlobalMeansOfLargePlanesStayAccurate) {
  const int64_t c = 20, h = 192, w = 192;
  for (const std::string op : {"GlobalAveragePool", "ReduceMean"}) {
    Builder b;
    b.Input("x", {1, c, h, w});
    std::vector<float> identity(static_cast<size_t>(c * c), 0.0f);
    for (int64_t i = 0; i < c; ++i) identity[static_cast<size_t>(i * c + i)] = 1.0f;
    b.Constant("id_w", {c, c, 1, 1}, identity);
    b.Constant("id_b", {c}, std::vector<float>(static_cast<size_t>(c), 100.0f));
    b.Raw(MakeNode("Conv", {"x", "id_w", "id_b"}, {"shifted"}, "shifted"));
    if (op == "ReduceMean") {
      b.ReduceMean("shifted", "y", {2, 3}, 17);
    } else {
      b.Op(op, {"shifted"}, "y");
    }
    b.Output("y", {1, c, 1, 1});
    const std::string bytes = b.Bytes();
    const std::vector<int64_t> dims{1, c, h, w};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
    for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = noise(rng);
    std::vector<double> want(static_cast<size_t>(c), 0.0);
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < h * w; ++p)
        want[static_cast<size_t>(ch)] += double(x.data<float>()[ch * h * w + p]) + 100.0;
      want[static_cast<size_t>(ch)] /= static_cast<double>(h * w);
    }
    for (const std::string layout : {"8", "16"}) {
      SCOPED_TRACE(op + ", block " + layout);
      nxrt::Env env(NX_LOG_ERROR);
      nxrt::SessionOptions options;
      options.SetIntraOpThreads(2)
          .SetConfig("ep.cpu.blocked_layout", layout)
          .SetLogLevel(NX_LOG_ERROR);
      nxrt::Session session(env, bytes.data(), bytes.size(), &options);
      EXPECT_EQ(session.ep_node_count(0), 1u);  // the convolution and the mean: one group
      std::vector<nxrt::Value> out = session.Run({"x"}, {&x});
      ASSERT_EQ(out[0].size(), static_cast<size_t>(c));
      for (int64_t ch = 0; ch < c; ++ch) {
        const double got = out[0].data<float>()[ch], ref = want[static_cast<size_t>(ch)];
        EXPECT_LE(std::fabs(got - ref), 1e-6 * std::fabs(ref)) << "channel " << ch;
      }
    }
  }
}

// Groups narrower than a block (ResNeXt's 4 channels, RegNet's 8 on 16-channel blocks) run as
// one group per block with weights zero off the diagonal: the whole chain is one group at both
// block sizes, batch 2, odd sizes, strided, with a residual sum, also where the channels end
// inside a block. 2 channels per group on 16-channel blocks (8 groups per block) would cost 8x:
// that convolution stays a node.
TEST(BlockedGroup, NarrowGroupsRunAsOneGroupPerBlock) {
  Builder b;
  b.Input("x", {2, 8, 13, 11});
  b.Conv("x", "a", 8, 32, 1);
  b.Op("Relu", {"a"}, "ar");
  b.Conv("ar", "g4", 32, 32, 3, 1, 1, 8);  // 8 groups of 4
  b.Op("Relu", {"g4"}, "g4r");
  b.Conv("g4r", "g8", 32, 32, 3, 2, 1, 4);  // 4 groups of 8, stride 2
  b.Conv("ar", "skip", 32, 32, 1, 2);
  b.Op("Add", {"g8", "skip"}, "s");
  b.Op("Relu", {"s"}, "y");
  b.Output("y", {2, 32, 7, 6});
  auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, 8, 13, 11}});
  EXPECT_EQ(blocked, 1u);  // (block 16, the last run)

  // Channel counts that end inside a block (RegNet's 104): the last block holds fewer groups
  // and padding lanes; a Sigmoid (nonzero at zero) after one, a residual sum after the other.
  Builder pad;
  pad.Input("x", {1, 24, 10, 9});
  pad.Conv("x", "a", 24, 24, 1);
  pad.Op("Relu", {"a"}, "ar");
  pad.Conv("ar", "g8", 24, 24, 3, 1, 1, 3);  // 3 groups of 8
  pad.Op("Sigmoid", {"g8"}, "g8s");
  pad.Conv("g8s", "g4", 24, 24, 3, 1, 1, 6);  // 6 groups of 4
  pad.Op("Add", {"g4", "ar"}, "s");
  pad.Op("Relu", {"s"}, "sr");
  pad.Conv("sr", "c", 24, 40, 1);
  pad.Op("GlobalAveragePool", {"c"}, "y");
  pad.Output("y", {1, 40, 1, 1});
  auto [ref_pad, blocked_pad] = ExpectSameAsNodeByNode(pad.Bytes(), {"x"}, {{1, 24, 10, 9}});
  EXPECT_EQ(blocked_pad, 1u);

  Builder two;
  two.Input("x", {1, 16, 9, 10});
  two.Conv("x", "a0", 16, 16, 1);
  two.Conv("a0", "a", 16, 16, 1);
  two.Op("Relu", {"a"}, "ar");
  two.Op("Relu", {"ar"}, "arr");
  two.Conv("arr", "g2", 16, 16, 3, 1, 1, 8);  // 8 groups of 2
  two.Op("Relu", {"g2"}, "g2r");
  two.Conv("g2r", "c", 16, 16, 1);
  two.Op("Relu", {"c"}, "cr");
  two.Conv("cr", "y", 16, 16, 1);
  two.Output("y", {1, 16, 9, 10});
  auto [ref2, blocked2] = ExpectSameAsNodeByNode(two.Bytes(), {"x"}, {{1, 16, 9, 10}});
  EXPECT_EQ(blocked2, 3u);  // at 16-channel blocks: a group, the node, a group
}

// Convolutions with one channel block out are cut into slices of output rows at 2 and 3
// threads: from a plain 3-channel input (copied per slice, a batch of 2), with Clip applied
// after the primitive, dilated depthwise, and a residual sum, on odd sizes.
// Grouped convolutions with whole blocks per group (RegNet's groups of 8 channels; 16 per
// group fills an AVX-512 block too) are members (8 per group on 16-channel blocks as narrow
// groups, below). Strided, with a fused activation, a residual sum and, at 2-3 threads, slices
// of whole groups.
TEST(BlockedGroup, GroupedConvolutionsWithWholeBlocksPerGroup) {
  Builder b;
  b.Input("x", {1, 16, 20, 18});
  b.Conv("x", "a", 16, 64, 1);
  b.Op("Relu", {"a"}, "ar");
  b.Conv("ar", "g16", 64, 64, 3, 1, 1, 4);  // 4 groups of 16
  b.Op("Relu", {"g16"}, "g16r");
  b.Conv("g16r", "g8", 64, 64, 3, 2, 1, 8);  // 8 groups of 8, stride 2
  b.Op("Relu", {"g8"}, "g8r");
  b.Conv("g8r", "c", 64, 64, 1);
  b.Conv("ar", "skip", 64, 64, 1, 2);
  b.Op("Add", {"c", "skip"}, "s");
  b.Op("Relu", {"s"}, "y");
  b.Output("y", {1, 64, 10, 9});
  auto [ref, blocked] = ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{1, 16, 20, 18}});
  EXPECT_LT(blocked, ref);
}

TEST(BlockedGroup, OneBlockConvolutionsSplitIntoRowSlices) {
  Builder b;
  b.Input("x", {2, 3, 97, 61});
  b.Conv("x", "c1", 3, 5, 3, 2);  // plain input, [2, 5, 49, 31]
  b.Clip("c1", "r1", 0.0f, 6.0f);
  b.Conv("r1", "d1", 5, 5, 5, 1, 4, 5, 2);  // depthwise 5x5, dilation 2
  b.Conv("d1", "c2", 5, 7, 3);
  b.Conv("r1", "c3", 5, 7, 3);
  b.Op("Add", {"c2", "c3"}, "sum");
  b.Op("Relu", {"sum"}, "y");
  b.Output("y", {2, 7, 49, 31});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, 3, 97, 61}});
}

// Convolutions of at least 2^25 multiply-adds whose channel slices would each hold one block of
// a spatial kernel, or split blocks unevenly, run as one primitive on oneDNN's OpenMP team at
// 2 and 3 threads (profiled as "(omp)"): 2 output blocks of a 3x3 (the second half padding), 3
// blocks of a 1x1 with Clip after it, a 3x3 with a fused residual sum, a batch of 2.
TEST(BlockedGroup, LargeConvolutionsRunOnOneDnnsTeam) {
  Builder b;
  b.Input("x", {2, 32, 96, 96});
  b.Conv("x", "c1", 32, 24, 3);  // 64 M multiply-adds, 2 blocks
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 24, 96, 1);  // 21 M: slices
  b.Conv("c2", "c3", 96, 48, 1);  // 42 M, 3 blocks: 2 / 1
  b.Clip("c3", "r3", 0.0f, 6.0f);
  b.Conv("r3", "c4", 48, 24, 3);  // 96 M, the residual sum fused
  b.Op("Add", {"c4", "r1"}, "y");
  b.Output("y", {2, 24, 96, 96});
  const std::string bytes = b.Bytes();
  ExpectSameAsNodeByNode(bytes, {"x"}, {{2, 32, 96, 96}});

  const std::string path = nxrt::test::TempDir() + "/blocked_omp_profile.json";
  {
    nxrt::Env env(NX_LOG_ERROR);
    nxrt::SessionOptions options;
    // (winograd=0: the 3x3 convolutions would otherwise run nxrt's Winograd, no primitive.)
    options.SetIntraOpThreads(2)
        .SetConfig("ep.cpu.blocked_layout", "16")
        .SetConfig("ep.cpu.winograd", "0")
        .SetProfileFile(path);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    const std::vector<int64_t> dims = {2, 32, 96, 96};
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    std::fill(x.data<float>(), x.data<float>() + x.size(), 0.5f);
    session.Run({"x"}, {&x});
    session.EndProfiling();
  }
  std::ifstream in(path);
  const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t omp_steps = 0;
  for (size_t at = trace.find("(omp)"); at != std::string::npos; at = trace.find("(omp)", at + 1))
    ++omp_steps;
  EXPECT_EQ(omp_steps, 3u) << "c1, c3 and c4 run on oneDNN's team, c2 as slices";
}

// 3x3 stride-1 convolutions with 16+ channels run by nxrt's Winograd F(4x4, 3x3) kernel with
// 8- and 16-channel blocks: channel counts no multiple of 8 or 16 (21 and 40 in 16-channel
// blocks end in a group of eight padding lanes), sizes no multiple of 4, paddings 1, 0 and 2, a
// batch of 2, folded BatchNorm, activations (Clip after the sum, Sigmoid), a residual sum,
// slices of tiles or of output channels at 2 and 3 threads. Checked against the node-by-node
// run and against oneDNN's direct convolutions (winograd=0).
TEST(BlockedGroup, WinogradConvolutionsWithFusedChains) {
  Builder b;
  b.Input("x", {2, 19, 23, 18});
  b.Conv("x", "c1", 19, 21, 3);  // 23x18: 6 x 5 tiles
  b.BatchNorm("c1", "n1", 21);
  b.Op("Relu", {"n1"}, "r1");
  b.Conv("r1", "c2", 21, 40, 3, 1, 0);  // no padding: [2, 40, 21, 16]
  b.Conv("r1", "c3", 21, 40, 3, 1, 0);
  b.Op("Add", {"c2", "c3"}, "sum");
  b.Clip("sum", "cl", 0.0f, 0.5f);
  b.Conv("cl", "c4", 40, 16, 3, 1, 2);  // padding 2: [2, 16, 23, 18]
  b.Op("Sigmoid", {"c4"}, "y");
  b.Output("y", {2, 16, 23, 18});
  b.Output("r1", {2, 21, 23, 18});
  ExpectSameAsNodeByNode(b.Bytes(), {"x"}, {{2, 19, 23, 18}});
  const Result direct = RunModel(b.Bytes(), {"x"}, {{2, 19, 23, 18}}, "0", 1, false, "0");
  for (const char* layout : {"8", "16"}) {
    SCOPED_TRACE(std::string("block ") + layout);
    const Result winograd = RunModel(b.Bytes(), {"x"}, {{2, 19, 23, 18}}, layout, 2);
    // Winograd took the convolutions: fewer oneDNN primitives than with winograd=0.
    EXPECT_LT(winograd.primitives,
              RunModel(b.Bytes(), {"x"}, {{2, 19, 23, 18}}, layout, 2, false, "0").primitives);
    ExpectCloseOutputs(direct, winograd);
  }
  // The option that keeps these convolutions on oneDNN is accepted; the group still forms.
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetConfig("ep.cpu.winograd", "0").SetConfig("ep.cpu.blocked_layout", "8");
  const std::string bytes = b.Bytes();
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  EXPECT_EQ(session.ep_node_count(0), 1u);
}

std::string PerChannelConstantsModel(bool escaping_views) {
  Builder b;
  b.Input("x", {2, 5, 12, 10});
  b.Conv("x", "c1", 5, 11, 3);
  b.Constant("b1", {11}, b.Random(11, 0.5f));
  b.Int64Constant("b1_shape", {4}, {1, 11, 1, 1});
  b.Op("Reshape", {"b1", "b1_shape"}, "rb");
  b.Op("Add", {"c1", "rb"}, "a1");
  b.Constant("cm", {11, 1, 1}, b.Random(11, 1.0f));
  b.Op("Mul", {"cm", "a1"}, "m1");
  b.BatchNorm("m1", "n1", 11);
  b.Op("Relu", {"n1"}, "r1");
  b.Constant("cs", {1, 11, 1, 1}, b.Random(11, 0.5f));
  b.Op("Sub", {"r1", "cs"}, "s1");
  b.Conv("s1", "c2", 11, 9, 1);
  b.Constant("u", {9}, b.Random(9, 0.5f));
  b.Int64Constant("u_axes", {3}, {0, 2, 3});
  b.Op("Unsqueeze", {"u", "u_axes"}, "ub");
  b.Op("Add", {"ub", "c2"}, "a2");
  b.Op("Relu", {"a2"}, "r2");
  b.Constant("cm2", {9, 1, 1}, b.Random(9, 1.0f));
  b.Op("Mul", {"r2", "cm2"}, "m2");
  b.Op("GlobalAveragePool", {"m2"}, "y");
  b.Output("y", {2, 9, 1, 1});
  b.Output("s1", {2, 11, 12, 10});
  if (escaping_views) {  // a view also read outside the group, one that leaves the graph
    b.Op("Add", {"ub", "c2"}, "a3");
    b.Op("Sigmoid", {"a3"}, "sg");
    b.Output("sg", {2, 9, 12, 10});
    b.Op("Softmax", {"ub"}, "outside");
    b.Output("outside", {1, 9, 1, 1});
    b.Output("rb", {1, 11, 1, 1});
  }
  return b.Bytes();
}

// Add, Sub and Mul of constants with one value per channel ([C, 1, 1], [1, C, 1, 1], either
// operand), some reaching their shape through Reshape / Unsqueeze of a constant (PaddlePaddle's
// biases): right after a convolution they fold into its weights and bias in order, with a
// BatchNormalization between them; after an activation they run as broadcasts. The whole model
// is one group: the reshaped constants are views inside it, not inputs reordered on every run.
// (Constants right after a convolution now fold before placement already,
// session/parallel_conv_merge.h, in both runs; the node-by-node run keeps the BatchNormalization,
// Sub, Mul and pooling as nodes.)
TEST(BlockedGroup, PerChannelConstantsFoldIntoConvolutionsOrRunAsBroadcasts) {
  const auto [node_kernels, blocked_kernels] =
      ExpectSameAsNodeByNode(PerChannelConstantsModel(false), {"x"}, {{2, 5, 12, 10}});
  EXPECT_GE(node_kernels, 4u);
  EXPECT_EQ(blocked_kernels, 1u);
}

// A view whose value leaves the graph, or is read by a node outside the group, stays a node
// (a group computes its outputs; a view has nothing to compute): the outputs are still right.
TEST(BlockedGroup, ConstantViewsReadOutsideTheGroupStayNodes) {
  ExpectSameAsNodeByNode(PerChannelConstantsModel(true), {"x"}, {{2, 5, 12, 10}});
}

// The first outputs of a blocked and a node-by-node run agree (shape, values to 1e-4).
void ExpectSameFirstOutput(const std::vector<nxrt::Value>& got,
                           const std::vector<nxrt::Value>& want) {
  ASSERT_EQ(got[0].shape(), want[0].shape());
  for (size_t i = 0; i < want[0].size(); ++i) {
    const float w = want[0].data<float>()[i];
    ASSERT_NEAR(got[0].data<float>()[i], w, 1e-4f * std::max(1.0f, std::fabs(w))) << i;
  }
}

// Symbolic batch, height and width: the group is compiled on the first run of each input shape
// and keeps every program; shapes come back in any order.
TEST(BlockedGroup, ShapesKnownOnlyAtRunTimeCompilePerShape) {
  Builder b;
  b.Input("x", {-1, 3, -1, -1});
  b.Conv("x", "c1", 3, 16, 3, 2);
  b.BatchNorm("c1", "n1", 16);
  b.Op("Relu", {"n1"}, "r1");
  b.Conv("r1", "c2", 16, 16, 3, 1, 1, 16);
  b.Op("Add", {"c2", "r1"}, "s");
  b.Pool("MaxPool", "s", "m", 3, 2, 1);
  b.Conv("m", "y", 16, 8, 1);
  b.Output("y", {-1, 8, -1, -1});
  const std::string bytes = b.Bytes();
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions blocked, plain;
  blocked.SetIntraOpThreads(2);
  plain.SetIntraOpThreads(1).SetConfig("ep.cpu.blocked_layout", "0");
  nxrt::Session a(env, bytes.data(), bytes.size(), &blocked);
  nxrt::Session ref(env, bytes.data(), bytes.size(), &plain);
  EXPECT_LT(a.ep_node_count(0), ref.ep_node_count(0));
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 3, 32, 48}, {2, 3, 17, 9}, {1, 3, 32, 48}, {1, 3, 5, 64}, {2, 3, 17, 9}};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const auto& dims : shapes) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
    for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
    ExpectSameFirstOutput(a.Run({"x"}, {&x}), ref.Run({"x"}, {&x}));
  }
}

// A stream of inputs of 24 widths, twice over (an OCR recognizer's text lines): every program
// is compiled once and kept (the session's oneDNN primitive count stops growing after the first
// pass), with the weights reordered once for all of them, and each width's output equals the
// node-by-node run's.
TEST(BlockedGroup, ManyInputWidthsAreCompiledOnceEach) {
  Builder b;
  b.Input("x", {1, 8, 12, -1});
  b.Conv("x", "c1", 8, 16, 3, 1);
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 16, 16, 3, 1, 1, 16);
  b.Conv("c2", "y", 16, 8, 1);
  b.Output("y", {1, 8, 12, -1});
  const std::string bytes = b.Bytes();
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions blocked, plain;
  blocked.SetIntraOpThreads(1);
  plain.SetIntraOpThreads(1).SetConfig("ep.cpu.blocked_layout", "0");
  nxrt::Session a(env, bytes.data(), bytes.size(), &blocked);
  nxrt::Session ref(env, bytes.data(), bytes.size(), &plain);
  ASSERT_LT(a.ep_node_count(0), ref.ep_node_count(0));
  std::mt19937 rng(6);
  std::normal_distribution<float> normal;
  int64_t after_first_pass = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t w = 8; w < 8 + 24; ++w) {
      SCOPED_TRACE("pass " + std::to_string(pass) + ", width " + std::to_string(w));
      const std::vector<int64_t> dims = {1, 8, 12, w};
      nxrt::Value x = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
      for (size_t i = 0; i < x.size(); ++i) x.data<float>()[i] = normal(rng);
      ExpectSameFirstOutput(a.Run({"x"}, {&x}), ref.Run({"x"}, {&x}));
    }
    if (pass == 0) after_first_pass = a.statistic("ep.CPU.primitives");
  }
  EXPECT_GT(after_first_pass, 0);
  EXPECT_EQ(a.statistic("ep.CPU.primitives"), after_first_pass);
}

// Runs of one session from several threads at once (each takes an arena buffer of its own from
// the kernel's pool, which the programs of all shapes share; programs for new shapes are
// compiled while other runs go on) equal serial runs.
TEST(BlockedGroup, ConcurrentRunsOfOneSessionEqualSerialRuns) {
  Builder b;
  b.Input("x", {1, 8, -1, -1});
  b.Conv("x", "c1", 8, 16, 3);
  b.Op("Relu", {"c1"}, "r1");
  b.Conv("r1", "c2", 16, 16, 3, 1, 1, 16);
  b.Op("Add", {"c2", "r1"}, "y");
  b.Output("y", {1, 16, -1, -1});
  const std::string bytes = b.Bytes();
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  options.SetIntraOpThreads(2);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  const int64_t sizes[] = {9, 14, 23, 30};
  std::vector<nxrt::Value> inputs;
  std::vector<std::vector<float>> serial;
  for (int64_t hw : sizes) {
    inputs.push_back(nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{1, 8, hw, hw + 1}));
    for (size_t i = 0; i < inputs.back().size(); ++i)
      inputs.back().data<float>()[i] = 0.01f * static_cast<float>((i * 37) % 101) - 0.5f;
  }
  for (const nxrt::Value& x : inputs) {
    auto out = session.Run({"x"}, {&x});
    serial.emplace_back(out[0].data<float>(), out[0].data<float>() + out[0].size());
  }
  nxrt::Session fresh(env, bytes.data(), bytes.size(), &options);  // compiles under contention
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) {
        const size_t k = static_cast<size_t>((t + r) % 4);
        auto out = fresh.Run({"x"}, {&inputs[k]});
        if (!std::equal(serial[k].begin(), serial[k].end(), out[0].data<float>(),
                        out[0].data<float>() + out[0].size()))
          ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(BlockedGroup, OptionsTurnGroupsOffAndRejectUnknownValues) {
  Builder b;
  b.Input("x", {1, 8, 6, 6});
  b.Conv("x", "c", 8, 8, 3);
  b.Pool("MaxPool", "c", "y", 3, 1, 1);
  b.Output("y", {1, 8, 6, 6});
  const std::string bytes = b.Bytes();
  EXPECT_EQ(RunModel(bytes, {"x"}, {{1, 8, 6, 6}}, "1", 1).kernels, 1u);
  EXPECT_EQ(RunModel(bytes, {"x"}, {{1, 8, 6, 6}}, "0", 1).kernels, 2u);
  nxrt::Env env(NX_LOG_ERROR);
  {  // optimization level 0: every node on its own kernel
    nxrt::SessionOptions options;
    options.SetOptimizationLevel(0);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    EXPECT_EQ(session.ep_node_count(0), 2u);
  }
  nxrt::SessionOptions bad;
  bad.SetConfig("ep.cpu.blocked_layout", "4");
  try {
    nxrt::Session session(env, bytes.data(), bytes.size(), &bad);
    ADD_FAILURE() << "blocked_layout=4 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("blocked_layout"), std::string::npos) << e.what();
  }
  nxrt::SessionOptions bad_winograd;
  bad_winograd.SetConfig("ep.cpu.winograd", "yes");
  try {
    nxrt::Session session(env, bytes.data(), bytes.size(), &bad_winograd);
    ADD_FAILURE() << "winograd=yes was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("ep.cpu.winograd"), std::string::npos) << e.what();
  }
}

}  // namespace
