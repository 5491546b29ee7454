// ConvTranspose (opsets 1, 11, 22): per image and group, col = W_g^T * X_g (one GEMM), then
// col2im scatters the columns into the output, which starts as the bias. This handles every
// combination of strides, dilations, pads (including the negative "pads" output_shape can
// imply), output_padding and groups with one code path.
#include <algorithm>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
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

// y = conv_transpose(x, w) + bias; `product(grp, xg, col)` writes group grp's columns
// col = W_g^T * X_g ([ocg * ks, in_size]) for one image's input xg.
template <class T, class Product>
void ConvTransposeImpl(const ConvGeometry& g, const T* x, const T* bias, T* y, int threads,
                       Product&& product) {
  const int64_t icg = g.in_channels_per_group(), ocg = g.out_channels_per_group();
  const int64_t ks = g.kernel_size(), in_size = g.in_size(), out_size = g.out_size();
  const int64_t rows = ocg * ks;  // rows of col: (output channel, kernel tap)
  T* col = static_cast<T*>(ThreadScratch(kScratchSrc, sizeof(T) * rows * in_size));
  for (int64_t n = 0; n < g.batch; ++n) {
    T* yn = y + n * g.out_channels * out_size;
    for (int64_t c = 0; c < g.out_channels; ++c) {
      std::fill(yn + c * out_size, yn + (c + 1) * out_size, bias ? bias[c] : T(0));
    }
    for (int64_t grp = 0; grp < g.group; ++grp) {
      product(grp, x + (n * g.in_channels + grp * icg) * in_size, col);
      // Output channels are independent planes, so the scatter splits across threads cleanly.
      T* yg = yn + grp * ocg * out_size;
      ParallelFor(threads, ocg, 1, [&](int64_t c0, int64_t c1) {
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
    ConvTransposeImpl<float>(g, x, bias, y, threads, [&](int64_t grp, const float* xg, float* col) {
      PointwiseJob job;
      job.out_channels = rows;
      job.in_channels = icg;
      job.pixels = in_size;
      job.x = xg;
      job.packed_w = packed_.packed.data() + grp * packed_.per_group;
      job.y = col;
      RunPointwise(packed_.isa, job, threads);
    });
  }

  ConvAttributes attrs_;
  PackedColumnWeights packed_;  // a constant float weight (empty otherwise)
};

}  // namespace

void RegisterConvTransposeKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ConvTranspose").Versions(1).Build<ConvTranspose>(r);
}

}  // namespace nxrt::cpu::linalg
