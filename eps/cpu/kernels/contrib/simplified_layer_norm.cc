// SimplifiedLayerNormalization: onnxruntime's RMS normalization, which it registers in the ONNX
// domain (version 1) and which its transformer optimizer and the onnxruntime-genai model builder
// write for T5- and Llama-style models (the first and last norms; the others become com.microsoft
// SkipSimplifiedLayerNormalization, skip_layer_norm.cc):
//   y = x / sqrt(mean(x^2) + epsilon) * scale
// over the axes from `axis` on (default the last), scale of those axes' shape; the optional
// second output inv_std_var has x's shape with those axes 1. Float32 (float16 models are computed
// in float32 by the session, src/session/float16_upcast.h). Sums of squares in double.
#include <cmath>
#include <string>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::contrib {
namespace {

class SimplifiedLayerNorm : public ep::Kernel {
 public:
  explicit SimplifiedLayerNorm(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", -1)), epsilon_(info.attr_float("epsilon", 1e-5f)) {
    want_inv_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    constexpr const char* kOp = "SimplifiedLayerNormalization";
    ep::ConstTensor x = ctx.input(0), scale = ctx.input(1);
    RequireFloat(x, kOp, "X");
    RequireFloat(scale, kOp, "scale");
    const auto xs = x.shape();
    NXRT_EP_ENFORCE(!xs.empty(), std::string(kOp) + ": X must have at least one dimension");
    const int64_t axis = nn::NormalizeAxis(axis_, static_cast<int64_t>(xs.size()), kOp);
    int64_t norm = 1;
    for (size_t d = static_cast<size_t>(axis); d < xs.size(); ++d) norm *= xs[d];
    NXRT_EP_ENFORCE(static_cast<int64_t>(scale.size()) == norm,
                    std::string(kOp) + ": scale of shape " + DimsToString(scale.shape()) +
                        " does not cover the normalized dimensions of X " + DimsToString(xs));
    ep::Tensor y = ctx.output(0, xs, NX_TYPE_FLOAT);
    Dims stat_shape(xs);
    for (size_t d = static_cast<size_t>(axis); d < xs.size(); ++d) stat_shape[d] = 1;
    float* inv_out = want_inv_ ? ctx.output(1, stat_shape, NX_TYPE_FLOAT).data<float>() : nullptr;
    const int64_t rows = norm == 0 ? 0 : static_cast<int64_t>(x.size()) / norm;
    const float* xd = x.data<float>();
    const float* g = scale.data<float>();
    float* yd = y.data<float>();
    const double eps = epsilon_;
    const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, norm));
    ParallelFor(ctx.threads(), rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xd + r * norm;
        float* yr = yd + r * norm;
        double squares = 0.0;
#pragma omp simd reduction(+ : squares)
        for (int64_t c = 0; c < norm; ++c) squares += static_cast<double>(xr[c]) * xr[c];
        const auto inv =
            static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(norm) + eps));
#pragma omp simd
        for (int64_t c = 0; c < norm; ++c) yr[c] = xr[c] * inv * g[c];
        if (inv_out != nullptr) inv_out[r] = inv;
      }
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
  bool want_inv_ = false;
};

}  // namespace

void RegisterSimplifiedLayerNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("SimplifiedLayerNormalization")
      .Versions(1)
      .Build<SimplifiedLayerNorm>(registry);
}

}  // namespace nxrt::cpu::contrib
