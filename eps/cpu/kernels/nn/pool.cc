// Windowed pooling: MaxPool (with the optional Indices output), AveragePool and LpPool over 1-3
// spatial axes. Each (batch, channel) plane is independent, so planes are spread over threads.
// Only the window taps that fall inside the input are visited, which makes padding free (no
// padded copy of the input). Without Indices the reduction is done separably, axis by axis;
// float MaxPool and AveragePool over 2-D planes without dilation take the vector bodies of
// pool_2d.h instead (one pass per output row, AVX2 or AVX-512 as the kernel's ISA says).
#include <cmath>
#include <limits>
#include <type_traits>

#include "common/cpu_features.h"
#include "common/parallel.h"
#include "kernels/nn/nn_common.h"
#include "kernels/nn/pool_2d.h"
#include "kernels/nn/pool_geometry.h"

namespace nxrt::cpu::nn {
namespace {

// Window taps of every output position along each of the three axes, computed once per call
// (they are the same for every plane).
struct WindowTable {
  std::vector<Taps> axis[3];
  explicit WindowTable(const PoolGeometry& g) {
    for (int a = 0; a < 3; ++a) {
      axis[a].resize(g.out[a]);
      for (int64_t o = 0; o < g.out[a]; ++o) {
        axis[a][o] = WindowTaps(o, g.s[a], g.pb[a], g.k[a], g.d[a], g.in[a]);
      }
    }
  }
};

// Calls fn(out_offset, t0, t1, t2) for every output position of one plane, in row-major order.
template <class Fn>
inline void ForEachWindow(const PoolGeometry& g, const WindowTable& w, Fn&& fn) {
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    const Taps& t0 = w.axis[0][o0];
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      const Taps& t1 = w.axis[1][o1];
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) fn(o, t0, t1, w.axis[2][o2]);
    }
  }
}

// Runs fn(plane) for every (batch, channel) plane, on several threads when the work is large.
template <class Fn>
inline void ForEachPlane(int threads, const PoolGeometry& g, Fn&& fn) {
  int64_t planes = g.batch * g.channels;
  int64_t work = std::max<int64_t>(1, g.out_plane() * g.window());
  int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / work);
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) fn(p);
  });
}

// Number of window taps along one axis that lie inside the explicitly padded input
// [-pb, in + pe); taps beyond it exist only because of ceil_mode and never count.
inline int64_t PaddedTaps(const Taps& t, int64_t k, int64_t d, int64_t in, int64_t pe) {
  int64_t limit = in + pe - 1 - t.start;
  if (limit < 0) return 0;
  return std::min(k, limit / d + 1);
}

template <class T>
using PoolAcc = std::conditional_t<kIsFloatLike<T>, AccOf<T>, T>;

// MaxPool with the Indices output: a direct scan of every window, tracking the first maximum.
template <class T>
void MaxPoolPlanes(const PoolGeometry& g, const T* x, T* y, int64_t* indices, bool column_major,
                   int threads) {
  using A = PoolAcc<T>;
  const A lowest = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                        : std::numeric_limits<A>::lowest();
  const int64_t in1 = g.in[1], in2 = g.in[2];
  const WindowTable table(g);
  ForEachPlane(threads, g, [&](int64_t p) {
    const T* xp = x + p * g.in_plane();
    T* yp = y + p * g.out_plane();
    int64_t base = p * g.in_plane();
    ForEachWindow(g, table, [&](int64_t o, const Taps& t0, const Taps& t1, const Taps& t2) {
      A best = lowest;
      int64_t best_at = -1;
      for (int64_t a = t0.first; a < t0.last; ++a) {
        int64_t p0 = t0.start + a * g.d[0];
        for (int64_t b = t1.first; b < t1.last; ++b) {
          int64_t p1 = t1.start + b * g.d[1];
          const T* row = xp + (p0 * in1 + p1) * in2;
          for (int64_t c = t2.first; c < t2.last; ++c) {
            int64_t p2 = t2.start + c * g.d[2];
            A v = static_cast<A>(row[p2]);
            if (v > best || best_at < 0) {
              best = v;
              best_at = (p0 * in1 + p1) * in2 + p2;
            }
          }
        }
      }
      yp[o] = static_cast<T>(best);
      int64_t at = best_at < 0 ? 0 : best_at;
      if (column_major) {
        // Column-major numbering of the spatial position: the last axis varies slowest.
        int64_t p2 = at % in2, p1 = (at / in2) % in1, p0 = at / (in1 * in2);
        at = (p2 * in1 + p1) * g.in[0] + p0;
      }
      indices[p * g.out_plane() + o] = base + at;
    });
  });
}

