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
    std::vector<int64_t> dims(xs.begin() + 2, xs.end()), stride(r, 1);
    int64_t in_plane = 1;
    for (size_t i = r; i-- > 0;) {
      stride[i] = in_plane;
      in_plane *= dims[i];
    }
    if (in_plane == 0) {  // no pixels to sample (a zero-sized spatial axis): every tap outside
      int64_t count = 1;
      for (int64_t d : ys) count *= d;
      std::fill(y, y + count, T(0));
      return;
    }
    const int per_dim = mode_ == SampleMode::kNearest ? 1 : (mode_ == SampleMode::kLinear ? 2 : 4);
    int taps = 1;
    for (size_t i = 0; i < r; ++i) taps *= per_dim;
    if (r == 2 && mode_ == SampleMode::kLinear && pad_ != PadMode::kReflection &&
        in_plane < (int64_t{1} << 31)) {
      if (pad_ == PadMode::kBorder) {
        SampleBilinear<true, T, G>(x, grid, y, xs, ys, threads);
      } else {
        SampleBilinear<false, T, G>(x, grid, y, xs, ys, threads);
      }
      return;
    }
    Sample<T, G>(x, grid, y, xs, ys, taps, threads, [&](const G* g, int64_t* off, A* wt) {
      BuildTaps<A, G>(g, dims, stride, per_dim, off, wt);
    });
  }

  static constexpr int64_t kTile = 64;  // locations whose taps are found at once
  static constexpr int kMaxTaps = 64;   // bicubic in 3-D: 4 x 4 x 4

  // Cuts the N x `locations` output points into tiles of up to kTile locations of one image and
  // runs fn(n, first location, count) for each, the tiles split over the threads: RAFT samples
  // thousands of 1-channel planes at 7 x 7 points, a segmentation head a few many-channel maps
  // at many.
  template <class Fn>
  static void ForEachTile(int64_t N, int64_t locations, int64_t location_cost, int threads,
                          Fn&& fn) {
    if (N == 0 || locations == 0) return;
    const int64_t tiles_per_image = (locations + kTile - 1) / kTile;
    const int64_t tile_cost = std::min(locations, kTile) * location_cost;
    const int64_t grain =
        std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, tile_cost));
    ParallelFor(threads, N * tiles_per_image, grain, [&](int64_t begin, int64_t end) {
      for (int64_t tile = begin; tile < end; ++tile) {
        const int64_t l0 = tile % tiles_per_image * kTile;
        fn(tile / tiles_per_image, l0, std::min(kTile, locations - l0));
      }
    });
  }

  // Bilinear sampling of planes with zeros or border padding, the case models run (RAFT's
  // correlation lookups, spatial transformers), in loops the compiler vectorises: the
  // coordinates of a tile first, then per channel the four taps of every location, read at
  // clamped indices and selected (an outside tap reads zero; a select, not a zero weight, so
  // that an Inf or NaN elsewhere cannot leak in). RAFT-small's 48 lookups took 14.8 of its 78 ms
  // at one thread on Zen 4 through the general taps, 7.7 ms with branch-free general taps.
  template <bool kBorder, class T, class G>
  void SampleBilinear(const T* x, const G* grid, T* y, std::span<const int64_t> xs,
                      const std::vector<int64_t>& ys, int threads) const {
    using A = AccOf<T>;
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    const int64_t locations = ys[2] * ys[3];
    if (C == 0) return;
    const A last_x = static_cast<A>(W - 1), last_y = static_cast<A>(H - 1);
    const bool align = align_corners_;
    // The pixel coordinate along an axis of `last` + 1 pixels: clamped with border padding;
    // far outside (every tap outside) pulled in so the index cannot overflow, NaN to the left.
    auto pixel = [align](A nrm, A last) {
      A v = align ? (nrm + 1) / 2 * last : ((nrm + 1) * (last + 1) - 1) / 2;
      if constexpr (kBorder) v = std::min(std::max(v, A(0)), last);
      v = v >= A(-2) ? v : A(-3);
      return v <= last + 2 ? v : last + 3;
    };
    ForEachTile(N, locations, 20 + 8 * C, threads, [&](int64_t n, int64_t l0, int64_t count) {
      int32_t x0[kTile], y0[kTile];
      A tx[kTile], ty[kTile];
      const G* g = grid + (n * locations + l0) * 2;
      for (int64_t l = 0; l < count; ++l) {
        const A px = pixel(static_cast<A>(static_cast<AccOf<G>>(g[2 * l])), last_x);
        const A py = pixel(static_cast<A>(static_cast<AccOf<G>>(g[2 * l + 1])), last_y);
        const A fx = std::floor(px), fy = std::floor(py);
        x0[l] = static_cast<int32_t>(fx);
        y0[l] = static_cast<int32_t>(fy);
        tx[l] = px - fx;
        ty[l] = py - fy;
      }
      const auto w = static_cast<int32_t>(W), h = static_cast<int32_t>(H);
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = x + (n * C + c) * H * W;
        T* yc = y + (n * C + c) * locations + l0;
        for (int64_t l = 0; l < count; ++l) {
          const int32_t ax = x0[l], ay = y0[l];
          const int32_t cx0 = std::clamp(ax, 0, w - 1), cx1 = std::clamp(ax + 1, 0, w - 1);
          const int32_t cy0 = std::clamp(ay, 0, h - 1), cy1 = std::clamp(ay + 1, 0, h - 1);
          A v00 = static_cast<A>(xc[cy0 * w + cx0]), v01 = static_cast<A>(xc[cy0 * w + cx1]);
          A v10 = static_cast<A>(xc[cy1 * w + cx0]), v11 = static_cast<A>(xc[cy1 * w + cx1]);
          if constexpr (!kBorder) {
            const bool in_x0 = ax >= 0 && ax < w, in_x1 = ax + 1 >= 0 && ax + 1 < w;
            const bool in_y0 = ay >= 0 && ay < h, in_y1 = ay + 1 >= 0 && ay + 1 < h;
            v00 = in_y0 && in_x0 ? v00 : A(0);
            v01 = in_y0 && in_x1 ? v01 : A(0);
            v10 = in_y1 && in_x0 ? v10 : A(0);
            v11 = in_y1 && in_x1 ? v11 : A(0);
          }
          const A top = (1 - tx[l]) * v00 + tx[l] * v01;
          const A bottom = (1 - tx[l]) * v10 + tx[l] * v11;
          yc[l] = static_cast<T>((1 - ty[l]) * top + ty[l] * bottom);
        }
      }
    });
  }

  // Samples every channel at every output location, tile by tile: `build` finds a location's
  // taps (input offset, weight; offset -1 reads zero) once for all channels.
  template <class T, class G, class Build>
  void Sample(const T* x, const G* grid, T* y, std::span<const int64_t> xs,
              const std::vector<int64_t>& ys, int taps, int threads, Build&& build) const {
    using A = AccOf<T>;
    const int64_t r = static_cast<int64_t>(xs.size()) - 2;
    const int64_t N = xs[0], C = xs[1];
    int64_t in_plane = 1, locations = 1;
    for (size_t i = 2; i < xs.size(); ++i) in_plane *= xs[i];
    for (size_t i = 2; i < ys.size(); ++i) locations *= ys[i];
    if (C == 0) return;
    // About 30 operations to find a location's taps, then one multiply-add per tap and channel.
    ForEachTile(N, locations, 30 + C * taps, threads, [&](int64_t n, int64_t l0, int64_t count) {
      int64_t off[kTile * kMaxTaps];
      A wt[kTile * kMaxTaps];
      const G* gn = grid + (n * locations + l0) * r;
      for (int64_t l = 0; l < count; ++l) build(gn + l * r, off + l * taps, wt + l * taps);
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = x + (n * C + c) * in_plane;
        T* yc = y + (n * C + c) * locations + l0;
        for (int64_t l = 0; l < count; ++l) {
          const int64_t* o = off + l * taps;
          const A* w = wt + l * taps;
          A v = 0;
          for (int t = 0; t < taps; ++t) {
            if (o[t] >= 0) v += w[t] * static_cast<A>(xc[o[t]]);
          }
          yc[l] = static_cast<T>(v);
        }
      }
    });
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

  // The pixel coordinate of the normalised coordinate `g` along an axis of `dim_size` pixels,
  // after the padding mode's clamping or reflection; [lo, hi] is the range it may take inside.
  template <class A, class G>
  A Coordinate(G g, int64_t dim_size, A& lo, A& hi) const {
    A nrm = static_cast<A>(static_cast<AccOf<G>>(g));
    A dim = static_cast<A>(dim_size);
    A v = align_corners_ ? (nrm + 1) / 2 * (dim - 1) : ((nrm + 1) * dim - 1) / 2;
    lo = align_corners_ ? A(0) : A(-0.5);
    hi = align_corners_ ? dim - 1 : dim - A(0.5);
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
    // beyond the border so the index arithmetic of the taps cannot overflow (NaN goes left).
    if (v > hi + 2) {
      v = hi + 3;
    } else if (!(v >= lo - 2)) {
      v = lo - 3;
    }
    return v;
  }

  // The two taps of linear sampling along one axis: indices (-1: outside, reads zero) and
  // weights.
  template <class A, class G>
  void LinearTaps(G g, int64_t dim_size, int64_t* idx, A* w) const {
    A lo, hi;
    A v = Coordinate<A, G>(g, dim_size, lo, hi);
    A f = std::floor(v);
    int64_t i0 = static_cast<int64_t>(f);
    A t = v - f;
    idx[0] = PadIndex<A>(i0, dim_size, lo, hi);
    idx[1] = PadIndex<A>(i0 + 1, dim_size, lo, hi);
    w[0] = 1 - t;
    w[1] = t;
  }

  // The taps along one axis for the normalised coordinate `g`: 1, 2 or 4 indices and their
  // weights, by mode.
  template <class A, class G>
  void AxisTaps(G g, int64_t dim_size, int64_t* idx, A* w) const {
    if (mode_ == SampleMode::kLinear) return LinearTaps<A, G>(g, dim_size, idx, w);
    A lo, hi;
    A v = Coordinate<A, G>(g, dim_size, lo, hi);
    if (mode_ == SampleMode::kNearest) {
      idx[0] = PadIndex<A>(static_cast<int64_t>(v), dim_size, lo, hi);
      w[0] = 1;
    } else {
      A f = std::floor(v);
      int64_t i0 = static_cast<int64_t>(f);
      CubicCoeffs<A>(v - f, w);
      for (int k = 0; k < 4; ++k) idx[k] = PadIndex<A>(i0 - 1 + k, dim_size, lo, hi);
    }
  }

  template <class A, class G>
  void BuildTaps(const G* g, const std::vector<int64_t>& dims, const std::vector<int64_t>& stride,
                 int per_dim, int64_t* offset, A* weight) const {
    const size_t r = dims.size();
    int64_t idx[3][4];
    A w[3][4];
    // grid components are in reverse axis order: the last spatial axis comes first.
    for (size_t i = 0; i < r; ++i) AxisTaps<A, G>(g[r - 1 - i], dims[i], idx[i], w[i]);
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
