// Activation functions: Sigmoid, Tanh, Relu, LeakyRelu, Elu, Selu, Celu, HardSigmoid,
// HardSwish, Softplus, Softsign, ThresholdedRelu, Mish, Gelu, Swish, Shrink.
#include <immintrin.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/unary_kernel.h"
#include "kernels/elementwise/vec_math.h"

namespace nxrt::cpu::elementwise {
namespace {

struct SigmoidOp {
  explicit SigmoidOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return C(1) / (C(1) + std::exp(-x));
  }
  void Array(const float* x, float* y, int64_t n) const { SigmoidArray(x, y, n); }
};

struct TanhOp {
  explicit TanhOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return std::tanh(x);
  }
  void Array(const float* x, float* y, int64_t n) const { TanhArray(x, y, n); }
};

struct ReluOp {
  explicit ReluOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kSignedNumeric;
  // `x < 0 ? 0 : x` keeps NaN (like numpy's maximum) and vectorises to a compare + blend.
  template <class C>
  C operator()(C x) const {
    return x < C(0) ? C(0) : x;
  }
};

struct LeakyReluOp {
  explicit LeakyReluOp(const ep::KernelInfo& info) : alpha(info.attr_float("alpha", 0.01f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  template <class C>
  C operator()(C x) const {
    return x < C(0) ? C(alpha) * x : x;
  }
};

struct EluOp {
  explicit EluOp(const ep::KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  template <class C>
  C operator()(C x) const {
    return x < C(0) ? C(alpha) * std::expm1(x) : x;
  }
};

struct SeluOp {
  explicit SeluOp(const ep::KernelInfo& info)
      : alpha(info.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(info.attr_float("gamma", 1.05070102214813232421875f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha, gamma;
  template <class C>
  C operator()(C x) const {
    return x <= C(0) ? C(gamma) * C(alpha) * std::expm1(x) : C(gamma) * x;
  }
};

struct CeluOp {
  explicit CeluOp(const ep::KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {
    NXRT_EP_ENFORCE(alpha != 0.0f, info.describe() + ": alpha must not be 0");
  }
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  template <class C>
  C operator()(C x) const {
    return x > C(0) ? x : C(alpha) * std::expm1(x / C(alpha));
  }
};

// y = x * min(1, max(0, alpha x + beta)) over float arrays (HardSigmoid alone when not
// `times_x`), eight at a time: the scalar selects compiled to compare-and-branch, which
// mispredicted on real activations (a PaddleOCR detector HardSwish of 3.7 M floats: 1.3 ms).
// max_ps / min_ps return their second operand for a NaN x, so NaN passes as in the scalar form.
void HardSigmoidArray(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x) {
  const __m256 a = _mm256_set1_ps(alpha), b = _mm256_set1_ps(beta);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 t = _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(a, v, b)));
    _mm256_storeu_ps(y + i, times_x ? _mm256_mul_ps(v, t) : t);
  }
  for (; i < n; ++i) {
    float t = alpha * x[i] + beta;
    t = t < 0.0f ? 0.0f : t;
    t = t > 1.0f ? 1.0f : t;
    y[i] = times_x ? x[i] * t : t;
  }
}

struct HardSigmoidOp {
  explicit HardSigmoidOp(const ep::KernelInfo& info)
      : alpha(info.attr_float("alpha", 0.2f)), beta(info.attr_float("beta", 0.5f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha, beta;
  template <class C>
  C operator()(C x) const {
    C v = C(alpha) * x + C(beta);
    v = v < C(0) ? C(0) : v;
    return v > C(1) ? C(1) : v;
  }
  void Array(const float* x, float* y, int64_t n) const {
    HardSigmoidArray(x, y, n, alpha, beta, /*times_x=*/false);
  }
};

struct HardSwishOp {
  explicit HardSwishOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    C v = x * C(1.0 / 6.0) + C(0.5);
    v = v < C(0) ? C(0) : v;
    v = v > C(1) ? C(1) : v;
    return x * v;
  }
  void Array(const float* x, float* y, int64_t n) const {
    HardSigmoidArray(x, y, n, 1.0f / 6.0f, 0.5f, /*times_x=*/true);
  }
};

// log(1 + exp(x)) without overflow for large x and without losing small results.
struct SoftplusOp {
  explicit SoftplusOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct SoftsignOp {
  explicit SoftsignOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    return x / (C(1) + std::fabs(x));
  }
};

struct ThresholdedReluOp {
  explicit ThresholdedReluOp(const ep::KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  template <class C>
  C operator()(C x) const {
    return x > C(alpha) ? x : C(0);
  }
};

struct MishOp {
  explicit MishOp(const ep::KernelInfo&) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  template <class C>
  C operator()(C x) const {
    C sp = x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    return x * std::tanh(sp);
  }
  void Array(const float* x, float* y, int64_t n) const { MishArray(x, y, n); }
};

struct GeluOp {
  explicit GeluOp(const ep::KernelInfo& info) {
    std::string approx = info.attr_string("approximate", "none");
    NXRT_EP_ENFORCE(
        approx == "none" || approx == "tanh",
        info.describe() + ": approximate must be 'none' or 'tanh', got '" + approx + "'");
    use_tanh = approx == "tanh";
  }
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  bool use_tanh = false;
  template <class C>
  C operator()(C x) const {
    if (use_tanh) {
      C u = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
      return x / (C(1) + std::exp(-(u + u)));  // 0.5 (1 + tanh u) == sigmoid(2u)
    }
    return C(0.5) * x * std::erfc(-x * C(0.70710678118654752));
  }
  void Array(const float* x, float* y, int64_t n) const {
    if (use_tanh) {
      GeluTanhArray(x, y, n);
    } else {
      GeluArray(x, y, n);
    }
  }
};

struct SwishOp {
  explicit SwishOp(const ep::KernelInfo& info) : alpha(info.attr_float("alpha", 1.0f)) {}
  static constexpr TypeSet kTypes = TypeSet::kFloat;
  float alpha;
  template <class C>
  C operator()(C x) const {
    return x / (C(1) + std::exp(-C(alpha) * x));
  }
  void Array(const float* x, float* y, int64_t n) const { SwishArray(x, y, n, alpha); }
};

struct ShrinkOp {
  explicit ShrinkOp(const ep::KernelInfo& info)
      : bias(info.attr_float("bias", 0.0f)), lambd(info.attr_float("lambd", 0.5f)) {}
  static constexpr TypeSet kTypes = TypeSet::kNumeric;
  float bias, lambd;
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      double v = static_cast<double>(x);
      if (v < -lambd) return static_cast<C>(v + bias);
      if (v > lambd) return static_cast<C>(v - bias);
      return C(0);
    } else {
      if (x < C(-lambd)) return x + C(bias);
      if (x > C(lambd)) return x - C(bias);
      return C(0);
    }
  }
};

// SwiGLU (opset 28): Y = Swish_alpha(A) * B, A and B of one shape (no broadcasting). Float runs
// the vectorized Swish into Y in parallel chunks and multiplies by B there; the other float
// types compute per element in float.
class SwiGlu : public ep::Kernel {
 public:
  explicit SwiGlu(const ep::KernelInfo& info) : alpha_(info.attr_float("alpha", 1.0f)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0), b = ctx.input(1);
    NXRT_EP_ENFORCE(a.type() == b.type(), "SwiGLU: A and B must have one element type");
    NXRT_EP_ENFORCE(a.shape_vector() == b.shape_vector(),
                    "SwiGLU: A and B must have the same shape (no broadcasting)");
    ep::Tensor y = ctx.output(0, a.shape(), a.type());
    const int64_t n = static_cast<int64_t>(a.size());
    if (a.type() == NX_TYPE_FLOAT) {
      const float* pa = a.data<float>();
      const float* pb = b.data<float>();
      float* py = y.data<float>();
      ParallelFor(ThreadsFor(ctx.threads(), n), n, kGrain, [&](int64_t begin, int64_t end) {
        SwishArray(pa + begin, py + begin, end - begin, alpha_);
        for (int64_t i = begin; i < end; ++i) py[i] *= pb[i];
      });
      return;
    }
    DispatchSet<TypeSet::kFloat>(a.type(), "SwiGLU", [&]<class C>() {
      const C* pa = a.data<C>();
      const C* pb = b.data<C>();
      C* py = y.data<C>();
      for (int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(static_cast<float>(pa[i]));
        const double swish = x / (1.0 + std::exp(-static_cast<double>(alpha_) * x));
        py[i] = static_cast<C>(static_cast<float>(swish * static_cast<float>(pb[i])));
      }
    });
  }

 private:
  float alpha_;
};

}  // namespace

void RegisterActivationKernels(NxKernelRegistry* r) {
  RegisterUnary<SigmoidOp>(r, "Sigmoid", 1);
  RegisterUnary<TanhOp>(r, "Tanh", 1);
  RegisterUnary<ReluOp>(r, "Relu", 1);
  RegisterUnary<LeakyReluOp>(r, "LeakyRelu", 1);
  RegisterUnary<EluOp>(r, "Elu", 1);
  RegisterUnary<SeluOp>(r, "Selu", 1);
  RegisterUnary<CeluOp>(r, "Celu", 12);
  RegisterUnary<HardSigmoidOp>(r, "HardSigmoid", 1);
  RegisterUnary<HardSwishOp>(r, "HardSwish", 14);
  RegisterUnary<SoftplusOp>(r, "Softplus", 1);
  RegisterUnary<SoftsignOp>(r, "Softsign", 1);
  RegisterUnary<ThresholdedReluOp>(r, "ThresholdedRelu", 10);
  RegisterUnary<MishOp>(r, "Mish", 18);
  RegisterUnary<GeluOp>(r, "Gelu", 20);
  // The host's graph fusion turns the erf-based GELU pattern of older opsets into this.
  RegisterUnary<GeluOp>(r, "Gelu", 1, "com.nxrt");
  // onnxruntime's optimiser writes the same fusion as com.microsoft Gelu into the models it saves.
  RegisterUnary<GeluOp>(r, "Gelu", 1, "com.microsoft");
  RegisterUnary<SwishOp>(r, "Swish", 24);
  RegisterUnary<ShrinkOp>(r, "Shrink", 9);
  RegisterSameType<SwiGlu>(r, "SwiGLU", 28, TypesOf(TypeSet::kFloat));
}

}  // namespace nxrt::cpu::elementwise
