// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization: the residual add
// and normalisation of a transformer block in one pass over each row,
//   s = input + skip [+ bias]
//   y = (s - mean(s)) * inv_std * gamma [+ beta]     (SkipLayerNormalization)
//   y = s * inv_rms * gamma                          (SkipSimplifiedLayerNormalization)
// with optional outputs mean and inv_std_var (shape of input with last axis 1) and the sum s
// itself (input_skip_bias_sum, which the next block's residual reads). skip may also be shared by
// all batch entries ([1, S, H] or [S, H]).
#include <cmath>
#include <string>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"

namespace nxrt::cpu::contrib {
namespace {

class SkipLayerNorm : public ep::Kernel {
 public:
  explicit SkipLayerNorm(const ep::KernelInfo& info) : op_(info.op_type()) {
    simplified_ = op_ == "SkipSimplifiedLayerNormalization";
    epsilon_ = info.attr_float("epsilon", 1e-12f);
    for (size_t i = 0; i < 4; ++i) want_[i] = i < info.output_count() && info.output(i).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    const char* op = op_.c_str();
    ep::ConstTensor x = ctx.input(0), skip = ctx.input(1);
    RequireFloat(x, op, "input");
    RequireFloat(skip, op, "skip");
    const auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 2 || xs.size() == 3,
                    op_ + ": input must be 2-D or 3-D, got " + DimsToString(xs));
    const int64_t H = xs.back();
    const int64_t rows = H == 0 ? 0 : static_cast<int64_t>(x.size()) / H;
    // skip is per row, or shared by the batch entries ([1, S, H] or [S, H]).
    const auto ss = skip.shape();
    const int64_t skip_rows = H == 0 ? 1 : static_cast<int64_t>(skip.size()) / H;
    NXRT_EP_ENFORCE(!ss.empty() && ss.back() == H &&
                        (skip_rows == rows || (xs.size() == 3 && skip_rows == xs[1])),
                    op_ + ": skip of shape " + DimsToString(ss) + " does not broadcast to input " +
                        DimsToString(xs));
    const float* gamma = ChannelVector(ctx.input(2), H, op, "gamma");
    // Input order: SkipLayerNormalization (input, skip, gamma, beta, bias);
    // SkipSimplifiedLayerNormalization (input, skip, gamma, bias).
    const float* beta = nullptr;
    const float* bias = nullptr;
    const size_t bias_index = simplified_ ? 3 : 4;
    if (!simplified_ && ctx.has_input(3)) beta = ChannelVector(ctx.input(3), H, op, "beta");
    if (ctx.has_input(bias_index)) bias = ChannelVector(ctx.input(bias_index), H, op, "bias");

    ep::Tensor y = ctx.output(0, xs, NX_TYPE_FLOAT);
    Dims stat_shape(xs);
    stat_shape.back() = 1;
    ep::Tensor mean_t, inv_t, sum_t;
    if (want_[1]) mean_t = ctx.output(1, stat_shape, NX_TYPE_FLOAT);
    if (want_[2]) inv_t = ctx.output(2, stat_shape, NX_TYPE_FLOAT);
    if (want_[3]) sum_t = ctx.output(3, xs, NX_TYPE_FLOAT);
    const float* xd = x.data<float>();
    const float* sd = skip.data<float>();
    float* yd = y.data<float>();
    float* mean_d = mean_t.valid() ? mean_t.data<float>() : nullptr;
    float* inv_d = inv_t.valid() ? inv_t.data<float>() : nullptr;
    float* sum_d = sum_t.valid() ? sum_t.data<float>() : nullptr;
    const float eps = epsilon_;
    const bool simplified = simplified_;
    const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, H));
    ParallelFor(ctx.threads(), rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xd + r * H;
        const float* sr = sd + (r % skip_rows) * H;
        // The sum goes straight to the output row (or the sum output) and is normalised there.
        float* s = sum_d != nullptr ? sum_d + r * H : yd + r * H;
        float* yr = yd + r * H;
        float total = 0.0f, squares = 0.0f;
        if (bias != nullptr) {
#pragma omp simd reduction(+ : total, squares)
          for (int64_t c = 0; c < H; ++c) {
            const float v = xr[c] + sr[c] + bias[c];
            s[c] = v;
            total += v;
            squares += v * v;
          }
        } else {
#pragma omp simd reduction(+ : total, squares)
          for (int64_t c = 0; c < H; ++c) {
            const float v = xr[c] + sr[c];
            s[c] = v;
            total += v;
            squares += v * v;
          }
        }
        const float n = static_cast<float>(H);
        if (simplified) {
          const float inv = 1.0f / std::sqrt(squares / n + eps);
#pragma omp simd
          for (int64_t c = 0; c < H; ++c) yr[c] = s[c] * inv * gamma[c];
          if (mean_d != nullptr) mean_d[r] = 0.0f;  // not defined for the RMS form
          if (inv_d != nullptr) inv_d[r] = inv;
          continue;
        }
        const float mean = total / n;
        // Variance from a second pass over the row (cached): cancellation-free, unlike E[s^2]-m^2.
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < H; ++c) {
          const float d = s[c] - mean;
          var += d * d;
        }
        const float inv = 1.0f / std::sqrt(var / n + eps);
        if (beta != nullptr) {
#pragma omp simd
          for (int64_t c = 0; c < H; ++c) yr[c] = (s[c] - mean) * inv * gamma[c] + beta[c];
        } else {
#pragma omp simd
          for (int64_t c = 0; c < H; ++c) yr[c] = (s[c] - mean) * inv * gamma[c];
        }
        if (mean_d != nullptr) mean_d[r] = mean;
        if (inv_d != nullptr) inv_d[r] = inv;
      }
    });
  }

 private:
  std::string op_;
  bool simplified_ = false;
  float epsilon_ = 1e-12f;
  bool want_[4] = {false, false, false, false};
};

}  // namespace

void RegisterSkipLayerNormKernels(NxKernelRegistry* registry) {
  for (const char* op : {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization"}) {
    ep::KernelDefBuilder(op, "com.microsoft").Versions(1).Build<SkipLayerNorm>(registry);
  }
}

}  // namespace nxrt::cpu::contrib
