// Window geometry of the ONNX pooling operators (MaxPool, AveragePool, LpPool): attributes read
// once per node, resolved per input shape into output sizes and begin/end pads. Up to three
// spatial dimensions are handled, normalised to exactly three (leading dimensions of size 1) so
// that one loop nest serves 1-D, 2-D and 3-D pooling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/small_vector.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {

struct PoolAttributes {
  std::string op;
  std::vector<int64_t> kernel, strides, pads, dilations;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  PoolAttributes() = default;  // filled by the caller (compiled groups read copied attributes)
  explicit PoolAttributes(const ep::NodeView& info) {
    op = info.op_type();
    kernel = info.attr_ints("kernel_shape");
    NXRT_EP_ENFORCE(!kernel.empty(), op + ": attribute kernel_shape is required");
    size_t n = kernel.size();
    strides = info.attr_ints("strides", std::vector<int64_t>(n, 1));
    pads = info.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    dilations = info.attr_ints("dilations", std::vector<int64_t>(n, 1));
    auto_pad = info.attr_string("auto_pad", "NOTSET");
    ceil_mode = info.attr_int("ceil_mode", 0) != 0;
    Validate();
  }

  // Throws for attributes no window can be built from (also for attributes filled by hand).
  void Validate() const {
    const size_t n = kernel.size();
    NXRT_EP_ENFORCE(n >= 1, op + ": attribute kernel_shape is required");
    NXRT_EP_ENFORCE(strides.size() == n, op + ": strides must have one value per spatial axis");
    NXRT_EP_ENFORCE(pads.size() == 2 * n, op + ": pads must have two values per spatial axis");
    NXRT_EP_ENFORCE(dilations.size() == n, op + ": dilations must have one value per spatial axis");
    for (size_t i = 0; i < n; ++i) {
      NXRT_EP_ENFORCE(kernel[i] >= 1 && strides[i] >= 1 && dilations[i] >= 1,
                      op + ": kernel_shape, strides and dilations must be positive");
      NXRT_EP_ENFORCE(pads[i] >= 0 && pads[i + n] >= 0, op + ": pads must be non-negative");
    }
    NXRT_EP_ENFORCE(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" ||
                        auto_pad == "SAME_LOWER",
                    op + ": unknown auto_pad '" + auto_pad + "'");
  }
};

// The resolved geometry for one input shape, normalised to three spatial axes.
struct PoolGeometry {
  int64_t batch = 0, channels = 0;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  size_t spatial_rank = 0;
  Dims out_shape;  // full output shape [N, C, spatial...]

  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t window() const { return k[0] * k[1] * k[2]; }
};

inline PoolGeometry ResolvePool(const PoolAttributes& a, std::span<const int64_t> x_shape) {
  size_t n = a.kernel.size();
  NXRT_EP_ENFORCE(x_shape.size() == n + 2, a.op + ": input of shape " + DimsToString(x_shape) +
                                               " does not match a " + std::to_string(n) +
                                               "-D kernel_shape (expected rank " +
                                               std::to_string(n + 2) + ")");
  if (n > 3) {
    ep::Fail(NX_NOT_IMPLEMENTED, a.op + ": more than 3 spatial dimensions are not supported");
  }
  PoolGeometry g;
  g.batch = x_shape[0];
  g.channels = x_shape[1];
  g.spatial_rank = n;
  g.out_shape = {x_shape[0], x_shape[1]};
  size_t lead = 3 - n;
  for (size_t i = 0; i < lead; ++i) {
    g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1;
    g.pb[i] = g.pe[i] = 0;
  }
  for (size_t i = 0; i < n; ++i) {
    size_t j = lead + i;
    int64_t in = x_shape[2 + i];
    int64_t k = a.kernel[i], s = a.strides[i], d = a.dilations[i];
    int64_t span = (k - 1) * d + 1;  // extent of a dilated window
    int64_t pb = a.pads[i], pe = a.pads[i + n], out = 0;
    if (a.auto_pad == "VALID") {
      pb = pe = 0;
      out = in >= span ? (in - span) / s + 1 : 0;
    } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      int64_t small = total / 2;
      pb = a.auto_pad == "SAME_UPPER" ? small : total - small;
      pe = total - pb;
    } else {
      int64_t room = in + pb + pe - span;
      if (room < 0) {
        out = 0;
      } else if (a.ceil_mode) {
        out = (room + s - 1) / s + 1;
        // The last window must start inside the input or its begin padding.
        if ((out - 1) * s >= in + pb) --out;
      } else {
        out = room / s + 1;
      }
    }
    NXRT_EP_ENFORCE(out >= 0, a.op + ": negative output size");
    g.in[j] = in;
    g.out[j] = out;
    g.k[j] = k;
    g.s[j] = s;
    g.d[j] = d;
    g.pb[j] = pb;
    g.pe[j] = pe;
    g.out_shape.push_back(out);
  }
  return g;
}

// The window taps along one axis that fall inside the input: taps t in [first, last) read input
// position start + t * dilation.
struct Taps {
  int64_t start, first, last;
};
inline Taps WindowTaps(int64_t o, int64_t s, int64_t pb, int64_t k, int64_t d, int64_t in) {
  Taps t;
  t.start = o * s - pb;
  t.first = t.start < 0 ? (-t.start + d - 1) / d : 0;
  int64_t last_in = in - 1 - t.start;  // largest offset still inside the input
  t.last = last_in < 0 ? 0 : std::min(k, last_in / d + 1);
  if (t.last < t.first) t.last = t.first;
  return t;
}

}  // namespace nxrt::cpu::nn
