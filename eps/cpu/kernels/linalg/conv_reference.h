// Portable convolution building blocks: im2col / col2im over the normalised 3-D geometry, and a
// complete im2col + GEMM convolution for element types oneDNN does not handle (double).
// (ConvInteger / QLinearConv build rows of taps for the 8-bit GEMM instead: quantized_conv.cc.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/gemm_ref.h"

namespace nxrt::cpu::linalg {

// col[(c * kernel_size + tap) * out_size + o] = x[c][o * stride - pad + tap * dilation], zero
// outside the input. `x` points at the first of `channels` contiguous input planes.
template <class T>
void Im2Col(const ConvGeometry& g, const T* x, int64_t channels, T* col) {
  const int64_t in_size = g.in_size();
  T* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * in_size;
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            const int64_t i0 = o0 * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
            const bool ok0 = i0 >= 0 && i0 < g.in[0];
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
              const int64_t i1 = o1 * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
              const bool ok01 = ok0 && i1 >= 0 && i1 < g.in[1];
              const T* row = plane + (i0 * g.in[1] + i1) * g.in[2];
              for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                const int64_t i2 = o2 * g.stride[2] - g.pad_begin[2] + k2 * g.dilation[2];
                *dst++ = (ok01 && i2 >= 0 && i2 < g.in[2]) ? row[i2] : T(0);
              }
            }
          }
        }
  }
}

// The adjoint of Im2Col with the roles of in/out swapped, as ConvTranspose needs it:
// y[c][i * stride - pad + tap * dilation] += col[(c * kernel_size + tap) * in_size + i] for every
// position that lands inside the output. `y` must be initialised by the caller.
template <class T>
void Col2ImAdd(const ConvGeometry& g, const T* col, int64_t channels, T* y) {
  const int64_t out_size = g.out_size();
  const int64_t s2 = g.stride[2];
  const T* src = col;
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = y + c * out_size;
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
          // The inputs i2 whose o2 = i2 * s2 + base lands in [0, out[2]): [lo, hi), found once
          // per tap, so the row loops below carry no bounds checks (and stride 1 vectorises).
          const int64_t base = k2 * g.dilation[2] - g.pad_begin[2];
          const int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;
          const int64_t last = g.out[2] - 1 - base;  // o2 <= out[2] - 1
          const int64_t hi = last < 0 ? 0 : std::min(g.in[2], last / s2 + 1);
          for (int64_t i0 = 0; i0 < g.in[0]; ++i0) {
            const int64_t o0 = i0 * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
            const bool ok0 = o0 >= 0 && o0 < g.out[0];
            for (int64_t i1 = 0; i1 < g.in[1]; ++i1, src += g.in[2]) {
              const int64_t o1 = i1 * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
              if (!ok0 || o1 < 0 || o1 >= g.out[1] || lo >= hi) continue;
              T* row = plane + (o0 * g.out[1] + o1) * g.out[2] + base;
              if (s2 == 1) {
                for (int64_t i2 = lo; i2 < hi; ++i2) row[i2] = T(row[i2] + src[i2]);
              } else {
                for (int64_t i2 = lo; i2 < hi; ++i2) row[i2 * s2] = T(row[i2 * s2] + src[i2]);
              }
            }
          }
        }
  }
}

// y = conv(x, w) (+ bias per output channel). x [N, C, ...], w [M, C/group, k...], y [N, M, ...],
// all plain row-major. T is the accumulation type as well.
template <class T>
void ConvIm2Col(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y, int threads) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t ks = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const int64_t kdim = icg * ks;
  const bool pointwise =
      ks == 1 && g.stride == Dims3{1, 1, 1} && g.pad_begin == Dims3{0, 0, 0} && g.in == g.out;
  std::vector<T> col(pointwise ? 0 : static_cast<size_t>(kdim * out_size));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const T* xg = x + (n * g.in_channels + grp * icg) * in_size;
      const T* b = xg;
      if (!pointwise) {
        Im2Col(g, xg, icg, col.data());
        b = col.data();
      }
      T* yg = y + (n * g.out_channels + grp * ocg) * out_size;
      GemmRef<T>(ocg, out_size, kdim, {w + grp * ocg * kdim, kdim, 1}, {b, out_size, 1}, yg,
                 out_size, false, threads);
      if (bias != nullptr) {
        for (int64_t c = 0; c < ocg; ++c) {
          using A = WrapArith<T>;
          A* row = reinterpret_cast<A*>(yg + c * out_size);
          const A bv = static_cast<A>(bias[grp * ocg + c]);
          for (int64_t o = 0; o < out_size; ++o) row[o] = A(row[o] + bv);
        }
      }
    }
  }
}

}  // namespace nxrt::cpu::linalg
