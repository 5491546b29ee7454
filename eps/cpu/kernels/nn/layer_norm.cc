// LayerNormalization and RMSNormalization: X is viewed as [rows, cols] with cols the product of
// the axes from `axis` on; each row is normalised independently (rows are spread over threads).
#include <cmath>
#include <span>
#include <type_traits>

#include "common/parallel.h"
#include "common/small_vector.h"
#include "kernels/nn/nn_common.h"
#include "kernels/nn/norm_common.h"

namespace nxrt::cpu::nn {
namespace {

// The common Scale/Bias: of the accumulation type with exactly one value per column (its
// shape is X's from `axis` on, possibly with leading 1s), read in place without conversion or
// allocation. Null otherwise (MakeRowParam handles every broadcast).
template <class A>
const A* DirectColumns(const ep::ConstTensor& p, std::span<const int64_t> x_shape, size_t axis) {
  constexpr NxElementType kType = std::is_same_v<A, float> ? NX_TYPE_FLOAT : NX_TYPE_DOUBLE;
  if (p.type() != kType) return nullptr;
  const auto ps = p.shape();
  const size_t cols_rank = x_shape.size() - axis;
  if (ps.size() < cols_rank || ps.size() > x_shape.size()) return nullptr;
  const size_t lead = ps.size() - cols_rank;
  for (size_t i = 0; i < lead; ++i)
    if (ps[i] != 1) return nullptr;
  for (size_t i = 0; i < cols_rank; ++i)
    if (ps[lead + i] != x_shape[axis + i]) return nullptr;
  return p.data<A>();
}

class RowNorm : public ep::Kernel {
 public:
  explicit RowNorm(const ep::KernelInfo& info) {
    op_ = info.op_type();
    rms_ = op_ == "RMSNormalization";
    axis_ = info.attr_int("axis", -1);
    epsilon_ = info.attr_float("epsilon", 1e-5f);
    for (size_t i = 0; i < info.output_count(); ++i)
      has_output_.push_back(info.output(i).present());
    stat_type_ = info.output_type(1);
    if (stat_type_ == NX_TYPE_UNDEFINED) stat_type_ = NX_TYPE_FLOAT;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto shape = x.shape();
    size_t axis =
        static_cast<size_t>(NormalizeAxis(axis_, static_cast<int64_t>(shape.size()), op_.c_str()));
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < shape.size(); ++d) (d < axis ? rows : cols) *= shape[d];
    ep::Tensor y = ctx.output(0, shape, x.type());
    Dims stat_shape(shape);
    for (size_t d = axis; d < stat_shape.size(); ++d) stat_shape[d] = 1;
    ep::Tensor mean_out, inv_out;
    if (!rms_ && has_output_.size() > 1 && has_output_[1]) {
      mean_out = ctx.output(1, stat_shape, stat_type_);
    }
    if (!rms_ && has_output_.size() > 2 && has_output_[2]) {
      inv_out = ctx.output(2, stat_shape, stat_type_);
    }
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const A* scale_direct = DirectColumns<A>(ctx.input(1), shape, axis);
      const A* bias_direct =
          !rms_ && ctx.has_input(2) ? DirectColumns<A>(ctx.input(2), shape, axis) : nullptr;
      RowParam<A> scale, bias;
      if (scale_direct == nullptr)
        scale = MakeRowParam<A>(ctx.input(1), shape, axis, op_.c_str(), "Scale");
      if (!rms_ && ctx.has_input(2) && bias_direct == nullptr) {
        bias = MakeRowParam<A>(ctx.input(2), shape, axis, op_.c_str(), "B");
      }
      const bool has_bias = bias_direct != nullptr || bias.present;
      std::vector<A> mean_buf(mean_out.valid() ? rows : 0), inv_buf(inv_out.valid() ? rows : 0);
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      const A eps = static_cast<A>(epsilon_);
      int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, cols));
      ParallelFor(ctx.threads(), rows, grain, [&](int64_t begin, int64_t end) {
        std::vector<A> scale_scratch(scale_direct || scale.dense ? 0 : cols);
        std::vector<A> bias_scratch(bias.present && !bias.dense ? cols : 0);
        std::vector<A> xrow(std::is_same_v<T, A> ? 0 : cols);
        for (int64_t r = begin; r < end; ++r) {
          const A* xr;
          if constexpr (std::is_same_v<T, A>) {
            xr = xd + r * cols;
          } else {
            for (int64_t c = 0; c < cols; ++c) xrow[c] = static_cast<A>(xd[r * cols + c]);
            xr = xrow.data();
          }
          T* yr = yd + r * cols;
          const A* sr = scale_direct ? scale_direct : scale.row(r, scale_scratch);
          A mean = 0, inv;
          if (rms_) {
            A ss = 0;
#pragma omp simd reduction(+ : ss)
            for (int64_t c = 0; c < cols; ++c) ss += xr[c] * xr[c];
            inv = A(1) / std::sqrt(ss / static_cast<A>(cols) + eps);
            for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<T>(xr[c] * inv * sr[c]);
            continue;
          }
          A s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t c = 0; c < cols; ++c) s += xr[c];
          mean = s / static_cast<A>(cols);
          A ss = 0;
#pragma omp simd reduction(+ : ss)
          for (int64_t c = 0; c < cols; ++c) {
            A d = xr[c] - mean;
            ss += d * d;
          }
          inv = A(1) / std::sqrt(ss / static_cast<A>(cols) + eps);
          if (has_bias) {
            const A* br = bias_direct ? bias_direct : bias.row(r, bias_scratch);
            for (int64_t c = 0; c < cols; ++c) {
              yr[c] = static_cast<T>((xr[c] - mean) * inv * sr[c] + br[c]);
            }
          } else {
            for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<T>((xr[c] - mean) * inv * sr[c]);
          }
          if (!mean_buf.empty()) mean_buf[r] = mean;
          if (!inv_buf.empty()) inv_buf[r] = inv;
        }
      });
      WriteStat(mean_out, mean_buf);
      WriteStat(inv_out, inv_buf);
    });
  }

 private:
  template <class A>
  static void WriteStat(const ep::Tensor& t, const std::vector<A>& values) {
    if (!t.valid()) return;
    DispatchFloat(t.type(), [&]<class U>() {
      U* p = t.data<U>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<U>(values[i]);
    });
  }

  std::string op_;
  bool rms_ = false;
  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
  std::vector<bool> has_output_;
  NxElementType stat_type_ = NX_TYPE_FLOAT;
};

}  // namespace

void RegisterLayerNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("LayerNormalization").Versions(17).Build<RowNorm>(registry);
  ep::KernelDefBuilder("RMSNormalization").Versions(23).Build<RowNorm>(registry);
}

}  // namespace nxrt::cpu::nn
