#include "kernels/linalg/conv_geometry.h"

#include <algorithm>

#include "common/broadcast.h"

namespace nxrt::cpu::linalg {

ConvAttributes::ConvAttributes(const ep::NodeView& node)
    : op(node.describe()),
      auto_pad(node.attr_string("auto_pad", "NOTSET")),
      kernel_shape(node.attr_ints("kernel_shape")),
      strides(node.attr_ints("strides")),
      dilations(node.attr_ints("dilations")),
      pads(node.attr_ints("pads")),
      output_padding(node.attr_ints("output_padding")),
      output_shape(node.attr_ints("output_shape")),
      group(node.attr_int("group", 1)) {
  if (auto_pad.empty()) auto_pad = "NOTSET";
  NXRT_EP_ENFORCE(auto_pad == "NOTSET" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER" ||
                      auto_pad == "VALID",
                  op + ": unknown auto_pad '" + auto_pad + "'");
  NXRT_EP_ENFORCE(group >= 1, op + ": group must be >= 1");
}

Dims ConvGeometry::output_dims() const {
  Dims dims = {batch, out_channels};
  for (int64_t d : real(out)) dims.push_back(d);
  return dims;
}

Dims ConvGeometry::real(const Dims3& d) const {
  return Dims(d.begin() + (kMaxSpatial - spatial), d.end());
}

namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Fills everything but the output extent and the pads: batch, channels, in, kernel, strides and
// dilations, checking the per-axis attribute lengths.
ConvGeometry CommonGeometry(const ConvAttributes& a, std::span<const int64_t> x,
                            std::span<const int64_t> w) {
  NXRT_EP_ENFORCE(x.size() >= 3 && x.size() <= 2 + kMaxSpatial,
                  a.op + ": input X must have rank 3 to 5 (N, C, 1 to 3 spatial dims), got " +
                      ShapeToString(x));
  NXRT_EP_ENFORCE(w.size() == x.size(), a.op + ": weight rank " + std::to_string(w.size()) +
                                            " does not match input rank " +
                                            std::to_string(x.size()) + " (X " + ShapeToString(x) +
                                            ", W " + ShapeToString(w) + ")");
  ConvGeometry g;
  g.spatial = static_cast<int>(x.size()) - 2;
  g.batch = x[0];
  g.in_channels = x[1];
  g.group = a.group;
  const int off = kMaxSpatial - g.spatial;
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
    NXRT_EP_ENFORCE(v.empty() || v.size() == want,
                    a.op + ": attribute '" + name + "' has " + std::to_string(v.size()) +
                        " entries, expected " + std::to_string(want));
  };
  check_len(a.kernel_shape, g.spatial, "kernel_shape");
  check_len(a.strides, g.spatial, "strides");
  check_len(a.dilations, g.spatial, "dilations");
  check_len(a.pads, 2 * g.spatial, "pads");
  for (int i = 0; i < g.spatial; ++i) {
    g.in[off + i] = x[2 + i];
    g.kernel[off + i] = w[2 + i];
    if (!a.kernel_shape.empty()) {
      NXRT_EP_ENFORCE(
          a.kernel_shape[i] == w[2 + i],
          a.op + ": kernel_shape attribute does not match the weight shape " + ShapeToString(w));
    }
    g.stride[off + i] = a.strides.empty() ? 1 : a.strides[i];
    g.dilation[off + i] = a.dilations.empty() ? 1 : a.dilations[i];
    NXRT_EP_ENFORCE(g.stride[off + i] >= 1, a.op + ": strides must be >= 1");
    NXRT_EP_ENFORCE(g.dilation[off + i] >= 1, a.op + ": dilations must be >= 1");
    NXRT_EP_ENFORCE(
        x[2 + i] >= 0 && w[2 + i] >= 1,
        a.op + ": bad spatial dimensions, X " + ShapeToString(x) + ", W " + ShapeToString(w));
  }
  return g;
}

}  // namespace

