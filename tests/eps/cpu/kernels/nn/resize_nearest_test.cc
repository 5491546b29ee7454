// Nearest Resize (eps/cpu/kernels/nn/resize.cc), run end to end through a one-node model at 1
// and 2 threads, equals the operator's definition computed directly: integer upscales (2x,
// which has its own 4-byte loop, 3x and a 1x axis next to a 2x one) whose rows repeat, an odd
// width whose row is not a multiple of the loop's four elements, a one-byte element type, and
// a fractional scale that takes the general gather.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddStringAttribute;
using nxrt::test::AddTypedValue;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

struct ResizeCase {
  int64_t n, c, h, w;
  float scale_h, scale_w;
  int elem_type;  // onnx::TensorProto FLOAT (1) or UINT8 (2)
};

int64_t OutSize(int64_t size, float scale) {
  return static_cast<int64_t>(std::floor(static_cast<double>(size) * scale));
}

// asymmetric coordinates, floor rounding: the source of output index o is floor(o / scale).
int64_t Source(int64_t o, float scale, int64_t size) {
  const int64_t i = static_cast<int64_t>(std::floor(static_cast<double>(o) / scale));
  return std::min(i, size - 1);
}

std::string ResizeModel(const ResizeCase& c) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("resize");
  auto node = MakeNode("Resize", {"x", "", "scales"}, {"y"}, "resize");
  AddStringAttribute(&node, "mode", "nearest");
  AddStringAttribute(&node, "coordinate_transformation_mode", "asymmetric");
  AddStringAttribute(&node, "nearest_mode", "floor");
  *g->add_node() = node;
  *g->add_initializer() = MakeFloatTensor("scales", {4}, {1.0f, 1.0f, c.scale_h, c.scale_w});
  AddTypedValue(g->add_input(), "x", c.elem_type, {c.n, c.c, c.h, c.w});
  AddTypedValue(g->add_output(), "y", c.elem_type,
                {c.n, c.c, OutSize(c.h, c.scale_h), OutSize(c.w, c.scale_w)});
  return m.SerializeAsString();
}

template <class T>
void ExpectMatchesDefinition(nxrt::Env& env, const ResizeCase& c, NxElementType type) {
  SCOPED_TRACE(std::to_string(c.c) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
               " scales " + std::to_string(c.scale_h) + ", " + std::to_string(c.scale_w));
  const std::vector<int64_t> dims = {c.n, c.c, c.h, c.w};
  nxrt::Value x = nxrt::Value::Tensor(type, dims);
  for (size_t i = 0; i < x.size(); ++i) x.data<T>()[i] = static_cast<T>((i * 37 + 11) % 251);
  const int64_t oh = OutSize(c.h, c.scale_h), ow = OutSize(c.w, c.scale_w);
  const std::string bytes = ResizeModel(c);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto y = session.Run({"x"}, {&x});
    ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{c.n, c.c, oh, ow}));
    const T* got = y[0].data<T>();
    for (int64_t p = 0; p < c.n * c.c; ++p) {
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const T want = x.data<T>()[(p * c.h + Source(oy, c.scale_h, c.h)) * c.w +
                                     Source(ox, c.scale_w, c.w)];
          ASSERT_EQ(got[(p * oh + oy) * ow + ox], want)
              << "plane " << p << " at " << oy << ", " << ox;
        }
      }
    }
  }
}

TEST(ResizeNearest, UpscalesEqualTheDefinition) {
  nxrt::Env env(NX_LOG_ERROR);
  const int kFloat = 1, kUint8 = 2;
  // clang-format off
  const std::vector<ResizeCase> floats = {
      {1, 16, 20, 20, 2.0f, 2.0f, kFloat},  // feature-pyramid upsampling
      {2, 3, 5, 7, 2.0f, 2.0f, kFloat},     // odd width: a tail after four-element steps
      {1, 4, 6, 5, 3.0f, 3.0f, kFloat},
      {1, 2, 4, 9, 1.0f, 2.0f, kFloat},     // rows copied once, columns doubled
      {1, 2, 8, 6, 2.0f, 1.0f, kFloat},     // columns copied, rows repeated
      {1, 3, 6, 10, 1.5f, 1.5f, kFloat},    // fractional: the general gather
  };
  // clang-format on
  for (const ResizeCase& c : floats) ExpectMatchesDefinition<float>(env, c, NX_TYPE_FLOAT);
  ExpectMatchesDefinition<uint8_t>(env, {1, 3, 5, 6, 2.0f, 2.0f, kUint8}, NX_TYPE_UINT8);
}

}  // namespace