enum class PoolKind { kMax, kAverage, kLp };

// One reduction step of a separable pass.
template <PoolKind K, class A>
inline A Combine(A acc, A v) {
  if constexpr (K == PoolKind::kMax) {
    return v > acc ? v : acc;
  } else {
    return acc + v;
  }
}

// Pooling without indices is separable: reduce along the last axis first (per input row), then
// along the middle axis and the first axis with contiguous, vectorisable row operations. The
// result is the reduction of exactly the taps inside the input (padding never contributes).
template <PoolKind K, class T>
void SeparablePool(const PoolGeometry& g, const T* x, T* y, bool count_include_pad, double p_norm,
                   int threads) {
  using A = PoolAcc<T>;
  const A init = K == PoolKind::kMax
                     ? (std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                             : std::numeric_limits<A>::lowest())
                     : A(0);
  const WindowTable table(g);
  const int64_t in0 = g.in[0], in1 = g.in[1], in2 = g.in[2];
  const int64_t out0 = g.out[0], out1 = g.out[1], out2 = g.out[2];
  const A pw = static_cast<A>(p_norm);
  const bool p2 = p_norm == 2.0, p1 = p_norm == 1.0;
  // Per-axis divisors of the average (the window size factorises over the axes).
  std::vector<A> count[3];
  for (int a = 0; a < 3; ++a) {
    count[a].resize(g.out[a]);
    for (int64_t o = 0; o < g.out[a]; ++o) {
      const Taps& t = table.axis[a][o];
      int64_t c =
          count_include_pad ? PaddedTaps(t, g.k[a], g.d[a], g.in[a], g.pe[a]) : t.last - t.first;
      count[a][o] = static_cast<A>(c);
    }
  }
  const bool deep = !(in0 == 1 && out0 == 1 && g.k[0] == 1);  // 3-D: a third pass is needed
  // Outputs [inner_lo, inner_hi) of the last axis have windows entirely inside the input.
  int64_t inner_lo = 0, inner_hi = 0;
  {
    const auto& t2 = table.axis[2];
    while (inner_lo < out2 && !(t2[inner_lo].first == 0 && t2[inner_lo].last == g.k[2])) ++inner_lo;
    inner_hi = inner_lo;
    while (inner_hi < out2 && t2[inner_hi].first == 0 && t2[inner_hi].last == g.k[2]) ++inner_hi;
  }
  int64_t planes = g.batch * g.channels;
  int64_t work = std::max<int64_t>(1, g.in_plane() + g.out_plane() * g.window());
  int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / work);
  ParallelFor(threads, planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> rows(in0 * in1 * out2), mids(deep ? in0 * out1 * out2 : 0),
        result(out0 * out1 * out2);
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * g.in_plane();
      // Pass 1: along the last axis, for every input row. Border windows (clipped by the
      // padding) are reduced one by one; interior windows tap by tap across all outputs, which
      // keeps many independent reductions in flight.
      for (int64_t r = 0; r < in0 * in1; ++r) {
        const T* src = xp + r * in2;
        A* dst = rows.data() + r * out2;
        auto load = [&](int64_t i) {
          A v = static_cast<A>(src[i]);
          if constexpr (K == PoolKind::kLp) {
            v = std::abs(v);
            v = p2 ? v * v : (p1 ? v : static_cast<A>(std::pow(v, pw)));
          }
          return v;
        };
        for (int64_t o = 0; o < out2; ++o) {
          if (o == inner_lo && inner_lo < inner_hi) {
            std::fill(dst + inner_lo, dst + inner_hi, init);
            const int64_t s2 = g.s[2], start = table.axis[2][inner_lo].start;
            for (int64_t c = 0; c < g.k[2]; ++c) {
              const int64_t off = start + c * g.d[2];
              for (int64_t q = inner_lo; q < inner_hi; ++q) {
                dst[q] = Combine<K>(dst[q], load(off + (q - inner_lo) * s2));
              }
            }
            o = inner_hi - 1;
            continue;
          }
          const Taps& t = table.axis[2][o];
          A acc = init;
          for (int64_t c = t.first; c < t.last; ++c)
            acc = Combine<K>(acc, load(t.start + c * g.d[2]));
          dst[o] = acc;
        }
      }
      // Pass 2: along the middle axis (whole rows at a time).
      A* mid_out = deep ? mids.data() : result.data();
      for (int64_t i0 = 0; i0 < in0; ++i0) {
        for (int64_t o1 = 0; o1 < out1; ++o1) {
          const Taps& t = table.axis[1][o1];
          A* dst = mid_out + (i0 * out1 + o1) * out2;
          std::fill(dst, dst + out2, init);
          for (int64_t b = t.first; b < t.last; ++b) {
            const A* src = rows.data() + (i0 * in1 + t.start + b * g.d[1]) * out2;
            for (int64_t o = 0; o < out2; ++o) dst[o] = Combine<K>(dst[o], src[o]);
          }
        }
      }
      // Pass 3: along the first axis (3-D pooling only).
      if (deep) {
        const int64_t slab = out1 * out2;
        for (int64_t o0 = 0; o0 < out0; ++o0) {
          const Taps& t = table.axis[0][o0];
          A* dst = result.data() + o0 * slab;
          std::fill(dst, dst + slab, init);
          for (int64_t a = t.first; a < t.last; ++a) {
            const A* src = mids.data() + (t.start + a * g.d[0]) * slab;
            for (int64_t o = 0; o < slab; ++o) dst[o] = Combine<K>(dst[o], src[o]);
          }
        }
      }
      T* yp = y + p * g.out_plane();
      const A* res = result.data();
      for (int64_t o0 = 0; o0 < out0; ++o0) {
        for (int64_t o1 = 0; o1 < out1; ++o1) {
          int64_t base = (o0 * out1 + o1) * out2;
          if constexpr (K == PoolKind::kMax) {
            for (int64_t o = 0; o < out2; ++o) yp[base + o] = static_cast<T>(res[base + o]);
          } else if constexpr (K == PoolKind::kAverage) {
            A c01 = count[0][o0] * count[1][o1];
            for (int64_t o = 0; o < out2; ++o) {
              A c = c01 * count[2][o];
              yp[base + o] = static_cast<T>(c > A(0) ? res[base + o] / c : A(0));
            }
          } else {
            for (int64_t o = 0; o < out2; ++o) {
              A v = res[base + o];
              yp[base + o] = static_cast<T>(p2 ? std::sqrt(v)
                                               : (p1 ? v : static_cast<A>(std::pow(v, A(1) / pw))));
            }
          }
        }
      }
    }
  });
}

