// MatMul (opsets 1, 9, 13): numpy semantics with batch broadcasting and 1-D operands; and
// com.microsoft FusedMatMul: alpha * op(A) * op(B) with transA/transB on the last two dims (what a
// graph optimiser produces when it folds a Transpose and a scalar Mul/Div into a MatMul).
//
// float32 runs through oneDNN's sgemm. A constant 2-D weight B [K, N] is stored transposed
// ([N, K], converted to float32 for float16/bfloat16) once at construction; the product then is a
// single GEMM over all rows of A with B read as op(B) = B^T. float16/bfloat16 compute in float32;
// double and the integer types use the portable GEMM.
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_core.h"

namespace nxrt::cpu::linalg {
namespace {

class MatMul : public ep::Kernel {
 public:
  explicit MatMul(const ep::KernelInfo& info, bool fused = false) : op_(info.describe()) {
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
      packed_b_ = std::move(bf);
      return;
    }
    packed_b_.resize(bf.size());
    // Transpose in tiles so both sides stay cache-friendly for large weights.
    constexpr int64_t kTile = 32;
    for (int64_t k0 = 0; k0 < k; k0 += kTile)
      for (int64_t n0 = 0; n0 < n; n0 += kTile)
        for (int64_t kk = k0; kk < std::min(k, k0 + kTile); ++kk)
          for (int64_t nn = n0; nn < std::min(n, n0 + kTile); ++nn)
            packed_b_[nn * k + kk] = bf[kk * n + nn];
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
    const bool packed = !packed_b_.empty() && packed_type_ == t && d.foldable && b.rank() == 2 &&
                        b.dim(0) == packed_shape_[0] && b.dim(1) == packed_shape_[1];
    switch (t) {
      case NX_TYPE_FLOAT: {
        OmpThreadScope scope(threads);
        if (packed) {
          BatchedSgemm(d, a.data<float>(), packed_b_.data(), true, alpha_, y.data<float>(),
                       threads);
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
              BatchedSgemm(d, af, packed_b_.data(), true, alpha_, yf, threads);
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
  std::vector<float> packed_b_;  // constant B as [N, K] (logical B transposed), float32
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
