// No oneDNN reference implementation runs in the CPU EP (kernels/linalg/primitive_audit.h): a
// sweep over the shapes that used to produce them, each run node by node and as blocked groups
// (both block sizes, 1 and 2 threads), asserting the session statistic
// "ep.CPU.reference_primitives" is 0 and the outputs agree. The shapes: a convolution's
// activation followed by a residual Add (YOLO's bottleneck: oneDNN takes a sum post-op only
// before activations), 1x1 / 3x3 / 5x5 kernels with strides, dilations and paddings, depthwise
// convolutions, channel counts that are not multiples of the block, channel halves split at
// every offset and concatenated back (inputs that start inside a block), standalone activations
// on a partly filled last block, and dilated pooling.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "eps/cpu/blocked/group_model_builder.h"

namespace {

using namespace nxrt::test::blocked;

// Node by node, then blocked with 8- and 16-channel blocks at 1 and 2 threads: every session
// on a layout this CPU has kernels for keeps no reference primitive, and the outputs agree.
void ExpectFastAndSame(const std::string& bytes, const std::vector<std::string>& inputs,
                       const std::vector<std::vector<int64_t>>& dims) {
  const Result ref = RunModel(bytes, inputs, dims, "0", 1);
  EXPECT_EQ(ref.reference_primitives, 0) << "node by node";
  for (const char* layout : {"8", "16"}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string("block ") + layout + ", threads " + std::to_string(threads));
      const Result got = RunModel(bytes, inputs, dims, layout, threads);
      EXPECT_GT(got.primitives, 0);
      if (NativeLayout(layout)) {
        EXPECT_EQ(got.reference_primitives, 0);
      } else if (std::string(layout) == "16") {
        // 16-channel blocks forced on a CPU without AVX-512: oneDNN has nothing but reference
        // kernels for them, and the statistic says so.
        EXPECT_GT(got.reference_primitives, 0);
      }
      // 8-channel blocks forced on an AVX-512 CPU: oneDNN's AVX2 kernels take some shapes and
      // its reference kernels others (which ones differs between Intel and AMD parts), so only
      // the outputs are checked.
      ExpectCloseOutputs(ref, got);
    }
  }
}

// x * Sigmoid(x), as torch exports SiLU.
void Silu(Builder& b, const std::string& x, const std::string& y) {
  b.Op("Sigmoid", {x}, y + "_s");
  b.Op("Mul", {x, y + "_s"}, y);
}

TEST(NoReferencePrimitives, ConvolutionChainsOverKernelsStridesDilationsAndPaddings) {
  for (int64_t k : {1, 3, 5}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t dilation : {1, 2}) {
        for (bool same_pad : {true, false}) {
          if (k == 1 && dilation == 2) continue;  // (the same convolution)
          SCOPED_TRACE("kernel " + std::to_string(k) + ", stride " + std::to_string(stride) +
                       ", dilation " + std::to_string(dilation) +
                       (same_pad ? ", same padding" : ", no padding"));
          const int64_t pad = same_pad ? (k - 1) / 2 * dilation : 0;
          const int64_t h = 15, w = 17, span = (k - 1) * dilation + 1;
          const int64_t oh = (h + 2 * pad - span) / stride + 1,
                        ow = (w + 2 * pad - span) / stride + 1;
          const int64_t pad2 = (k - 1) / 2 * dilation;  // keeps the size for the residual
          Builder b;
          b.Input("x", {1, 20, h, w});
          // Conv + SiLU, Conv + SiLU, then the residual Add (activation before the sum).
          b.Conv("x", "a", 20, 12, k, stride, pad, 1, dilation);
          Silu(b, "a", "a_act");
          b.Conv("a_act", "b", 12, 12, k, 1, pad2, 1, dilation);
          Silu(b, "b", "b_act");
          b.Op("Add", {"b_act", "a_act"}, "res1");
          // Conv + Relu + Add, then Relu after the sum; a depthwise Conv + SiLU + Add.
          b.Conv("res1", "c", 12, 12, k, 1, pad2, 1, dilation);
          b.Op("Relu", {"c"}, "c_act");
          b.Op("Add", {"c_act", "res1"}, "res2");
          b.Op("Relu", {"res2"}, "res2_act");
          b.Conv("res2_act", "d", 12, 12, k, 1, pad2, 12, dilation);
          Silu(b, "d", "d_act");
          b.Op("Add", {"d_act", "res2_act"}, "res3");
          // A scalar Mul (a linear post-op) before the sum, then a Clip after it.
          b.Conv("res3", "e", 12, 12, k, 1, pad2, 1, dilation);
          b.Constant("half", {}, {0.5f});
          b.Op("Mul", {"e", "half"}, "e_lin");
          b.Op("Add", {"e_lin", "res3"}, "res4");
          b.Clip("res4", "y", -1.0f, 1.5f);
          b.Output("y", {1, 12, oh, ow});
          ExpectFastAndSame(b.Bytes(), {"x"}, {{1, 20, h, w}});
        }
      }
    }
  }
}

