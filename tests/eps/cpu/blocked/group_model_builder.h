// Models for the blocked-group tests, built node by node with random weights, and the check
// that runs them node by node and as blocked groups (both block sizes, 1 to 3 threads) and
// compares the outputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace nxrt::test::blocked {

// Builds a model node by node with random weights.
class Builder {
 public:
  explicit Builder(int opset = 17) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(opset);
    g_ = m_.mutable_graph();
    g_->set_name("blocked");
  }

  // dims: -1 for a symbolic dimension.
  void Input(const std::string& name, std::vector<int64_t> dims) {
    auto* vi = g_->add_input();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = t->mutable_shape()->add_dim();
      if (dims[i] < 0)
        d->set_dim_param("d" + std::to_string(i));
      else
        d->set_dim_value(dims[i]);
    }
  }
  void Constant(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    *g_->add_initializer() = MakeFloatTensor(name, dims, values);
  }
  void Int64Constant(const std::string& name, std::vector<int64_t> dims,
                     std::vector<int64_t> values) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }
  std::vector<float> Random(size_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * normal_(rng_);
    return v;
  }
  // BatchNormalization with random statistics.
  void BatchNorm(const std::string& x, const std::string& y, int64_t c) {
    std::vector<float> gamma(c), beta(c), mean(c), var(c);
    for (int64_t i = 0; i < c; ++i) {
      gamma[i] = 1.0f + 0.2f * normal_(rng_);
      beta[i] = 0.1f * normal_(rng_);
      mean[i] = 0.1f * normal_(rng_);
      var[i] = 0.5f + std::fabs(normal_(rng_));
    }
    Constant(y + "_g", {c}, gamma);
    Constant(y + "_b", {c}, beta);
    Constant(y + "_m", {c}, mean);
    Constant(y + "_v", {c}, var);
    Op("BatchNormalization", {x, y + "_g", y + "_b", y + "_m", y + "_v"}, y);
  }
  // Paddle's HardSwish written out: x * Clip(x + 3, 0, 6) / 6.
  void WrittenHardSwish(const std::string& x, const std::string& y) {
    Constant(y + "_3", {}, {3.0f});
    Constant(y + "_6", {}, {6.0f});
    Op("Add", {x, y + "_3"}, y + "_a");
    Clip(y + "_a", y + "_c", 0.0f, 6.0f);
    Op("Mul", {x, y + "_c"}, y + "_m");
    Op("Div", {y + "_m", y + "_6"}, y);
  }
  // Gelu written out (PaddlePaddle, torch): x / sqrt(2) (or x * 1/sqrt(2)) -> Erf -> + 1 -> * x
  // -> * 0.5.
  void WrittenGelu(const std::string& x, const std::string& y, bool multiply = false) {
    Constant(y + "_s", {}, {multiply ? 0.70710678f : 1.41421356f});
    Constant(y + "_1", {}, {1.0f});
    Constant(y + "_h", {}, {0.5f});
    Op(multiply ? "Mul" : "Div", {x, y + "_s"}, y + "_d");
    Op("Erf", {y + "_d"}, y + "_e");
    Op("Add", {y + "_e", y + "_1"}, y + "_a");
    Op("Mul", {y + "_a", x}, y + "_m");
    Op("Mul", {y + "_m", y + "_h"}, y);
  }
  void Output(const std::string& name, std::vector<int64_t> dims) {
    AddFloatValue(g_->add_output(), name, dims);
  }

  // Conv with random weights and bias; `group` 1 or the channel count (depthwise).
  void Conv(const std::string& x, const std::string& y, int64_t c_in, int64_t c_out, int64_t k,
            int64_t stride = 1, int64_t pad = -1, int64_t group = 1, int64_t dilation = 1) {
    if (pad < 0) pad = (k - 1) / 2 * dilation;
    const std::string w = y + "_w", b = y + "_b";
    std::vector<float> wv(static_cast<size_t>(c_out * (c_in / group) * k * k)), bv(c_out);
    for (float& v : wv) v = normal_(rng_) / std::sqrt(static_cast<float>(c_in / group * k * k));
    for (float& v : bv) v = 0.1f * normal_(rng_);
    *g_->add_initializer() = MakeFloatTensor(w, {c_out, c_in / group, k, k}, wv);
    *g_->add_initializer() = MakeFloatTensor(b, {c_out}, bv);
    auto n = MakeNode("Conv", {x, w, b}, {y}, y);
    AddIntsAttribute(&n, "kernel_shape", {k, k});
    AddIntsAttribute(&n, "strides", {stride, stride});
    AddIntsAttribute(&n, "pads", {pad, pad, pad, pad});
    AddIntsAttribute(&n, "dilations", {dilation, dilation});
    AddIntAttribute(&n, "group", group);
    *g_->add_node() = n;
  }
  // A node made by the caller (attributes the helpers here do not set).
  void Raw(const onnx::NodeProto& node) { *g_->add_node() = node; }
  void Op(const std::string& op, const std::vector<std::string>& in, const std::string& y) {
    *g_->add_node() = MakeNode(op, in, {y}, y);
  }
  // ReduceMean over `axes` with keepdims: an attribute before opset 18, an input from it on.
  void ReduceMean(const std::string& x, const std::string& y, std::vector<int64_t> axes,
                  int opset) {
    if (opset >= 18) {
      Int64Constant(y + "_axes", {static_cast<int64_t>(axes.size())}, axes);
      Op("ReduceMean", {x, y + "_axes"}, y);
    } else {
      Op("ReduceMean", {x}, y);
      AddIntsAttribute(g_->mutable_node(g_->node_size() - 1), "axes", axes);
    }
  }
  void Clip(const std::string& x, const std::string& y, float lo, float hi) {
    *g_->add_initializer() = MakeFloatTensor(y + "_lo", {}, {lo});
    *g_->add_initializer() = MakeFloatTensor(y + "_hi", {}, {hi});
    Op("Clip", {x, y + "_lo", y + "_hi"}, y);
  }
  void Pool(const std::string& op, const std::string& x, const std::string& y, int64_t k,
            int64_t stride, int64_t pad, bool ceil_mode = false, bool count_pad = false) {
    auto n = MakeNode(op, {x}, {y}, y);
    AddIntsAttribute(&n, "kernel_shape", {k, k});
    AddIntsAttribute(&n, "strides", {stride, stride});
    AddIntsAttribute(&n, "pads", {pad, pad, pad, pad});
    if (ceil_mode) AddIntAttribute(&n, "ceil_mode", 1);
    if (count_pad) AddIntAttribute(&n, "count_include_pad", 1);
    *g_->add_node() = n;
  }
  void Concat(const std::vector<std::string>& in, const std::string& y) {
    auto n = MakeNode("Concat", in, {y}, y);
    AddIntAttribute(&n, "axis", 1);
    *g_->add_node() = n;
  }
  std::string Bytes() const { return m_.SerializeAsString(); }

 private:
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
  std::mt19937 rng_{7};
  std::normal_distribution<float> normal_;
};

