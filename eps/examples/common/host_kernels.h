// host_kernels.h: float32 kernels in host memory, shared by the ExampleGpu and ExampleNpu example
// EPs. Those examples are about devices (which hardware an EP supports, virtual devices, what an
// EP learns at CreateEp), so their arithmetic lives here, once. For kernels that work in an
// accelerator's own memory see eps/examples/sim_device/.
//
// Everything here computes on the host: the EPs that use these kernels name no memory of their
// own (NxEpFactory::GetMemoryInfo is NULL), so every input and output is a host pointer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

namespace examples {

using namespace nxrt::ep;

// The numpy ("multidirectional") broadcast of two shapes.
inline std::vector<int64_t> BroadcastShape(std::span<const int64_t> a, std::span<const int64_t> b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    NXRT_EP_ENFORCE(da == db || da == 1 || db == 1, "shapes do not broadcast");
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `in` walked in `out`'s shape: 0 along broadcast dimensions.
inline std::vector<int64_t> BroadcastStrides(std::span<const int64_t> in,
                                             const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t d = in[in.size() - 1 - i];
    strides[out.size() - 1 - i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  return strides;
}

// Add, Sub, Mul with broadcasting. Register with MayInplace(0, 0): the host offers a's buffer as
// y only when a is not broadcast, and then y[i] is written right after a[i] is read.
template <class Op>
class Binary : public Kernel {
 public:
  explicit Binary(const KernelInfo&) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0), b = ctx.input(1);
    const std::vector<int64_t> dims = BroadcastShape(a.shape(), b.shape());
    Tensor y = ctx.output(0, dims, a.type());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    if (y.size() == 0) return;
    if (dims.empty()) {  // two scalars
      py[0] = Op()(pa[0], pb[0]);
      return;
    }
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), dims);
    const std::vector<int64_t> sb = BroadcastStrides(b.shape(), dims);
    const size_t rank = dims.size();
    const int64_t inner = dims.back();
    std::vector<int64_t> index(rank, 0);  // position in the outer dimensions
    int64_t oa = 0, ob = 0;               // offsets of that position in a and b
    for (size_t row = 0; row < y.size(); row += static_cast<size_t>(inner)) {
      for (int64_t i = 0; i < inner; ++i)
        py[row + i] = Op()(pa[oa + i * sa.back()], pb[ob + i * sb.back()]);
      for (size_t d = rank - 1; d-- > 0;) {  // odometer step over the outer dimensions
        oa += sa[d];
        ob += sb[d];
        if (++index[d] < dims[d]) break;
        oa -= sa[d] * dims[d];
        ob -= sb[d] * dims[d];
        index[d] = 0;
      }
    }
  }
};

// Elementwise y = Op(x). Register with MayInplace(0, 0): y[i] depends on x[i] only.
template <class Op>
class Unary : public Kernel {
 public:
  explicit Unary(const KernelInfo&) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape(), x.type());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (size_t i = 0; i < x.size(); ++i) py[i] = Op()(px[i]);
  }
};

struct ReluOp {
  float operator()(float x) const { return x < 0.0f ? 0.0f : x; }  // keeps NaN
};
struct SigmoidOp {
  float operator()(float x) const { return 1.0f / (1.0f + std::exp(-x)); }
};

// MatMul of two 2-D matrices, A [M, K] x B [K, N]. ONNX MatMul also takes other ranks (numpy
// matmul); these EPs claim a MatMul only when both inputs are statically 2-D (see their
// GetCapability), so anything else here is a broken contract and fails loudly.
class MatMul2D : public Kernel {
 public:
  explicit MatMul2D(const KernelInfo& info) : op_(info.describe()) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0), b = ctx.input(1);
    NXRT_EP_ENFORCE(a.rank() == 2 && b.rank() == 2, op_ + ": both inputs must be 2-D");
    const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    NXRT_EP_ENFORCE(b.dim(0) == k, op_ + ": A is [" + std::to_string(m) + ", " + std::to_string(k) +
                                       "] but B has " + std::to_string(b.dim(0)) + " rows");
    Tensor y = ctx.output(0, {m, n}, a.type());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    // i-p-j order walks B and Y row by row (contiguous), which is what a cache wants.
    std::fill(py, py + m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        const float aip = pa[i * k + p];
        for (int64_t j = 0; j < n; ++j) py[i * n + j] += aip * pb[p * n + j];
      }
  }

 private:
  std::string op_;
};

// Whether input `i` of `node` has a statically known rank of 2.
inline bool IsStatically2D(const NodeView& node, size_t i) {
  const auto shape = node.input(i).shape();
  return shape && shape->size() == 2;
}

}  // namespace examples
