// Transpose (eps/cpu/kernels/tensor/transpose.cc on strided_copy.h), run through a one-node
// model at 1 and 2 threads, puts every element where the permutation says: planar to
// interleaved with 2 and 3 channels (an RGB image to NHWC, the tiled path since it took 2 and 3
// columns), the reverse, wide and odd shapes, uint8 and float.
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::AddIntsAttribute;
using nxrt::test::AddTypedValue;
using nxrt::test::MakeNode;

std::string TransposeModel(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                           int type) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("transpose");
  auto node = MakeNode("Transpose", {"x"}, {"y"}, "t");
  AddIntsAttribute(&node, "perm", perm);
  *g->add_node() = node;
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(dims[static_cast<size_t>(p)]);
  AddTypedValue(g->add_input(), "x", type, dims);
  AddTypedValue(g->add_output(), "y", type, out);
  return m.SerializeAsString();
}

template <class T>
void ExpectPermuted(nxrt::Env& env, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& perm, NxElementType nx_type, int onnx_type) {
  SCOPED_TRACE(::testing::PrintToString(dims) + " perm " + ::testing::PrintToString(perm));
  nxrt::Value x = nxrt::Value::Tensor(nx_type, dims);
  for (size_t i = 0; i < x.size(); ++i) x.data<T>()[i] = static_cast<T>(i * 7 % 251);
  const size_t rank = dims.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t k = rank - 1; k-- > 0;) in_strides[k] = in_strides[k + 1] * dims[k + 1];
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
  const std::string bytes = TransposeModel(dims, perm, onnx_type);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    nxrt::SessionOptions options;
    options.SetIntraOpThreads(threads);
    nxrt::Session session(env, bytes.data(), bytes.size(), &options);
    auto y = session.Run({"x"}, {&x});
    ASSERT_EQ(y[0].shape(), out_dims);
    std::vector<int64_t> index(rank, 0);  // the output index, odometer order
    for (size_t o = 0; o < y[0].size(); ++o) {
      int64_t at = 0;
      for (size_t k = 0; k < rank; ++k) at += index[k] * in_strides[static_cast<size_t>(perm[k])];
      ASSERT_EQ(y[0].data<T>()[o], x.data<T>()[at]) << "output element " << o;
      for (size_t k = rank; k-- > 0;) {
        if (++index[k] < out_dims[k]) break;
        index[k] = 0;
      }
    }
  }
}

TEST(Transpose, EveryElementLandsWhereThePermutationSays) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{1, 3, 224, 224}, {0, 2, 3, 1}},  // an RGB image to NHWC
      {{2, 2, 37, 41}, {0, 2, 3, 1}},    // two channels, batch 2, odd sizes
      {{1, 3, 5, 3}, {0, 2, 3, 1}},      // tiny
      {{1, 77, 19, 3}, {0, 3, 1, 2}},    // back to planar
      {{1, 64, 56, 56}, {0, 2, 3, 1}},   // many channels
      {{3, 70, 33}, {2, 0, 1}},         {{5, 4, 3, 2}, {3, 2, 1, 0}},
  };
  for (const auto& [dims, perm] : cases) {
    ExpectPermuted<uint8_t>(env, dims, perm, NX_TYPE_UINT8, onnx::TensorProto::UINT8);
    ExpectPermuted<float>(env, dims, perm, NX_TYPE_FLOAT, onnx::TensorProto::FLOAT);
  }
}

}  // namespace