// Whether `layout` ("8", "16") is the block the CPU EP picks on this CPU, the one oneDNN has
// optimised kernels for: 16-channel blocks need AVX-512, and on an AVX-512 CPU oneDNN leaves
// some 8-channel shapes to its reference kernels. Tests force the other block to cover its path
// too, where reference primitives are expected.
inline bool NativeLayout(const std::string& layout) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return layout == (avx512 ? "16" : "8");
}

struct Result {
  std::vector<std::vector<float>> outputs;
  size_t kernels = 0;  // kernels of the CPU EP (a compiled group counts once)
  int64_t primitives = 0, reference_primitives = 0;  // the CPU EP's oneDNN primitives
};

inline Result RunModel(const std::string& bytes, const std::vector<std::string>& inputs,
                       const std::vector<std::vector<int64_t>>& dims, const std::string& layout,
                       int threads, bool nan_first = false, const std::string& winograd = "1") {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::SessionOptions options;
  // (Errors only: forced 16-channel blocks on an AVX2 machine warn about every primitive.)
  options.SetIntraOpThreads(threads)
      .SetConfig("ep.cpu.blocked_layout", layout)
      .SetConfig("ep.cpu.winograd", winograd)
      .SetLogLevel(NX_LOG_ERROR);
  nxrt::Session session(env, bytes.data(), bytes.size(), &options);
  std::vector<nxrt::Value> values;
  std::vector<const nxrt::Value*> pointers;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (const auto& d : dims) {
    values.push_back(nxrt::Value::Tensor(NX_TYPE_FLOAT, d));
    for (size_t i = 0; i < values.back().size(); ++i)
      values.back().data<float>()[i] = 2.0f * normal(rng);
    if (nan_first) values.back().data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  }
  for (const auto& v : values) pointers.push_back(&v);
  Result r;
  for (const nxrt::Value& out : session.Run(inputs, pointers))
    r.outputs.emplace_back(out.data<float>(), out.data<float>() + out.size());
  r.kernels = session.ep_node_count(0);
  r.primitives = session.statistic("ep.CPU.primitives");
  r.reference_primitives = session.statistic("ep.CPU.reference_primitives");
  return r;
}

