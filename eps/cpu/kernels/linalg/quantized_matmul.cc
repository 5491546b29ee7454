// MatMulInteger (opset 10) and QLinearMatMul (opsets 10, 21) for int8/uint8 operands: the
// operands are widened to int32 with their zero points removed (per tensor, per row of A or per
// column of B), multiplied exactly in int32, and QLinearMatMul requantizes the result.
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/cpu_features.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_core.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::linalg {
namespace {

// A with its (per-tensor or per-row) zero point removed; rows are the second-to-last axis.
void WidenA(const ep::ConstTensor& a, const std::vector<int32_t>& zp, const MatMulDims& d,
            int32_t* out) {
  WidenSubtract(a, zp, d.k, out);  // row index = (i / K) % M when zp has M entries
}

// B with its (per-tensor or per-column) zero point removed; columns are the last axis.
void WidenB(const ep::ConstTensor& b, const std::vector<int32_t>& zp, int32_t* out) {
  WidenSubtract(b, zp, 1, out);  // column index = i % N when zp has N entries
}

// acc = (A - a_zp) * (B - b_zp) in int32 for the shapes in d; returns the accumulator buffer.
int32_t* IntegerProduct(const ep::ConstTensor& a, const ep::ConstTensor& b,
                        const std::vector<int32_t>& a_zp, const std::vector<int32_t>& b_zp,
                        const MatMulDims& d, int threads) {
  int32_t* ai = static_cast<int32_t*>(ThreadScratch(kScratchA, a.size() * sizeof(int32_t)));
  int32_t* bi = static_cast<int32_t*>(ThreadScratch(kScratchB, b.size() * sizeof(int32_t)));
  const size_t out_count = static_cast<size_t>(d.batch * d.m * d.n);
  int32_t* acc = static_cast<int32_t*>(ThreadScratch(kScratchC, out_count * sizeof(int32_t)));
  WidenA(a, a_zp, d, ai);
  WidenB(b, b_zp, bi);
  BatchedGemmRef<int32_t>(d, ai, bi, acc, threads);
  return acc;
}

class MatMulInteger : public ep::Kernel {
 public:
  explicit MatMulInteger(const ep::KernelInfo& info)
      : op_(info.describe()), path_(quantized::KernelInt8GemmPath(info)) {
    // A constant 2-D B (with a constant or absent zero point) is packed once.
    auto b = info.constant_input(1);
    const bool has_zp = info.input_count() > 3 && info.input(3).present();
    auto zp = has_zp ? info.constant_input(3) : std::nullopt;
    if (b && b->rank() == 2 && IsInt8Type(b->type()) && (!has_zp || zp)) {
      std::vector<int32_t> b_zp = ReadZeroPoint(zp, b->type(), b->dim(1), op_ + ": b_zero_point");
      packed_b_ = quantized::PackInt8B(path_, b->raw(), b->type(), b->dim(0), b->dim(1), b_zp, {});
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    ep::ConstTensor b = ctx.input(1);
    NXRT_EP_ENFORCE(IsInt8Type(a.type()) && IsInt8Type(b.type()),
                    op_ + ": A and B must be int8 or uint8");
    MatMulDims d = ComputeMatMulDims(a.shape(), b.shape(), op_);
    std::vector<int32_t> a_zp =
        ReadZeroPoint(ctx.optional_input(2), a.type(), d.m, op_ + ": a_zero_point");
    std::vector<int32_t> b_zp =
        ReadZeroPoint(ctx.optional_input(3), b.type(), d.n, op_ + ": b_zero_point");
    ep::Tensor y = ctx.output(0, d.out_dims, NX_TYPE_INT32);
    if (ShapeSize(d.out_dims) == 0) return;
    if (b.rank() == 2 && a_zp.size() == 1 && d.k > 0) {
      // The common case (quantize_dynamic's weights): one blocked product of all of A's rows
      // with a 2-D B (int8_gemm_core.h), instead of the int32 reference GEMM.
      quantized::PackedInt8B local;
      if (!packed_b_) {
        local = quantized::PackInt8B(path_, b.raw(), b.type(), d.k, d.n, b_zp, {});
      }
      const quantized::PackedInt8B& w = packed_b_ ? *packed_b_ : local;
      const int64_t rows = static_cast<int64_t>(a.size()) / d.k;
      thread_local quantized::PreparedInt8A prepared;  // reused across runs
      quantized::PrepareInt8A(a.raw(), a.type(), rows, d.k, a_zp[0], w, prepared);
      quantized::Int8GemmOutput out;
      out.y32 = y.data<int32_t>();
      out.ldy = d.n;
      quantized::Int8Gemm(prepared, w, out, ctx.threads());
      return;
    }
    int32_t* acc = IntegerProduct(a, b, a_zp, b_zp, d, ctx.threads());
    std::copy(acc, acc + ShapeSize(d.out_dims), y.data<int32_t>());
  }

 private:
  std::string op_;
  quantized::Int8GemmPath path_;
  std::optional<quantized::PackedInt8B> packed_b_;  // a constant 2-D B
};

class QLinearMatMul : public ep::Kernel {
 public:
  explicit QLinearMatMul(const ep::KernelInfo& info) : op_(info.describe()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    ep::ConstTensor b = ctx.input(3);
    NXRT_EP_ENFORCE(IsInt8Type(a.type()) && IsInt8Type(b.type()),
                    op_ + ": only int8 and uint8 operands are supported, got " +
                        ep::ElementTypeName(a.type()) + " and " + ep::ElementTypeName(b.type()));
    MatMulDims d = ComputeMatMulDims(a.shape(), b.shape(), op_);
    ep::ConstTensor a_scale_t = ctx.input(1), b_scale_t = ctx.input(4), y_scale_t = ctx.input(6);
    std::vector<float> a_scale = ReadScale(a_scale_t, d.m, op_ + ": a_scale");
    std::vector<float> b_scale = ReadScale(b_scale_t, d.n, op_ + ": b_scale");
    std::vector<float> y_scale = ReadScale(y_scale_t, 1, op_ + ": y_scale");
    std::vector<int32_t> a_zp =
        ReadZeroPoint(ctx.optional_input(2), a.type(), d.m, op_ + ": a_zero_point");
    std::vector<int32_t> b_zp =
        ReadZeroPoint(ctx.optional_input(5), b.type(), d.n, op_ + ": b_zero_point");
    std::optional<ep::ConstTensor> y_zp_t = ctx.optional_input(7);
    const NxElementType y_type = y_zp_t ? y_zp_t->type() : a.type();
    NXRT_EP_ENFORCE(IsInt8Type(y_type), op_ + ": y_zero_point must be int8 or uint8");
    std::vector<int32_t> y_zp = ReadZeroPoint(y_zp_t, y_type, 1, op_ + ": y_zero_point");

    ep::Tensor y = ctx.output(0, d.out_dims, y_type);
    if (ShapeSize(d.out_dims) == 0) return;
    const int32_t* acc = IntegerProduct(a, b, a_zp, b_zp, d, ctx.threads());

    // The combined scale a_scale * b_scale / y_scale, computed at the scales' own precision.
    const NxElementType st = a_scale_t.type();
    std::vector<double> scale(a_scale.size() * b_scale.size());
    for (size_t i = 0; i < a_scale.size(); ++i)
      for (size_t j = 0; j < b_scale.size(); ++j) {
        float ab = RoundToScaleType(a_scale[i] * b_scale[j], st);
        scale[i * b_scale.size() + j] = RoundToScaleType(ab / y_scale[0], st);
      }
    const bool per_row = a_scale.size() > 1, per_col = b_scale.size() > 1;
    void* out = y.mutable_raw();
    size_t idx = 0;
    for (int64_t bt = 0; bt < d.batch; ++bt)
      for (int64_t i = 0; i < d.m; ++i)
        for (int64_t j = 0; j < d.n; ++j, ++idx) {
          double s = scale[(per_row ? i : 0) * b_scale.size() + (per_col ? j : 0)];
          Requantize(static_cast<double>(acc[idx]) * s, y_zp[0], y_type, out, idx);
        }
  }

 private:
  std::string op_;
};

}  // namespace

void RegisterQuantizedMatMulKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("MatMulInteger").Versions(10).Build<MatMulInteger>(r);
  ep::KernelDefBuilder("QLinearMatMul").Versions(10).Build<QLinearMatMul>(r);
}

}  // namespace nxrt::cpu::linalg
