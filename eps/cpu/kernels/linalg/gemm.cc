// Gemm (opsets 1 to 13): Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
//
// float32 runs through oneDNN's sgemm with C pre-broadcast into Y (so sgemm's beta applies it);
// a constant B is converted to float32 once for float16/bfloat16. Other types use the portable
// GEMM followed by the alpha/beta epilogue.
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/gemm_ref.h"
#include "kernels/linalg/linalg_kernels.h"

namespace nxrt::cpu::linalg {
namespace {

class Gemm : public ep::Kernel {
 public:
  explicit Gemm(const ep::KernelInfo& info)
      : op_(info.describe()),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        alpha_(info.attr_float("alpha", 1.0f)),
        beta_(info.attr_float("beta", 1.0f)) {
    WarmUpSgemm();
    // float16/bfloat16 weights are converted once; float32 weights are used in place.
    auto b = info.constant_input(1);
    if (b && b->rank() == 2 && (b->type() == NX_TYPE_FLOAT16 || b->type() == NX_TYPE_BFLOAT16)) {
      const_b_.resize(b->size());
      DispatchFloat(b->type(), [&]<class T>() {
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          ToFloat(b->data<T>(), b->size(), const_b_.data());
        }
      });
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    ep::ConstTensor b = ctx.input(1);
    std::optional<ep::ConstTensor> c = ctx.optional_input(2);
    const NxElementType t = a.type();
    NXRT_EP_ENFORCE(a.rank() == 2 && b.rank() == 2, op_ + ": A and B must be 2-D, got " +
                                                        ShapeToString(a.shape()) + " and " +
                                                        ShapeToString(b.shape()));
    NXRT_EP_ENFORCE(b.type() == t, op_ + ": A and B element types differ");
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0);
    const int64_t n = trans_b_ ? b.dim(0) : b.dim(1);
    NXRT_EP_ENFORCE(k == kb, op_ + ": inner dimensions do not match: A " +
                                 ShapeToString(a.shape()) + (trans_a_ ? "^T" : "") + " x B " +
                                 ShapeToString(b.shape()) + (trans_b_ ? "^T" : ""));
    const std::vector<int64_t> y_dims = {m, n};
    int64_t c_rs = 0, c_cs = 0;
    const bool use_c = c.has_value() && beta_ != 0.0f;
    if (c) {
      NXRT_EP_ENFORCE(c->type() == t, op_ + ": C element type differs from A");
      std::vector<int64_t> bs = BroadcastShapes(c->shape(), y_dims);
      NXRT_EP_ENFORCE(bs == y_dims, op_ + ": C " + ShapeToString(c->shape()) +
                                        " cannot be broadcast to " + ShapeToString(y_dims));
      std::vector<int64_t> strides = BroadcastStrides(c->shape(), y_dims);
      c_rs = strides[0];
      c_cs = strides[1];
    }
    ep::Tensor y = ctx.output(0, y_dims, t);
    if (m == 0 || n == 0) return;
    const int threads = ctx.threads();

    auto run_float = [&](const float* af, const float* bf, const auto* cv, float* yf) {
      if (use_c) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            yf[i * n + j] = static_cast<float>(cv[i * c_rs + j * c_cs]);
      }
      OmpThreadScope scope(threads);
      Sgemm(trans_a_, trans_b_, m, n, k, alpha_, af, a.dim(1), bf, b.dim(1), use_c ? beta_ : 0.0f,
            yf, n);
    };

    switch (t) {
      case NX_TYPE_FLOAT:
        run_float(a.data<float>(), b.data<float>(), use_c ? c->data<float>() : nullptr,
                  y.data<float>());
        return;
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            const float* af = ToFloatScratch(a.data<T>(), a.size(), kScratchA);
            const float* bf = const_b_.size() == b.size()
                                  ? const_b_.data()
                                  : ToFloatScratch(b.data<T>(), b.size(), kScratchB);
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, m * n * sizeof(float)));
            run_float(af, bf, use_c ? c->data<T>() : nullptr, yf);
            FromFloat(yf, static_cast<size_t>(m * n), y.data<T>());
          }
        });
        return;
      case NX_TYPE_DOUBLE:
        RunRef<double>(a, b, c, use_c, c_rs, c_cs, y, m, n, k, threads);
        return;
      case NX_TYPE_INT32:
        RunRef<int32_t>(a, b, c, use_c, c_rs, c_cs, y, m, n, k, threads);
        return;
      case NX_TYPE_INT64:
        RunRef<int64_t>(a, b, c, use_c, c_rs, c_cs, y, m, n, k, threads);
        return;
      case NX_TYPE_UINT32:
        RunRef<uint32_t>(a, b, c, use_c, c_rs, c_cs, y, m, n, k, threads);
        return;
      case NX_TYPE_UINT64:
        RunRef<uint64_t>(a, b, c, use_c, c_rs, c_cs, y, m, n, k, threads);
        return;
      default:
        UnsupportedType(op_.c_str(), t);
    }
  }

 private:
  template <class T>
  void RunRef(const ep::ConstTensor& a, const ep::ConstTensor& b,
              const std::optional<ep::ConstTensor>& c, bool use_c, int64_t c_rs, int64_t c_cs,
              ep::Tensor& y, int64_t m, int64_t n, int64_t k, int threads) {
    MatView<T> av = trans_a_ ? MatView<T>{a.data<T>(), 1, m} : MatView<T>{a.data<T>(), k, 1};
    MatView<T> bv = trans_b_ ? MatView<T>{b.data<T>(), 1, k} : MatView<T>{b.data<T>(), n, 1};
    T* yd = y.data<T>();
    GemmRef<T>(m, n, k, av, bv, yd, n, false, threads);
    const T* cd = use_c ? c->data<T>() : nullptr;
    if (alpha_ == 1.0f && (!use_c || beta_ == 1.0f)) {
      if (!use_c) return;
      using A = WrapArith<T>;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          yd[i * n + j] = T(A(yd[i * n + j]) + A(cd[i * c_rs + j * c_cs]));
      return;
    }
    // Scaled epilogue in double, as the attributes are floats.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double v = static_cast<double>(alpha_) * static_cast<double>(yd[i * n + j]);
        if (use_c) v += static_cast<double>(beta_) * static_cast<double>(cd[i * c_rs + j * c_cs]);
        yd[i * n + j] = static_cast<T>(v);
      }
  }

  std::string op_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  std::vector<float> const_b_;  // constant float16/bfloat16 B as float32
};

}  // namespace

void RegisterGemmKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Gemm").Versions(1).Build<Gemm>(r);
}

}  // namespace nxrt::cpu::linalg
