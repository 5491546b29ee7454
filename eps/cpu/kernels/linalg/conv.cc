// Conv (opsets 1, 11, 22) and the com.microsoft FusedConv, NhwcConv and NhwcFusedConv.
//
// float32 runs through oneDNN (conv_dnnl.h); float16/bfloat16 convert to float32 around the same
// path; double uses im2col + GEMM. A constant weight (input 1) and bias (input 2) of a float type
// are pre-packed as float32 copies, each on its own (the host asks per input and may free either
// initializer afterwards), shared between sessions when the host offers it; DnnlConv borrows the
// packed weight and keeps its reordered layouts per kernel.
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
#include <string>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_reference.h"
#include "kernels/linalg/dnnl_eltwise.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/prepacked_weight.h"

namespace nxrt::cpu::linalg {
namespace {

ConvFusion ReadFusion(const ep::KernelInfo& info, bool with_sum) {
  ConvFusion f;
  f.sum = with_sum;
  f.eltwise = ReadFusedActivation(info);
  return f;
}

// NHWC [N, spatial..., C] <-> NCHW [N, C, spatial...] dimension orders.
std::vector<int64_t> ChannelsFirst(std::span<const int64_t> d) {
  std::vector<int64_t> out(d.begin(), d.end());
  if (out.size() >= 3) {
    out.erase(out.end() - 1);
    out.insert(out.begin() + 1, d.back());
  }
  return out;
}
Dims ChannelsLast(std::span<const int64_t> d) {
  Dims out(d);
  if (out.size() >= 3) {  // [N, C, spatial...] -> [N, spatial..., C]
    for (size_t i = 1; i + 1 < d.size(); ++i) out[i] = d[i + 1];
    out.back() = d[1];
  }
  return out;
}

class Conv : public ep::PrePackingKernel {
 public:
  explicit Conv(const ep::KernelInfo& info, bool fused = false, bool channels_last = false)
      : attrs_(info),
        channels_last_(channels_last),
        w_(info, 1),
        b_(info, 2),
        dnnl_(ReadFusion(info, fused && info.has_input(3)), ConvStrategy::kAuto, channels_last) {
    dnnl_.SetIsa(KernelIsa(info));
    dnnl_.SetAudit(KernelAudit(info));
    dnnl_.SetWinograd(info.config("ep.cpu.winograd", "1") != "0");

    has_sum_ = fused && info.has_input(3);
    has_fusion_ = has_sum_ || !info.attr_string("activation", "").empty();
    has_bias_ = info.has_input(2);
    // With a static input shape the plan (primitive and reordered weights) is built as soon as
    // the weights are packed, so the first run does not pay for it.
    threads_ = SessionThreads(info);
    x_shape_ = StaticInputShape(info, 0);
  }

  bool PrePack(const ep::ConstTensor& w, size_t input_index, ep::Allocator allocator,
               const ep::PrePackCache& cache) override {
    if ((input_index != 1 && input_index != 2) || !IsPackableFloat(w.type()) || w.size() == 0) {
      return false;
    }
    if (input_index == 1) {
      NXRT_EP_ENFORCE(w.rank() >= 3,
                      attrs_.op + ": weight must have rank >= 3, got " + ShapeToString(w.shape()));
      if (w_.StoreOrKeep(w, PackFloatBlock(w, allocator, /*transpose=*/false), cache)) UseWeights();
    } else {
      NXRT_EP_ENFORCE(w.rank() == 1,
                      attrs_.op + ": bias B must be 1-D, got " + ShapeToString(w.shape()));
      b_.StoreOrKeep(w, PackFloatBlock(w, allocator, /*transpose=*/false), cache);
    }
    return true;
  }

