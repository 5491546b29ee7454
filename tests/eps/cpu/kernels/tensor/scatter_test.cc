// ScatterND (eps/cpu/kernels/tensor/scatter.cc) through a Relu -> ScatterND model (so the host may
// run it in place over the Relu's output), with indices as a constant (planned once, reused by
// later runs) and as a graph input: torch's slice assignment x[:, :, a:, b:] = v (one index tuple
// per element, merged into runs of a row), tuples of whole rows, duplicates and negative indices
// under each reduction, all against the spec's sequential loop; an index out of range is an error
// naming it, on every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddStringAttribute;
using nxrt::test::AddTypedValue;
using nxrt::test::MakeNode;

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

struct Case {
  std::vector<int64_t> data_dims, index_dims;
  std::vector<int64_t> indices;
  std::string reduction = "none";
};

std::vector<int64_t> UpdateDims(const Case& c) {
  std::vector<int64_t> u(c.index_dims.begin(), c.index_dims.end() - 1);
  const size_t k = static_cast<size_t>(c.index_dims.back());
  u.insert(u.end(), c.data_dims.begin() + static_cast<std::ptrdiff_t>(k), c.data_dims.end());
  return u;
}

std::string Model(const Case& c, bool constant_indices) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(18);
  auto* g = m.mutable_graph();
  g->set_name("scatter");
  *g->add_node() = MakeNode("Relu", {"x"}, {"data"}, "relu");
  auto s = MakeNode("ScatterND", {"data", "indices", "updates"}, {"y"}, "scatter");
  if (c.reduction != "none") AddStringAttribute(&s, "reduction", c.reduction);
  *g->add_node() = s;
  AddTypedValue(g->add_input(), "x", kFloat, c.data_dims);
  if (constant_indices) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name("indices");
    t->set_data_type(kInt64);
    for (int64_t d : c.index_dims) t->add_dims(d);
    for (int64_t v : c.indices) t->add_int64_data(v);
  } else {
    AddTypedValue(g->add_input(), "indices", kInt64, c.index_dims);
  }
  AddTypedValue(g->add_input(), "updates", kFloat, UpdateDims(c));
  AddTypedValue(g->add_output(), "y", kFloat, c.data_dims);
  return m.SerializeAsString();
}

// The spec's loop: a copy of Relu(x), then each tuple's slice in order.
std::vector<float> Reference(const Case& c, const std::vector<float>& x,
                             const std::vector<float>& u) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = std::max(0.0f, x[i]);
  const size_t k = static_cast<size_t>(c.index_dims.back());
  size_t inner = 1;
  for (size_t j = k; j < c.data_dims.size(); ++j) inner *= static_cast<size_t>(c.data_dims[j]);
  const size_t tuples = c.indices.size() / k;
  for (size_t t = 0; t < tuples; ++t) {
    size_t off = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t i = c.indices[t * k + j];
      if (i < 0) i += c.data_dims[j];
      off = off * static_cast<size_t>(c.data_dims[j]) + static_cast<size_t>(i);
    }
    off *= inner;
    for (size_t e = 0; e < inner; ++e) {
      float& d = out[off + e];
      const float v = u[t * inner + e];
      if (c.reduction == "add") {
        d += v;
      } else if (c.reduction == "mul") {
        d *= v;
      } else if (c.reduction == "max") {
        d = std::max(d, v);
      } else if (c.reduction == "min") {
        d = std::min(d, v);
      } else {
        d = v;
      }
    }
  }
  return out;
}

nxrt::Value Filled(const std::vector<int64_t>& dims, float scale, float shift) {
  nxrt::Value v = nxrt::Value::Tensor(NX_TYPE_FLOAT, dims);
  for (size_t i = 0; i < v.size(); ++i)
    v.data<float>()[i] = scale * static_cast<float>((i * 37) % 101) - shift;
  return v;
}

void ExpectScatter(nxrt::Env& env, const Case& c) {
  const nxrt::Value x = Filled(c.data_dims, 0.1f, 5.0f), u = Filled(UpdateDims(c), 0.3f, 2.0f);
  nxrt::Value idx = nxrt::Value::Tensor(NX_TYPE_INT64, c.index_dims);
  std::copy(c.indices.begin(), c.indices.end(), idx.data<int64_t>());
  const std::vector<float> want =
      Reference(c, std::vector<float>(x.data<float>(), x.data<float>() + x.size()),
                std::vector<float>(u.data<float>(), u.data<float>() + u.size()));
  for (bool constant : {true, false}) {
    SCOPED_TRACE(constant ? "constant indices" : "indices fed");
    const std::string bytes = Model(c, constant);
    nxrt::Session session(env, bytes.data(), bytes.size());
    for (int run = 0; run < 2; ++run) {  // the second run reuses the plan
      std::vector<nxrt::Value> y = constant
                                       ? session.Run({"x", "updates"}, {&x, &u})
                                       : session.Run({"x", "indices", "updates"}, {&x, &idx, &u});
      ASSERT_EQ(y[0].size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(y[0].data<float>()[i], want[i]) << "element " << i << ", run " << run;
    }
  }
}

TEST(ScatterND, SliceAssignmentsRowsDuplicatesAndReductionsFollowTheSpecLoop) {
  nxrt::Env env(NX_LOG_ERROR);
  // x[:, :, 3:, 2:] = v over [1, 2, 9, 8]: one tuple per element, rows of 6.
  Case box{{1, 2, 9, 8}, {}, {}};
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 3; h < 9; ++h)
      for (int64_t w = 2; w < 8; ++w) box.indices.insert(box.indices.end(), {0, c, h, w});
  box.index_dims = {1, 2, 6, 6, 4};
  ExpectScatter(env, box);
  // Whole rows: [1, 2] and [1, 3] are adjacent (one run), then a negative index.
  ExpectScatter(env, {{4, 5, 6}, {3, 2}, {1, 2, 1, 3, -1, 0}});
  // Duplicates: in order (the last wins without a reduction), under every reduction.
  for (const char* r : {"none", "add", "mul", "max", "min"}) {
    SCOPED_TRACE(r);
    ExpectScatter(env, {{6, 3}, {5, 1}, {2, 3, 2, -4, 5}, r});
  }
}

TEST(ScatterND, AnIndexOutOfRangeIsAnErrorOnEveryRun) {
  nxrt::Env env(NX_LOG_ERROR);
  const Case c{{4, 3}, {2, 1}, {1, 4}};
  const std::string bytes = Model(c, true);
  nxrt::Session session(env, bytes.data(), bytes.size());
  const nxrt::Value x = Filled(c.data_dims, 1.0f, 0.0f), u = Filled(UpdateDims(c), 1.0f, 0.0f);
  for (int run = 0; run < 2; ++run) {
    try {
      session.Run({"x", "updates"}, {&x, &u});
      ADD_FAILURE() << "no error on run " << run;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("index 4 is out of range"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
