// MatMul (opsets 1, 9, 13): numpy semantics with batch broadcasting and 1-D operands; and
// com.microsoft FusedMatMul: alpha * op(A) * op(B) with transA/transB on the last two dims (what a
// graph optimiser produces when it folds a Transpose and a scalar Mul/Div into a MatMul); and
// com.nxrt FusedMatMul: activation(A * B + bias), float32, what nxrt's graph fusion makes of
// MatMul -> Add(constant per column) [-> Relu/LeakyRelu/Sigmoid/Tanh/Gelu] (graph_fusion.h).
//
// A constant 2-D weight B [K, N] is pre-packed (converted to float32 for float16/bfloat16;
// shared between sessions when the host offers it) and multiplied as one GEMM over all rows of
// A: in panels through nxrt's kernel on AVX2 (panel_gemm.h), in oneDNN's blocked layout through
// its matmul primitive on AVX-512 (matmul_dnnl.h), or transposed ([N, K]) through the primitive
// where neither applies. Other float32 products
// run through oneDNN's sgemm (batched over broadcast batch entries); float16/bfloat16 compute in
// float32; double and the integer types use the portable GEMM.
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/dnnl_eltwise.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_core.h"
#include "kernels/linalg/matmul_dnnl.h"
#include "kernels/linalg/matmul_weights.h"
#include "kernels/linalg/panel_gemm.h"
#include "kernels/linalg/prepacked_weight.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu::linalg {
namespace {

// Which operator a MatMul kernel implements.
enum class MatMulOp { kOnnx, kMicrosoftFused, kNxrtFused };

class MatMul : public ep::PrePackingKernel {
 public:
  explicit MatMul(const ep::KernelInfo& info, MatMulOp kind = MatMulOp::kOnnx)
      : op_(info.describe()), b_(info, 1) {
    if (kind == MatMulOp::kNxrtFused) {
      epilogue_ = true;
      has_bias_ = info.has_input(2);
      if (has_bias_) bias_.emplace(info, 2);
      post_ = ReadFusedActivation(info);
    }
    if (kind == MatMulOp::kMicrosoftFused) {
      alpha_ = info.attr_float("alpha", 1.0f);
      trans_a_ = info.attr_int("transA", 0) != 0;
      trans_b_ = info.attr_int("transB", 0) != 0;
      NXRT_EP_ENFORCE(info.attr_int("transBatchA", 0) == 0 && info.attr_int("transBatchB", 0) == 0,
                      op_ + ": transBatchA/transBatchB are not supported");
    }
    // With a static A the primitive for its row count is built as soon as B is packed, so the
    // first run does not pay for it.
    threads_ = SessionThreads(info);
    audit_ = KernelAudit(info);
    if (auto a = StaticInputShape(info, 0); a && !a->empty() && !trans_a_) {
      prepare_k_ = a->back();
      prepare_rows_ = 1;
      for (size_t i = 0; i + 1 < a->size(); ++i) prepare_rows_ *= (*a)[i];
    }
    // Only a product known to need oneDNN's sgemm generates its kernels ahead: a matrix-vector
    // one (one row of A, or one column of B) never reaches it (gemv.h), one of symbolic size
    // may not, and one through a packed constant weight does not (it folds into one GEMM unless
    // transA). Against a 2-D B the rows of all of A's matrices fold into one product. The
    // generation counts as background work, during which kernels run on one thread: a model
    // of small products ran its first ~30 ms of runs single-threaded for nothing.
    if (const auto a = StaticInputShape(info, 0), b = StaticInputShape(info, 1);
        a && b && a->size() >= 2 && b->size() >= 2 &&
        (trans_a_ || !IsPackableConstantMatrix(info, 1))) {
      int64_t rows = (*a)[a->size() - 2];
      if (b->size() == 2) {
        for (size_t i = 0; i + 2 < a->size(); ++i)
          rows = (*a)[i] < 0 || rows < 0 ? -1 : rows * (*a)[i];
      }
      if (rows > 1 && b->back() > 1) StartSgemmWarmUp();
    }
  }