  void UseSharedPrePacked(size_t input_index, std::span<const void* const> buffers,
                          std::span<const size_t> sizes) override {
    NXRT_EP_ENFORCE(input_index == 1 || input_index == 2,
                    attrs_.op + ": no packing for input " + std::to_string(input_index));
    if (input_index == 1) {
      w_.Adopt(buffers, sizes, attrs_.op);
      UseWeights();
    } else {
      b_.Adopt(buffers, sizes, attrs_.op);
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType t = x.type();
    // Packed inputs are used on their own: the host may have freed the initializers.
    const bool const_w = w_.packed();
    ep::ConstTensor w = const_w ? ep::ConstTensor() : ctx.input(1);
    const NxElementType wt = const_w ? w_.type() : w.type();
    NXRT_EP_ENFORCE(wt == t, attrs_.op + ": X is " + ep::ElementTypeName(t) + " but W is " +
                                 ep::ElementTypeName(wt));
    ConvGeometry g =
        Geometry(x.shape(), const_w ? std::span<const int64_t>(w_.shape()) : w.shape());
    std::optional<ep::ConstTensor> b = b_.packed() ? std::nullopt : ctx.optional_input(2);
    if (b_.packed() || b) {
      const NxElementType bt = b ? b->type() : b_.type();
      std::span<const int64_t> b_shape = b ? b->shape() : std::span<const int64_t>(b_.shape());
      NXRT_EP_ENFORCE(bt == t && b_shape.size() == 1 && b_shape[0] == g.out_channels,
                      attrs_.op + ": bias B must be a 1-D " + ep::ElementTypeName(t) +
                          " tensor of " + std::to_string(g.out_channels) + " elements, got " +
                          ep::ElementTypeName(bt) + ShapeToString(b_shape));
    }
    const Dims y_dims = channels_last_ ? ChannelsLast(g.output_dims()) : g.output_dims();
    std::optional<ep::ConstTensor> z;
    if (has_sum_) {
      z = ctx.input(3);
      NXRT_EP_ENFORCE(z->type() == t && ShapeSize(z->shape()) == ShapeSize(y_dims) &&
                          z->rank() == y_dims.size(),
                      attrs_.op + ": the summed input Z " + ShapeToString(z->shape()) +
                          " must have the output shape " + ShapeToString(y_dims));
    }
    ep::Tensor y = ctx.output(0, y_dims, t);
    if (ShapeSize(y_dims) == 0) return;
    // DnnlConv decides how many of these its paths use (OpenMP primitives only for large
    // convolutions); the double path splits its GEMMs on the pool.
    const int threads = ctx.threads();
    const size_t y_count = static_cast<size_t>(ShapeSize(y_dims));

    switch (t) {
      case NX_TYPE_FLOAT: {
        const float* bias = b_.packed() ? b_.data() : b ? b->data<float>() : nullptr;
        dnnl_.Run(AsRowConvolution(g), x.data<float>(), const_w ? nullptr : w.data<float>(), bias,
                  z ? z->data<float>() : nullptr, y.data<float>(), threads);
        return;
      }
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            const float* xf = ToFloatScratch(x.data<T>(), x.size(), kScratchA);
            const float* wf = const_w ? nullptr : ToFloatScratch(w.data<T>(), w.size(), kScratchB);
            std::vector<float> bf, zf;
            if (b) bf = ToFloatVector(b->data<T>(), b->size());
            if (z) zf = ToFloatVector(z->data<T>(), z->size());
            const float* bias = b_.packed() ? b_.data() : b ? bf.data() : nullptr;
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
            dnnl_.Run(AsRowConvolution(g), xf, wf, bias, z ? zf.data() : nullptr, yf, threads);
            FromFloat(yf, y_count, y.data<T>());
          }
        });
        return;
      // Not packed (PrePack declines double), so W and B are inputs.
      case NX_TYPE_DOUBLE:
        NXRT_EP_ENFORCE(!has_fusion_ && !channels_last_,
                        attrs_.op + ": fused and channels-last convolutions need float input");
        ConvIm2Col<double>(g, x.data<double>(), w.data<double>(), b ? b->data<double>() : nullptr,
                           y.data<double>(), threads);
        return;
      default:
        UnsupportedType(attrs_.op.c_str(), t);
    }
  }

 private:
  ConvGeometry Geometry(std::span<const int64_t> x_shape, std::span<const int64_t> w_shape) const {
    return channels_last_ ? ComputeConvGeometry(attrs_, ChannelsFirst(x_shape), w_shape)
                          : ComputeConvGeometry(attrs_, x_shape, w_shape);
  }

  // The weights are packed (owned or shared): hand them to DnnlConv and build the plan for a
  // static input shape.
  void UseWeights() {
    dnnl_.SetConstantWeights(w_.data(), w_.size());
    if (threads_ <= 0 || !x_shape_) return;
    try {
      dnnl_.Prepare(AsRowConvolution(Geometry(*x_shape_, w_.shape())), threads_, has_bias_);
    } catch (const std::exception&) {
      // Not fatal here: Compute reports the problem with the actual input.
    }
  }

  ConvAttributes attrs_;
  bool channels_last_;
  bool has_sum_ = false;
  bool has_fusion_ = false;
  bool has_bias_ = false;  // the node has input 2 (packed or not, Run receives a bias)
  int threads_ = 0;
  std::optional<std::vector<int64_t>> x_shape_;  // static X shape, if fully known
  PackedFloatWeight w_, b_;                      // constant W and B as float32
  DnnlConv dnnl_;                                // borrows w_ once it is packed
};

class FusedConv : public Conv {
 public:
  explicit FusedConv(const ep::KernelInfo& info) : Conv(info, true) {}
};

// Channels-last variants (X and Y as [N, spatial..., C], W still [M, C/group, k...]) for a graph
// kept in NHWC: oneDNN's AVX-512 kernels work on that layout natively, so no reorders run.
class NhwcConv : public Conv {
 public:
  explicit NhwcConv(const ep::KernelInfo& info) : Conv(info, false, true) {}
};
class NhwcFusedConv : public Conv {
 public:
  explicit NhwcFusedConv(const ep::KernelInfo& info) : Conv(info, true, true) {}
};

}  // namespace

void RegisterConvKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Conv").Versions(1).Build<Conv>(r);
  ep::KernelDefBuilder("FusedConv", "com.microsoft").Versions(1).Build<FusedConv>(r);
  // What the host's graph fusion produces (same attributes and inputs).
  ep::KernelDefBuilder("FusedConv", "com.nxrt").Versions(1).Build<FusedConv>(r);
  ep::KernelDefBuilder("NhwcConv", "com.microsoft").Versions(1).Build<NhwcConv>(r);
  ep::KernelDefBuilder("NhwcFusedConv", "com.microsoft").Versions(1).Build<NhwcFusedConv>(r);
}

}  // namespace nxrt::cpu::linalg
