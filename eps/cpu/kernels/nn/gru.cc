// GRU (opsets 1-22), gate order z, r, h. The reset gate multiplies either the previous hidden
// state before its recurrent product (linear_before_reset = 0) or the product itself (1).
#include <cstring>

#include "kernels/nn/nn_common.h"
#include "kernels/nn/panel_weights.h"
#include "kernels/nn/rnn_common.h"

namespace nxrt::cpu::nn {
namespace {

class Gru : public ep::Kernel {
 public:
  explicit Gru(const ep::KernelInfo& info) : at_(info, 2, {"Sigmoid", "Tanh"}) {
    linear_before_reset_ = info.attr_int("linear_before_reset", 0) != 0;
    for (size_t i = 0; i < 2; ++i) want_[i] = i < info.output_count() && info.output(i).present();
    packed_w_ = PackConstantRnnWeight(info, 1, at_.dirs, 3, at_.hidden, {{0, 3}});
    // The recurrent slices Multiply uses: z, r (and h) from H_{t-1}; h alone from r . H_{t-1}.
    packed_r_ = PackConstantRnnWeight(info, 2, at_.dirs, 3, at_.hidden,
                                      {{0, linear_before_reset_ ? 3 : 2}, {2, 3}});
  }

  void Compute(ep::KernelContext& ctx) override {
    NxElementType type = ctx.input(0).type();
    DispatchRnnCompute(type, at_.op, [&]<class A>() { Run<A>(ctx, type); });
  }

 private:
  template <class A>
  void Run(ep::KernelContext& ctx, NxElementType type) const {
    RnnInputs<A> in = ReadRnnInputs<A>(ctx, at_, 3);
    const int64_t H = in.hidden, N = in.batch, S = in.seq, I = in.input, G = 3 * H;
    OutputView<A> y = MakeOutput<A>(ctx, 0, want_[0], in.YShape(), type);
    OutputView<A> yh = MakeOutput<A>(ctx, 1, want_[1], in.StateShape(), type);
    if (y.present()) std::fill(y.ptr, y.ptr + S * in.dirs * N * H, A(0));
    RnnWorkspace<A, 6> work({S * N * G, N * G, N * H, N * H, G, G});
    A* const proj = work.buffer(0);
    A* const rec = work.buffer(1);
    A* const h = work.buffer(2);
    A* const rh = work.buffer(3);
    A* const wb = work.buffer(4);
    A* const rb = work.buffer(5);
    for (int64_t d = 0; d < in.dirs; ++d) {
      const A* w = in.w.ptr + d * G * I;
      const A* r = in.r.ptr + d * G * H;
      for (int64_t j = 0; j < G; ++j) {
        wb[j] = in.b.present() ? in.b.ptr[d * 2 * G + j] : A(0);
        rb[j] = in.b.present() ? in.b.ptr[d * 2 * G + G + j] : A(0);
      }
      const PanelWeights* pw = packed_w_.empty() ? nullptr : &packed_w_[d][0];
      const PanelWeights* pr_first = packed_r_.empty() ? nullptr : &packed_r_[d][0];
      const PanelWeights* pr_h = packed_r_.empty() ? nullptr : &packed_r_[d][1];
      MultiplyByTransposed<A>(pw, S * N, G, I, in.x.ptr, w, proj, ctx.threads());
      for (int64_t b = 0; b < N; ++b) {
        int64_t so = in.StateOffset(d, b);
        for (int64_t k = 0; k < H; ++k) {
          h[b * H + k] = in.init_h.present() ? in.init_h.ptr[so + k] : A(0);
        }
      }
      const Activation& f = at_.acts[d * 2];
      const Activation& g = at_.acts[d * 2 + 1];
      bool reverse = at_.reverse_only || d == 1;
      // Recurrent weights: z and r (and h when the reset gate applies after the product) in one
      // product from H_{t-1}; otherwise h separately from r . H_{t-1}.
      ReusedWeights<A> r_first(r, linear_before_reset_ ? G : 2 * H, H, pr_first);
      ReusedWeights<A> r_h(r + 2 * H * H, H, H, pr_h);
      for (int64_t s = 0; s < S; ++s) {
        int64_t t = reverse ? S - 1 - s : s;
        r_first.Multiply(N, h, H, rec, G, ctx.threads());
        for (int64_t b = 0; b < N; ++b) {
          if (t >= in.Len(b)) continue;
          A* gb = rec + b * G;
          const A* pr = proj + in.XRow(t, b) * G;
          for (int64_t j = 0; j < 2 * H; ++j) gb[j] += pr[j] + wb[j] + rb[j];
          ClipInPlace(gb, 2 * H, at_.clip);
          f.Apply(gb, 2 * H);  // z and r
          const A* hb = h + b * H;
          A* gr = gb + H;
          if (linear_before_reset_) {
            A* gh = gb + 2 * H;
            for (int64_t k = 0; k < H; ++k)
              gh[k] = pr[2 * H + k] + wb[2 * H + k] + gr[k] * (gh[k] + rb[2 * H + k]);
          } else {
            for (int64_t k = 0; k < H; ++k) rh[b * H + k] = gr[k] * hb[k];
          }
        }
        if (!linear_before_reset_) {
          // (r . H_{t-1}) * Rh^T for all batch items at once.
          r_h.Multiply(N, rh, H, rec + 2 * H, G, ctx.threads());
        }
        for (int64_t b = 0; b < N; ++b) {
          if (t >= in.Len(b)) continue;
          A* gb = rec + b * G;
          A* gh = gb + 2 * H;
          const A* pr = proj + in.XRow(t, b) * G;
          if (!linear_before_reset_) {
            for (int64_t k = 0; k < H; ++k) gh[k] += pr[2 * H + k] + wb[2 * H + k] + rb[2 * H + k];
          }
          ClipInPlace(gh, H, at_.clip);
          g.Apply(gh, H);
          A* hb = h + b * H;
          const A* gz = gb;
          for (int64_t k = 0; k < H; ++k) hb[k] = (A(1) - gz[k]) * gh[k] + gz[k] * hb[k];
          if (y.present()) std::memcpy(y.ptr + in.YOffset(t, d, b), hb, H * sizeof(A));
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
  // W and R (its two products' slices) packed per direction when constant float32.
  std::vector<std::vector<PanelWeights>> packed_w_, packed_r_;
  bool linear_before_reset_ = false;
  bool want_[2] = {false, false};
};

}  // namespace

void RegisterGruKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("GRU").Versions(1).Build<Gru>(registry);
}

}  // namespace nxrt::cpu::nn
