// QLinearAveragePool (com.microsoft, version 1), NCHW layout, 1-3 spatial axes: the AveragePool
// attributes (auto_pad, ceil_mode, count_include_pad, kernel_shape, pads, strides) on int8/uint8
// X with per-tensor scales and zero points. Each window's values, zero point removed, are summed
// exactly in integers; padding counts as real zero (only in the divisor, with
// count_include_pad, which then is the kernel size). The mean is requantized once: round(sum * sx /
// (count * sy)) + zy.
#include <algorithm>
#include <string>

#include "kernels/nn/pool_geometry.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

class QLinearAveragePool : public ep::Kernel {
 public:
  explicit QLinearAveragePool(const ep::KernelInfo& info) : at_(info), op_(info.describe()) {
    count_include_pad_ = info.attr_int("count_include_pad", 0) != 0;
    NXRT_EP_ENFORCE(info.attr_int("channels_last", 0) == 0,
                    op_ + ": channels_last = 1 is not supported");
    for (int64_t d : at_.dilations) NXRT_EP_ENFORCE(d == 1, op_ + ": dilations must be 1");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(linalg::IsInt8Type(t), op_ + ": X must be int8 or uint8");
    const QParams qx = ReadQParams(ctx, 1, 2, t, op_ + ": X");
    const QParams qy = ReadQParams(ctx, 3, 4, t, op_ + ": Y");
    const nn::PoolGeometry g = nn::ResolvePool(at_, x.shape());
    ep::Tensor y = ctx.output(0, g.out_shape, t);
    const int64_t planes = g.batch * g.channels;
    if (planes == 0 || g.out_plane() == 0) return;
    const void* px = x.raw();
    void* py = y.mutable_raw();
    const float ratio = qx.scale / qy.scale;
    ctx.parallel_for(static_cast<size_t>(planes), 1, [&](size_t p0, size_t p1) {
      for (int64_t p = static_cast<int64_t>(p0); p < static_cast<int64_t>(p1); ++p) {
        const int64_t in_base = p * g.in_plane(), out_base = p * g.out_plane();
        int64_t o = 0;
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) {
              const int64_t pos[3] = {o0, o1, o2};
              int64_t lo[3], hi[3];
              for (int a = 0; a < 3; ++a) {
                const int64_t start = pos[a] * g.s[a] - g.pb[a];
                const int64_t end = start + g.k[a];
                lo[a] = std::max<int64_t>(start, 0);
                hi[a] = std::min(end, g.in[a]);
              }
              int64_t sum = 0, valid = 0;
              for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0) {
                for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1) {
                  const int64_t row = in_base + (i0 * g.in[1] + i1) * g.in[2];
                  for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) sum += LoadQ(px, t, row + i2);
                  valid += std::max<int64_t>(0, hi[2] - lo[2]);
                }
              }
              // As onnxruntime: with count_include_pad the divisor is the whole kernel, even for
              // a ceil_mode window that overhangs the padding.
              const int64_t count = count_include_pad_ ? g.window() : valid;
              const float centered = static_cast<float>(sum - valid * int64_t(qx.zero_point));
              const float mean = count > 0 ? centered / static_cast<float>(count) : 0.f;
              StoreQ(mean * ratio, qy.zero_point, t, py, out_base + o);
            }
          }
        }
      }
    });
  }

 private:
  nn::PoolAttributes at_;
  std::string op_;
  bool count_include_pad_ = false;
};

}  // namespace

void RegisterQLinearAveragePoolKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("QLinearAveragePool", "com.microsoft")
      .Versions(1)
      .Build<QLinearAveragePool>(registry);
}

}  // namespace nxrt::cpu::quantized
