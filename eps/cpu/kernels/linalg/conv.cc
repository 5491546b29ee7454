// Conv (opsets 1, 11, 22) and the com.microsoft FusedConv, NhwcConv and NhwcFusedConv.
//
// float32 runs through oneDNN (conv_dnnl.h) with weights prepared once when they are constant;
// float16/bfloat16 convert to float32 around the same path; double uses im2col + GEMM.
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
#include <string>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/conv_geometry.h"
#include "kernels/linalg/conv_reference.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/kernel_setup.h"
#include "kernels/linalg/linalg_kernels.h"

namespace nxrt::cpu::linalg {
namespace {

// Reads the fused activation in the form com.microsoft FusedConv uses: `activation` names the
// op, `activation_params` holds its attributes in order (LeakyRelu alpha; Clip min, max;
// HardSigmoid alpha, beta).
ConvFusion ReadFusion(const ep::KernelInfo& info, bool with_sum) {
  ConvFusion f;
  f.sum = with_sum;
  std::string act = info.attr_string("activation", "");
  std::vector<float> p = info.attr_floats("activation_params");
  auto param = [&](size_t i, float fallback) { return i < p.size() ? p[i] : fallback; };
  using A = dnnl::algorithm;
  if (act.empty() || act == "Identity") return f;
  if (act == "Relu")
    f.eltwise.push_back({A::eltwise_relu, 0.0f, 0.0f});
  else if (act == "LeakyRelu")
    f.eltwise.push_back({A::eltwise_relu, param(0, 0.01f), 0.0f});
  else if (act == "Clip")
    f.eltwise.push_back({A::eltwise_clip, param(0, -3.4028235e38f), param(1, 3.4028235e38f)});
  else if (act == "Sigmoid")
    f.eltwise.push_back({A::eltwise_logistic, 0.0f, 0.0f});
  else if (act == "Tanh")
    f.eltwise.push_back({A::eltwise_tanh, 0.0f, 0.0f});
  else if (act == "HardSigmoid") {
    f.eltwise.push_back({A::eltwise_linear, param(0, 0.2f), param(1, 0.5f)});
    f.eltwise.push_back({A::eltwise_clip, 0.0f, 1.0f});
  } else {
    ep::Fail(NX_NOT_IMPLEMENTED, info.describe() + ": unsupported fused activation '" + act + "'");
  }
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
std::vector<int64_t> ChannelsLast(std::span<const int64_t> d) {
  std::vector<int64_t> out(d.begin(), d.end());
  if (out.size() >= 3) {
    out.erase(out.begin() + 1);
    out.push_back(d[1]);
  }
  return out;
}

class Conv : public ep::Kernel {
 public:
  explicit Conv(const ep::KernelInfo& info, bool fused = false, bool channels_last = false)
      : attrs_(info),
        channels_last_(channels_last),
        dnnl_(ReadFusion(info, fused && info.has_input(3)), ConvStrategy::kAuto, channels_last) {
    WarmUpSgemm();  // pointwise convolutions run through sgemm
    has_sum_ = fused && info.has_input(3);
    has_fusion_ = has_sum_ || !info.attr_string("activation", "").empty();
    auto w = info.constant_input(1);
    std::optional<ep::ConstTensor> b;
    bool bias_ok = true;
    if (info.has_input(2)) {
      b = info.constant_input(2);
      bias_ok = b.has_value();
    }
    if (!w || !bias_ok) return;
    const NxElementType wt = w->type();
    if (wt != NX_TYPE_FLOAT && wt != NX_TYPE_FLOAT16 && wt != NX_TYPE_BFLOAT16) return;
    w_shape_ = w->shape_vector();
    NXRT_EP_ENFORCE(w_shape_.size() >= 3, attrs_.op + ": weight must have rank >= 3");
    const int64_t m = w_shape_[0];
    if (b) {
      NXRT_EP_ENFORCE(b->type() == wt && b->rank() == 1 && b->dim(0) == m,
                      attrs_.op + ": bias must be a 1-D tensor of " + std::to_string(m) +
                          " elements, got " + ShapeToString(b->shape()));
    }
    DispatchFloat(wt, [&]<class T>() {
      if constexpr (std::is_same_v<T, double>) {
        return;
      } else {
        std::vector<float> wf = ToFloatVector(w->data<T>(), w->size());
        std::vector<float> bf;
        if (b) bf = ToFloatVector(b->data<T>(), b->size());
        dnnl_.SetConstantWeights(wf.data(), wf.size(), b ? bf.data() : nullptr, m);
      }
    });
    // With a static input shape the primitive and the packed weights are built right now, so
    // the first run does not pay for them.
    const int threads = SessionThreads(info);
    auto x_shape = StaticInputShape(info, 0);
    if (threads > 0 && x_shape) {
      try {
        std::vector<int64_t> xs = channels_last_ ? ChannelsFirst(*x_shape) : *x_shape;
        dnnl_.Prepare(ComputeConvGeometry(attrs_, xs, w_shape_), threads);
      } catch (const std::exception&) {
        // Not fatal here: Compute reports the problem with the actual input.
      }
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor w = ctx.input(1);
    std::optional<ep::ConstTensor> b = ctx.optional_input(2);
    const NxElementType t = x.type();
    NXRT_EP_ENFORCE(w.type() == t, attrs_.op + ": X is " + ep::ElementTypeName(t) + " but W is " +
                                       ep::ElementTypeName(w.type()));
    ConvGeometry g = channels_last_
                         ? ComputeConvGeometry(attrs_, ChannelsFirst(x.shape()), w.shape())
                         : ComputeConvGeometry(attrs_, x.shape(), w.shape());
    if (b) {
      NXRT_EP_ENFORCE(b->type() == t && b->rank() == 1 && b->dim(0) == g.out_channels,
                      attrs_.op + ": bias B must be a 1-D tensor of " +
                          std::to_string(g.out_channels) + " elements, got " +
                          ShapeToString(b->shape()));
    }
    std::vector<int64_t> y_dims = channels_last_ ? ChannelsLast(g.output_dims()) : g.output_dims();
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
    const int threads = ctx.threads();
    const bool const_w = dnnl_.has_constant_weights();
    const size_t y_count = static_cast<size_t>(ShapeSize(y_dims));

    switch (t) {
      case NX_TYPE_FLOAT: {
        OmpThreadScope scope(threads);
        dnnl_.Run(g, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr,
                  z ? z->data<float>() : nullptr, y.data<float>(), threads);
        return;
      }
      case NX_TYPE_FLOAT16:
      case NX_TYPE_BFLOAT16:
        DispatchFloat(t, [&]<class T>() {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            OmpThreadScope scope(threads);
            const float* xf = ToFloatScratch(x.data<T>(), x.size(), kScratchA);
            const float* wf = const_w ? nullptr : ToFloatScratch(w.data<T>(), w.size(), kScratchB);
            std::vector<float> bf, zf;
            if (b && !const_w) bf = ToFloatVector(b->data<T>(), b->size());
            if (z) zf = ToFloatVector(z->data<T>(), z->size());
            float* yf = static_cast<float*>(ThreadScratch(kScratchC, y_count * sizeof(float)));
            dnnl_.Run(g, xf, wf, bf.empty() ? nullptr : bf.data(), z ? zf.data() : nullptr, yf,
                      threads);
            FromFloat(yf, y_count, y.data<T>());
          }
        });
        return;
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
  ConvAttributes attrs_;
  bool channels_last_;
  bool has_sum_ = false;
  bool has_fusion_ = false;
  std::vector<int64_t> w_shape_;
  DnnlConv dnnl_;
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
