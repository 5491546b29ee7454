// NegativeLogLikelihoodLoss (opset 12+) and SoftmaxCrossEntropyLoss (opset 12+).
// Input [N, C, d1...], target [N, d1...] of class indices, optional weight [C]. The per-element
// loss is -w[t] * input[n, t, d]; entries whose target equals ignore_index contribute 0 and do not
// count towards the mean's denominator. SoftmaxCrossEntropyLoss applies log-softmax over C first
// (and can return it as a second output).
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/dispatch.h"
#include "kernels/reduction/reduction_kernels.h"
#include "kernels/reduction/softmax_core.h"

namespace nxrt::cpu::reduction {
namespace {

enum class Reduction { kNone, kSum, kMean };

Reduction ParseReduction(const std::string& s, const std::string& op) {
  if (s == "none") return Reduction::kNone;
  if (s == "sum") return Reduction::kSum;
  if (s == "mean") return Reduction::kMean;
  ep::Fail(NX_INVALID_ARGUMENT, op + ": unknown reduction '" + s + "'");
}

template <class T>
double ToDouble(T v) {
  return static_cast<double>(static_cast<ComputeT<T>>(v));
}

template <class I>
std::vector<int64_t> TargetsAs64(const ep::ConstTensor& t) {
  const I* p = t.data<I>();
  return std::vector<int64_t>(p, p + t.size());
}

// Loss over log-probabilities `lp` ([N, C, D] flattened), written to `out` as type T.
template <class T>
void NllCore(const std::string& op, const T* lp, int64_t n, int64_t c, int64_t d,
             const std::vector<int64_t>& target, const T* weight, std::optional<int64_t> ignore,
             Reduction reduction, T* out) {
  double total = 0, weight_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      const int64_t idx = i * d + k;
      const int64_t t = target[idx];
      double loss = 0, w = 0;
      if (!(ignore && t == *ignore)) {
        NXRT_EP_ENFORCE(t >= 0 && t < c, op + ": target " + std::to_string(t) +
                                             " is out of range for " + std::to_string(c) +
                                             " classes");
        w = weight ? ToDouble(weight[t]) : 1.0;
        loss = -w * ToDouble(lp[(i * c + t) * d + k]);
      }
      if (reduction == Reduction::kNone) {
        out[idx] = ToOut<T>(loss);
      } else {
        total += loss;
        weight_sum += w;
      }
    }
  }
  if (reduction == Reduction::kSum) out[0] = ToOut<T>(total);
  if (reduction == Reduction::kMean) out[0] = ToOut<T>(total / weight_sum);
}

// Shared by both ops: validates shapes, reads target/weight, runs NllCore on `lp`.
template <class T>
void RunLoss(ep::KernelContext& ctx, const std::string& op, const ep::ConstTensor& x, const T* lp,
             std::optional<int64_t> ignore, Reduction reduction) {
  const auto shape = x.shape();
  NXRT_EP_ENFORCE(shape.size() >= 2, op + ": input must have rank >= 2 ([N, C, ...])");
  ep::ConstTensor target = ctx.input(1);
  const auto tshape = target.shape();
  bool ok = tshape.size() + 1 == shape.size() && tshape[0] == shape[0];
  for (size_t i = 1; ok && i < tshape.size(); ++i) ok = tshape[i] == shape[i + 1];
  NXRT_EP_ENFORCE(ok, op + ": target shape must be input shape without the class dimension");
  const int64_t n = shape[0], c = shape[1];
  int64_t d = 1;
  for (size_t i = 2; i < shape.size(); ++i) d *= shape[i];
  std::vector<int64_t> t =
      target.type() == NX_TYPE_INT32 ? TargetsAs64<int32_t>(target) : TargetsAs64<int64_t>(target);
  const T* w = nullptr;
  if (auto weight = ctx.optional_input(2)) {
    NXRT_EP_ENFORCE(weight->rank() == 1 && weight->dim(0) == c,
                    op + ": weight must have shape [C] = [" + std::to_string(c) + "]");
    NXRT_EP_ENFORCE(weight->type() == x.type(), op + ": weight type must match the input type");
    w = weight->data<T>();
  }
  std::vector<int64_t> out_shape;
  if (reduction == Reduction::kNone) out_shape.assign(tshape.begin(), tshape.end());
  ep::Tensor y = ctx.output(0, out_shape, x.type());
  NllCore<T>(op, lp, n, c, d, t, w, ignore, reduction, y.data<T>());
}

class LossKernel : public ep::Kernel {
 public:
  LossKernel(const ep::KernelInfo& info, bool softmax)
      : name_(info.op_type()),
        softmax_(softmax),
        reduction_(ParseReduction(info.attr_string("reduction", "mean"), name_)),
        want_log_prob_(info.output_count() > 1 && info.output(1).present() &&
                       *info.output(1).name() != '\0') {
    if (info.has_attr("ignore_index")) ignore_ = info.attr_int("ignore_index");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    DispatchFloat(x.type(), [&]<class T>() {
      if (!softmax_) {
        RunLoss<T>(ctx, name_, x, x.data<T>(), ignore_, reduction_);
        return;
      }
      const auto shape = x.shape();
      NXRT_EP_ENFORCE(shape.size() >= 2, name_ + ": input must have rank >= 2 ([N, C, ...])");
      int64_t d = 1;
      for (size_t i = 2; i < shape.size(); ++i) d *= shape[i];
      // log_prob goes straight into the optional second output when it is requested.
      std::vector<T> scratch;
      T* lp;
      if (want_log_prob_) {
        lp = ctx.output(1, shape, x.type()).template data<T>();
      } else {
        scratch.resize(x.size());
        lp = scratch.data();
      }
      Normalize<Mode::kLogSoftmax, T>(x.data<T>(), lp, shape[0], shape[1], d, ctx.threads());
      RunLoss<T>(ctx, name_, x, lp, ignore_, reduction_);
    });
  }

 private:
  std::string name_;
  bool softmax_;
  Reduction reduction_;
  bool want_log_prob_;
  std::optional<int64_t> ignore_;
};

class NllLoss : public LossKernel {
 public:
  explicit NllLoss(const ep::KernelInfo& info) : LossKernel(info, false) {}
};
class SoftmaxCrossEntropyLoss : public LossKernel {
 public:
  explicit SoftmaxCrossEntropyLoss(const ep::KernelInfo& info) : LossKernel(info, true) {}
};

}  // namespace

void RegisterLosses(NxKernelRegistry* r) {
  const std::vector<NxElementType> types = {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16,
                                            NX_TYPE_BFLOAT16};
  const std::vector<NxElementType> index_types = {NX_TYPE_INT32, NX_TYPE_INT64};
  ep::KernelDefBuilder("NegativeLogLikelihoodLoss")
      .Versions(12)
      .Constraint("T", types, {0, 2}, {0})
      .Constraint("Tind", index_types, {1})
      .Build<NllLoss>(r);
  ep::KernelDefBuilder("SoftmaxCrossEntropyLoss")
      .Versions(12)
      .Constraint("T", types, {0, 2}, {0, 1})
      .Constraint("Tind", index_types, {1})
      .Build<SoftmaxCrossEntropyLoss>(r);
}

}  // namespace nxrt::cpu::reduction
