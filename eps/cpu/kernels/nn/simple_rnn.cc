// RNN (opsets 1-22): H_t = f(X_t * W^T + H_{t-1} * R^T + Wb + Rb).
#include <cstring>

#include "kernels/nn/nn_common.h"
#include "kernels/nn/panel_weights.h"
#include "kernels/nn/rnn_common.h"

namespace nxrt::cpu::nn {
namespace {

class Rnn : public ep::Kernel {
 public:
  explicit Rnn(const ep::KernelInfo& info) : at_(info, 1, {"Tanh"}) {
    for (size_t i = 0; i < 2; ++i) want_[i] = i < info.output_count() && info.output(i).present();
    packed_w_ = PackConstantRnnWeight(info, 1, at_.dirs, 1, at_.hidden, {{0, 1}});
    packed_r_ = PackConstantRnnWeight(info, 2, at_.dirs, 1, at_.hidden, {{0, 1}});
  }

  void Compute(ep::KernelContext& ctx) override {
    NxElementType type = ctx.input(0).type();
    DispatchRnnCompute(type, at_.op, [&]<class A>() { Run<A>(ctx, type); });
  }

 private:
  template <class A>
  void Run(ep::KernelContext& ctx, NxElementType type) const {
    RnnInputs<A> in = ReadRnnInputs<A>(ctx, at_, 1);
    const int64_t H = in.hidden, N = in.batch, S = in.seq, I = in.input;
    OutputView<A> y = MakeOutput<A>(ctx, 0, want_[0], in.YShape(), type);
    OutputView<A> yh = MakeOutput<A>(ctx, 1, want_[1], in.StateShape(), type);
    if (y.present()) std::fill(y.ptr, y.ptr + S * in.dirs * N * H, A(0));
    RnnWorkspace<A, 4> work({S * N * H, N * H, N * H, H});
    A* const proj = work.buffer(0);
    A* const rec = work.buffer(1);
    A* const h = work.buffer(2);
    A* const bias = work.buffer(3);
    for (int64_t d = 0; d < in.dirs; ++d) {
      const A* w = in.w.ptr + d * H * I;
      const A* r = in.r.ptr + d * H * H;
      for (int64_t j = 0; j < H; ++j) {
        bias[j] = in.b.present() ? in.b.ptr[d * 2 * H + j] + in.b.ptr[d * 2 * H + H + j] : A(0);
      }
      const PanelWeights* pw = packed_w_.empty() ? nullptr : &packed_w_[d][0];
      const PanelWeights* pr = packed_r_.empty() ? nullptr : &packed_r_[d][0];
      MultiplyByTransposed<A>(pw, S * N, H, I, in.x.ptr, w, proj, ctx.threads());
      for (int64_t b = 0; b < N; ++b) {
        int64_t so = in.StateOffset(d, b);
        for (int64_t k = 0; k < H; ++k) {
          h[b * H + k] = in.init_h.present() ? in.init_h.ptr[so + k] : A(0);
        }
      }
      const Activation& f = at_.acts[d];
      bool reverse = at_.reverse_only || d == 1;
      ReusedWeights<A> rw(r, H, H, pr);
      for (int64_t s = 0; s < S; ++s) {
        int64_t t = reverse ? S - 1 - s : s;
        rw.Multiply(N, h, H, rec, H, ctx.threads());
        for (int64_t b = 0; b < N; ++b) {
          if (t >= in.Len(b)) continue;
          A* gb = rec + b * H;
          const A* pr = proj + in.XRow(t, b) * H;
          for (int64_t k = 0; k < H; ++k) gb[k] += pr[k] + bias[k];
          ClipInPlace(gb, H, at_.clip);
          f.Apply(gb, H);
          std::memcpy(h + b * H, gb, H * sizeof(A));
          if (y.present()) std::memcpy(y.ptr + in.YOffset(t, d, b), gb, H * sizeof(A));
        }
      }
      if (yh.present()) {
        for (int64_t b = 0; b < N; ++b) {
          std::memcpy(yh.ptr + in.StateOffset(d, b), h + b * H, H * sizeof(A));
        }
      }
    }
    y.Finish();
    yh.Finish();
  }

  RnnAttributes at_;
  // W and R packed per direction when they are constant float32 (panel_weights.h).
  std::vector<std::vector<PanelWeights>> packed_w_, packed_r_;
  bool want_[2] = {false, false};
};

}  // namespace

void RegisterSimpleRnnKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("RNN").Versions(1).Build<Rnn>(registry);
}

}  // namespace nxrt::cpu::nn
