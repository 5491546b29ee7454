// RNN, GRU and LSTM with constant float weights take the packed path (the W and R panels of
// eps/cpu/kernels/nn/panel_weights.h, made at kernel creation); with W, R and B fed as graph
// inputs they take the unpacked one, which the ONNX node tests check against ONNX's own outputs.
// Both must agree on every output, for hidden sizes around the 64-column panels, batches on
// both sides of the matrix-vector / tiled switch, every direction, both GRU reset variants, and
// at 1 and 2 threads against the unpacked path at one (the per-step products split over panels;
// a bidirectional LSTM's directions on two threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddFloatValue;
using nxrt::test::AddIntAttribute;
using nxrt::test::MakeFloatTensor;
using nxrt::test::MakeNode;

struct RecurrentCase {
  std::string op;  // RNN, GRU or LSTM
  int64_t hidden, input, seq, batch;
  std::string direction = "forward";
  bool linear_before_reset = false;  // GRU only
};

int64_t Gates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

std::vector<float> RandomValues(size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

struct Weights {
  std::vector<int64_t> w_dims, r_dims, b_dims;
  std::vector<float> w, r, b;
};

// One-node model; W, R and B are initializers when `constant`, graph inputs otherwise.
std::string RecurrentModel(const RecurrentCase& c, const Weights& wt, bool constant) {
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("recurrent");
  std::vector<std::string> outputs = {"y", "y_h"};
  if (c.op == "LSTM") outputs.push_back("y_c");
  auto node = MakeNode(c.op, {"x", "w", "r", "b"}, outputs, "cell");
  AddIntAttribute(&node, "hidden_size", c.hidden);
  auto* dir = node.add_attribute();
  dir->set_name("direction");
  dir->set_type(onnx::AttributeProto::STRING);
  dir->set_s(c.direction);
  if (c.op == "GRU") AddIntAttribute(&node, "linear_before_reset", c.linear_before_reset ? 1 : 0);
  *g->add_node() = node;
  AddFloatValue(g->add_input(), "x", {c.seq, c.batch, c.input});
  if (constant) {
    *g->add_initializer() = MakeFloatTensor("w", wt.w_dims, wt.w);
    *g->add_initializer() = MakeFloatTensor("r", wt.r_dims, wt.r);
    *g->add_initializer() = MakeFloatTensor("b", wt.b_dims, wt.b);
  } else {
    AddFloatValue(g->add_input(), "w", wt.w_dims);
    AddFloatValue(g->add_input(), "r", wt.r_dims);
    AddFloatValue(g->add_input(), "b", wt.b_dims);
  }
  AddFloatValue(g->add_output(), "y", {c.seq, dirs, c.batch, c.hidden});
  AddFloatValue(g->add_output(), "y_h", {dirs, c.batch, c.hidden});
  if (c.op == "LSTM") AddFloatValue(g->add_output(), "y_c", {dirs, c.batch, c.hidden});
  return m.SerializeAsString();
}

nxrt::Value TensorOf(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  nxrt::Value v = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  std::copy(values.begin(), values.end(), v.data<float>());
  return v;
}

void ExpectPackedMatchesUnpacked(nxrt::Env& env, const RecurrentCase& c) {
  SCOPED_TRACE(c.op + " hidden " + std::to_string(c.hidden) + " input " + std::to_string(c.input) +
               " batch " + std::to_string(c.batch) + " " + c.direction +
               (c.linear_before_reset ? " linear_before_reset" : ""));
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, g = Gates(c.op) * c.hidden;
  std::mt19937 rng(static_cast<unsigned>(c.hidden * 31 + c.input * 7 + c.batch));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.hidden));
  Weights wt;
  wt.w_dims = {dirs, g, c.input};
  wt.r_dims = {dirs, g, c.hidden};
  wt.b_dims = {dirs, 2 * g};
  wt.w = RandomValues(static_cast<size_t>(dirs * g * c.input), rng, scale);
  wt.r = RandomValues(static_cast<size_t>(dirs * g * c.hidden), rng, scale);
  wt.b = RandomValues(static_cast<size_t>(dirs * 2 * g), rng, scale);
  const std::vector<int64_t> x_dims = {c.seq, c.batch, c.input};
  nxrt::Value x =
      TensorOf(x_dims, RandomValues(static_cast<size_t>(c.seq * c.batch * c.input), rng, 1.0f));
  nxrt::Value w = TensorOf(wt.w_dims, wt.w), r = TensorOf(wt.r_dims, wt.r),
              b = TensorOf(wt.b_dims, wt.b);

  const std::string plain = RecurrentModel(c, wt, false), packed = RecurrentModel(c, wt, true);
  nxrt::SessionOptions one_thread;
  one_thread.SetIntraOpThreads(1);  // directions one after the other, products on one thread
  nxrt::Session reference(env, plain.data(), plain.size(), &one_thread);
  const auto expected = reference.Run({"x", "w", "r", "b"}, {&x, &w, &r, &b});
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    nxrt::Session session(env, packed.data(), packed.size(), &options);
    const auto got = session.Run({"x"}, {&x});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t o = 0; o < got.size(); ++o) {
      SCOPED_TRACE("output " + std::to_string(o));
      ASSERT_EQ(got[o].shape(), expected[o].shape());
      const float* gv = got[o].data<float>();
      const float* ev = expected[o].data<float>();
      for (size_t i = 0; i < got[o].size(); ++i) {
        // The products sum in a different order: equal to rounding.
        ASSERT_NEAR(gv[i], ev[i], 2e-5f * std::max(1.0f, std::fabs(ev[i]))) << "element " << i;
      }
    }
  }
}

TEST(RecurrentWeights, PackedConstantWeightsMatchTheUnpackedPath) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::vector<RecurrentCase> cases = {
      // One row per step (matrix-vector over the panels), hidden sizes around 64-wide panels.
      {"LSTM", 128, 64, 12, 1},
      {"LSTM", 5, 3, 4, 1},
      {"LSTM", 70, 33, 6, 2, "bidirectional"},
      {"LSTM", 16, 9, 5, 1, "reverse"},
      {"GRU", 128, 128, 10, 1, "forward", true},
      {"GRU", 40, 17, 7, 3, "forward", false},
      {"GRU", 65, 20, 5, 1, "bidirectional", true},
      {"GRU", 33, 8, 6, 2, "reverse", false},
      {"RNN", 64, 10, 8, 1},
      {"RNN", 130, 31, 5, 2, "bidirectional"},
      // Six rows or more per step: the 6 x 16 tiles over the same panels.
      {"LSTM", 48, 24, 5, 7},
      {"GRU", 96, 50, 4, 9, "bidirectional", false},
      {"GRU", 20, 12, 3, 6, "forward", true},
      {"RNN", 17, 5, 4, 13, "reverse"},
      // A bidirectional LSTM whose two directions run on two threads at once.
      {"LSTM", 64, 96, 40, 8, "bidirectional"},
      {"GRU", 48, 80, 30, 6, "forward", true},
  };
  for (const auto& c : cases) ExpectPackedMatchesUnpacked(env, c);
}

}  // namespace
