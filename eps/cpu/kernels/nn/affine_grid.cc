// AffineGrid (opset 20): the sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of an affine
// transform theta [N, 2, 3] (or [N, 3, 4]) applied to normalised output coordinates in [-1, 1].
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class AffineGrid : public ep::Kernel {
 public:
  explicit AffineGrid(const ep::KernelInfo& info) {
    align_corners_ = info.attr_int("align_corners", 0) != 0;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor theta = ctx.input(0);
    std::vector<int64_t> size = ReadInt64s(ctx.input(1), "AffineGrid size");
    NXRT_EP_ENFORCE(size.size() == 4 || size.size() == 5,
                    "AffineGrid: size must have 4 (2-D) or 5 (3-D) values");
    const int64_t r = static_cast<int64_t>(size.size()) - 2;  // spatial rank: 2 or 3
    const int64_t N = size[0];
    auto ts = theta.shape();
    NXRT_EP_ENFORCE(ts.size() == 3 && ts[0] == N && ts[1] == r && ts[2] == r + 1,
                    "AffineGrid: theta of shape " + DimsToString(ts) + " does not match size");
    std::vector<int64_t> out_shape = {N};
    for (int64_t i = 0; i < r; ++i) out_shape.push_back(size[2 + i]);
    out_shape.push_back(r);
    ep::Tensor grid = ctx.output(0, out_shape, theta.type());
    // Normalised coordinate of every position along each spatial axis.
    std::vector<std::vector<double>> axis(r);
    for (int64_t i = 0; i < r; ++i) {
      int64_t n = size[2 + i];
      NXRT_EP_ENFORCE(n >= 0, "AffineGrid: negative size");
      axis[i].resize(n);
      for (int64_t k = 0; k < n; ++k) {
        axis[i][k] =
            align_corners_ ? (n > 1 ? -1.0 + 2.0 * k / (n - 1) : -1.0) : -1.0 + (2.0 * k + 1.0) / n;
      }
    }
    DispatchFloat(theta.type(), [&]<class T>() {
      const T* th = theta.data<T>();
      T* out = grid.data<T>();
      int64_t d0 = r == 3 ? size[2] : 1;
      int64_t h = size[r == 3 ? 3 : 2], w = size[r == 3 ? 4 : 3];
      for (int64_t n = 0; n < N; ++n) {
        const T* tn = th + n * r * (r + 1);
        for (int64_t z = 0; z < d0; ++z) {
          for (int64_t yy = 0; yy < h; ++yy) {
            for (int64_t xx = 0; xx < w; ++xx) {
              // Homogeneous source point, in grid component order (x, y[, z], 1).
              double p[4] = {axis[r - 1][xx], axis[r - 2][yy], r == 3 ? axis[0][z] : 1.0, 1.0};
              for (int64_t j = 0; j < r; ++j) {
                double v = 0;
                for (int64_t k = 0; k <= r; ++k) {
                  v += static_cast<double>(static_cast<AccOf<T>>(tn[j * (r + 1) + k])) * p[k];
                }
                *out++ = static_cast<T>(v);
              }
            }
          }
        }
      }
    });
  }

 private:
  bool align_corners_ = false;
};

}  // namespace

void RegisterAffineGridKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("AffineGrid").Versions(20).Build<AffineGrid>(registry);
}

}  // namespace nxrt::cpu::nn
