// Gemm (opsets 1 to 13): Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
//
// float32 runs through oneDNN's sgemm with C pre-broadcast into Y (so sgemm's beta applies it).
// A constant float/float16/bfloat16 B is pre-packed as float32 (shared between sessions when the
// host offers it): in nxrt's panels on AVX2 (panel_gemm.h) or oneDNN's blocked layout on AVX-512
// (matmul_weights.h) unless A is transposed or has one static row; otherwise in its own layout
// for sgemm, which has none it is consistently faster on (measured on [1, 2048] x [2048, 1000]:
// a tie; on 16 rows transB=1 was ~35% slower, on BERT shapes each layout won one).
// Other types use the portable GEMM followed by the alpha/beta epilogue.
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <type_traits>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/gemm_ref.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_dnnl.h"
#include "kernels/linalg/matmul_weights.h"
#include "kernels/linalg/panel_gemm.h"
#include "kernels/linalg/prepacked_weight.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu::linalg {
namespace {

class Gemm : public ep::PrePackingKernel {
 public:
  explicit Gemm(const ep::KernelInfo& info)
      : op_(info.describe()),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        alpha_(info.attr_float("alpha", 1.0f)),
        beta_(info.attr_float("beta", 1.0f)),
        b_(info, 1),
        audit_(KernelAudit(info)) {
    if (auto a = StaticInputShape(info, 0); a && a->size() == 2)
      static_rows_ = (*a)[trans_a_ ? 1 : 0];
    int64_t static_cols = -1;
    if (auto b = StaticInputShape(info, 1); b && b->size() == 2)
      static_cols = (*b)[trans_b_ ? 0 : 1];
    // Only a product known to need oneDNN's sgemm generates its kernels ahead: a matrix-vector
    // one (a batch-1 classifier) never reaches it (gemv.h), one of symbolic size may not, and
    // one through a packed constant weight (unless transA) does not.
    if (static_rows_ > 1 && static_cols > 1 && (trans_a_ || !IsPackableConstantMatrix(info, 1)))
      StartSgemmWarmUp();
  }

  // A constant 2-D float/float16/bfloat16 B is packed in oneDNN's preferred matmul layout when it
  // has one and A is not transposed (matmul_weights.h: sgemm re-packed B on every call, 113 us
  // for a 64 x 256 x 256 product against onnxruntime's 84); otherwise it becomes a float32 copy
  // in the same layout, for sgemm.
  bool PrePack(const ep::ConstTensor& w, size_t input_index, ep::Allocator allocator,
               const ep::PrePackCache& cache) override {
    if (input_index != 1 || w.rank() != 2 || !IsPackableFloat(w.type()) || w.size() == 0) {
      return false;
    }
    layout_ = MatMulWeightLayout(w.shape_vector(), trans_b_, BlockedAllowed());
    ep::Block block = layout_.blocked  ? PackBlockedWeights(w, trans_b_, layout_, allocator)
                      : layout_.panels ? PackPanelWeights(w, trans_b_, layout_, allocator)
                                       : PackFloatBlock(w, allocator, /*transpose=*/false);
    if (b_.StoreOrKeep(w, std::move(block), cache)) UsePackedB();
    return true;
  }

