// QLinearSoftmax (com.microsoft, version 1) on int8/uint8 X with per-tensor scales and zero
// points. Attribute `opset` is that of the Softmax it replaces: below 13 the input is seen as
// 2-D [outer, everything from axis on] and each row is normalized; from 13 on, only the axis.
//
// A row's maximum is found on the integer codes; exp((x - max) * sx) has only 256 possible
// arguments, so it comes from a table built once per run. y = round(e / sum / sy) + zy.
#include <cmath>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

class QLinearSoftmax : public ep::Kernel {
 public:
  explicit QLinearSoftmax(const ep::KernelInfo& info) : op_(info.describe()) {
    axis_ = info.attr_int("axis", -1);
    opset_ = info.attr_int("opset");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t), op_ + ": X must be int8 or uint8");
    const QParams qx = ReadQParams(ctx, 1, 2, t, op_ + ": X");
    const QParams qy = ReadQParams(ctx, 3, 4, t, op_ + ": Y");
    auto xs = x.shape();
    const int64_t rank = static_cast<int64_t>(xs.size());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    NXRT_EP_ENFORCE(axis >= 0 && axis < std::max<int64_t>(rank, 1), op_ + ": axis out of range");
    ep::Tensor y = ctx.output(0, xs, t);
    // Rows of `len` elements `stride` apart: [outer, len, inner] with the row along len.
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    if (opset_ < 13) {
      for (int64_t d = axis; d < rank; ++d) len *= xs[d];
    } else {
      len = rank == 0 ? 1 : xs[axis];
      for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
    }
    if (outer * len * inner == 0) return;
    // exp_table[diff] = exp(-diff * sx) for diff = max - x in 0..255.
    float exp_table[256];
    for (int d = 0; d < 256; ++d) exp_table[d] = std::exp(-static_cast<float>(d) * qx.scale);
    const void* px = x.raw();
    void* py = y.mutable_raw();
    ctx.parallel_for(static_cast<size_t>(outer * inner), 4, [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        const int64_t base = (r / inner) * len * inner + r % inner;
        int32_t mx = LoadQ(px, t, base);
        for (int64_t i = 1; i < len; ++i) mx = std::max(mx, LoadQ(px, t, base + i * inner));
        float sum = 0.f;
        for (int64_t i = 0; i < len; ++i) sum += exp_table[mx - LoadQ(px, t, base + i * inner)];
        const float inv = 1.f / (sum * qy.scale);
        for (int64_t i = 0; i < len; ++i) {
          const float e = exp_table[mx - LoadQ(px, t, base + i * inner)];
          StoreQ(e * inv, qy.zero_point, t, py, base + i * inner);
        }
      }
    });
  }

 private:
  std::string op_;
  int64_t axis_ = -1, opset_ = 13;
};

}  // namespace

void RegisterQLinearSoftmaxKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("QLinearSoftmax", "com.microsoft")
      .Versions(1)
      .Build<QLinearSoftmax>(registry);
}

}  // namespace nxrt::cpu::quantized
