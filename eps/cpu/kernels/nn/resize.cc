// Resize (opsets 10-19) and the older Upsample (opsets 1-9).
//
// Nearest mode is a pure gather (any element type): every output element copies one input
// element chosen per axis. Linear and cubic modes are separable: one 1-D weighted pass per
// resized axis, computed in float (double for double and integer inputs).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"
#include "kernels/nn/resize_plan.h"

namespace nxrt::cpu::nn {
namespace {

// Integer inputs interpolate in double so that rounding the result matches exact arithmetic.
template <class T>
using ResizeAcc =
    std::conditional_t<std::is_same_v<T, double> || std::is_integral_v<T>, double, float>;

// Converts an accumulated value to the element type; integers round and saturate.
template <class T, class A>
inline T ConvertOut(A v) {
  if constexpr (std::is_integral_v<T>) {
    A r = std::nearbyint(v);
    if (!(r >= static_cast<A>(std::numeric_limits<T>::lowest())))
      return std::numeric_limits<T>::lowest();
    if (r >= static_cast<A>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return static_cast<T>(v);
  }
}

// How often the last axis's index table repeats each source element in order (index[i] ==
// i / r for every i, as an integer nearest upscale by r with the floor or asymmetric rules
// makes): r, or 0 for any other table. 1 is a plain copy.
int64_t RepeatFactor(const std::vector<int64_t>& index) {
  const int64_t n = static_cast<int64_t>(index.size());
  int64_t r = 1;
  while (r < n && index[static_cast<size_t>(r)] == 0) ++r;
  if (n == 0 || index[0] != 0 || n % r != 0) return 0;
  for (int64_t i = 0; i < n; ++i)
    if (index[static_cast<size_t>(i)] != i / r) return 0;
  return r;
}

// out[2i] = out[2i + 1] = in[i] for i < n: the rows of a nearest 2x upscale (feature pyramids).
// 4-byte elements go four at a time (SSE2, in every x86-64); a plain loop did not vectorise.
template <class U>
void RepeatTwice(const U* in, U* out, int64_t n) {
  int64_t i = 0;
  if constexpr (sizeof(U) == 4) {
    for (; i + 4 <= n; i += 4) {
      const __m128 v = _mm_loadu_ps(reinterpret_cast<const float*>(in + i));
      _mm_storeu_ps(reinterpret_cast<float*>(out + 2 * i), _mm_unpacklo_ps(v, v));
      _mm_storeu_ps(reinterpret_cast<float*>(out + 2 * i + 4), _mm_unpackhi_ps(v, v));
    }
  }
  for (; i < n; ++i) out[2 * i] = out[2 * i + 1] = in[i];
}

// Per-axis source index tables for nearest mode (identity for axes that are not resized).
void NearestGather(const uint8_t* x, uint8_t* y, size_t elem, std::span<const int64_t> in_shape,
                   const std::vector<int64_t>& out_shape, const std::vector<AxisPlan*>& plans,
                   const void* extrapolation_bytes, int threads) {
  size_t rank = out_shape.size();
  std::vector<std::vector<int64_t>> index(rank);
  std::vector<const uint8_t*> extrap(rank, nullptr);
  for (size_t d = 0; d < rank; ++d) {
    if (plans[d] != nullptr) {
      index[d] = plans[d]->index;
      if (!plans[d]->extrapolated.empty()) extrap[d] = plans[d]->extrapolated.data();
    } else {
      index[d].resize(out_shape[d]);
      for (int64_t i = 0; i < out_shape[d]; ++i) index[d][i] = i;
    }
  }
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * in_shape[d];
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t& v : index[d]) v *= stride[d];  // element offsets
  }
  int64_t inner = rank ? out_shape[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= out_shape[d];
  if (inner == 0 || rows == 0) return;
  const std::vector<int64_t>& last = index[rank - 1];
  const uint8_t* last_ext = extrap[rank - 1];
  const int64_t repeat = last_ext == nullptr ? RepeatFactor(last) : 0;
  int64_t grain = std::max<int64_t>(1, 4096 / inner);
  auto copy = [&](auto tag, int64_t begin, int64_t end) {
    using U = decltype(tag);
    const U* src = reinterpret_cast<const U*>(x);
    U* dst = reinterpret_cast<U*>(y);
    U fill;
    std::memcpy(&fill, extrapolation_bytes, sizeof(U));
    std::vector<int64_t> idx(rank, 0);
    int64_t rest = begin;
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = rest % out_shape[d];
      rest /= out_shape[d];
    }
    // The row written last and the input row it came from: an upscaled row repeats it.
    const U* previous_in = nullptr;
    const U* previous_out = nullptr;
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = 0;
      bool ext = false;
      for (size_t d = 0; d + 1 < rank; ++d) {
        base += index[d][idx[d]];
        if (extrap[d] != nullptr && extrap[d][idx[d]]) ext = true;
      }
      U* out = dst + row * inner;
      if (ext) {
        std::fill(out, out + inner, fill);
        previous_in = nullptr;
      } else if (last_ext != nullptr) {
        for (int64_t i = 0; i < inner; ++i) out[i] = last_ext[i] ? fill : src[base + last[i]];
      } else {
        const U* in = src + base;
        if (in == previous_in) {
          std::memcpy(out, previous_out, static_cast<size_t>(inner) * sizeof(U));
        } else if (repeat == 1) {
          std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(U));
        } else if (repeat == 2) {
          RepeatTwice(in, out, inner / 2);
        } else if (repeat > 2) {
          for (int64_t i = 0; i < inner / repeat; ++i) std::fill_n(out + i * repeat, repeat, in[i]);
        } else {
          for (int64_t i = 0; i < inner; ++i) out[i] = in[last[i]];
        }
        previous_in = in;
        previous_out = out;
      }
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < out_shape[d]) break;
        idx[d] = 0;
      }
    }
  };
  ParallelFor(threads, rows, grain, [&](int64_t begin, int64_t end) {
    switch (elem) {
      case 1:
        copy(uint8_t{}, begin, end);
        break;
      case 2:
        copy(uint16_t{}, begin, end);
        break;
      case 4:
        copy(uint32_t{}, begin, end);
        break;
      case 8:
        copy(uint64_t{}, begin, end);
        break;
      default:
        copy(Bytes16{}, begin, end);
        break;
    }
  });
}

