// LinearAttention (opset 27): recurrent linear attention with a [d_k, d_v] state per key/value
// head, updated token by token with one of four rules (linear, gated, delta, gated_delta) and
// read by every query head of the group. Computation is in float (double for double inputs).
#include <cmath>
#include <cstring>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class LinearAttention : public ep::Kernel {
 public:
  explicit LinearAttention(const ep::KernelInfo& info) {
    q_heads_ = info.attr_int("q_num_heads", 0);
    kv_heads_ = info.attr_int("kv_num_heads", 0);
    scale_ = info.attr_float("scale", 0.0f);
    std::string rule = info.attr_string("update_rule", "gated_delta");
    NXRT_EP_ENFORCE(rule == "linear" || rule == "gated" || rule == "delta" || rule == "gated_delta",
                    "LinearAttention: unknown update_rule '" + rule + "'");
    gated_ = rule == "gated" || rule == "gated_delta";
    delta_ = rule == "delta" || rule == "gated_delta";
    NXRT_EP_ENFORCE(q_heads_ > 0 && kv_heads_ > 0 && q_heads_ % kv_heads_ == 0,
                    "LinearAttention: q_num_heads must be a positive multiple of kv_num_heads");
    want_state_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    DispatchFloat(ctx.input(0).type(), [&]<class T>() { Run<T>(ctx); });
  }

 private:
  template <class A>
  static std::vector<A> Widen(const ep::ConstTensor& t) {
    std::vector<A> out(t.size());
    DispatchFloat(t.type(), [&]<class U>() {
      const U* p = t.data<U>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<A>(static_cast<AccOf<U>>(p[i]));
    });
    return out;
  }

  template <class T>
  void Run(ep::KernelContext& ctx) const {
    using A = AccOf<T>;
    ep::ConstTensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
    auto qs = q.shape(), ks = k.shape(), vs = v.shape();
    NXRT_EP_ENFORCE(qs.size() == 3 && ks.size() == 3 && vs.size() == 3,
                    "LinearAttention: query, key and value must be rank 3 (B, T, H*D)");
    const int64_t B = qs[0], T_ = qs[1], Hq = q_heads_, Hk = kv_heads_;
    NXRT_EP_ENFORCE(qs[2] % Hq == 0 && ks[2] % Hk == 0 && vs[2] % Hk == 0,
                    "LinearAttention: the last axes do not split into the given head counts");
    const int64_t dk = qs[2] / Hq, dv = vs[2] / Hk;
    NXRT_EP_ENFORCE(ks[0] == B && ks[1] == T_ && vs[0] == B && vs[1] == T_ && ks[2] / Hk == dk,
                    "LinearAttention: key " + DimsToString(ks) + " / value " + DimsToString(vs) +
                        " do not match query " + DimsToString(qs));
    auto past = ctx.optional_input(3), decay = ctx.optional_input(4), beta = ctx.optional_input(5);
    NXRT_EP_ENFORCE(gated_ == decay.has_value(),
                    gated_ ? "LinearAttention: this update_rule requires decay"
                           : "LinearAttention: this update_rule takes no decay");
    NXRT_EP_ENFORCE(delta_ == beta.has_value(),
                    delta_ ? "LinearAttention: this update_rule requires beta"
                           : "LinearAttention: this update_rule takes no beta");
    int64_t decay_width = 0, beta_width = 0;
    if (decay) {
      auto ds = decay->shape();
      NXRT_EP_ENFORCE(
          ds.size() == 3 && ds[0] == B && ds[1] == T_ && (ds[2] == Hk || ds[2] == Hk * dk),
          "LinearAttention: decay has shape " + DimsToString(ds));
      decay_width = ds[2];
    }
    if (beta) {
      auto bs = beta->shape();
      NXRT_EP_ENFORCE(bs.size() == 3 && bs[0] == B && bs[1] == T_ && (bs[2] == Hk || bs[2] == 1),
                      "LinearAttention: beta has shape " + DimsToString(bs));
      beta_width = bs[2];
    }
    std::vector<A> state(B * Hk * dk * dv, A(0));
    NxElementType state_type = q.type();
    if (past) {
      auto ps = past->shape();
      NXRT_EP_ENFORCE(ps.size() == 4 && ps[0] == B && ps[1] == Hk && ps[2] == dk && ps[3] == dv,
                      "LinearAttention: past_state has shape " + DimsToString(ps));
      state = Widen<A>(*past);
      state_type = past->type();
    }
    std::vector<A> qa = Widen<A>(q), ka = Widen<A>(k), va = Widen<A>(v);
    std::vector<A> ga = decay ? Widen<A>(*decay) : std::vector<A>();
    std::vector<A> ba = beta ? Widen<A>(*beta) : std::vector<A>();
    const A scale = scale_ != 0.0f ? static_cast<A>(scale_) : A(1) / std::sqrt(static_cast<A>(dk));
    const int64_t group = Hq / Hk;
    std::vector<A> out(B * T_ * Hq * dv);
    ParallelFor(ctx.threads(), B * Hk, 1, [&](int64_t begin, int64_t end) {
      std::vector<A> upd(dv);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / Hk, h = bh % Hk;
        A* s = state.data() + bh * dk * dv;
        for (int64_t t = 0; t < T_; ++t) {
          const A* kt = ka.data() + ((b * T_ + t) * Hk + h) * dk;
          const A* vt = va.data() + ((b * T_ + t) * Hk + h) * dv;
          if (gated_) {
            const A* g = ga.data() + (b * T_ + t) * decay_width;
            for (int64_t d = 0; d < dk; ++d) {
              const A f = std::exp(decay_width == Hk ? g[h] : g[h * dk + d]);
              for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= f;
            }
          }
          if (delta_) {
            // v' = beta * (v - S^T k)
            const A bt = ba[(b * T_ + t) * beta_width + (beta_width == 1 ? 0 : h)];
            for (int64_t m = 0; m < dv; ++m) upd[m] = vt[m];
            for (int64_t d = 0; d < dk; ++d) {
              const A kd = kt[d];
              for (int64_t m = 0; m < dv; ++m) upd[m] -= s[d * dv + m] * kd;
            }
            for (int64_t m = 0; m < dv; ++m) upd[m] *= bt;
          } else {
            for (int64_t m = 0; m < dv; ++m) upd[m] = vt[m];
          }
          for (int64_t d = 0; d < dk; ++d) {
            const A kd = kt[d];
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += kd * upd[m];
          }
          // Every query head of the group reads the updated state.
          for (int64_t gq = 0; gq < group; ++gq) {
            const int64_t hq = h * group + gq;
            const A* qt = qa.data() + ((b * T_ + t) * Hq + hq) * dk;
            A* o = out.data() + ((b * T_ + t) * Hq + hq) * dv;
            std::fill(o, o + dv, A(0));
            for (int64_t d = 0; d < dk; ++d) {
              const A qd = qt[d];
              for (int64_t m = 0; m < dv; ++m) o[m] += qd * s[d * dv + m];
            }
            for (int64_t m = 0; m < dv; ++m) o[m] *= scale;
          }
        }
      }
    });
    ep::Tensor y = ctx.output(0, {B, T_, Hq * dv}, q.type());
    T* yd = y.data<T>();
    for (size_t i = 0; i < out.size(); ++i) yd[i] = static_cast<T>(out[i]);
    if (want_state_) {
      ep::Tensor st = ctx.output(1, {B, Hk, dk, dv}, state_type);
      DispatchFloat(state_type, [&]<class U>() {
        U* p = st.data<U>();
        for (size_t i = 0; i < state.size(); ++i) p[i] = static_cast<U>(state[i]);
      });
    }
  }

  int64_t q_heads_ = 0, kv_heads_ = 0;
  float scale_ = 0.f;
  bool gated_ = true, delta_ = true, want_state_ = false;
};

}  // namespace

void RegisterLinearAttentionKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("LinearAttention").Versions(27).Build<LinearAttention>(registry);
}

}  // namespace nxrt::cpu::nn