ConvGeometry ComputeConvGeometry(const ConvAttributes& a, std::span<const int64_t> x,
                                 std::span<const int64_t> w) {
  ConvGeometry g = CommonGeometry(a, x, w);
  const int off = kMaxSpatial - g.spatial;
  g.out_channels = w[0];
  NXRT_EP_ENFORCE(g.in_channels % g.group == 0 && g.out_channels % g.group == 0,
                  a.op + ": channels (" + std::to_string(g.in_channels) + " in, " +
                      std::to_string(g.out_channels) + " out) are not divisible by group " +
                      std::to_string(g.group));
  NXRT_EP_ENFORCE(w[1] * g.group == g.in_channels,
                  a.op + ": input has " + std::to_string(g.in_channels) +
                      " channels but the weight " + ShapeToString(w) + " with group " +
                      std::to_string(g.group) + " expects " + std::to_string(w[1] * g.group));
  for (int i = 0; i < g.spatial; ++i) {
    const int j = off + i;
    const int64_t extent = (g.kernel[j] - 1) * g.dilation[j] + 1;
    const int64_t in = g.in[j], s = g.stride[j];
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      g.out[j] = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * s + extent - in);
      g.pad_begin[j] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[j] = total - g.pad_begin[j];
    } else {
      if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
        g.pad_begin[j] = a.pads[i];
        g.pad_end[j] = a.pads[g.spatial + i];
        NXRT_EP_ENFORCE(g.pad_begin[j] >= 0 && g.pad_end[j] >= 0,
                        a.op + ": negative pads are not supported");
      }
      int64_t span = in + g.pad_begin[j] + g.pad_end[j] - extent;
      NXRT_EP_ENFORCE(span >= 0, a.op + ": the kernel (extent " + std::to_string(extent) +
                                     ") is larger than the padded input " + ShapeToString(x));
      g.out[j] = span / s + 1;
    }
  }
  return g;
}

ConvGeometry ComputeConvTransposeGeometry(const ConvAttributes& a, std::span<const int64_t> x,
                                          std::span<const int64_t> w) {
  ConvGeometry g = CommonGeometry(a, x, w);
  const int off = kMaxSpatial - g.spatial;
  NXRT_EP_ENFORCE(w[0] == g.in_channels, a.op + ": input has " + std::to_string(g.in_channels) +
                                             " channels but the weight " + ShapeToString(w) +
                                             " expects " + std::to_string(w[0]));
  NXRT_EP_ENFORCE(g.in_channels % g.group == 0,
                  a.op + ": input channels " + std::to_string(g.in_channels) +
                      " are not divisible by group " + std::to_string(g.group));
  g.out_channels = w[1] * g.group;
  NXRT_EP_ENFORCE(a.output_padding.empty() || a.output_padding.size() == size_t(g.spatial),
                  a.op + ": output_padding must have one entry per spatial axis");
  // output_shape may be given with or without the N and C dimensions.
  std::vector<int64_t> out_shape = a.output_shape;
  if (out_shape.size() == size_t(g.spatial) + 2)
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  NXRT_EP_ENFORCE(out_shape.empty() || out_shape.size() == size_t(g.spatial),
                  a.op + ": output_shape must have one entry per spatial axis");
  const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
  for (int i = 0; i < g.spatial; ++i) {
    const int j = off + i;
    const int64_t extent = (g.kernel[j] - 1) * g.dilation[j] + 1;
    const int64_t in = g.in[j], s = g.stride[j];
    const int64_t adj = a.output_padding.empty() ? 0 : a.output_padding[i];
    const int64_t full = s * (in - 1) + adj + extent;  // the uncropped scatter extent
    if (!out_shape.empty() || same) {
      // Pads are derived from the requested output extent (ONNX spec); a request larger than
      // the scatter extent leaves zero (bias only) positions at the end.
      g.out[j] = !out_shape.empty() ? out_shape[i] : in * s;
      int64_t total = std::max<int64_t>(0, full - g.out[j]);
      g.pad_begin[j] = a.auto_pad == "SAME_UPPER" ? FloorDiv(total, 2) : total - FloorDiv(total, 2);
    } else {
      if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
        g.pad_begin[j] = a.pads[i];
        g.pad_end[j] = a.pads[g.spatial + i];
      }
      g.out[j] = full - g.pad_begin[j] - g.pad_end[j];
    }
    g.pad_end[j] = full - g.pad_begin[j] - g.out[j];
    NXRT_EP_ENFORCE(g.out[j] >= 0,
                    a.op + ": computed a negative output extent for input " + ShapeToString(x));
  }
  return g;
}

ConvGeometry AsRowConvolution(const ConvGeometry& g) {
  if (g.spatial != 2 || g.in[2] != 1 || g.kernel[2] != 1 || g.out[2] != 1 || g.in[1] <= 1 ||
      g.pad_begin[2] != 0 || g.pad_end[2] != 0)
    return g;
  ConvGeometry row = g;
  for (Dims3* d :
       {&row.in, &row.out, &row.kernel, &row.stride, &row.dilation, &row.pad_begin, &row.pad_end})
    std::swap((*d)[1], (*d)[2]);
  return row;
}

}  // namespace nxrt::cpu::linalg
