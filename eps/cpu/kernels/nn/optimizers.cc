// The training-domain optimizer steps (ai.onnx.preview.training, opset 1): Adagrad, Adam and
// Momentum update n tensors at once. Their inputs are the learning rate R and step count T
// (scalars), then n tensors of each kind (X..., G..., and the optimizer's state), and the
// outputs are the new X... and new state. Each element is independent; the arithmetic runs in
// double so float and double tensors get the same formula.
#include <cmath>

#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

double ScalarAsDouble(const ep::ConstTensor& t, const char* op, const char* what) {
  NXRT_EP_ENFORCE(t.size() == 1, std::string(op) + ": " + what + " must hold one value");
  switch (t.type()) {
    case NX_TYPE_FLOAT:
      return t.data<float>()[0];
    case NX_TYPE_DOUBLE:
      return t.data<double>()[0];
    case NX_TYPE_INT64:
      return static_cast<double>(t.data<int64_t>()[0]);
    default:
      throw ep::Error(NX_INVALID_ARGUMENT, std::string(op) + ": " + what +
                                               " must be float, double or int64");
  }
}

// Runs `update(i, in[0][i], in[1][i], ..., out...)` over n groups of `kinds` inputs starting at
// input 2; group g's tensors are inputs 2 + k * n + g, outputs k' * n + g.
template <class Fn>
void ForEachGroup(ep::KernelContext& ctx, const char* op, size_t kinds, size_t out_kinds,
                  Fn&& update) {
  const size_t inputs = ctx.input_count();
  NXRT_EP_ENFORCE(inputs >= 2 + kinds && (inputs - 2) % kinds == 0,
                  std::string(op) + ": expects R, T and " + std::to_string(kinds) +
                      " tensors per optimized input");
  const size_t n = (inputs - 2) / kinds;
  NXRT_EP_ENFORCE(ctx.output_count() <= out_kinds * n,
                  std::string(op) + ": too many outputs");
  for (size_t g = 0; g < n; ++g) {
    std::vector<ep::ConstTensor> in;
    for (size_t k = 0; k < kinds; ++k) in.push_back(ctx.input(2 + k * n + g));
    const NxElementType type = in[0].type();
    NXRT_EP_ENFORCE(type == NX_TYPE_FLOAT || type == NX_TYPE_DOUBLE,
                    std::string(op) + ": tensors must be float or double");
    for (const ep::ConstTensor& t : in) {
      NXRT_EP_ENFORCE(t.type() == type && t.shape_vector() == in[0].shape_vector(),
                      std::string(op) + ": the tensors of one input must share type and shape");
    }
    std::vector<ep::Tensor> out;
    for (size_t k = 0; k < out_kinds; ++k)
      out.push_back(ctx.output(k * n + g, in[0].shape(), type));
    const auto run = [&]<class T>() {
      std::vector<const T*> src;
      for (const ep::ConstTensor& t : in) src.push_back(t.data<T>());
      std::vector<T*> dst;
      for (ep::Tensor& t : out) dst.push_back(t.data<T>());
      for (size_t i = 0; i < in[0].size(); ++i) update(i, src, dst);
    };
    if (type == NX_TYPE_FLOAT)
      run.template operator()<float>();
    else
      run.template operator()<double>();
  }
}

// X, G, H -> X_new, H_new.
class Adagrad : public ep::Kernel {
 public:
  explicit Adagrad(const ep::KernelInfo& info)
      : decay_(info.attr_float("decay_factor", 0.0f)),
        epsilon_(info.attr_float("epsilon", 1e-6f)),
        norm_(info.attr_float("norm_coefficient", 0.0f)) {}
  void Compute(ep::KernelContext& ctx) override {
    const double r = ScalarAsDouble(ctx.input(0), "Adagrad", "R") /
                     (1 + ScalarAsDouble(ctx.input(1), "Adagrad", "T") * decay_);
    ForEachGroup(ctx, "Adagrad", 3, 2, [&](size_t i, const auto& in, const auto& out) {
      const double g = norm_ * static_cast<double>(in[0][i]) + in[1][i];
      const double h = in[2][i] + g * g;
      out[0][i] = static_cast<std::remove_reference_t<decltype(*out[0])>>(
          in[0][i] - r * g / (std::sqrt(h) + epsilon_));
      out[1][i] = static_cast<std::remove_reference_t<decltype(*out[1])>>(h);
    });
  }

