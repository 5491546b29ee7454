// Region-of-interest pooling: RoiAlign (bilinear samples averaged or maxed per output bin) and
// MaxRoiPool (Caffe-style max over integer bins). Sampling positions and weights depend only on
// the ROI, so they are computed once per ROI and reused for every channel.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/float_to_int.h"
#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

// RoiAlign's sampling grid per bin side, at most (a ROI of 1e30 pixels must not ask for it).
constexpr int64_t kMaxGrid = 4096;

// A MaxRoiPool corner in pixels: rounded, NaN as 0, and kept within +-2^40 so that the ROI's
// extent (end - start + 1) cannot overflow.
int64_t RoiCoordinate(double v) {
  constexpr int64_t kLimit = int64_t{1} << 40;
  return std::clamp<int64_t>(SaturatingToInt64(std::round(v)), -kLimit, kLimit);
}

// One bilinear sample: four input offsets and their weights (all zero outside the input).
template <class A>
struct RoiSample {
  int64_t pos[4];
  A w[4];
};

class RoiAlign : public ep::Kernel {
 public:
  explicit RoiAlign(const ep::KernelInfo& info) {
    std::string mode = info.attr_string("mode", "avg");
    NXRT_EP_ENFORCE(mode == "avg" || mode == "max", "RoiAlign: mode must be 'avg' or 'max'");
    max_mode_ = mode == "max";
    out_h_ = info.attr_int("output_height", 1);
    out_w_ = info.attr_int("output_width", 1);
    sampling_ratio_ = info.attr_int("sampling_ratio", 0);
    spatial_scale_ = info.attr_float("spatial_scale", 1.0f);
    // Opset 10 had no attribute and behaved as "output_half_pixel".
    std::string ctm = info.attr_string("coordinate_transformation_mode",
                                       info.opset() >= 16 ? "half_pixel" : "output_half_pixel");
    NXRT_EP_ENFORCE(ctm == "half_pixel" || ctm == "output_half_pixel",
                    "RoiAlign: unknown coordinate_transformation_mode '" + ctm + "'");
    half_pixel_ = ctm == "half_pixel";
    NXRT_EP_ENFORCE(out_h_ > 0 && out_w_ > 0 && sampling_ratio_ >= 0,
                    "RoiAlign: output sizes must be positive and sampling_ratio non-negative");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), rois = ctx.input(1), bidx = ctx.input(2);
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 4, "RoiAlign: X must be 4-D, got " + DimsToString(xs));
    auto rs = rois.shape();
    NXRT_EP_ENFORCE(rs.size() == 2 && rs[1] == 4, "RoiAlign: rois must have shape [num_rois, 4]");
    const int64_t R = rs[0], C = xs[1], H = xs[2], W = xs[3];
    std::vector<int64_t> batch = ReadInt64s(bidx, "batch_indices");
    NXRT_EP_ENFORCE(static_cast<int64_t>(batch.size()) == R,
                    "RoiAlign: batch_indices must have one entry per ROI");
    for (int64_t b : batch) {
      NXRT_EP_ENFORCE(b >= 0 && b < xs[0],
                      "RoiAlign: batch index " + std::to_string(b) + " is out of range");
    }
    std::vector<double> roi = ReadDoubles(rois, "rois");
    for (double v : roi) NXRT_EP_ENFORCE(std::isfinite(v), "RoiAlign: rois must be finite");
    ep::Tensor y = ctx.output(0, {R, C, out_h_, out_w_}, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      ParallelFor(ctx.threads(), R, 1, [&](int64_t begin, int64_t end) {
        std::vector<RoiSample<A>> samples;
        for (int64_t n = begin; n < end; ++n) {
          const double off = half_pixel_ ? 0.5 : 0.0;
          const double* r = roi.data() + n * 4;
          double x0 = r[0] * spatial_scale_ - off, y0 = r[1] * spatial_scale_ - off;
          double x1 = r[2] * spatial_scale_ - off, y1 = r[3] * spatial_scale_ - off;
          double rw = x1 - x0, rh = y1 - y0;
          if (!half_pixel_) {
            rw = std::max(rw, 1.0);  // malformed ROIs become 1x1
            rh = std::max(rh, 1.0);
          }
          double bin_h = rh / out_h_, bin_w = rw / out_w_;
          int64_t grid_h =
              sampling_ratio_ > 0 ? sampling_ratio_ : SaturatingToInt64(std::ceil(rh / out_h_));
          int64_t grid_w =
              sampling_ratio_ > 0 ? sampling_ratio_ : SaturatingToInt64(std::ceil(rw / out_w_));
          grid_h = std::max<int64_t>(grid_h, 0);
          grid_w = std::max<int64_t>(grid_w, 0);
          // A ROI of 1e30 pixels would ask for more samples than memory holds.
          NXRT_EP_ENFORCE(grid_h <= kMaxGrid && grid_w <= kMaxGrid,
                          "RoiAlign: ROI " + std::to_string(n) +
                              " needs a sampling grid of more than 4096 per bin side");
          const A count = static_cast<A>(std::max<int64_t>(grid_h * grid_w, 1));
          samples.resize(out_h_ * out_w_ * grid_h * grid_w);
          size_t si = 0;
          for (int64_t ph = 0; ph < out_h_; ++ph) {
            for (int64_t pw = 0; pw < out_w_; ++pw) {
              for (int64_t iy = 0; iy < grid_h; ++iy) {
                double yy = y0 + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
                for (int64_t ix = 0; ix < grid_w; ++ix, ++si) {
                  double xx = x0 + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
                  samples[si] = Bilinear<A>(yy, xx, H, W);
                }
              }
            }
          }
          for (int64_t c = 0; c < C; ++c) {
            const T* plane = xd + (batch[n] * C + c) * H * W;
            T* out = yd + ((n * C + c) * out_h_) * out_w_;
            const RoiSample<A>* s = samples.data();
            for (int64_t o = 0; o < out_h_ * out_w_; ++o) {
              A acc = 0;
              bool first = true;
              for (int64_t g = 0; g < grid_h * grid_w; ++g, ++s) {
                if (max_mode_) {
                  // Max mode takes the largest weighted corner (the reference semantics).
                  A v = std::max(std::max(s->w[0] * static_cast<A>(plane[s->pos[0]]),
                                          s->w[1] * static_cast<A>(plane[s->pos[1]])),
                                 std::max(s->w[2] * static_cast<A>(plane[s->pos[2]]),
                                          s->w[3] * static_cast<A>(plane[s->pos[3]])));
                  acc = first ? v : std::max(acc, v);
                  first = false;
                } else {
                  for (int k = 0; k < 4; ++k) acc += s->w[k] * static_cast<A>(plane[s->pos[k]]);
                }
              }
              out[o] = static_cast<T>(max_mode_ ? acc : acc / count);
            }
          }
        }
      });
    });
  }

 private:
  template <class A>
  static RoiSample<A> Bilinear(double y, double x, int64_t H, int64_t W) {
    RoiSample<A> s{};
    // Outside (or not a number): contributes zero.
    if (!(y >= -1.0 && y <= static_cast<double>(H) && x >= -1.0 && x <= static_cast<double>(W))) {
      return s;
    }
    y = std::max(y, 0.0);
    x = std::max(x, 0.0);
    int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x), yh, xh;
    if (yl >= H - 1) {
      yh = yl = H - 1;
      y = static_cast<double>(yl);
    } else {
      yh = yl + 1;
    }
    if (xl >= W - 1) {
      xh = xl = W - 1;
      x = static_cast<double>(xl);
    } else {
      xh = xl + 1;
    }
    double ly = y - yl, lx = x - xl, hy = 1.0 - ly, hx = 1.0 - lx;
    s.pos[0] = yl * W + xl;
    s.pos[1] = yl * W + xh;
    s.pos[2] = yh * W + xl;
    s.pos[3] = yh * W + xh;
    s.w[0] = static_cast<A>(hy * hx);
    s.w[1] = static_cast<A>(hy * lx);
    s.w[2] = static_cast<A>(ly * hx);
    s.w[3] = static_cast<A>(ly * lx);
    return s;
  }

  bool max_mode_ = false, half_pixel_ = true;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ratio_ = 0;
  float spatial_scale_ = 1.f;
};