  // A constant 2-D float/float16/bfloat16 B is packed as float32 in oneDNN's preferred layout
  // when it has one (matmul_weights.h), else as [N, K]: logical B is [K, N]; with transB it is
  // stored [N, K] already and is only converted. With transA the products do not fold into one GEMM
  // and sgemm reads the [N, K] copy, so that stays plain.
  bool PrePack(const ep::ConstTensor& w, size_t input_index, ep::Allocator allocator,
               const ep::PrePackCache& cache) override {
    if (bias_ && input_index == 2 && w.type() == NX_TYPE_FLOAT) {  // the fused bias
      bias_->StoreOrKeep(w, PackFloatBlock(w, allocator, /*transpose=*/false), cache);
      return true;
    }
    if (input_index != 1 || w.rank() != 2 || !IsPackableFloat(w.type()) || w.size() == 0) {
      return false;
    }
    layout_ = MatMulWeightLayout(w.shape_vector(), trans_b_, BlockedAllowed());
    ep::Block block = layout_.blocked  ? PackBlockedWeights(w, trans_b_, layout_, allocator)
                      : layout_.panels ? PackPanelWeights(w, trans_b_, layout_, allocator)
                                       : PackFloatBlock(w, allocator, /*transpose=*/!trans_b_);
    if (b_.StoreOrKeep(w, std::move(block), cache)) UsePackedB();
    return true;
  }

  void UseSharedPrePacked(size_t input_index, std::span<const void* const> buffers,
                          std::span<const size_t> sizes) override {
    if (bias_ && input_index == 2) {
      bias_->Adopt(buffers, sizes, op_);
      return;
    }
    NXRT_EP_ENFORCE(input_index == 1,
                    op_ + ": no packing for input " + std::to_string(input_index));
    b_.Adopt(buffers, sizes, op_, [this](const std::vector<int64_t>& shape) {
      layout_ = MatMulWeightLayout(shape, trans_b_, BlockedAllowed());
      return layout_.Bytes(static_cast<size_t>(ShapeSize(shape)) * sizeof(float));
    });
    UsePackedB();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    const NxElementType t = a.type();
    // A packed B is used on its own: the host may have freed the initializer.
    const bool packed = packed_ != nullptr || panels_ != nullptr;
    ep::ConstTensor b = packed ? ep::ConstTensor() : ctx.input(1);
    const NxElementType bt = packed ? b_.type() : b.type();
    NXRT_EP_ENFORCE(
        bt == t, op_ + ": A is " + ep::ElementTypeName(t) + " but B is " + ep::ElementTypeName(bt));
    if (epilogue_) {
      NXRT_EP_ENFORCE(t == NX_TYPE_FLOAT,
                      op_ + ": only float is supported, A is " + ep::ElementTypeName(t));
    }
    CheckIntegerAlpha(t);
    MatMulDims d = packed ? ComputeMatMulDims(a.shape(), b_.shape(), op_, trans_a_, trans_b_)
                          : ComputeMatMulDims(a.shape(), b.shape(), op_, trans_a_, trans_b_);
    ep::Tensor y = ctx.output(0, d.out_dims, t);
    const size_t y_count = static_cast<size_t>(ShapeSize(d.out_dims));
    if (y_count == 0) return;
    const int threads = ctx.threads();
    const float* bias = epilogue_ && has_bias_ ? Bias(ctx, d.out_dims.back()) : nullptr;
    // The primitive applies when the product folds into one GEMM (always with a 2-D B unless
    // FusedMatMul transposes A); otherwise sgemm reads the packed [N, K] copy as a transposed B.
    auto run_float = [&](const float* af, const float* bf, float* yf) {
      if (packed && d.foldable) {  // with the fused epilogue
        if (panels_)
          panels_->Run(af, d.batch * d.m, yf, threads, bias);
        else
          packed_->Run(af, d.batch * d.m, yf, threads, bias);
        return;
      }
      if (packed) {
        // Only transA stops a 2-D B from folding, and that keeps B plain (PrePack).
        NXRT_EP_ENFORCE(!layout_.blocked && !layout_.panels,
                        op_ + ": a packed B in a product that does not fold");
        BatchedSgemm(d, af, b_.data(), /*trans_b=*/true, alpha_, yf, threads);
      } else {
        BatchedSgemm(d, af, bf, d.trans_b, alpha_, yf, threads);
      }
      if (epilogue_)
        ApplyEpilogue(yf, static_cast<int64_t>(y_count), d.out_dims.back(), bias, threads);
    };
    switch (t) {
      case NX_TYPE_FLOAT: {
        OmpThreadScope scope(threads);
        run_float(a.data<float>(), packed ? nullptr : b.data<float>(), y.data<float>());
        return;
      }
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            OmpThreadScope scope(threads);
            const float* af = ToFloatScratch(a.data<T>(), a.size(), kScratchA);
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
            const float* bf = packed ? nullptr : ToFloatScratch(b.data<T>(), b.size(), kScratchB);
            run_float(af, bf, yf);
            FromFloat(yf, y_count, y.data<T>());
          }
        });
        return;
      // Not packed (PrePack declines these types), so B is an input.
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
  // The fused bias: the packed copy, or the input (N floats, any shape).
  const float* Bias(ep::KernelContext& ctx, int64_t n) const {
    if (bias_->packed()) {
      NXRT_EP_ENFORCE(static_cast<int64_t>(bias_->size()) == n,
                      op_ + ": bias has " + std::to_string(bias_->size()) + " values for " +
                          std::to_string(n) + " columns");
      return bias_->data();
    }
    ep::ConstTensor b = ctx.input(2);
    NXRT_EP_ENFORCE(b.type() == NX_TYPE_FLOAT && static_cast<int64_t>(b.size()) == n,
                    op_ + ": bias must be " + std::to_string(n) + " floats, got " +
                        ep::ElementTypeName(b.type()) + " " + ShapeToString(b.shape()));
    return b.data<float>();
  }