  void UseSharedPrePacked(size_t input_index, std::span<const void* const> buffers,
                          std::span<const size_t> sizes) override {
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
    // A packed B is used on its own: the host may have freed the initializer.
    const bool packed = b_.packed();
    ep::ConstTensor b = packed ? ep::ConstTensor() : ctx.input(1);
    std::optional<ep::ConstTensor> c = ctx.optional_input(2);
    const NxElementType t = a.type();
    std::span<const int64_t> b_shape = packed ? std::span<const int64_t>(b_.shape()) : b.shape();
    NXRT_EP_ENFORCE(a.rank() == 2 && b_shape.size() == 2, op_ + ": A and B must be 2-D, got " +
                                                              ShapeToString(a.shape()) + " and " +
                                                              ShapeToString(b_shape));
    NXRT_EP_ENFORCE((packed ? b_.type() : b.type()) == t, op_ + ": A and B element types differ");
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b_shape[1] : b_shape[0];
    const int64_t n = trans_b_ ? b_shape[0] : b_shape[1];
    NXRT_EP_ENFORCE(k == kb, op_ + ": inner dimensions do not match: A " +
                                 ShapeToString(a.shape()) + (trans_a_ ? "^T" : "") + " x B " +
                                 ShapeToString(b_shape) + (trans_b_ ? "^T" : ""));
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
      if (matmul_ || panels_) {  // y = alpha A B through the packed B, then + beta C
        // A float C of one row with beta 1 (a Linear layer's bias) is added by the panels.
        const float* bias = nullptr;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*cv)>, float>) {
          if (panels_ && use_c && c_rs == 0 && c_cs == 1 && beta_ == 1.0f) bias = cv;
        }
        if (panels_) {
          panels_->Run(af, m, yf, threads, bias);
        } else {
          OmpThreadScope scope(threads);
          matmul_->Run(af, m, yf, threads);
        }
        if (!use_c || bias != nullptr) return;
        for (int64_t i = 0; i < m; ++i) {
          float* row = yf + i * n;
          const auto* c_row = cv + i * c_rs;
          if (c_cs == 1) {
            for (int64_t j = 0; j < n; ++j) row[j] += beta_ * static_cast<float>(c_row[j]);
          } else {
            for (int64_t j = 0; j < n; ++j) row[j] += beta_ * static_cast<float>(c_row[j * c_cs]);
          }
        }
        return;
      }
      if (use_c) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            yf[i * n + j] = static_cast<float>(cv[i * c_rs + j * c_cs]);
      }
      OmpThreadScope scope(threads);
      Sgemm(trans_a_, trans_b_, m, n, k, alpha_, af, a.dim(1), bf, b_shape[1], use_c ? beta_ : 0.0f,
            yf, n);
    };

    switch (t) {
      case NX_TYPE_FLOAT:
        run_float(a.data<float>(), packed ? b_.data() : b.data<float>(),
                  use_c ? c->data<float>() : nullptr, y.data<float>());
        return;
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            const float* af = ToFloatScratch(a.data<T>(), a.size(), kScratchA);
            const float* bf = packed ? b_.data() : ToFloatScratch(b.data<T>(), b.size(), kScratchB);
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, m * n * sizeof(float)));
            run_float(af, bf, use_c ? c->data<T>() : nullptr, yf);
            FromFloat(yf, static_cast<size_t>(m * n), y.data<T>());
          }
        });
        return;
      // Not packed (PrePack declines these types), so B is an input.
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

  // oneDNN's blocked layout unless transA (sgemm reads the plain copy) or A has one static row
  // (matmul_weights.h).
  bool BlockedAllowed() const {
    return !trans_a_ && !(static_rows_ > 0 && static_rows_ <= kPlainWeightMaxRows);
  }

  // B is packed in panels or a blocked layout (owned or shared): multiply through them.
  void UsePackedB() {
    if (layout_.panels) {
      panels_ = std::make_unique<PanelMatMul>(b_.data(), layout_.k, layout_.n, alpha_);
      return;
    }
    if (!layout_.blocked) return;
    matmul_ =
        std::make_unique<DnnlPackedMatMul>(b_.data(), layout_.md, layout_.k, layout_.n, alpha_);
    matmul_->SetAudit(audit_);
  }

  std::string op_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  PackedFloatWeight b_;  // constant B as float32, in layout_ when blocked, else as given
  AuditTarget audit_;
  MatMulWeightLayout layout_;
  int64_t static_rows_ = 0;                   // M of a static A, else 0
  std::unique_ptr<DnnlPackedMatMul> matmul_;  // over a blocked b_
  std::unique_ptr<PanelMatMul> panels_;       // over b_ in panels
};

}  // namespace

void RegisterGemmKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Gemm").Versions(1).Build<Gemm>(r);
}

}  // namespace nxrt::cpu::linalg
