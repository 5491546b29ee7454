// Sampling plans for Resize/Upsample: for every resized axis, which input positions (taps) and
// weights produce each output position. Interpolation is separable, so an N-D resize is a
// sequence of 1-D passes, one per resized axis, each driven by one AxisPlan.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/float_to_int.h"

namespace nxrt::cpu::nn {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kSimple is the pre-opset-11 rule: truncate when upsampling, round up when downsampling.
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

// The rules by their ONNX names (Resize 11 on); nullopt for a name ONNX does not define.
inline std::optional<CoordMode> CoordModeNamed(const std::string& c) {
  if (c == "half_pixel") return CoordMode::kHalfPixel;
  if (c == "half_pixel_symmetric") return CoordMode::kHalfPixelSymmetric;
  if (c == "pytorch_half_pixel") return CoordMode::kPytorchHalfPixel;
  if (c == "align_corners") return CoordMode::kAlignCorners;
  if (c == "asymmetric") return CoordMode::kAsymmetric;
  if (c == "tf_half_pixel_for_nn") return CoordMode::kTfHalfPixelForNn;
  if (c == "tf_crop_and_resize") return CoordMode::kTfCropAndResize;
  return std::nullopt;
}
inline std::optional<NearestMode> NearestModeNamed(const std::string& n) {
  if (n == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (n == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  if (n == "floor") return NearestMode::kFloor;
  if (n == "ceil") return NearestMode::kCeil;
  return std::nullopt;
}

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

struct AxisPlan {
  size_t axis = 0;
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> index;         // out * taps input positions, clamped into [0, in)
  std::vector<double> weight;         // out * taps (unused for nearest)
  std::vector<uint8_t> extrapolated;  // per output position; empty when nothing is
};

// Position in the input that output position `o` maps to.
inline double OriginalCoordinate(const ResizeOptions& opt, int64_t o, double scale, int64_t in,
                                 int64_t out, double roi_start, double roi_end) {
  // The "resized length" is the fractional scale * in, which differs from `out` when scales
  // do not divide evenly (the ONNX reference semantics).
  double resized = scale * static_cast<double>(in);
  double x = static_cast<double>(o);
  switch (opt.coord) {
    case CoordMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(out) / resized;
      double center = static_cast<double>(in) / 2.0;
      return center * (1.0 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case CoordMode::kPytorchHalfPixel:
      return resized > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      return resized == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case CoordMode::kTfCropAndResize:
      if (resized > 1.0) {
        return roi_start * static_cast<double>(in - 1) +
               x * (roi_end - roi_start) * static_cast<double>(in - 1) / (resized - 1.0);
      }
      return 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  }
  return x;
}

inline int64_t NearestIndex(NearestMode mode, double x, double scale) {
  // Saturating: a coordinate from a hostile scale may be NaN or past int64 (the caller clamps
  // the index to the input).
  double f = std::floor(x);
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return SaturatingToInt64(x - f <= 0.5 ? f : f + 1);
    case NearestMode::kRoundPreferCeil:
      return SaturatingToInt64(x - f < 0.5 ? f : f + 1);
    case NearestMode::kFloor:
      return SaturatingToInt64(f);
    case NearestMode::kCeil:
      return SaturatingToInt64(std::ceil(x));
    case NearestMode::kSimple:
      return SaturatingToInt64(scale < 1.0 ? std::ceil(x) : std::trunc(x));
  }
  return SaturatingToInt64(f);
}

// Keys cubic convolution kernel with parameter a.
inline double CubicWeight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

inline AxisPlan MakeAxisPlan(const ResizeOptions& opt, size_t axis, int64_t in, int64_t out,
                             double scale, double roi_start, double roi_end) {
  AxisPlan p;
  p.axis = axis;
  p.in = in;
  p.out = out;
  bool crop = opt.coord == CoordMode::kTfCropAndResize;
  if (crop) p.extrapolated.assign(out, 0);
  // Antialiasing stretches the filter by 1/scale when downsampling.
  double support_scale = opt.antialias && scale < 1.0 ? scale : 1.0;
  // Each output reads about 4 / scale inputs when antialiasing: bound it before sizing tables.
  NXRT_EP_ENFORCE(support_scale >= 1e-4, "Resize: antialiasing with a scale of " +
                                             std::to_string(scale) + " (below 1e-4)");
  int64_t first = 0;  // tap offsets [first, first + taps) relative to floor(x)
  if (opt.mode == ResizeMode::kNearest) {
    p.taps = 1;
  } else if (opt.mode == ResizeMode::kLinear) {
    first = static_cast<int64_t>(std::floor(-1.0 / support_scale)) + 1;
    p.taps = static_cast<int>(2 - 2 * first);
  } else {
    first = static_cast<int64_t>(std::floor(-2.0 / support_scale)) + 1;
    p.taps = static_cast<int>(2 - 2 * first);
  }
  p.index.resize(out * p.taps);
  p.weight.resize(out * p.taps);
  std::vector<double> w(p.taps);
  for (int64_t o = 0; o < out; ++o) {
    double x = OriginalCoordinate(opt, o, scale, in, out, roi_start, roi_end);
    if (crop && (x < 0.0 || x > static_cast<double>(in - 1))) p.extrapolated[o] = 1;
    if (opt.mode == ResizeMode::kNearest) {
      int64_t i = NearestIndex(opt.nearest, x, scale);
      p.index[o] = std::clamp<int64_t>(i, 0, in - 1);
      p.weight[o] = 1.0;
      continue;
    }
    double base = std::floor(x);
    double ratio = x - base;
    // The first tap's input index, kept far from int64's ends (x may be huge or NaN).
    const int64_t base_index =
        std::clamp<int64_t>(SaturatingToInt64(base), -(int64_t{1} << 53), int64_t{1} << 53);
    double sum = 0.0;
    for (int t = 0; t < p.taps; ++t) {
      if (opt.mode == ResizeMode::kLinear && p.taps == 2) {
        w[t] = t == 0 ? 1.0 - ratio : ratio;  // exact form of the plain linear weights
        sum += w[t];
        continue;
      }
      double arg = (static_cast<double>(first + t) - ratio) * support_scale;
      w[t] = opt.mode == ResizeMode::kLinear ? std::max(0.0, 1.0 - std::fabs(arg))
                                             : CubicWeight(arg, opt.cubic_a);
      sum += w[t];
    }
    if (opt.antialias && sum != 0.0) {
      for (double& v : w) v /= sum;
    }
    if (opt.exclude_outside) {
      double kept = 0.0;
      for (int t = 0; t < p.taps; ++t) {
        int64_t i = base_index + first + t;
        if (i < 0 || i >= in) w[t] = 0.0;
        kept += w[t];
      }
      if (kept != 0.0) {
        for (double& v : w) v /= kept;
      }
    }
    for (int t = 0; t < p.taps; ++t) {
      int64_t i = base_index + first + t;
      p.index[o * p.taps + t] = std::clamp<int64_t>(i, 0, in - 1);
      p.weight[o * p.taps + t] = w[t];
    }
  }
  return p;
}

}  // namespace nxrt::cpu::nn
