// LSTM (opsets 1-22). The input projection X * W^T for all time steps is one product up front;
// each step then adds H_{t-1} * R^T and applies the gates (order i, o, f, c) per batch item.
#include <cstring>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"
#include "kernels/nn/panel_weights.h"
#include "kernels/nn/rnn_common.h"

namespace nxrt::cpu::nn {
namespace {

class Lstm : public ep::Kernel {
 public:
  explicit Lstm(const ep::KernelInfo& info) : at_(info, 3, {"Sigmoid", "Tanh", "Tanh"}) {
    input_forget_ = info.attr_int("input_forget", 0) != 0;
    for (size_t i = 0; i < 3; ++i) {
      want_[i] = i < info.output_count() && info.output(i).present();
    }
    packed_w_ = PackConstantRnnWeight(info, 1, at_.dirs, 4, at_.hidden, {{0, 4}});
    packed_r_ = PackConstantRnnWeight(info, 2, at_.dirs, 4, at_.hidden, {{0, 4}});
  }

  void Compute(ep::KernelContext& ctx) override {
    NxElementType type = ctx.input(0).type();
    DispatchRnnCompute(type, at_.op, [&]<class A>() { Run<A>(ctx, type); });
  }

 private:
  template <class A>
  void Run(ep::KernelContext& ctx, NxElementType type) const {
    RnnInputs<A> in = ReadRnnInputs<A>(ctx, at_, 4);
    const int64_t H = in.hidden, N = in.batch, S = in.seq, I = in.input;
    OutputView<A> y = MakeOutput<A>(ctx, 0, want_[0], in.YShape(), type);
    OutputView<A> yh = MakeOutput<A>(ctx, 1, want_[1], in.StateShape(), type);
    OutputView<A> yc = MakeOutput<A>(ctx, 2, want_[2], in.StateShape(), type);
    // Steps past a sequence's length produce zeros.
    if (y.present()) std::fill(y.ptr, y.ptr + S * in.dirs * N * H, A(0));
    // The two directions of a bidirectional LSTM are independent: with two threads or more each
    // runs whole on a thread of its own (its steps need no hand-off), rather than both handing
    // every step's small product to the pool. sequencer2d's 36 LSTMs (32 steps of a [32, 48] x
    // [48, 192] product each way) took 52.5 ms at two threads, 87 at one; now 46.7 at two.
    const double step_macs = static_cast<double>(N) * 4 * H * (H + I);
    if (in.dirs == 2 && ctx.threads() >= 2 &&
        step_macs * static_cast<double>(S) >= kMinDirectionMacs) {
      ParallelFor(2, 2, 1, [&](int64_t d0, int64_t d1) {
        for (int64_t d = d0; d < d1; ++d) RunDirection<A>(in, d, y, yh, yc, 1);
      });
    } else {
      for (int64_t d = 0; d < in.dirs; ++d) RunDirection<A>(in, d, y, yh, yc, ctx.threads());
    }
    y.Finish();
    yh.Finish();
    yc.Finish();
  }

  // One direction, its working buffers in the calling thread's scratch.
  template <class A>
  void RunDirection(const RnnInputs<A>& in, int64_t d, OutputView<A>& y, OutputView<A>& yh,
                    OutputView<A>& yc, int threads) const {
    const int64_t H = in.hidden, N = in.batch, S = in.seq, I = in.input, G = 4 * H;
    RnnWorkspace<A, 6> work({S * N * G, N * G, N * H, N * H, G, H});
    A* const proj = work.buffer(0);
    A* const gates = work.buffer(1);
    A* const h = work.buffer(2);
    A* const c = work.buffer(3);
    A* const bias = work.buffer(4);
    A* const tmp = work.buffer(5);
    const A* w = in.w.ptr + d * G * I;
    const A* r = in.r.ptr + d * G * H;
    const A* p = in.p.present() ? in.p.ptr + d * 3 * H : nullptr;
    for (int64_t j = 0; j < G; ++j) {
      bias[j] = in.b.present() ? in.b.ptr[d * 2 * G + j] + in.b.ptr[d * 2 * G + G + j] : A(0);
    }
    const PanelWeights* pw = packed_w_.empty() ? nullptr : &packed_w_[d][0];
    const PanelWeights* pr = packed_r_.empty() ? nullptr : &packed_r_[d][0];
    MultiplyByTransposed<A>(pw, S * N, G, I, in.x.ptr, w, proj, threads);
    for (int64_t b = 0; b < N; ++b) {
      int64_t so = in.StateOffset(d, b);
      for (int64_t k = 0; k < H; ++k) {
        h[b * H + k] = in.init_h.present() ? in.init_h.ptr[so + k] : A(0);
        c[b * H + k] = in.init_c.present() ? in.init_c.ptr[so + k] : A(0);
      }
    }
    const Activation& f = at_.acts[d * 3];
    const Activation& g = at_.acts[d * 3 + 1];
    const Activation& hact = at_.acts[d * 3 + 2];
    bool reverse = at_.reverse_only || d == 1;
    ReusedWeights<A> rw(r, G, H, pr);
    for (int64_t s = 0; s < S; ++s) {
      int64_t t = reverse ? S - 1 - s : s;
      rw.Multiply(N, h, H, gates, G, threads);
      for (int64_t b = 0; b < N; ++b) {
        if (t >= in.Len(b)) continue;
        A* gb = gates + b * G;
        const A* pr_row = proj + in.XRow(t, b) * G;
        for (int64_t j = 0; j < G; ++j) gb[j] += pr_row[j] + bias[j];
        A* hb = h + b * H;
        LstmCellStep(gb, c + b * H, hb, tmp, p, H, at_.clip, input_forget_, f, g, hact);
        if (y.present()) std::memcpy(y.ptr + in.YOffset(t, d, b), hb, H * sizeof(A));
      }
    }
    for (int64_t b = 0; b < N; ++b) {
      int64_t so = in.StateOffset(d, b);
      if (yh.present()) std::memcpy(yh.ptr + so, h + b * H, H * sizeof(A));
      if (yc.present()) std::memcpy(yc.ptr + so, c + b * H, H * sizeof(A));
    }
  }

  // Work per direction below which both directions stay on the calling thread (about 50 us).
  static constexpr double kMinDirectionMacs = 1 << 17;

  RnnAttributes at_;
  // W and R packed per direction when they are constant float32 (panel_weights.h).
  std::vector<std::vector<PanelWeights>> packed_w_, packed_r_;
  bool input_forget_ = false;
  bool want_[3] = {false, false, false};
};

}  // namespace

void RegisterLstmKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("LSTM").Versions(1).Build<Lstm>(registry);
}

}  // namespace nxrt::cpu::nn