TEST(NoReferencePrimitives, ChannelHalvesSplitAtEveryOffsetAndConcatenatedBack) {
  // YOLO's C2f: a 1x1 Conv, its channels split in two, a bottleneck on the second part (Conv +
  // SiLU twice, residual Add), everything concatenated (inputs starting inside a block) and
  // merged by a 1x1 Conv.
  const int64_t c = 24;
  for (int64_t first = 1; first < c; ++first) {
    SCOPED_TRACE("split at channel " + std::to_string(first));
    const int64_t second = c - first;
    Builder b;
    b.Input("x", {1, c, 10, 12});
    b.Conv("x", "cv1", c, c, 1);
    Silu(b, "cv1", "cv1_act");
    b.Int64Constant("parts", {2}, {first, second});
    auto split = nxrt::test::MakeNode("Split", {"cv1_act", "parts"}, {"p0", "p1"}, "split");
    nxrt::test::AddIntAttribute(&split, "axis", 1);
    b.Raw(split);
    b.Conv("p1", "m1", second, second, 3);
    Silu(b, "m1", "m1_act");
    b.Conv("m1_act", "m2", second, second, 3);
    Silu(b, "m2", "m2_act");
    b.Op("Add", {"p1", "m2_act"}, "m_out");
    b.Concat({"p0", "p1", "m_out"}, "cat");
    b.Conv("cat", "cv2", c + second, 16, 1);
    Silu(b, "cv2", "y");
    b.Output("y", {1, 16, 10, 12});
    ExpectFastAndSame(b.Bytes(), {"x"}, {{1, c, 10, 12}});
  }
}

TEST(NoReferencePrimitives, StandaloneActivationsOnAPartlyFilledBlock) {
  for (int64_t channels : {5, 12, 20, 36}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    Builder b;
    b.Input("x", {1, 3, 9, 11});
    b.Conv("x", "a", 3, channels, 3);
    // Two readers, so neither activation folds into the convolution.
    b.Op("Sigmoid", {"a"}, "s");
    b.Op("Tanh", {"a"}, "t");
    b.Constant("k", {}, {1.5f});
    b.Op("Mul", {"s", "k"}, "s_lin");  // a standalone linear step
    b.Op("Add", {"s_lin", "t"}, "st");
    b.Conv("st", "y", channels, channels, 3);
    b.Output("y", {1, channels, 9, 11});
    ExpectFastAndSame(b.Bytes(), {"x"}, {{1, 3, 9, 11}});
  }
}

TEST(NoReferencePrimitives, DilatedAndCeilModePooling) {
  Builder b;
  b.Input("x", {1, 4, 19, 21});
  b.Conv("x", "a", 4, 12, 3);
  b.Op("Relu", {"a"}, "r");
  auto pool = nxrt::test::MakeNode("MaxPool", {"r"}, {"p"}, "p");
  nxrt::test::AddIntsAttribute(&pool, "kernel_shape", {3, 3});
  nxrt::test::AddIntsAttribute(&pool, "dilations", {2, 2});
  nxrt::test::AddIntsAttribute(&pool, "pads", {2, 2, 2, 2});
  b.Raw(pool);
  b.Pool("MaxPool", "p", "q", 3, 2, 1, /*ceil_mode=*/true);
  b.Conv("q", "y", 12, 8, 3);
  b.Output("y", {1, 8, 10, 11});
  ExpectFastAndSame(b.Bytes(), {"x"}, {{1, 4, 19, 21}});
}

}  // namespace