// Float pooling of 2-D planes without dilation on the vector bodies (pool_2d.h); false when
// the geometry is not one they take (the caller then runs the generic code).
bool TryPool2d(Pool2dOp op, const PoolGeometry& g, bool count_include_pad, const float* x, float* y,
               int threads, Isa isa) {
  if (g.spatial_rank != 2 || g.d[1] != 1 || g.d[2] != 1) return false;
  Pool2dPlane p;
  p.in_h = g.in[1];
  p.in_w = g.in[2];
  p.out_h = g.out[1];
  p.out_w = g.out[2];
  p.kernel_h = g.k[1];
  p.kernel_w = g.k[2];
  p.stride_h = g.s[1];
  p.stride_w = g.s[2];
  p.pad_top = g.pb[1];
  p.pad_left = g.pb[2];
  p.pad_bottom = g.pe[1];
  p.pad_right = g.pe[2];
  p.count_include_pad = count_include_pad;
  if (!Pool2dSupported(p)) return false;
  p.row_buffer = Pool2dRowBufferPays(p);
  const auto body = isa == Isa::kAvx512 ? Pool2dPlanesAvx512 : Pool2dPlanesAvx2;
  const int64_t in_plane = g.in_plane(), out_plane = g.out_plane();
  const size_t scratch_floats = static_cast<size_t>(Pool2dScratchFloats(p));
  // Chunks of about 2^16 window taps (measured on SqueezeNet's MaxPools at 2 threads: 2^18
  // left the 13x13 one in 2 chunks, 27 us against 22; the generic code used 2^15).
  const int64_t work = std::max<int64_t>(1, out_plane * g.window());
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / work);
  ParallelFor(threads, g.batch * g.channels, grain, [&](int64_t begin, int64_t end) {
    // The row buffer, per thread; it only grows (no allocation once a model has run).
    thread_local std::vector<float> scratch;
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    body(op, p, x + begin * in_plane, y + begin * out_plane, end - begin, scratch.data());
  });
  return true;
}

