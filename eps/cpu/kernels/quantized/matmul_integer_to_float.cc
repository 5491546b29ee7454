// MatMulIntegerToFloat and DynamicQuantizeMatMul (com.microsoft, version 1): the products that
// onnxruntime fuses out of quantize_dynamic's DynamicQuantizeLinear + MatMulInteger + Cast + Mul
// chains. Y = (A - a_zp) (B - b_zp) * a_scale * b_scale[column] + bias, with B a 2-D int8/uint8
// matrix (per-tensor or per-column scale and zero point) and A either already 8-bit
// (MatMulIntegerToFloat) or float and quantized to uint8 at run time (DynamicQuantizeMatMul).
#include <optional>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "common/cpu_features.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

// The input positions of B, its scale, zero point and the bias in each op.
struct Slots {
  size_t b, b_scale, b_zero, bias;
};
constexpr Slots kIntegerToFloatSlots{1, 3, 5, 6};
constexpr Slots kDynamicSlots{1, 2, 3, 4};

PackedInt8B PackB(Int8GemmPath path, const ep::ConstTensor& b, const ep::ConstTensor& scale,
                  const std::optional<ep::ConstTensor>& zero, const std::string& op) {
  NXRT_EP_ENFORCE(linalg::IsInt8Type(b.type()), op + ": B must be int8 or uint8");
  NXRT_EP_ENFORCE(b.rank() == 2, op + ": only a 2-D B is supported");
  NXRT_EP_ENFORCE(scale.type() == NX_TYPE_FLOAT, op + ": scales must be float");
  const int64_t k = b.dim(0), n = b.dim(1);
  std::vector<float> s = linalg::ReadScale(scale, n, op + ": b_scale");
  std::vector<int32_t> z = linalg::ReadZeroPoint(zero, b.type(), n, op + ": b_zero_point");
  return PackInt8B(path, b.raw(), b.type(), k, n, z, s);
}

// The rows of A: every dimension but the last (K may be 0).
int64_t RowsOf(std::span<const int64_t> a_shape) {
  return ShapeSize(a_shape.subspan(0, a_shape.size() - 1));
}

// Common body: packs B once when it is constant, checks A's shape and writes Y.
class QuantizedProductBase : public ep::Kernel {
 protected:
  QuantizedProductBase(const ep::KernelInfo& info, Slots slots)
      : op_(info.describe()), slots_(slots), path_(KernelInt8GemmPath(info)) {
    auto b = info.constant_input(slots.b);
    auto s = info.constant_input(slots.b_scale);
    std::optional<ep::ConstTensor> z;
    bool zero_ok = true;
    if (slots.b_zero < info.input_count() && info.input(slots.b_zero).present()) {
      z = info.constant_input(slots.b_zero);
      zero_ok = z.has_value();
    }
    if (b && s && zero_ok) packed_ = PackB(path_, *b, *s, z, op_);
  }

  // Runs the product for A of shape a_shape whose rows are prepared in `a`.
  void Finish(ep::KernelContext& ctx, std::span<const int64_t> a_shape, const PreparedInt8A& a,
              const PackedInt8B& w) const {
    // Y has A's shape with the last dimension replaced by N (a 1-D A gives a 1-D Y).
    Dims out(a_shape.begin(), a_shape.end());
    out.back() = w.n;
    ep::Tensor y = ctx.output(0, out, NX_TYPE_FLOAT);
    const int64_t rows = RowsOf(a_shape);
    const float* bias = nullptr;
    if (auto bt = ctx.optional_input(slots_.bias)) {
      NXRT_EP_ENFORCE(bt->type() == NX_TYPE_FLOAT && static_cast<int64_t>(bt->size()) == w.n,
                      op_ + ": bias must be float with N elements");
      bias = bt->data<float>();
    }
    if (rows == 0 || w.n == 0) return;
    NXRT_EP_ENFORCE(a.rows == rows, op_ + ": internal error: prepared rows differ");
    Int8GemmOutput o;
    o.y = y.data<float>();
    o.ldy = w.n;
    o.bias = bias;
    Int8Gemm(a, w, o, ctx.threads());
  }

  const PackedInt8B& Weights(ep::KernelContext& ctx, PackedInt8B& local) const {
    if (packed_) return *packed_;
    local = PackB(path_, ctx.input(slots_.b), ctx.input(slots_.b_scale),
                  ctx.optional_input(slots_.b_zero), op_);
    return local;
  }

  void CheckA(std::span<const int64_t> a_shape, const PackedInt8B& w) const {
    NXRT_EP_ENFORCE(!a_shape.empty() && a_shape.back() == w.k,
                    op_ + ": A's last dimension must equal B's rows (" + std::to_string(w.k) +
                        "), got " + ShapeToString(a_shape));
  }

  std::string op_;
  Slots slots_;
  Int8GemmPath path_;
  std::optional<PackedInt8B> packed_;
};

class MatMulIntegerToFloat : public QuantizedProductBase {
 public:
  explicit MatMulIntegerToFloat(const ep::KernelInfo& info)
      : QuantizedProductBase(info, kIntegerToFloatSlots) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    NXRT_EP_ENFORCE(linalg::IsInt8Type(a.type()), op_ + ": A must be int8 or uint8");
    PackedInt8B local;
    const PackedInt8B& w = Weights(ctx, local);
    CheckA(a.shape(), w);
    ep::ConstTensor as = ctx.input(2);
    NXRT_EP_ENFORCE(as.type() == NX_TYPE_FLOAT && as.size() == 1,
                    op_ + ": only a per-tensor float a_scale is supported");
    std::vector<int32_t> azp =
        linalg::ReadZeroPoint(ctx.optional_input(4), a.type(), 1, op_ + ": a_zero_point");
    thread_local PreparedInt8A prepared;  // reused across runs
    PrepareInt8A(a.raw(), a.type(), RowsOf(a.shape()), w.k, azp[0], w, prepared);
    prepared.scale = as.data<float>()[0];
    Finish(ctx, a.shape(), prepared, w);
  }
};

class DynamicQuantizeMatMul : public QuantizedProductBase {
 public:
  explicit DynamicQuantizeMatMul(const ep::KernelInfo& info)
      : QuantizedProductBase(info, kDynamicSlots) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0);
    NXRT_EP_ENFORCE(a.type() == NX_TYPE_FLOAT, op_ + ": A must be float");
    PackedInt8B local;
    const PackedInt8B& w = Weights(ctx, local);
    CheckA(a.shape(), w);
    // One range over the whole of A, as onnxruntime's DynamicQuantizeLinear.
    thread_local PreparedInt8A prepared;  // reused across runs
    QuantizeFloatA(a.data<float>(), RowsOf(a.shape()), w.k, w, prepared);
    Finish(ctx, a.shape(), prepared, w);
  }
};

}  // namespace

void RegisterMatMulIntegerToFloatKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MatMulIntegerToFloat", "com.microsoft")
      .Versions(1)
      .Build<MatMulIntegerToFloat>(registry);
  ep::KernelDefBuilder("DynamicQuantizeMatMul", "com.microsoft")
      .Versions(1)
      .Build<DynamicQuantizeMatMul>(registry);
}

}  // namespace nxrt::cpu::quantized
