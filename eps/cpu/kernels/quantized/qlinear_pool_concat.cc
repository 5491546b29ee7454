// QLinearGlobalAveragePool and QLinearConcat (com.microsoft, version 1) on int8 / uint8 tensors
// with per-tensor scales and zero points.
//
// GlobalAveragePool sums each channel's integer values exactly, then requantizes once:
//   y = round((sum - zx * count) * sx / (sy * count)) + zy.
// Concat copies inputs whose scale and zero point equal the output's and maps the others through
// a 256-entry table (dequantize, quantize with the output's parameters).
#include <cstring>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

class QLinearGlobalAveragePool : public ep::Kernel {
 public:
  explicit QLinearGlobalAveragePool(const ep::KernelInfo& info) : op_(info.describe()) {
    channels_last_ = info.attr_int("channels_last", 0) != 0;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t), op_ + ": X must be int8 or uint8");
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() >= 3, op_ + ": X must have rank 3 or more");
    const QParams qx = ReadQParams(ctx, 1, 2, t, op_ + ": X");
    const QParams qy = ReadQParams(ctx, 3, 4, t, op_ + ": Y");
    const int64_t n = xs[0];
    const int64_t c = channels_last_ ? xs.back() : xs[1];
    const int64_t spatial = ShapeSize(xs) / std::max<int64_t>(1, n * c);
    Dims out(xs.size(), 1);
    out[0] = n;
    if (channels_last_) {
      out.back() = c;
    } else {
      out[1] = c;
    }
    ep::Tensor y = ctx.output(0, out, t);
    if (n * c == 0) return;
    const void* px = x.raw();
    void* py = y.mutable_raw();
    const float scale = qx.scale / (qy.scale * static_cast<float>(spatial));
    // Element (batch, channel, position): NCHW at (b * c + ch) * spatial + s, NHWC at
    // (b * spatial + s) * c + ch.
    ctx.parallel_for(static_cast<size_t>(n * c), 16, [&](size_t i0, size_t i1) {
      for (int64_t i = static_cast<int64_t>(i0); i < static_cast<int64_t>(i1); ++i) {
        const int64_t b = i / c, ch = i % c;
        int64_t sum = 0;
        for (int64_t s = 0; s < spatial; ++s) {
          sum += LoadQ(px, t, channels_last_ ? (b * spatial + s) * c + ch : i * spatial + s);
        }
        const float centered = static_cast<float>(sum - int64_t(qx.zero_point) * spatial);
        StoreQ(centered * scale, qy.zero_point, t, py, i);
      }
    });
  }

 private:
  std::string op_;
  bool channels_last_ = false;
};

class QLinearConcat : public ep::Kernel {
 public:
  explicit QLinearConcat(const ep::KernelInfo& info) : op_(info.describe()) {
    axis_ = info.attr_int("axis");
  }

  void Compute(ep::KernelContext& ctx) override {
    const size_t count = ctx.input_count();
    NXRT_EP_ENFORCE(count >= 5 && (count - 2) % 3 == 0,
                    op_ + ": inputs must be Y_scale, Y_zero_point, then (X, scale, zero point)...");
    const size_t parts = (count - 2) / 3;
    ep::ConstTensor first = ctx.input(2);
    const NxElementType t = first.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t), op_ + ": inputs must be int8 or uint8");
    const QParams qy = ReadQParams(ctx, 0, 1, t, op_ + ": Y");
    auto fs = first.shape();
    const int64_t rank = static_cast<int64_t>(fs.size());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    NXRT_EP_ENFORCE(axis >= 0 && axis < rank, op_ + ": axis out of range");
    Dims out(fs.begin(), fs.end());
    out[axis] = 0;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= fs[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= fs[d];
    for (size_t p = 0; p < parts; ++p) {
      ep::ConstTensor x = ctx.input(2 + 3 * p);
      auto s = x.shape();
      NXRT_EP_ENFORCE(x.type() == t && static_cast<int64_t>(s.size()) == rank,
                      op_ + ": inputs must share type and rank");
      for (int64_t d = 0; d < rank; ++d) {
        NXRT_EP_ENFORCE(d == axis || s[d] == fs[d], op_ + ": input shapes differ off the axis");
      }
      out[axis] += s[axis];
    }
    ep::Tensor y = ctx.output(0, out, t);
    auto* dst = static_cast<uint8_t*>(y.mutable_raw());
    const int64_t out_row = out[axis] * inner;
    int64_t offset = 0;  // of this part within one output row
    for (size_t p = 0; p < parts; ++p) {
      ep::ConstTensor x = ctx.input(2 + 3 * p);
      const QParams qx = ReadQParams(ctx, 3 + 3 * p, 4 + 3 * p, t, op_ + ": X");
      const int64_t row = x.dim(static_cast<size_t>(axis)) * inner;
      const auto* src = static_cast<const uint8_t*>(x.raw());
      const bool same = qx.scale == qy.scale && qx.zero_point == qy.zero_point;
      uint8_t table[256];
      if (!same) {
        for (int code = 0; code < 256; ++code) {
          const int32_t v = t == NX_TYPE_INT8 ? int32_t(static_cast<int8_t>(code)) : code;
          const float real = static_cast<float>(v - qx.zero_point) * qx.scale;
          StoreQ(real / qy.scale, qy.zero_point, t, table, code);
        }
      }
      for (int64_t o = 0; o < outer; ++o) {
        const uint8_t* s = src + o * row;
        uint8_t* d = dst + o * out_row + offset;
        if (same) {
          std::memcpy(d, s, static_cast<size_t>(row));
        } else {
          for (int64_t i = 0; i < row; ++i) d[i] = table[s[i]];
        }
      }
      offset += row;
    }
  }

 private:
  std::string op_;
  int64_t axis_ = 0;
};

}  // namespace

void RegisterQLinearPoolConcatKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("QLinearGlobalAveragePool", "com.microsoft")
      .Versions(1)
      .Build<QLinearGlobalAveragePool>(registry);
  ep::KernelDefBuilder("QLinearConcat", "com.microsoft").Versions(1).Build<QLinearConcat>(registry);
}

}  // namespace nxrt::cpu::quantized
