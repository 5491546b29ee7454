// ConvTranspose (opsets 1, 11, 22): per image and group, col = W_g^T * X_g (one GEMM), then
// col2im scatters the columns into the output, which starts as the bias. This handles every
// combination of strides, dilations, pads (including the negative "pads" output_shape can
// imply), output_padding and groups with one code path.
#include <immintrin.h>

#include <algorithm>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "common/broadcast.h"
#include "common/cpu_features.h"
#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_reference.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/gemm_ref.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/pointwise_conv.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu::linalg {
namespace {

// Whether every output element gets exactly one tap: strides equal to the kernel, no dilation,
// padding or output padding (the 2x2 stride-2 up-convolutions of UNets and DBNet heads).
bool TapsTileTheOutput(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    if (g.stride[d] != g.kernel[d] || g.dilation[d] != 1 || g.pad_begin[d] != 0 ||
        g.out[d] != g.in[d] * g.stride[d])
      return false;
  }
  return true;
}

// out[2i] = a[i] + b, out[2i + 1] = c[i] + b: the two taps of a stride-2 row, interleaved.
void InterleaveTwoTaps(const float* a, const float* c, float bias, int64_t n, float* out) {
  int64_t i = 0;
  const __m128 b = _mm_set1_ps(bias);
  for (; i + 4 <= n; i += 4) {
    const __m128 x = _mm_add_ps(_mm_loadu_ps(a + i), b), z = _mm_add_ps(_mm_loadu_ps(c + i), b);
    _mm_storeu_ps(out + 2 * i, _mm_unpacklo_ps(x, z));
    _mm_storeu_ps(out + 2 * i + 4, _mm_unpackhi_ps(x, z));
  }
  for (; i < n; ++i) {
    out[2 * i] = a[i] + bias;
    out[2 * i + 1] = c[i] + bias;
  }
}

// Col2ImAdd for TapsTileTheOutput geometries: each output element is written once, as its
// tap's column value plus the bias (no pass that fills the output with the bias first, no
// read-modify-write). Rows of a stride-2 width interleave their two taps. `col` holds the
// columns of input rows [r0, r1) (an input row: one (i0, i1), flattened), `ld` floats apart.
template <class T>
void Col2ImTiled(const ConvGeometry& g, const T* col, int64_t ld, int64_t r0, int64_t r1,
                 int64_t channels, const T* bias, T* y) {
  const int64_t out_size = g.out_size(), w = g.in[2];
  const int64_t k1n = g.kernel[1], k2n = g.kernel[2];
  for (int64_t c = 0; c < channels; ++c) {
    T* plane = y + c * out_size;
    const T b = bias ? bias[c] : T(0);
    const T* taps = col + c * g.kernel_size() * ld;  // [k0, k1, k2][ld]
    for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0)
      for (int64_t k1 = 0; k1 < k1n; ++k1)
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t i0 = r / g.in[1], i1 = r % g.in[1];
          const int64_t o0 = i0 * g.stride[0] + k0, o1 = i1 * g.stride[1] + k1;
          T* row = plane + (o0 * g.out[1] + o1) * g.out[2];
          auto tap = [&](int64_t k2) {
            return taps + ((k0 * k1n + k1) * k2n + k2) * ld + (r - r0) * w;
          };
          if constexpr (std::is_same_v<T, float>) {
            if (k2n == 2) {
              InterleaveTwoTaps(tap(0), tap(1), b, w, row);
              continue;
            }
          }
          for (int64_t k2 = 0; k2 < k2n; ++k2) {
            const T* src = tap(k2);
            for (int64_t i2 = 0; i2 < w; ++i2) row[i2 * k2n + k2] = T(src[i2] + b);
          }
        }
  }
}

// y = conv_transpose(x, w) + bias; `product(grp, xg, col)` writes group grp's columns
// col = W_g^T * X_g ([ocg * ks, in_size]) for one image's input xg.
template <class T, class Product>
void ConvTransposeImpl(const ConvGeometry& g, const T* x, const T* bias, T* y, int threads,
                       Product&& product) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t ks = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const int64_t rows = ocg * ks;  // rows of col: (output channel, kernel tap)
  const bool tiled = TapsTileTheOutput(g);
  T* col = static_cast<T*>(ThreadScratch(kScratchSrc, sizeof(T) * rows * in_size));
  for (int64_t n = 0; n < g.batch; ++n) {
    T* yn = y + n * g.out_channels * out_size;
    if (!tiled) {
      for (int64_t c = 0; c < g.out_channels; ++c)
        std::fill(yn + c * out_size, yn + (c + 1) * out_size, bias ? bias[c] : T(0));
    }
    for (int64_t grp = 0; grp < g.group; ++grp) {
      product(grp, x + (n * g.in_channels + grp * icg) * in_size, col);
      // Output channels are independent planes, so the scatter splits across threads cleanly.
      T* yg = yn + grp * ocg * out_size;
      const T* bg = bias ? bias + grp * ocg : nullptr;
      ParallelFor(threads, ocg, 1, [&](int64_t c0, int64_t c1) {
        if (tiled)
          Col2ImTiled(g, col + c0 * ks * in_size, in_size, 0, g.in[0] * g.in[1], c1 - c0,
                      bg ? bg + c0 : nullptr, yg + c0 * out_size);
        else
          Col2ImAdd(g, col + c0 * ks * in_size, c1 - c0, yg + c0 * out_size);
      });
    }
  }
}