// One separable pass along plan.axis: src is [outer, in, inner], dst is [outer, out, inner].
template <class In, class Out, class A>
void WeightedPass(const In* src, Out* dst, int64_t outer, int64_t inner, const AxisPlan& plan,
                  A extrapolation, int threads) {
  const int64_t in_len = plan.in, out_len = plan.out;
  const int taps = plan.taps;
  std::vector<A> w(plan.weight.begin(), plan.weight.end());
  const bool has_ext = !plan.extrapolated.empty();
  if (inner == 1) {
    // Resizing the innermost axis: each output is a short dot product over gathered inputs.
    int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_len * taps));
    ParallelFor(threads, outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const In* s = src + b * in_len;
        Out* d = dst + b * out_len;
        const int64_t* ix = plan.index.data();
        const A* wt = w.data();
        if (taps == 2 && !has_ext) {
          for (int64_t o = 0; o < out_len; ++o) {
            d[o] = ConvertOut<Out>(wt[2 * o] * static_cast<A>(s[ix[2 * o]]) +
                                   wt[2 * o + 1] * static_cast<A>(s[ix[2 * o + 1]]));
          }
          continue;
        }
        for (int64_t o = 0; o < out_len; ++o) {
          if (has_ext && plan.extrapolated[o]) {
            d[o] = ConvertOut<Out>(extrapolation);
            continue;
          }
          A v = 0;
          for (int t = 0; t < taps; ++t)
            v += wt[o * taps + t] * static_cast<A>(s[ix[o * taps + t]]);
          d[o] = ConvertOut<Out>(v);
        }
      }
    });
    return;
  }
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner * taps));
  ParallelFor(threads, outer * out_len, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(std::is_same_v<Out, A> ? 0 : inner);
    int64_t b = begin / out_len, o = begin % out_len;
    for (int64_t bo = begin; bo < end; ++bo) {
      Out* d = dst + bo * inner;
      if (has_ext && plan.extrapolated[o]) {
        for (int64_t i = 0; i < inner; ++i) d[i] = ConvertOut<Out>(extrapolation);
      } else {
        const In* s = src + b * in_len * inner;
        const int64_t* ix = plan.index.data() + o * taps;
        const A* wt = w.data() + o * taps;
        // Accumulate straight into the output when it has the accumulation type.
        A* a;
        if constexpr (std::is_same_v<Out, A>) {
          a = d;
        } else {
          a = acc.data();
        }
        {
          const In* row = s + ix[0] * inner;
          const A wv = wt[0];
          for (int64_t i = 0; i < inner; ++i) a[i] = wv * static_cast<A>(row[i]);
        }
        for (int t = 1; t < taps; ++t) {
          const A wv = wt[t];
          if (wv == A(0)) continue;
          const In* row = s + ix[t] * inner;
          for (int64_t i = 0; i < inner; ++i) a[i] += wv * static_cast<A>(row[i]);
        }
        if constexpr (!std::is_same_v<Out, A>) {
          for (int64_t i = 0; i < inner; ++i) d[i] = ConvertOut<Out>(a[i]);
        }
      }
      if (++o == out_len) {
        o = 0;
        ++b;
      }
    }
  });
}