 private:
  double decay_, epsilon_, norm_;
};

// X, G, V, H -> X_new, V_new, H_new.
class Adam : public ep::Kernel {
 public:
  explicit Adam(const ep::KernelInfo& info)
      : alpha_(info.attr_float("alpha", 0.9f)),
        beta_(info.attr_float("beta", 0.999f)),
        epsilon_(info.attr_float("epsilon", 1e-6f)),
        norm_(info.attr_float("norm_coefficient", 0.0f)),
        norm_post_(info.attr_float("norm_coefficient_post", 0.0f)) {}
  void Compute(ep::KernelContext& ctx) override {
    const double r = ScalarAsDouble(ctx.input(0), "Adam", "R");
    const double t = ScalarAsDouble(ctx.input(1), "Adam", "T");
    // Bias correction of both moments, from the second step on.
    const double rate =
        t > 0 ? r * std::sqrt(1 - std::pow(beta_, t)) / (1 - std::pow(alpha_, t)) : r;
    ForEachGroup(ctx, "Adam", 4, 3, [&](size_t i, const auto& in, const auto& out) {
      using T = std::remove_reference_t<decltype(*out[0])>;
      const double g = norm_ * static_cast<double>(in[0][i]) + in[1][i];
      const double v = alpha_ * in[2][i] + (1 - alpha_) * g;
      const double h = beta_ * in[3][i] + (1 - beta_) * g * g;
      const double x = in[0][i] - rate * v / (std::sqrt(h) + epsilon_);
      out[0][i] = static_cast<T>((1 - norm_post_) * x);
      out[1][i] = static_cast<T>(v);
      out[2][i] = static_cast<T>(h);
    });
  }

 private:
  double alpha_, beta_, epsilon_, norm_, norm_post_;
};

// X, G, V -> X_new, V_new; mode "standard" or "nesterov".
class Momentum : public ep::Kernel {
 public:
  explicit Momentum(const ep::KernelInfo& info)
      : alpha_(info.attr_float("alpha")),
        beta_(info.attr_float("beta")),
        norm_(info.attr_float("norm_coefficient")) {
    const std::string mode = info.attr_string("mode", "");
    NXRT_EP_ENFORCE(mode == "standard" || mode == "nesterov",
                    "Momentum: mode must be 'standard' or 'nesterov', got '" + mode + "'");
    nesterov_ = mode == "nesterov";
  }
  void Compute(ep::KernelContext& ctx) override {
    const double r = ScalarAsDouble(ctx.input(0), "Momentum", "R");
    const double t = ScalarAsDouble(ctx.input(1), "Momentum", "T");
    const double beta = t > 0 ? beta_ : 1.0;  // the first step takes the whole gradient
    ForEachGroup(ctx, "Momentum", 3, 2, [&](size_t i, const auto& in, const auto& out) {
      using T = std::remove_reference_t<decltype(*out[0])>;
      const double g = norm_ * static_cast<double>(in[0][i]) + in[1][i];
      const double v = alpha_ * in[2][i] + beta * g;
      const double step = nesterov_ ? g + alpha_ * v : v;
      out[0][i] = static_cast<T>(in[0][i] - r * step);
      out[1][i] = static_cast<T>(v);
    });
  }

 private:
  double alpha_, beta_, norm_;
  bool nesterov_ = false;
};

}  // namespace

void RegisterOptimizerKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("Adagrad", kTrainingDomain).Versions(1).Build<Adagrad>(registry);
  ep::KernelDefBuilder("Adam", kTrainingDomain).Versions(1).Build<Adam>(registry);
  ep::KernelDefBuilder("Momentum", kTrainingDomain).Versions(1).Build<Momentum>(registry);
}

}  // namespace nxrt::cpu::nn
