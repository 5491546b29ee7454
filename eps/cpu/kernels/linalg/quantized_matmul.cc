// MatMulInteger (opset 10) and QLinearMatMul (opsets 10, 21) for int8/uint8 operands, exact in
// int32: on the blocked 8-bit GEMM (int8_gemm_core.h; a constant B packed once, QLinearMatMul
// requantized in its epilogue) when A's zero point and scale are per tensor. A per-row A zero
// point or scale runs the portable int32 GEMM on operands widened with their zero points
// removed, and the session counts and reports it (primitive_audit.h).
#include <atomic>
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/cpu_features.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/matmul_core.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"
#include "kernels/quantized/int8_weights.h"

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

// B packed once at kernel creation: a constant B whose batch dimensions are all 1, with a
// constant (or absent) zero point; the scales stay out of the packing (QLinearMatMul applies
// them in its epilogue). Empty otherwise: packed per run, which reports any error.
std::optional<quantized::PackedInt8B> PackConstantB(const ep::KernelInfo& info, size_t b_index,
                                                    size_t zp_index, quantized::Int8GemmPath path,
                                                    const std::string& op) {
  const quantized::Int8WeightSlots slots{.b = b_index, .zero = zp_index, .leading_ones = true};
  return quantized::PackConstantInt8Weights(info, path, slots, op);
}

// (A - a_zp)(B - b_zp) on the blocked 8-bit GEMM (int8_gemm_core.h) for a per-tensor A zero
// point, written where `out` says (its pointer is the first batch entry's first row; entries
// follow each other, m rows each). B is `packed` (a constant B, packed at creation) or packed
// here: once when every batch entry shares it (all of A's rows are then one product), else
// once per distinct batch entry of B.
void BlockedProduct(const ep::ConstTensor& a, const ep::ConstTensor& b, int32_t a_zp,
                    const std::vector<int32_t>& b_zp, const MatMulDims& d,
                    quantized::Int8GemmPath path,
                    const std::optional<quantized::PackedInt8B>& packed,
                    const quantized::Int8GemmOutput& out, int threads) {
  thread_local quantized::PreparedInt8A prepared;  // reused across runs
  const auto* a_bytes = static_cast<const uint8_t*>(a.raw());
  const auto* b_bytes = static_cast<const uint8_t*>(b.raw());
  auto product = [&](const uint8_t* a_rows, int64_t rows, const quantized::PackedInt8B& w,
                     int64_t first_row) {
    quantized::PrepareInt8A(a_rows, a.type(), rows, d.k, a_zp, w, prepared);
    quantized::Int8GemmOutput o = out;
    if (o.y32 != nullptr) o.y32 += first_row * o.ldy;
    if (o.y8 != nullptr) o.y8 = static_cast<uint8_t*>(o.y8) + first_row * o.ldy;
    quantized::Int8Gemm(prepared, w, o, threads);
  };
  if (d.foldable) {
    if (packed) return product(a_bytes, d.batch * d.m, *packed, 0);
    const quantized::PackedInt8B w =
        quantized::PackInt8B(path, b_bytes, b.type(), d.k, d.n, b_zp, {});
    return product(a_bytes, d.batch * d.m, w, 0);
  }
  quantized::PackedInt8B local;
  int64_t local_offset = -1;
  for (int64_t i = 0; i < d.batch; ++i) {
    const quantized::PackedInt8B* w = packed ? &*packed : nullptr;
    if (w == nullptr) {
      if (d.b_offsets[i] != local_offset) {
        local = quantized::PackInt8B(path, b_bytes + d.b_offsets[i], b.type(), d.k, d.n, b_zp, {});
        local_offset = d.b_offsets[i];
      }
      w = &local;
    }
    product(a_bytes + d.a_offsets[i], d.m, *w, i * d.m);
  }
}

// Whether BlockedProduct takes the product: a per-tensor A zero point (a per-row one runs the
// portable int32 GEMM, reported once per node as a slow path).
bool BlockedProductApplies(const std::vector<int32_t>& a_zp, const MatMulDims& d) {
  return a_zp.size() == 1 && d.k > 0 && !d.trans_a && !d.trans_b;
}

class MatMulInteger : public ep::Kernel {
 public:
  explicit MatMulInteger(const ep::KernelInfo& info)
      : op_(info.describe()),
        path_(quantized::KernelInt8GemmPath(info)),
        audit_(KernelAudit(info)) {
    packed_b_ = PackConstantB(info, 1, 3, path_, op_);
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
    if (BlockedProductApplies(a_zp, d)) {
      quantized::Int8GemmOutput out;
      out.y32 = y.data<int32_t>();
      out.ldy = d.n;
      BlockedProduct(a, b, a_zp[0], b_zp, d, path_, packed_b_, out, ctx.threads());
      return;
    }
    audit_.RecordSlowLoopOnce(reported_, "8-bit matrix product with a per-row A zero point");
    int32_t* acc = IntegerProduct(a, b, a_zp, b_zp, d, ctx.threads());
    std::copy(acc, acc + ShapeSize(d.out_dims), y.data<int32_t>());
  }

 private:
  std::string op_;
  quantized::Int8GemmPath path_;
  AuditTarget audit_;
  std::atomic<bool> reported_{false};
  std::optional<quantized::PackedInt8B> packed_b_;  // a constant B (PackConstantB)
};

class QLinearMatMul : public ep::Kernel {
 public:
  explicit QLinearMatMul(const ep::KernelInfo& info)
      : op_(info.describe()),
        path_(quantized::KernelInt8GemmPath(info)),
        audit_(KernelAudit(info)) {
    packed_b_ = PackConstantB(info, 3, 5, path_, op_);
  }

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

    // The combined scale a_scale * b_scale / y_scale, computed at the scales' own precision.
    const NxElementType st = a_scale_t.type();
    std::vector<double> scale(a_scale.size() * b_scale.size());
    for (size_t i = 0; i < a_scale.size(); ++i)
      for (size_t j = 0; j < b_scale.size(); ++j) {
        float ab = RoundToScaleType(a_scale[i] * b_scale[j], st);
        scale[i * b_scale.size() + j] = RoundToScaleType(ab / y_scale[0], st);
      }
    if (a_scale.size() == 1 && BlockedProductApplies(a_zp, d)) {
      // Requantized in the GEMM's epilogue, one scale per column.
      if (scale.size() == 1) scale.assign(static_cast<size_t>(d.n), scale[0]);
      quantized::Int8GemmOutput out;
      out.y8 = y.mutable_raw();
      out.ldy = d.n;
      out.y8_signed = y_type == NX_TYPE_INT8;
      out.requant = scale.data();
      out.y_zero_point = y_zp[0];
      BlockedProduct(a, b, a_zp[0], b_zp, d, path_, packed_b_, out, ctx.threads());
      return;
    }
    audit_.RecordSlowLoopOnce(reported_,
                              "8-bit matrix product with a per-row A zero point or scale");
    const int32_t* acc = IntegerProduct(a, b, a_zp, b_zp, d, ctx.threads());
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
  quantized::Int8GemmPath path_;
  AuditTarget audit_;
  std::atomic<bool> reported_{false};
  std::optional<quantized::PackedInt8B> packed_b_;  // a constant B (PackConstantB)
};

}  // namespace

void RegisterQuantizedMatMulKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("MatMulInteger").Versions(10).Build<MatMulInteger>(r);
  ep::KernelDefBuilder("QLinearMatMul").Versions(10).Build<QLinearMatMul>(r);
}

}  // namespace nxrt::cpu::linalg