template <class T>
void Interpolate(const T* x, T* y, std::span<const int64_t> in_shape,
                 const std::vector<AxisPlan*>& order, double extrapolation, int threads) {
  using A = ResizeAcc<T>;
  std::vector<int64_t> shape(in_shape.begin(), in_shape.end());
  std::vector<A> cur, next;
  const A ext = static_cast<A>(extrapolation);
  for (size_t k = 0; k < order.size(); ++k) {
    const AxisPlan& p = *order[k];
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < p.axis; ++d) outer *= shape[d];
    for (size_t d = p.axis + 1; d < shape.size(); ++d) inner *= shape[d];
    bool first = k == 0, last = k + 1 == order.size();
    if (last) {
      if (first) {
        WeightedPass<T, T, A>(x, y, outer, inner, p, ext, threads);
      } else {
        WeightedPass<A, T, A>(cur.data(), y, outer, inner, p, ext, threads);
      }
    } else {
      next.resize(outer * p.out * inner);
      if (first) {
        WeightedPass<T, A, A>(x, next.data(), outer, inner, p, ext, threads);
      } else {
        WeightedPass<A, A, A>(cur.data(), next.data(), outer, inner, p, ext, threads);
      }
      cur.swap(next);
    }
    shape[p.axis] = p.out;
  }
}

