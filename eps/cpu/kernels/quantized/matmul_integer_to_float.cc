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
#include "kernels/quantized/int8_weights.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

// The input positions of B, its scale and zero point, and of the bias, in each op.
struct Slots {
  Int8WeightSlots weights;
  size_t bias;
};
constexpr Slots kIntegerToFloatSlots{{.b = 1, .scale = 3, .zero = 5}, 6};
constexpr Slots kDynamicSlots{{.b = 1, .scale = 2, .zero = 3}, 4};

// The rows of A: every dimension but the last (K may be 0).
int64_t RowsOf(std::span<const int64_t> a_shape) {
  return ShapeSize(a_shape.subspan(0, a_shape.size() - 1));
}

// Common body: packs B once when it is constant, checks A's shape and writes Y.
class QuantizedProductBase : public ep::Kernel {
 protected:
  QuantizedProductBase(const ep::KernelInfo& info, Slots slots)
      : op_(info.describe()),
        slots_(slots),
        path_(KernelInt8GemmPath(info)),
        packed_(PackConstantInt8Weights(info, path_, slots.weights, op_)) {}

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

  const PackedInt8B& Weights(ep::KernelContext& ctx, std::optional<PackedInt8B>& local) const {
    return RunInt8Weights(ctx, path_, slots_.weights, packed_, local, op_);
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
    std::optional<PackedInt8B> local;
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
    std::optional<PackedInt8B> local;
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