// The column product through oneDNN's sgemm (float) or the portable GEMM (double), for weights
// that are not constant (or of another shape than at creation); w [C, M / group, k...].
template <class T>
void ConvTransposeGemm(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y,
                       int threads) {
  const int64_t icg = g.in_channels_per_group(), in_size = g.in_size();
  const int64_t rows = g.out_channels_per_group() * g.kernel_size();
  ConvTransposeImpl<T>(g, x, bias, y, threads, [&](int64_t grp, const T* xg, T* col) {
    const T* wg = w + grp * icg * rows;  // [icg, ocg * ks] row-major
    if constexpr (std::is_same_v<T, float>) {
      Sgemm(true, false, rows, in_size, icg, 1.0f, wg, rows, xg, in_size, 0.0f, col, in_size);
    } else {
      GemmRef<T>(rows, in_size, icg, {wg, 1, rows}, {xg, in_size, 1}, col, in_size, false, threads);
    }
  });
}

// A constant float weight packed per group as W_g^T [ocg * ks, icg] for the pointwise kernel
// (pointwise_conv.h): a group's column product is then a 1x1 convolution of its input with
// ocg * ks output channels. oneDNN's sgemm on the transposed weight ran 128 x 16384 x 128 (a
// UNet's 2x2 stride-2 up-convolution) at about 18 GMAC/s on Zen 3 (docs/performance.md).
struct PackedColumnWeights {
  Isa isa = Isa::kAvx2;
  Dims shape;             // the weight's shape at creation
  int64_t per_group = 0;  // floats of one group's packing
  std::vector<float> packed;

  bool Matches(std::span<const int64_t> w_shape) const {
    return !packed.empty() &&
           std::equal(shape.begin(), shape.end(), w_shape.begin(), w_shape.end());
  }
};

PackedColumnWeights PackColumnWeights(const ep::KernelInfo& info, int64_t group) {
  PackedColumnWeights p;
  const std::optional<ep::ConstTensor> w = info.constant_input(1);
  if (!w || w->type() != NX_TYPE_FLOAT || w->rank() < 3 || group < 1 || w->dim(0) % group != 0)
    return p;
  const int64_t icg = w->dim(0) / group;
  const int64_t rows = static_cast<int64_t>(w->size()) / std::max<int64_t>(w->dim(0), 1);
  if (icg == 0 || rows == 0) return p;
  p.isa = KernelIsa(info);
  p.shape.assign(w->shape().begin(), w->shape().end());
  p.per_group = PointwisePackedSize(p.isa, rows, icg);
  p.packed.resize(static_cast<size_t>(p.per_group * group));
  std::vector<float> transposed(static_cast<size_t>(rows * icg));
  for (int64_t grp = 0; grp < group; ++grp) {
    const float* wg = w->data<float>() + grp * icg * rows;
    for (int64_t i = 0; i < icg; ++i)
      for (int64_t r = 0; r < rows; ++r) transposed[r * icg + i] = wg[i * rows + r];
    PackPointwiseWeights(p.isa, transposed.data(), rows, icg, p.packed.data() + grp * p.per_group);
  }
  return p;
}

class ConvTranspose : public ep::Kernel {
 public:
  explicit ConvTranspose(const ep::KernelInfo& info)
      : attrs_(info), packed_(PackColumnWeights(info, attrs_.group)) {
    if (packed_.packed.empty()) StartSgemmWarmUp();  // the column products run as sgemm calls
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor w = ctx.input(1);
    std::optional<ep::ConstTensor> b = ctx.optional_input(2);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(w.type() == t, attrs_.op + ": X is " + ep::ElementTypeName(t) + " but W is " +
                                       ep::ElementTypeName(w.type()));
    ConvGeometry g = ComputeConvTransposeGeometry(attrs_, x.shape(), w.shape());
    if (b) {
      NXRT_EP_ENFORCE(b->type() == t && b->rank() == 1 && b->dim(0) == g.out_channels,
                      attrs_.op + ": bias B must be a 1-D tensor of " +
                          std::to_string(g.out_channels) + " elements, got " +
                          ShapeToString(b->shape()));
    }
    std::vector<int64_t> y_dims = g.output_dims();
    ep::Tensor y = ctx.output(0, y_dims, t);
    const size_t y_count = static_cast<size_t>(ShapeSize(y_dims));
    if (y_count == 0) return;
    const int threads = ctx.threads();
    OmpThreadScope scope(threads);
    DispatchFloat(t, [&]<class T>() {
      if constexpr (std::is_same_v<T, float>) {
        if (packed_.Matches(w.shape())) {
          RunPacked(g, x.data<float>(), b ? b->data<float>() : nullptr, y.data<float>(), threads);
        } else {
          ConvTransposeGemm<float>(g, x.data<float>(), w.data<float>(),
                                   b ? b->data<float>() : nullptr, y.data<float>(), threads);
        }
      } else if constexpr (std::is_same_v<T, double>) {
        ConvTransposeGemm<double>(g, x.data<double>(), w.data<double>(),
                                  b ? b->data<double>() : nullptr, y.data<double>(), threads);
      } else {
        const float* xf = ToFloatScratch(x.data<T>(), x.size(), kScratchA);
        const float* wf = ToFloatScratch(w.data<T>(), w.size(), kScratchB);
        std::vector<float> bf;
        if (b) bf = ToFloatVector(b->data<T>(), b->size());
        float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
        ConvTransposeGemm<float>(g, xf, wf, b ? bf.data() : nullptr, yf, threads);
        FromFloat(yf, y_count, y.data<T>());
      }
    });
  }