  // Bias per column and activations over y (count values, rows of n), outside the primitive.
  void ApplyEpilogue(float* y, int64_t count, int64_t n, const float* bias, int threads) const {
    if (bias != nullptr && n > 0) {
      ParallelFor(threads, count / n, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < n; ++j) y[r * n + j] += bias[j];
      });
    }
    ApplyEltwise(post_, y, count, threads);
  }

  // Integer products ignore alpha (FusedMatMul is a float op); checked once here.
  void CheckIntegerAlpha(NxElementType t) const {
    NXRT_EP_ENFORCE(alpha_ == 1.0f || t == NX_TYPE_FLOAT || t == NX_TYPE_DOUBLE ||
                        t == NX_TYPE_FLOAT16 || t == NX_TYPE_BFLOAT16,
                    op_ + ": alpha is only supported for floating-point types");
  }

 private:
  // oneDNN's blocked layout unless transA (the products do not fold into one GEMM; sgemm reads
  // the plain copy) or A has one static row (matmul_weights.h).
  bool BlockedAllowed() const {
    return !trans_a_ && !(prepare_rows_ > 0 && prepare_rows_ <= kPlainWeightMaxRows);
  }

  // B is packed (owned or shared): multiply through the primitive from now on.
  void UsePackedB() {
    const auto& s = b_.shape();
    const int64_t k = trans_b_ ? s[1] : s[0], n = trans_b_ ? s[0] : s[1];
    if (layout_.panels) {
      panels_ = std::make_unique<PanelMatMul>(b_.data(), k, n, alpha_, post_);
      return;
    }
    const dnnl::memory::desc plain_nk({k, n}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::ba);
    packed_ = std::make_unique<DnnlPackedMatMul>(b_.data(), layout_.blocked ? layout_.md : plain_nk,
                                                 k, n, alpha_, has_bias_, post_);
    packed_->SetAudit(audit_);
    if (threads_ > 0 && prepare_rows_ > 0 && prepare_k_ == k)
      packed_->Prepare(prepare_rows_, threads_);
  }

  std::string op_;
  float alpha_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  int threads_ = 0;
  int64_t prepare_rows_ = 0, prepare_k_ = -1;  // from a static A shape
  PackedFloatWeight b_;  // constant 2-D B, float32, in layout_ when blocked, else [N, K]
  std::optional<PackedFloatWeight> bias_;     // com.nxrt FusedMatMul's bias, when it has one
  bool epilogue_ = false, has_bias_ = false;  // com.nxrt FusedMatMul
  std::vector<DnnlEltwise> post_;
  MatMulWeightLayout layout_;
  AuditTarget audit_;
  std::unique_ptr<DnnlPackedMatMul> packed_;  // over b_ once it is packed (plain or blocked)
  std::unique_ptr<PanelMatMul> panels_;       // over b_ once it is packed (panels)
};

class FusedMatMul : public MatMul {
 public:
  explicit FusedMatMul(const ep::KernelInfo& info) : MatMul(info, MatMulOp::kMicrosoftFused) {}
};

class MatMulBiasActivation : public MatMul {
 public:
  explicit MatMulBiasActivation(const ep::KernelInfo& info) : MatMul(info, MatMulOp::kNxrtFused) {}
};

}  // namespace

void RegisterMatMulKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("MatMul").Versions(1).Build<MatMul>(r);
  ep::KernelDefBuilder("FusedMatMul", "com.microsoft").Versions(1).Build<FusedMatMul>(r);
  ep::KernelDefBuilder("FusedMatMul", "com.nxrt").Versions(1).Build<MatMulBiasActivation>(r);
}

}  // namespace nxrt::cpu::linalg
