// ConvTranspose (opsets 1, 11, 22): per image and group, col = W_g^T * X_g (one GEMM), then
// col2im scatters the columns into the output, which starts as the bias. This handles every
// combination of strides, dilations, pads (including the negative "pads" output_shape can
// imply), output_padding and groups with one code path.
#include <nxrt/nxrt_ep.hpp>
#include <optional>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_reference.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/gemm_ref.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu::linalg {
namespace {

// y = conv_transpose(x, w) + bias for T = float (oneDNN GEMM) or double (portable GEMM).
template <class T>
void ConvTransposeImpl(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y,
                       int threads) {
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
      const T* xg = x + (n * g.in_channels + grp * icg) * in_size;
      const T* wg = w + grp * icg * rows;  // [icg, ocg * ks] row-major
      if constexpr (std::is_same_v<T, float>) {
        Sgemm(true, false, rows, in_size, icg, 1.0f, wg, rows, xg, in_size, 0.0f, col, in_size);
      } else {
        GemmRef<T>(rows, in_size, icg, {wg, 1, rows}, {xg, in_size, 1}, col, in_size, false,
                   threads);
      }
      // Output channels are independent planes, so the scatter splits across threads cleanly.
      T* yg = yn + grp * ocg * out_size;
      ParallelFor(threads, ocg, 1, [&](int64_t c0, int64_t c1) {
        Col2ImAdd(g, col + c0 * ks * in_size, c1 - c0, yg + c0 * out_size);
      });
    }
  }
}

class ConvTranspose : public ep::Kernel {
 public:
  explicit ConvTranspose(const ep::KernelInfo& info) : attrs_(info) {
    StartSgemmWarmUp();  // the column products run as sgemm calls
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
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        ConvTransposeImpl<T>(g, x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr, y.data<T>(),
                             threads);
      } else {
        const float* xf = ToFloatScratch(x.data<T>(), x.size(), kScratchA);
        const float* wf = ToFloatScratch(w.data<T>(), w.size(), kScratchB);
        std::vector<float> bf;
        if (b) bf = ToFloatVector(b->data<T>(), b->size());
        float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
        ConvTransposeImpl<float>(g, xf, wf, b ? bf.data() : nullptr, yf, threads);
        FromFloat(yf, y_count, y.data<T>());
      }
    });
  }

 private:
  ConvAttributes attrs_;
};

}  // namespace

void RegisterConvTransposeKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("ConvTranspose").Versions(1).Build<ConvTranspose>(r);
}

}  // namespace nxrt::cpu::linalg