class Resize : public ep::Kernel {
 public:
  explicit Resize(const ep::KernelInfo& info) {
    op_ = info.op_type();
    opset_ = info.opset();
    upsample_ = op_ == "Upsample";
    std::string mode = info.attr_string("mode", "nearest");
    if (mode == "nearest") {
      opt_.mode = ResizeMode::kNearest;
    } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
      opt_.mode = ResizeMode::kLinear;
    } else if (mode == "cubic" || mode == "bicubic") {
      opt_.mode = ResizeMode::kCubic;
    } else {
      ep::Fail(NX_INVALID_ARGUMENT, op_ + ": unknown mode '" + mode + "'");
    }
    if (upsample_ || opset_ < 11) {
      // Upsample and Resize-10 map coordinates asymmetrically.
      opt_.coord = CoordMode::kAsymmetric;
      opt_.nearest = NearestMode::kSimple;
    } else {
      std::string c = info.attr_string("coordinate_transformation_mode", "half_pixel");
      std::optional<CoordMode> coord = CoordModeNamed(c);
      if (!coord)
        ep::Fail(NX_INVALID_ARGUMENT, op_ + ": unknown coordinate_transformation_mode '" + c + "'");
      opt_.coord = *coord;
      std::string n = info.attr_string("nearest_mode", "round_prefer_floor");
      std::optional<NearestMode> nearest = NearestModeNamed(n);
      if (!nearest) ep::Fail(NX_INVALID_ARGUMENT, op_ + ": unknown nearest_mode '" + n + "'");
      opt_.nearest = *nearest;
      opt_.cubic_a = info.attr_float("cubic_coeff_a", -0.75f);
      opt_.exclude_outside = info.attr_int("exclude_outside", 0) != 0;
      opt_.extrapolation = info.attr_float("extrapolation_value", 0.0f);
      opt_.antialias = info.attr_int("antialias", 0) != 0;
      axes_ = info.attr_ints("axes");
      keep_aspect_ = info.attr_string("keep_aspect_ratio_policy", "stretch");
      NXRT_EP_ENFORCE(keep_aspect_ == "stretch" || keep_aspect_ == "not_larger" ||
                          keep_aspect_ == "not_smaller",
                      op_ + ": unknown keep_aspect_ratio_policy '" + keep_aspect_ + "'");
    }
    if (upsample_ && opset_ < 9) {
      std::vector<float> s = info.attr_floats("scales");
      if (s.empty() && (info.has_attr("height_scale") || info.has_attr("width_scale"))) {
        s = {1.0f, 1.0f, info.attr_float("height_scale", 1.0f),
             info.attr_float("width_scale", 1.0f)};
      }
      attr_scales_.assign(s.begin(), s.end());
      NXRT_EP_ENFORCE(!attr_scales_.empty(), "Upsample: attribute scales is required");
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto in_shape = x.shape();
    size_t rank = in_shape.size();
    std::vector<double> scales, roi;
    std::vector<int64_t> sizes;
    if (upsample_ && opset_ < 9) {
      scales = attr_scales_;
    } else if (upsample_ || opset_ < 11) {
      scales = ReadDoubles(ctx.input(1), "scales");
    } else {
      if (auto r = ctx.optional_input(1); r && r->size() > 0) roi = ReadDoubles(*r, "roi");
      if (auto s = ctx.optional_input(2); s && s->size() > 0) scales = ReadDoubles(*s, "scales");
      if (auto z = ctx.optional_input(3); z && z->size() > 0) sizes = ReadInt64s(*z, "sizes");
    }
    NXRT_EP_ENFORCE(scales.empty() != sizes.empty(),
                    op_ + ": exactly one of scales and sizes must be given");
    // Axes the scales/sizes/roi refer to.
    std::vector<size_t> axes;
    if (axes_.empty()) {
      for (size_t d = 0; d < rank; ++d) axes.push_back(d);
    } else {
      for (int64_t a : axes_) {
        axes.push_back(static_cast<size_t>(NormalizeAxis(a, static_cast<int64_t>(rank), "Resize")));
      }
    }
    size_t n = axes.size();
    size_t given = scales.empty() ? sizes.size() : scales.size();
    NXRT_EP_ENFORCE(given == n, op_ + ": scales/sizes has " + std::to_string(given) +
                                    " values, expected " + std::to_string(n) + " for input shape " +
                                    DimsToString(in_shape));
    std::vector<double> scale(rank, 1.0), roi_start(rank, 0.0), roi_end(rank, 1.0);
    std::vector<int64_t> out_shape(in_shape.begin(), in_shape.end());
    if (!roi.empty()) {
      NXRT_EP_ENFORCE(roi.size() == 2 * n, op_ + ": roi must have 2 values per resized axis");
      for (size_t i = 0; i < n; ++i) {
        roi_start[axes[i]] = roi[i];
        roi_end[axes[i]] = roi[n + i];
      }
    }
    if (!scales.empty()) {
      for (size_t i = 0; i < n; ++i) {
        NXRT_EP_ENFORCE(scales[i] > 0 && std::isfinite(scales[i]),
                        op_ + ": scales must be positive and finite");
        scale[axes[i]] = scales[i];
        double out = std::floor(scales[i] * static_cast<double>(in_shape[axes[i]]));
        NXRT_EP_ENFORCE(out < 9.0e15, op_ + ": scales give an output that is too large");
        out_shape[axes[i]] = static_cast<int64_t>(out);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        NXRT_EP_ENFORCE(sizes[i] >= 0, op_ + ": sizes must be non-negative");
        NXRT_EP_ENFORCE(in_shape[axes[i]] > 0 || sizes[i] == 0,
                        op_ + ": cannot resize an empty axis to a non-empty one");
      }
      if (keep_aspect_ == "stretch") {
        for (size_t i = 0; i < n; ++i) {
          out_shape[axes[i]] = sizes[i];
          if (in_shape[axes[i]] > 0) {
            scale[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in_shape[axes[i]]);
          }
        }
      } else {
        double s = keep_aspect_ == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
        for (size_t i = 0; i < n; ++i) {
          double r = static_cast<double>(sizes[i]) / static_cast<double>(in_shape[axes[i]]);
          s = keep_aspect_ == "not_larger" ? std::min(s, r) : std::max(s, r);
        }
        NXRT_EP_ENFORCE(std::isfinite(s) && s > 0,
                        op_ + ": sizes give no valid aspect-preserving scale");
        for (size_t i = 0; i < n; ++i) {
          scale[axes[i]] = s;
          out_shape[axes[i]] =
              static_cast<int64_t>(s * static_cast<double>(in_shape[axes[i]]) + 0.5);
        }
      }
    }
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    if (ShapeProduct(out_shape) == 0) return;
    NXRT_EP_ENFORCE(ShapeProduct(in_shape) > 0, op_ + ": cannot resize an empty input");

    // Plans for the axes that actually change, in the order the axes were given.
    std::vector<AxisPlan> plans;
    plans.reserve(rank);
    std::vector<AxisPlan*> by_axis(rank, nullptr);
    for (size_t d : axes) {
      bool identity =
          out_shape[d] == in_shape[d] && scale[d] == 1.0 &&
          (opt_.coord != CoordMode::kTfCropAndResize || (roi_start[d] == 0.0 && roi_end[d] == 1.0));
      if (identity || by_axis[d] != nullptr) continue;
      plans.push_back(
          MakeAxisPlan(opt_, d, in_shape[d], out_shape[d], scale[d], roi_start[d], roi_end[d]));
      by_axis[d] = &plans.back();
    }
    std::vector<AxisPlan*> order;
    for (auto& p : plans) order.push_back(&p);
    size_t elem = ElementSize(x.type());
    if (order.empty()) {
      NXRT_EP_ENFORCE(elem > 0, op_ + ": unsupported element type");
      std::memcpy(y.mutable_raw(), x.raw(), x.size() * elem);
      return;
    }
    if (opt_.mode == ResizeMode::kNearest) {
      NXRT_EP_ENFORCE(
          elem > 0, op_ + ": element type " + ep::ElementTypeName(x.type()) + " is not supported");
      alignas(16) uint8_t fill[16] = {};
      DispatchNumericOrBool(x.type(), [&]<class T>() {
        T v = ConvertOut<T>(opt_.extrapolation);
        std::memcpy(fill, &v, sizeof(T));
      });
      NearestGather(static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y.mutable_raw()),
                    elem, in_shape, out_shape, by_axis, fill, ctx.threads());
      return;
    }
    DispatchNumeric(x.type(), [&]<class T>() {
      Interpolate<T>(x.data<T>(), y.data<T>(), in_shape, order, opt_.extrapolation, ctx.threads());
    });
  }

 private:
  static int64_t ShapeProduct(std::span<const int64_t> s) {
    int64_t p = 1;
    for (int64_t d : s) p *= d;
    return p;
  }

  template <class Fn>
  static void DispatchNumericOrBool(NxElementType t, Fn&& fn) {
    switch (t) {
      case NX_TYPE_BOOL:
        fn.template operator()<uint8_t>();
        break;
      case NX_TYPE_FLOAT:
      case NX_TYPE_DOUBLE:
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
      case NX_TYPE_INT8:
      case NX_TYPE_INT16:
      case NX_TYPE_INT32:
      case NX_TYPE_INT64:
      case NX_TYPE_UINT8:
      case NX_TYPE_UINT16:
      case NX_TYPE_UINT32:
      case NX_TYPE_UINT64:
        DispatchNumeric(t, fn);
        break;
      default:
        break;  // other fixed-size types (float8...) fill with zero bytes
    }
  }

  std::string op_;
  int opset_ = 19;
  bool upsample_ = false;
  ResizeOptions opt_;
  std::vector<int64_t> axes_;
  std::string keep_aspect_ = "stretch";
  std::vector<double> attr_scales_;
};

}  // namespace

void RegisterResizeKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("Resize").Versions(10).Build<Resize>(registry);
  ep::KernelDefBuilder("Upsample").Versions(1, 9).Build<Resize>(registry);
}

}  // namespace nxrt::cpu::nn