// Every output of `got` within 1e-4 of `ref`'s magnitude (NaN stays NaN); at most 5 failures
// reported per output.
inline void ExpectCloseOutputs(const Result& ref, const Result& got) {
  EXPECT_EQ(got.outputs.size(), ref.outputs.size());
  for (size_t o = 0; o < std::min(got.outputs.size(), ref.outputs.size()); ++o) {
    if (got.outputs[o].size() != ref.outputs[o].size()) {
      ADD_FAILURE() << "output " << o << " has " << got.outputs[o].size() << " elements";
      continue;
    }
    int bad = 0;
    for (size_t i = 0; i < ref.outputs[o].size() && bad < 5; ++i) {
      const float a = ref.outputs[o][i], b = got.outputs[o][i];
      if (std::isnan(a)) {
        if (!std::isnan(b)) {
          ADD_FAILURE() << "output " << o << " element " << i << ": NaN became " << b;
          ++bad;
        }
        continue;
      }
      if (!(std::fabs(a - b) <= 1e-4f * std::max(1.0f, std::fabs(a)))) {
        ADD_FAILURE() << "output " << o << " element " << i << ": " << a << " vs " << b;
        ++bad;
      }
    }
  }
}

// Runs the model node by node and as blocked groups (both block sizes, 1-3 threads) and
// compares every output. Returns the node-by-node kernel count and the blocked one.
inline std::pair<size_t, size_t> ExpectSameAsNodeByNode(
    const std::string& bytes, const std::vector<std::string>& inputs,
    const std::vector<std::vector<int64_t>>& dims, bool nan_first = false) {
  const Result ref = RunModel(bytes, inputs, dims, "0", 1, nan_first);
  // No oneDNN reference implementation (orders of magnitude slower) anywhere.
  EXPECT_EQ(ref.reference_primitives, 0) << "node by node";
  size_t blocked_kernels = 0;
  for (const char* layout : {"8", "16"}) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string("block ") + layout + ", threads " + std::to_string(threads));
      const Result got = RunModel(bytes, inputs, dims, layout, threads, nan_first);
      blocked_kernels = got.kernels;
      if (NativeLayout(layout)) {
        EXPECT_EQ(got.reference_primitives, 0);
      }
      EXPECT_GT(got.primitives, 0);
      EXPECT_LT(got.kernels, ref.kernels) << "no blocked group was formed";
      ExpectCloseOutputs(ref, got);
    }
  }
  return {ref.kernels, blocked_kernels};
}

}  // namespace nxrt::test::blocked
