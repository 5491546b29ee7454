// MatMul (opsets 1, 9, 13): numpy semantics with batch broadcasting and 1-D operands; and
// com.microsoft FusedMatMul: alpha * op(A) * op(B) with transA/transB on the last two dims (what a
// graph optimiser produces when it folds a Transpose and a scalar Mul/Div into a MatMul).
//
// A constant 2-D weight B [K, N] is stored transposed ([N, K], converted to float32 for
// float16/bfloat16) once at construction and multiplied through oneDNN's matmul primitive
// (matmul_dnnl.h) as one GEMM over all rows of A. Other float32 products run through oneDNN's
// sgemm (batched over broadcast batch entries); float16/bfloat16 compute in float32; double and
// the integer types use the portable GEMM.
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_core.h"
#include "kernels/linalg/matmul_dnnl.h"

namespace nxrt::cpu::linalg {
namespace {

class MatMul : public ep::Kernel {
 public:
  explicit MatMul(const ep::KernelInfo& info, bool fused = false) : op_(info.describe()) {
    WarmUpSgemm();
    if (fused) {
      alpha_ = info.attr_float("alpha", 1.0f);
      trans_a_ = info.attr_int("transA", 0) != 0;
      trans_b_ = info.attr_int("transB", 0) != 0;
      NXRT_EP_ENFORCE(info.attr_int("transBatchA", 0) == 0 && info.attr_int("transBatchB", 0) == 0,
                      op_ + ": transBatchA/transBatchB are not supported");
    }
    auto b = info.constant_input(1);
    if (!b || b->rank() != 2) return;
    const NxElementType t = b->type();
    if (t != NX_TYPE_FLOAT && t != NX_TYPE_FLOAT16 && t != NX_TYPE_BFLOAT16) return;
    // Logical B is [K, N]; with transB it is stored [N, K] already.
    const int64_t k = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
    std::vector<float> bf(static_cast<size_t>(k * n));
    DispatchFloat(t, [&]<class T>() {
      if constexpr (!std::is_same_v<T, double>) ToFloat(b->data<T>(), bf.size(), bf.data());
    });
    packed_type_ = t;
    packed_shape_ = b->shape_vector();
    if (trans_b_) {
      packed_ = std::make_unique<DnnlPackedMatMul>(std::move(bf), k, n, alpha_);
      Prepare(info);
      return;
    }
    std::vector<float> w_nk(bf.size());
    // Transpose in tiles so both sides stay cache-friendly for large weights.
    constexpr int64_t kTile = 32;
    for (int64_t k0 = 0; k0 < k; k0 += kTile)
      for (int64_t n0 = 0; n0 < n; n0 += kTile)
        for (int64_t kk = k0; kk < std::min(k, k0 + kTile); ++kk)
          for (int64_t nn = n0; nn < std::min(n, n0 + kTile); ++nn)
            w_nk[nn * k + kk] = bf[kk * n + nn];
    packed_ = std::make_unique<DnnlPackedMatMul>(std::move(w_nk), k, n, alpha_);
    Prepare(info);
  }

  // Builds the primitive for a static A shape now, so the first run does not pay for it.
  void Prepare(const ep::KernelInfo& info) {
    const int threads = SessionThreads(info);
    auto a = StaticInputShape(info, 0);
    if (threads <= 0 || !a || a->empty() || trans_a_ || a->back() != packed_->k()) return;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < a->size(); ++i) rows *= (*a)[i];
    packed_->Prepare(rows, threads);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    ep::ConstTensor b = ctx.input(1);
    const NxElementType t = a.type();
    NXRT_EP_ENFORCE(b.type() == t, op_ + ": A is " + ep::ElementTypeName(t) + " but B is " +
                                       ep::ElementTypeName(b.type()));
    CheckIntegerAlpha(t);
    MatMulDims d = ComputeMatMulDims(a.shape(), b.shape(), op_, trans_a_, trans_b_);
    ep::Tensor y = ctx.output(0, d.out_dims, t);
    const size_t y_count = static_cast<size_t>(ShapeSize(d.out_dims));
    if (y_count == 0) return;
    const int threads = ctx.threads();
    // The packed weight applies when B is the constant it was made from (always, unless the
    // host hands a different tensor) and the product folds into one GEMM.
    const bool packed =
        packed_ && packed_type_ == t && d.foldable && b.shape_vector() == packed_shape_;
    switch (t) {
      case NX_TYPE_FLOAT: {
        OmpThreadScope scope(threads);
        if (packed) {
          packed_->Run(a.data<float>(), d.batch * d.m, y.data<float>(), threads);
        } else {
          BatchedSgemm(d, a.data<float>(), b.data<float>(), d.trans_b, alpha_, y.data<float>(),
                       threads);
        }
        return;
      }
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            OmpThreadScope scope(threads);
            const float* af = ToFloatScratch(a.data<T>(), a.size(), kScratchA);
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
            if (packed) {
              packed_->Run(af, d.batch * d.m, yf, threads);
            } else {
              const float* bf = ToFloatScratch(b.data<T>(), b.size(), kScratchB);
              BatchedSgemm(d, af, bf, d.trans_b, alpha_, yf, threads);
            }
            FromFloat(yf, y_count, y.data<T>());
          }
        });
        return;
      case NX_TYPE_DOUBLE:
        BatchedGemmRef<double>(d, a.data<double>(), b.data<double>(), y.data<double>(), threads);
        if (alpha_ != 1.0f) {
          double* yd = y.data<double>();
          for (size_t i = 0; i < y_count; ++i) yd[i] *= alpha_;
        }
        return;
      case NX_TYPE_INT32:
        BatchedGemmRef<int32_t>(d, a.data<int32_t>(), b.data<int32_t>(), y.data<int32_t>(),
                                threads);
        return;
      case NX_TYPE_INT64:
        BatchedGemmRef<int64_t>(d, a.data<int64_t>(), b.data<int64_t>(), y.data<int64_t>(),
                                threads);
        return;
      case NX_TYPE_UINT32:
        BatchedGemmRef<uint32_t>(d, a.data<uint32_t>(), b.data<uint32_t>(), y.data<uint32_t>(),
                                 threads);
        return;
      case NX_TYPE_UINT64:
        BatchedGemmRef<uint64_t>(d, a.data<uint64_t>(), b.data<uint64_t>(), y.data<uint64_t>(),
                                 threads);
        return;
      default:
        UnsupportedType(op_.c_str(), t);
    }
  }

 protected:
  // Integer products ignore alpha (FusedMatMul is a float op); checked once here.
  void CheckIntegerAlpha(NxElementType t) const {
    NXRT_EP_ENFORCE(alpha_ == 1.0f || t == NX_TYPE_FLOAT || t == NX_TYPE_DOUBLE ||
                        t == NX_TYPE_FLOAT16 || t == NX_TYPE_BFLOAT16,
                    op_ + ": alpha is only supported for floating-point types");
  }

 private:
  std::string op_;
  float alpha_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  std::unique_ptr<DnnlPackedMatMul> packed_;  // constant 2-D B, float32, kept as [N, K]
  NxElementType packed_type_ = NX_TYPE_UNDEFINED;
  std::vector<int64_t> packed_shape_;
};

class FusedMatMul : public MatMul {
 public:
  explicit FusedMatMul(const ep::KernelInfo& info) : MatMul(info, true) {}
};

}  // namespace

void RegisterMatMulKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("MatMul").Versions(1).Build<MatMul>(r);
  ep::KernelDefBuilder("FusedMatMul", "com.microsoft").Versions(1).Build<FusedMatMul>(r);
}

}  // namespace nxrt::cpu::linalg
