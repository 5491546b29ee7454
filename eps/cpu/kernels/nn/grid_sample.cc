// GridSample (opsets 16-22): samples X [N, C, D1..Dr] at the normalised locations of grid
// [N, O1..Or, r] (last axis ordered x, y, z: the reverse of X's spatial axes). For every output
// location the taps (input offset, weight) are computed once and reused for all C channels.
#include <algorithm>
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

enum class SampleMode { kNearest, kLinear, kCubic };
enum class PadMode { kZeros, kBorder, kReflection };

// Folds x back into [lo, hi] by reflecting at the borders (repeatedly).
template <class A>
A Reflect(A x, A lo, A hi) {
  A range = hi - lo;
  if (range <= A(0)) return lo;
  if (x < lo || x > hi) {
    A dx = x < lo ? lo - x : x - hi;
    A n = std::floor(dx / range);  // whole reflections (kept in floating point: no overflow)
    A r = std::clamp(dx - n * range, A(0), range);
    bool even = std::fmod(n, A(2)) == A(0);
    if (x < lo) return even ? lo + r : hi - r;
    return even ? hi - r : lo + r;
  }
  return x;
}

template <class A>
void CubicCoeffs(A t, A* c) {
  const A a = A(-0.75);
  A x = t + 1;
  c[0] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  x = 1 - t;
  c[2] = ((a + 2) * x - (a + 3)) * x * x + 1;
  x = 2 - t;
  c[3] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

class GridSample : public ep::Kernel {
 public:
  explicit GridSample(const ep::KernelInfo& info) {
    std::string mode = info.attr_string("mode", info.opset() >= 20 ? "linear" : "bilinear");
    if (mode == "nearest")
      mode_ = SampleMode::kNearest;
    else if (mode == "linear" || mode == "bilinear")
      mode_ = SampleMode::kLinear;
    else if (mode == "cubic" || mode == "bicubic")
      mode_ = SampleMode::kCubic;
    else
      ep::Fail(NX_INVALID_ARGUMENT, "GridSample: unknown mode '" + mode + "'");
    std::string pad = info.attr_string("padding_mode", "zeros");
    if (pad == "zeros")
      pad_ = PadMode::kZeros;
    else if (pad == "border")
      pad_ = PadMode::kBorder;
    else if (pad == "reflection")
      pad_ = PadMode::kReflection;
    else
      ep::Fail(NX_INVALID_ARGUMENT, "GridSample: unknown padding_mode '" + pad + "'");
    align_corners_ = info.attr_int("align_corners", 0) != 0;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), grid = ctx.input(1);
    auto xs = x.shape();
    auto gs = grid.shape();
    NXRT_EP_ENFORCE(xs.size() >= 3, "GridSample: X must have rank >= 3, got " + DimsToString(xs));
    size_t r = xs.size() - 2;
    NXRT_EP_ENFORCE(gs.size() == r + 2 && gs[0] == xs[0] && gs[r + 1] == static_cast<int64_t>(r),
                    "GridSample: grid of shape " + DimsToString(gs) +
                        " does not match X of shape " + DimsToString(xs));
    NXRT_EP_ENFORCE(r <= 3, "GridSample: at most 3 spatial dimensions are supported");
    std::vector<int64_t> out_shape = {xs[0], xs[1]};
    for (size_t i = 1; i <= r; ++i) out_shape.push_back(gs[i]);
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      if (grid.type() == x.type()) {
        Run<T, T>(x.data<T>(), grid.data<T>(), y.data<T>(), xs, out_shape, ctx.threads());
      } else {
        DispatchFloat(grid.type(), [&]<class G>() {
          Run<T, G>(x.data<T>(), grid.data<G>(), y.data<T>(), xs, out_shape, ctx.threads());
        });
      }
    });
  }

 private:
  template <class T, class G>
  void Run(const T* x, const G* grid, T* y, std::span<const int64_t> xs,
           const std::vector<int64_t>& ys, int threads) const {
    using A = AccOf<T>;
    const size_t r = xs.size() - 2;
    const int64_t N = xs[0], C = xs[1];
    int64_t in_plane = 1, locations = 1;
    std::vector<int64_t> dims(xs.begin() + 2, xs.end()), stride(r, 1);
    for (size_t i = r; i-- > 0;) {
      stride[i] = in_plane;
      in_plane *= dims[i];
    }
    for (size_t i = 2; i < ys.size(); ++i) locations *= ys[i];
    const int per_dim = mode_ == SampleMode::kNearest ? 1 : (mode_ == SampleMode::kLinear ? 2 : 4);
    int taps = 1;
    for (size_t i = 0; i < r; ++i) taps *= per_dim;
    // Many small images (RAFT's correlation lookups: thousands of 1-channel planes sampled at
    // 9 x 9 points): the images, not their few locations, are split over the threads, each with
    // taps of its own.
    if (N >= 2 * threads && C * locations < 4096) {
      ParallelFor(threads, N, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C * locations)),
                  [&](int64_t n0, int64_t n1) {
                    std::vector<int64_t> off(static_cast<size_t>(locations * taps));
                    std::vector<A> wt(static_cast<size_t>(locations * taps));
                    for (int64_t n = n0; n < n1; ++n) {
                      const G* gn = grid + n * locations * static_cast<int64_t>(r);
                      for (int64_t l = 0; l < locations; ++l) {
                        BuildTaps<A, G>(gn + l * static_cast<int64_t>(r), dims, stride, per_dim,
                                        off.data() + l * taps, wt.data() + l * taps);
                      }
                      for (int64_t c = 0; c < C; ++c) {
                        const T* xc = x + (n * C + c) * in_plane;
                        T* yc = y + (n * C + c) * locations;
                        for (int64_t l = 0; l < locations; ++l) {
                          const int64_t* o = off.data() + l * taps;
                          const A* w = wt.data() + l * taps;
                          A v = 0;
                          for (int t = 0; t < taps; ++t) {
                            if (o[t] >= 0) v += w[t] * static_cast<A>(xc[o[t]]);
                          }
                          yc[l] = static_cast<T>(v);
                        }
                      }
                    }
                  });
      return;
    }
    std::vector<int64_t> offset(locations * taps);
    std::vector<A> weight(locations * taps);
    for (int64_t n = 0; n < N; ++n) {
      const G* gn = grid + n * locations * static_cast<int64_t>(r);
      ParallelFor(threads, locations, 256, [&](int64_t begin, int64_t end) {
        for (int64_t l = begin; l < end; ++l) {
          BuildTaps<A, G>(gn + l * static_cast<int64_t>(r), dims, stride, per_dim,
                          offset.data() + l * taps, weight.data() + l * taps);
        }
      });
      ParallelFor(threads, C * locations, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t cl = begin; cl < end; ++cl) {
          int64_t c = cl / locations, l = cl % locations;
          const T* xc = x + (n * C + c) * in_plane;
          const int64_t* off = offset.data() + l * taps;
          const A* w = weight.data() + l * taps;
          A v = 0;
          for (int t = 0; t < taps; ++t) {
            if (off[t] >= 0) v += w[t] * static_cast<A>(xc[off[t]]);
          }
          y[(n * C + c) * locations + l] = static_cast<T>(v);
        }
      });
    }
  }

  // Index along one axis for padding: -1 (reads zero) in zeros mode when outside.
  template <class A>
  int64_t PadIndex(int64_t i, int64_t dim, A lo, A hi) const {
    if (i >= 0 && i < dim) return i;
    switch (pad_) {
      case PadMode::kZeros:
        return -1;
      case PadMode::kBorder:
        return std::clamp<int64_t>(i, 0, dim - 1);
      case PadMode::kReflection: {
        int64_t j = static_cast<int64_t>(Reflect<A>(static_cast<A>(i), lo, hi));
        return std::clamp<int64_t>(j, 0, dim - 1);
      }
    }
    return -1;
  }

  template <class A, class G>
  void BuildTaps(const G* g, const std::vector<int64_t>& dims, const std::vector<int64_t>& stride,
                 int per_dim, int64_t* offset, A* weight) const {
    const size_t r = dims.size();
    int64_t idx[3][4];
    A w[3][4];
    for (size_t i = 0; i < r; ++i) {
      // grid components are in reverse axis order: the last spatial axis comes first.
      A nrm = static_cast<A>(static_cast<AccOf<G>>(g[r - 1 - i]));
      A dim = static_cast<A>(dims[i]);
      A v = align_corners_ ? (nrm + 1) / 2 * (dim - 1) : ((nrm + 1) * dim - 1) / 2;
      A lo = align_corners_ ? A(0) : A(-0.5);
      A hi = align_corners_ ? dim - 1 : dim - A(0.5);
      if (mode_ == SampleMode::kNearest) v = std::nearbyint(v);
      if (v < lo || v > hi) {
        // Cubic sampling with border padding clamps each tap instead of the coordinate (as
        // PyTorch and ONNX Runtime do), so the coordinate stays as is.
        if (pad_ == PadMode::kBorder && mode_ != SampleMode::kCubic) {
          v = std::clamp(v, A(0), dim - 1);
        } else if (pad_ == PadMode::kReflection) {
          v = Reflect(v, lo, hi);
        }
      }
      // Far outside the input every tap is outside too: pull the coordinate in to a place just
      // beyond the border so the index arithmetic below cannot overflow (NaN goes left).
      if (v > hi + 2) {
        v = hi + 3;
      } else if (!(v >= lo - 2)) {
        v = lo - 3;
      }
      if (mode_ == SampleMode::kNearest) {
        idx[i][0] = PadIndex<A>(static_cast<int64_t>(v), dims[i], lo, hi);
        w[i][0] = 1;
      } else if (mode_ == SampleMode::kLinear) {
        A f = std::floor(v);
        int64_t i0 = static_cast<int64_t>(f);
        A t = v - f;
        idx[i][0] = PadIndex<A>(i0, dims[i], lo, hi);
        idx[i][1] = PadIndex<A>(i0 + 1, dims[i], lo, hi);
        w[i][0] = 1 - t;
        w[i][1] = t;
      } else {
        A f = std::floor(v);
        int64_t i0 = static_cast<int64_t>(f);
        CubicCoeffs<A>(v - f, w[i]);
        for (int k = 0; k < 4; ++k) idx[i][k] = PadIndex<A>(i0 - 1 + k, dims[i], lo, hi);
      }
    }
    // Cartesian product of the per-axis taps; a tap outside (zeros padding) reads nothing.
    int total = 1;
    for (size_t i = 0; i < r; ++i) total *= per_dim;
    for (int t = 0; t < total; ++t) {
      int rest = t;
      int64_t off = 0;
      A wt = 1;
      bool outside = false;
      for (size_t i = r; i-- > 0;) {
        int k = rest % per_dim;
        rest /= per_dim;
        if (idx[i][k] < 0) outside = true;
        off += idx[i][k] * stride[i];
        wt *= w[i][k];
      }
      offset[t] = outside ? -1 : off;
      weight[t] = wt;
    }
  }

  SampleMode mode_ = SampleMode::kLinear;
  PadMode pad_ = PadMode::kZeros;
  bool align_corners_ = false;
};

}  // namespace

void RegisterGridSampleKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("GridSample").Versions(16).Build<GridSample>(registry);
}

}  // namespace nxrt::cpu::nn