class MaxPool : public ep::Kernel {
 public:
  explicit MaxPool(const ep::KernelInfo& info)
      : attrs_(info),
        column_major_(info.attr_int("storage_order", 0) != 0),
        want_indices_(info.output_count() > 1 && info.output(1).present()),
        isa_(KernelIsa(info)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    PoolGeometry g = ResolvePool(attrs_, x.shape());
    ep::Tensor y = ctx.output(0, g.out_shape, x.type());
    int64_t* indices = nullptr;
    if (want_indices_) {
      indices = ctx.output(1, g.out_shape, NX_TYPE_INT64).data<int64_t>();
    }
    if (indices == nullptr && x.type() == NX_TYPE_FLOAT &&
        TryPool2d(Pool2dOp::kMax, g, false, x.data<float>(), y.data<float>(), ctx.threads(),
                  isa_)) {
      return;
    }
    auto run = [&]<class T>() {
      if (indices == nullptr) {
        SeparablePool<PoolKind::kMax, T>(g, x.data<T>(), y.data<T>(), false, 1.0, ctx.threads());
      } else {
        MaxPoolPlanes<T>(g, x.data<T>(), y.data<T>(), indices, column_major_, ctx.threads());
      }
    };
    switch (x.type()) {
      case NX_TYPE_INT8:
        run.template operator()<int8_t>();
        break;
      case NX_TYPE_UINT8:
        run.template operator()<uint8_t>();
        break;
      default:
        DispatchFloat(x.type(), run);
    }
  }

 private:
  PoolAttributes attrs_;
  bool column_major_;
  bool want_indices_;
  Isa isa_;
};

class AveragePool : public ep::Kernel {
 public:
  explicit AveragePool(const ep::KernelInfo& info)
      : attrs_(info),
        count_include_pad_(info.attr_int("count_include_pad", 0) != 0),
        isa_(KernelIsa(info)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    PoolGeometry g = ResolvePool(attrs_, x.shape());
    ep::Tensor y = ctx.output(0, g.out_shape, x.type());
    if (x.type() == NX_TYPE_FLOAT &&
        TryPool2d(Pool2dOp::kAverage, g, count_include_pad_, x.data<float>(), y.data<float>(),
                  ctx.threads(), isa_)) {
      return;
    }
    DispatchFloat(x.type(), [&]<class T>() {
      SeparablePool<PoolKind::kAverage, T>(g, x.data<T>(), y.data<T>(), count_include_pad_, 1.0,
                                           ctx.threads());
    });
  }

 private:
  PoolAttributes attrs_;
  bool count_include_pad_;
  Isa isa_;
};

class LpPool : public ep::Kernel {
 public:
  explicit LpPool(const ep::KernelInfo& info) : attrs_(info) {
    // Opset 1 declared p as a float; later opsets as an int.
    const NxAttribute* a = info.attr("p");
    if (a != nullptr && ep::Host().Attribute_GetType(a) == NX_ATTR_FLOAT) {
      p_ = ep::Host().Attribute_GetFloat(a);
    } else {
      p_ = static_cast<double>(info.attr_int("p", 2));
    }
    NXRT_EP_ENFORCE(p_ > 0, "LpPool: p must be positive");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    PoolGeometry g = ResolvePool(attrs_, x.shape());
    ep::Tensor y = ctx.output(0, g.out_shape, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      SeparablePool<PoolKind::kLp, T>(g, x.data<T>(), y.data<T>(), false, p_, ctx.threads());
    });
  }

 private:
  PoolAttributes attrs_;
  double p_ = 2.0;
};

}  // namespace

void RegisterPoolKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MaxPool").Versions(1).Build<MaxPool>(registry);
  ep::KernelDefBuilder("AveragePool").Versions(1).Build<AveragePool>(registry);
  ep::KernelDefBuilder("LpPool").Versions(1).Build<LpPool>(registry);
}

}  // namespace nxrt::cpu::nn