class MaxRoiPool : public ep::Kernel {
 public:
  explicit MaxRoiPool(const ep::KernelInfo& info) {
    std::vector<int64_t> ps = info.attr_ints("pooled_shape");
    NXRT_EP_ENFORCE(ps.size() == 2 && ps[0] > 0 && ps[1] > 0,
                    "MaxRoiPool: pooled_shape must hold two positive values");
    ph_ = ps[0];
    pw_ = ps[1];
    spatial_scale_ = info.attr_float("spatial_scale", 1.0f);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), rois = ctx.input(1);
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 4, "MaxRoiPool: X must be 4-D, got " + DimsToString(xs));
    auto rs = rois.shape();
    NXRT_EP_ENFORCE(rs.size() == 2 && rs[1] == 5, "MaxRoiPool: rois must have shape [num_rois, 5]");
    const int64_t R = rs[0], C = xs[1], H = xs[2], W = xs[3];
    std::vector<double> roi = ReadDoubles(rois, "rois");
    for (double v : roi) NXRT_EP_ENFORCE(std::isfinite(v), "MaxRoiPool: rois must be finite");
    ep::Tensor y = ctx.output(0, {R, C, ph_, pw_}, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      for (int64_t n = 0; n < R; ++n) {
        const double* r = roi.data() + n * 5;
        int64_t b = SaturatingToInt64(r[0]);
        NXRT_EP_ENFORCE(b >= 0 && b < xs[0], "MaxRoiPool: batch index out of range");
        int64_t sw = RoiCoordinate(r[1] * spatial_scale_);
        int64_t sh = RoiCoordinate(r[2] * spatial_scale_);
        int64_t ew = RoiCoordinate(r[3] * spatial_scale_);
        int64_t eh = RoiCoordinate(r[4] * spatial_scale_);
        int64_t rh = std::max<int64_t>(eh - sh + 1, 1), rw = std::max<int64_t>(ew - sw + 1, 1);
        double bh = static_cast<double>(rh) / ph_, bw = static_cast<double>(rw) / pw_;
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = xd + (b * C + c) * H * W;
          T* out = yd + (n * C + c) * ph_ * pw_;
          for (int64_t i = 0; i < ph_; ++i) {
            int64_t h0 = std::clamp<int64_t>(SaturatingToInt64(std::floor(i * bh)) + sh, 0, H);
            int64_t h1 = std::clamp<int64_t>(SaturatingToInt64(std::ceil((i + 1) * bh)) + sh, 0, H);
            for (int64_t j = 0; j < pw_; ++j) {
              int64_t w0 = std::clamp<int64_t>(SaturatingToInt64(std::floor(j * bw)) + sw, 0, W);
              int64_t w1 =
                  std::clamp<int64_t>(SaturatingToInt64(std::ceil((j + 1) * bw)) + sw, 0, W);
              A m = -std::numeric_limits<A>::infinity();
              bool empty = h1 <= h0 || w1 <= w0;
              for (int64_t yy = h0; yy < h1; ++yy) {
                for (int64_t xx = w0; xx < w1; ++xx)
                  m = std::max(m, static_cast<A>(plane[yy * W + xx]));
              }
              out[i * pw_ + j] = static_cast<T>(empty ? A(0) : m);
            }
          }
        }
      }
    });
  }

 private:
  int64_t ph_ = 1, pw_ = 1;
  float spatial_scale_ = 1.f;
};

}  // namespace

void RegisterRoiKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("RoiAlign").Versions(10).Build<RoiAlign>(registry);
  ep::KernelDefBuilder("MaxRoiPool").Versions(1).Build<MaxRoiPool>(registry);
}

}  // namespace nxrt::cpu::nn
