// CausalConvWithState (opset 27): depthwise causal 1-D convolution over [B, C, L] whose left
// context comes from a carried state [B, C, k - 1] (zeros when absent); returns the new state
// (the last k - 1 positions of state + input) and optionally applies SiLU.
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class CausalConvWithState : public ep::Kernel {
 public:
  explicit CausalConvWithState(const ep::KernelInfo& info) {
    std::string act = info.attr_string("activation", "none");
    NXRT_EP_ENFORCE(act == "none" || act == "silu" || act == "swish",
                    "CausalConvWithState: unknown activation '" + act + "'");
    silu_ = act != "none";
    want_state_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), w = ctx.input(1);
    auto xs = x.shape(), ws = w.shape();
    NXRT_EP_ENFORCE(xs.size() == 3, "CausalConvWithState: input must be (batch, channels, length)");
    const int64_t B = xs[0], C = xs[1], L = xs[2];
    NXRT_EP_ENFORCE(ws.size() == 3 && ws[0] == C && ws[1] == 1 && ws[2] >= 1,
                    "CausalConvWithState: weight has shape " + DimsToString(ws) + ", expected (" +
                        std::to_string(C) + ", 1, k)");
    const int64_t K = ws[2], S = K - 1;
    auto bias = ctx.optional_input(2), past = ctx.optional_input(3);
    if (bias) {
      NXRT_EP_ENFORCE(static_cast<int64_t>(bias->size()) == C,
                      "CausalConvWithState: bias must have one value per channel");
    }
    if (past) {
      auto ps = past->shape();
      NXRT_EP_ENFORCE(ps.size() == 3 && ps[0] == B && ps[1] == C && ps[2] == S,
                      "CausalConvWithState: past_state has shape " + DimsToString(ps));
    }
    ep::Tensor y = ctx.output(0, xs, x.type());
    ep::Tensor st;
    if (want_state_) st = ctx.output(1, {B, C, S}, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      const T* xd = x.data<T>();
      const T* pd = past ? past->data<T>() : nullptr;
      NXRT_EP_ENFORCE(!past || past->type() == x.type() || S == 0,
                      "CausalConvWithState: past_state must have the input's type");
      std::vector<A> wa(w.size()), ba(C, A(0));
      DispatchFloat(w.type(), [&]<class U>() {
        const U* p = w.data<U>();
        for (size_t i = 0; i < wa.size(); ++i) wa[i] = static_cast<A>(static_cast<AccOf<U>>(p[i]));
      });
      if (bias) {
        std::vector<double> b = ReadDoubles(*bias, "bias");
        for (int64_t c = 0; c < C; ++c) ba[c] = static_cast<A>(b[c]);
      }
      T* yd = y.data<T>();
      T* sd = st.valid() ? st.data<T>() : nullptr;
      ParallelFor(ctx.threads(), B * C, 16, [&](int64_t begin, int64_t end) {
        std::vector<A> padded(S + L);
        for (int64_t bc = begin; bc < end; ++bc) {
          // The effective sequence: carried state, then the new input.
          for (int64_t i = 0; i < S; ++i) padded[i] = pd ? static_cast<A>(pd[bc * S + i]) : A(0);
          for (int64_t i = 0; i < L; ++i) padded[S + i] = static_cast<A>(xd[bc * L + i]);
          const A* wc = wa.data() + (bc % C) * K;
          const A bcv = ba[bc % C];
          for (int64_t l = 0; l < L; ++l) {
            A acc = bcv;
            for (int64_t j = 0; j < K; ++j) acc += wc[j] * padded[l + j];
            if (silu_) {
              acc = static_cast<A>(static_cast<T>(acc));  // the convolution result is a T tensor
              acc = acc / (A(1) + std::exp(-acc));
            }
            yd[bc * L + l] = static_cast<T>(acc);
          }
          if (sd != nullptr) {
            for (int64_t i = 0; i < S; ++i) sd[bc * S + i] = static_cast<T>(padded[L + i]);
          }
        }
      });
    });
  }

 private:
  bool silu_ = false, want_state_ = false;
};

}  // namespace

void RegisterCausalConvKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("CausalConvWithState").Versions(27).Build<CausalConvWithState>(registry);
}

}  // namespace nxrt::cpu::nn
