// com.microsoft element-wise activations that onnxruntime fuses out of BERT/GPT graphs:
//   BiasGelu(A, B)          = Gelu(A + B), exact (erf) form, B broadcast along the last axis
//   FastGelu(X[, bias])     = tanh approximation of Gelu of X (+ bias)
//   QuickGelu(X; alpha)     = X * Sigmoid(alpha * X)
//   BiasAdd(X, bias, skip)  = X + bias + skip (the residual add before a normalisation)
// The activations use the vectorised array functions of the element-wise family; rows are
// spread over threads in blocks large enough to amortise the scheduling.
#include <algorithm>
#include <vector>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/elementwise/vec_math.h"

namespace nxrt::cpu::contrib {
namespace {

// About 16K floats per chunk: big enough for the vector loops, small enough to stay in L1/L2.
constexpr int64_t kChunkFloats = 16384;

// Runs fn(row_begin, row_end) over `rows` rows of `cols` floats on the session's threads.
template <class Fn>
void ForRows(const ep::KernelContext& ctx, int64_t rows, int64_t cols, Fn&& fn) {
  const int64_t grain = std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(1, cols));
  ParallelFor(ctx.threads(), rows, grain, fn);
}

enum class Activation { kGelu, kGeluTanh, kQuick };

// One kernel for the three activations: y = act(x [+ bias]).
class GeluVariant : public ep::Kernel {
 public:
  explicit GeluVariant(const ep::KernelInfo& info) : op_(info.op_type()) {
    if (op_ == "BiasGelu") {
      act_ = Activation::kGelu;
    } else if (op_ == "FastGelu") {
      act_ = Activation::kGeluTanh;
    } else {
      act_ = Activation::kQuick;
      alpha_ = info.attr_float("alpha", 1.702f);
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    RequireFloat(x, op_.c_str(), "X");
    const auto shape = x.shape();
    const int64_t total = static_cast<int64_t>(x.size());
    const int64_t cols = shape.empty() ? 1 : shape.back();
    const int64_t rows = cols == 0 ? 0 : total / cols;
    const float* bias = nullptr;
    // BiasGelu requires its bias, FastGelu takes it optionally, QuickGelu has none.
    if (act_ != Activation::kQuick && ctx.has_input(1)) {
      bias = ChannelVector(ctx.input(1), cols, op_.c_str(), "bias");
    }
    ep::Tensor y = ctx.output(0, shape, NX_TYPE_FLOAT);
    const float* xd = x.data<float>();
    float* yd = y.data<float>();
    ForRows(ctx, rows, cols, [&](int64_t begin, int64_t end) {
      float* out = yd + begin * cols;
      const int64_t n = (end - begin) * cols;
      const float* in = xd + begin * cols;
      if (bias != nullptr) {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = xd + r * cols;
          float* yr = yd + r * cols;
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] + bias[c];
        }
        in = out;  // the activation then runs in place
      }
      switch (act_) {
        case Activation::kGelu:
          elementwise::GeluArray(in, out, n);
          break;
        case Activation::kGeluTanh:
          elementwise::GeluTanhArray(in, out, n);
          break;
        case Activation::kQuick:
          elementwise::SwishArray(in, out, n, alpha_);
          break;
      }
    });
  }

 private:
  std::string op_;
  Activation act_ = Activation::kGelu;
  float alpha_ = 1.702f;
};

class BiasAdd : public ep::Kernel {
 public:
  explicit BiasAdd(const ep::KernelInfo&) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), skip = ctx.input(2);
    RequireFloat(x, "BiasAdd", "X");
    RequireFloat(skip, "BiasAdd", "skip");
    const auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() == 3,
                    "BiasAdd: X must be 3-D [N, S, C], got " + DimsToString(shape));
    NXRT_EP_ENFORCE(skip.shape_vector() == x.shape_vector(),
                    "BiasAdd: skip must have X's shape, got " + DimsToString(skip.shape()));
    const int64_t cols = shape[2];
    const int64_t rows = shape[0] * shape[1];
    const float* bias = ChannelVector(ctx.input(1), cols, "BiasAdd", "bias");
    ep::Tensor y = ctx.output(0, shape, NX_TYPE_FLOAT);
    const float* xd = x.data<float>();
    const float* sd = skip.data<float>();
    float* yd = y.data<float>();
    ForRows(ctx, rows, cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xd + r * cols;
        const float* sr = sd + r * cols;
        float* yr = yd + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] + bias[c] + sr[c];
      }
    });
  }
};

}  // namespace

void RegisterGeluVariantKernels(NxKernelRegistry* registry) {
  for (const char* op : {"BiasGelu", "FastGelu", "QuickGelu"}) {
    ep::KernelDefBuilder(op, "com.microsoft").Versions(1).Build<GeluVariant>(registry);
  }
  ep::KernelDefBuilder("BiasAdd", "com.microsoft").Versions(1).Build<BiasAdd>(registry);
}

}  // namespace nxrt::cpu::contrib