 private:
  // The column products on the pointwise kernel with the weights packed at creation.
  void RunPacked(const ConvGeometry& g, const float* x, const float* bias, float* y,
                 int threads) const {
    const int64_t icg = g.in_channels_per_group(), in_size = g.in_size();
    const int64_t rows = g.out_channels_per_group() * g.kernel_size();
    // Chunks pay where the weights are small next to the columns; large weights (256 -> 256
    // channels) would be streamed again for every chunk.
    if (TapsTileTheOutput(g) && rows * icg <= kMaxChunkedWeights) {
      RunPackedTiled(g, x, bias, y, threads);
      return;
    }
    ConvTransposeImpl<float>(g, x, bias, y, threads, [&](int64_t grp, const float* xg, float* col) {
      ColumnProduct(grp, rows, icg, in_size, xg, col, threads);
    });
  }

  // TapsTileTheOutput geometries, a few input rows at a time: their columns (about 64 KiB)
  // are scattered into the output while still in cache, instead of the whole image's columns
  // being written out and read back (a DBNet head's 16 -> 16 2x2 up-convolution at 160x160:
  // 2.65 -> 1.3 ms, onnxruntime 1.05-1.1).
  void RunPackedTiled(const ConvGeometry& g, const float* x, const float* bias, float* y,
                      int threads) const {
    const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
    const int64_t in_size = g.in_size(), out_size = g.out_size();
    const int64_t rows = ocg * g.kernel_size(), width = g.in[2];
    const int64_t input_rows = g.in[0] * g.in[1];
    // About 64 KiB of columns per chunk, and at least 128 pixels for the kernel's tiles.
    const int64_t per_chunk = std::clamp<int64_t>(
        std::max<int64_t>((16 << 10) / std::max<int64_t>(rows * width, 1), 128 / width + 1), 1,
        input_rows);
    const int64_t chunks = (input_rows + per_chunk - 1) / per_chunk;
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < g.group; ++grp) {
        const float* xg = x + (n * g.in_channels + grp * icg) * in_size;
        float* yg = y + (n * g.out_channels + grp * ocg) * out_size;
        const float* bg = bias ? bias + grp * ocg : nullptr;
        ParallelFor(threads, chunks, 1, [&](int64_t first, int64_t last) {
          // This thread's chunk of the input ([icg, pixels], copied: the pointwise kernel reads
          // one contiguous row per input channel) and of the columns ([rows, pixels]).
          const int64_t max_pixels = per_chunk * width;
          float* col = static_cast<float*>(ThreadScratch(
              kScratchSrc, sizeof(float) * static_cast<size_t>((rows + icg) * max_pixels)));
          float* xc = col + rows * max_pixels;
          for (int64_t chunk = first; chunk < last; ++chunk) {
            const int64_t r0 = chunk * per_chunk, r1 = std::min(input_rows, r0 + per_chunk);
            const int64_t pixels = (r1 - r0) * width;
            for (int64_t k = 0; k < icg; ++k)
              std::copy_n(xg + k * in_size + r0 * width, pixels, xc + k * pixels);
            ColumnProduct(grp, rows, icg, pixels, xc, col, 1);
            Col2ImTiled(g, col, pixels, r0, r1, ocg, bg, yg);
          }
        });
      }
    }
  }

  // col [rows, pixels] = group grp's packed W^T * x [icg, pixels], on the pointwise kernel.
  void ColumnProduct(int64_t grp, int64_t rows, int64_t icg, int64_t pixels, const float* x,
                     float* col, int threads) const {
    PointwiseJob job;
    job.out_channels = rows;
    job.in_channels = icg;
    job.pixels = pixels;
    job.x = x;
    job.packed_w = packed_.packed.data() + grp * packed_.per_group;
    job.y = col;
    RunPointwise(packed_.isa, job, threads);
  }

  static constexpr int64_t kMaxChunkedWeights = 32 << 10;  // floats (128 KiB)

  ConvAttributes attrs_;
  PackedColumnWeights packed_;  // a constant float weight (empty otherwise)
};

}  // namespace

void RegisterConvTransposeKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ConvTranspose").Versions(1).Build<ConvTranspose>(r);
}

}  // namespace nxrt::cpu::linalg
