// Attention (opsets 23-25): scaled dot-product attention with optional KV cache (past/present),
// grouped-query heads, boolean or additive masks, causal and sliding-window masking, padding by
// nonpad_kv_seqlen, softcap, and the qk_matmul_output debug output.
//
// Each (batch, query head) pair is independent: its score rows are computed, masked, softmaxed
// and multiplied by V in a per-thread scratch buffer. Computation is in float (double inputs in
// double); 16-bit inputs are widened once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/attr_types.h"
#include "common/parallel.h"
#include "kernels/nn/gemm_nt.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

// Strides of a [B, H, S, D] view (D contiguous) over a 3-D or 4-D input.
struct HeadView {
  int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  int64_t sb = 0, sh = 0, ss = 0;
  int64_t Offset(int64_t b, int64_t h, int64_t s) const { return b * sb + h * sh + s * ss; }
};

HeadView MakeHeadView(std::span<const int64_t> shape, int64_t heads_3d, const char* name) {
  HeadView v;
  if (shape.size() == 4) {
    v.batch = shape[0];
    v.heads = shape[1];
    v.seq = shape[2];
    v.dim = shape[3];
    v.ss = v.dim;
    v.sh = v.seq * v.dim;
    v.sb = v.heads * v.sh;
  } else if (shape.size() == 3) {
    NXRT_EP_ENFORCE(heads_3d > 0 && shape[2] % heads_3d == 0,
                    std::string("Attention: ") + name + " of shape " + DimsToString(shape) +
                        " cannot be split into " + std::to_string(heads_3d) + " heads");
    v.batch = shape[0];
    v.heads = heads_3d;
    v.seq = shape[1];
    v.dim = shape[2] / heads_3d;
    v.sh = v.dim;
    v.ss = shape[2];
    v.sb = v.seq * v.ss;
  } else {
    ep::Fail(NX_INVALID_ARGUMENT,
             std::string("Attention: ") + name + " must be 3-D or 4-D, got " + DimsToString(shape));
  }
  return v;
}

class Attention : public ep::Kernel {
 public:
  explicit Attention(const ep::KernelInfo& info) {
    is_causal_ = info.attr_int("is_causal", 0) != 0;
    q_heads_ = info.attr_int("q_num_heads", 0);
    kv_heads_ = info.attr_int("kv_num_heads", 0);
    has_scale_ = info.has_attr("scale");
    scale_ = info.attr_float("scale", 1.0f);
    softcap_ = info.attr_float("softcap", 0.0f);
    softmax_precision_ = AttrElementType(info, "softmax_precision", 0);
    qk_mode_ = info.attr_int("qk_matmul_output_mode", 0);
    left_window_ = info.attr_int("left_window_size", -1);
    right_window_ = info.attr_int("right_window_size", -1);
    NXRT_EP_ENFORCE(qk_mode_ >= 0 && qk_mode_ <= 3,
                    "Attention: qk_matmul_output_mode must be 0, 1, 2 or 3");
    for (size_t i = 0; i < 4; ++i) want_[i] = i < info.output_count() && info.output(i).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    DispatchFloat(ctx.input(0).type(), [&]<class T>() { Run<T>(ctx); });
  }

 private:
  template <class A>
  static std::vector<A> Widen(const ep::ConstTensor& t) {
    std::vector<A> out(t.size());
    DispatchFloat(t.type(), [&]<class T>() {
      const T* p = t.data<T>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<A>(static_cast<AccOf<T>>(p[i]));
    });
    return out;
  }

  template <class A>
  static void Store(ep::Tensor& t, const A* values, size_t n) {
    DispatchFloat(t.type(), [&]<class T>() {
      T* p = t.data<T>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(values[i]);
    });
  }

  // Computation is in A (float, or double for double inputs). For 16-bit inputs every
  // intermediate the ONNX definition materialises as a T tensor (scaled Q and K, scores, softmax
  // steps, probabilities) is rounded to E, so results agree with the reference to the last bit
  // as far as possible.
  template <class E>
  void Run(ep::KernelContext& ctx) const {
    using A = AccOf<E>;
    constexpr bool kNarrow = !std::is_same_v<E, A>;
    auto round_t = [](A v) -> A {
      if constexpr (kNarrow) {
        return static_cast<A>(static_cast<E>(v));
      } else {
        return v;
      }
    };
    // The softmax runs in softmax_precision when it is set, else in E.
    const bool round_softmax =
        kNarrow && !(softmax_precision_ == NX_TYPE_FLOAT || softmax_precision_ == NX_TYPE_DOUBLE);
    // bfloat16 reductions accumulate in bfloat16 itself (no wider accumulator).
    constexpr bool kRoundSum = std::is_same_v<E, BFloat16>;
    ep::ConstTensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
    const NxElementType type = q.type();
    const bool rank3 = q.rank() == 3;
    NXRT_EP_ENFORCE(k.rank() == q.rank() && v.rank() == q.rank(),
                    "Attention: Q, K and V must have the same rank");
    NXRT_EP_ENFORCE(!rank3 || (q_heads_ > 0 && kv_heads_ > 0),
                    "Attention: q_num_heads and kv_num_heads are required for 3-D inputs");
    HeadView qv = MakeHeadView(q.shape(), q_heads_, "Q");
    HeadView kv = MakeHeadView(k.shape(), kv_heads_, "K");
    HeadView vv = MakeHeadView(v.shape(), kv_heads_, "V");
    const int64_t B = qv.batch, Hq = qv.heads, Sq = qv.seq, Dk = qv.dim;
    const int64_t Hkv = kv.heads, Skv = kv.seq, Dv = vv.dim;
    NXRT_EP_ENFORCE(kv.batch == B && vv.batch == B && vv.heads == Hkv && vv.seq == Skv,
                    "Attention: K and V do not match Q in batch, heads or sequence length");
    NXRT_EP_ENFORCE(kv.dim == Dk, "Attention: Q and K head sizes differ");
    NXRT_EP_ENFORCE(Hkv > 0 && Hq % Hkv == 0, "Attention: q heads (" + std::to_string(Hq) +
                                                  ") must be a multiple of kv heads (" +
                                                  std::to_string(Hkv) + ")");
    auto past_k = ctx.optional_input(4), past_v = ctx.optional_input(5);
    NXRT_EP_ENFORCE(past_k.has_value() == past_v.has_value(),
                    "Attention: past_key and past_value must be given together");
    int64_t P = 0;
    if (past_k) {
      auto pk = past_k->shape(), pv = past_v->shape();
      NXRT_EP_ENFORCE(pk.size() == 4 && pk[0] == B && pk[1] == Hkv && pk[3] == Dk,
                      "Attention: past_key has shape " + DimsToString(pk));
      NXRT_EP_ENFORCE(pv.size() == 4 && pv[0] == B && pv[1] == Hkv && pv[2] == pk[2] && pv[3] == Dv,
                      "Attention: past_value has shape " + DimsToString(pv));
      P = pk[2];
    }
    const int64_t T = P + Skv;  // total key length
    std::vector<int64_t> nonpad;
    if (auto np = ctx.optional_input(6)) {
      nonpad = ReadInt64s(*np, "nonpad_kv_seqlen");
      NXRT_EP_ENFORCE(static_cast<int64_t>(nonpad.size()) == B,
                      "Attention: nonpad_kv_seqlen must have one value per batch item");
    }

    // Keys and values of the whole sequence (past then new), [B, Hkv, T, D] contiguous.
    std::vector<A> qa = Widen<A>(q), ka_new = Widen<A>(k), va_new = Widen<A>(v);
    std::vector<A> kall(B * Hkv * T * Dk), vall(B * Hkv * T * Dv);
    {
      std::vector<A> pk = past_k ? Widen<A>(*past_k) : std::vector<A>();
      std::vector<A> pv = past_v ? Widen<A>(*past_v) : std::vector<A>();
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < Hkv; ++h) {
          A* kd = kall.data() + (b * Hkv + h) * T * Dk;
          A* vd = vall.data() + (b * Hkv + h) * T * Dv;
          // std::copy_n, not memcpy: with a head size of 0 the vectors are empty and their
          // data() may be NULL, which memcpy must not get even for 0 bytes.
          if (P > 0) {
            std::copy_n(pk.data() + (b * Hkv + h) * P * Dk, P * Dk, kd);
            std::copy_n(pv.data() + (b * Hkv + h) * P * Dv, P * Dv, vd);
          }
          for (int64_t s = 0; s < Skv; ++s) {
            std::copy_n(ka_new.data() + kv.Offset(b, h, s), Dk, kd + (P + s) * Dk);
            std::copy_n(va_new.data() + vv.Offset(b, h, s), Dv, vd + (P + s) * Dv);
          }
        }
      }
    }

    // The mask, right-aligned to [B, Hq, Sq, T]; a short last axis counts as masked.
    struct Mask {
      bool present = false, boolean = false;
      std::vector<A> add;  // additive form (boolean masks become 0 / -inf)
      int64_t dims[4] = {1, 1, 1, 1};
    } mask;
    const A neg_inf = -std::numeric_limits<A>::infinity();
    if (auto m = ctx.optional_input(3)) {
      auto ms = m->shape();
      NXRT_EP_ENFORCE(ms.size() >= 1 && ms.size() <= 4,
                      "Attention: attn_mask must have rank 1 to 4, got " + DimsToString(ms));
      mask.present = true;
      for (size_t i = 0; i < ms.size(); ++i) mask.dims[4 - ms.size() + i] = ms[i];
      NXRT_EP_ENFORCE((mask.dims[0] == 1 || mask.dims[0] == B) &&
                          (mask.dims[1] == 1 || mask.dims[1] == Hq) &&
                          (mask.dims[2] == 1 || mask.dims[2] == Sq) && mask.dims[3] <= T,
                      "Attention: attn_mask of shape " + DimsToString(ms) +
                          " cannot be broadcast to the scores");
      if (m->type() == NX_TYPE_BOOL) {
        mask.boolean = true;
        const uint8_t* p = static_cast<const uint8_t*>(m->raw());
        mask.add.resize(m->size());
        for (size_t i = 0; i < m->size(); ++i) mask.add[i] = p[i] ? A(0) : neg_inf;
      } else {
        mask.add = Widen<A>(*m);
      }
    }

    // The caches are returned unscaled.
    if (want_[1]) {
      ep::Tensor t = ctx.output(1, {B, Hkv, T, Dk}, type);
      Store(t, kall.data(), kall.size());
    }
    if (want_[2]) {
      ep::Tensor t = ctx.output(2, {B, Hkv, T, Dv}, type);
      Store(t, vall.data(), vall.size());
    }
    // Q and K are each scaled by sqrt(scale) (the definition's overflow guard).
    const double scale =
        has_scale_ ? static_cast<double>(scale_) : 1.0 / std::sqrt(static_cast<double>(Dk));
    const A root = round_t(static_cast<A>(std::sqrt(scale)));
    for (A& e : qa) e = round_t(e * root);
    for (A& e : kall) e = round_t(e * root);
    const bool windowed = left_window_ >= 0 || right_window_ >= 0;
    // Offset of the causal/window frontier for batch item b.
    auto frontier = [&](int64_t b) -> int64_t {
      if (P > 0 || past_k) return P;
      if (!nonpad.empty()) return nonpad[b] - Sq;
      return 0;
    };

    ep::Tensor y_t;
    {
      std::vector<int64_t> ys =
          rank3 ? std::vector<int64_t>{B, Sq, Hq * Dv} : std::vector<int64_t>{B, Hq, Sq, Dv};
      y_t = ctx.output(0, ys, type);
    }
    std::vector<A> y(B * Hq * Sq * Dv);
    std::vector<A> qk_out(want_[3] ? B * Hq * Sq * T : 0);
    const int64_t group = Hq / Hkv;
    // No queries, no scores: Q's data may be NULL and no offset may be applied to it.
    ParallelFor(ctx.threads(), Sq > 0 ? B * Hq : 0, 1, [&](int64_t begin, int64_t end) {
      std::vector<A> scores(Sq * T), bias(T);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / Hq, h = bh % Hq, hk = h / group;
        const A* kd = kall.data() + (b * Hkv + hk) * T * Dk;
        const A* vd = vall.data() + (b * Hkv + hk) * T * Dv;
        // scores = (Q * sqrt(scale)) (K * sqrt(scale))^T
        GemmNT<A>(Sq, T, Dk, qa.data() + qv.Offset(b, h, 0), qv.ss, kd, Dk, scores.data(), T, false,
                  1);
        const int64_t off = frontier(b);
        for (int64_t i = 0; i < Sq; ++i) {
          A* s = scores.data() + i * T;
          for (int64_t j = 0; j < T; ++j) s[j] = round_t(s[j]);
          if (softcap_ > 0.f) {
            const A cap = round_t(static_cast<A>(softcap_));
            for (int64_t j = 0; j < T; ++j) {
              s[j] = round_t(round_t(std::tanh(round_t(s[j] / cap))) * cap);
            }
          }
          A* qk = want_[3] ? qk_out.data() + ((b * Hq + h) * Sq + i) * T : nullptr;
          if (qk != nullptr && qk_mode_ <= 1) std::memcpy(qk, s, T * sizeof(A));
          // Additive bias of this row.
          bool any_allowed = false;
          for (int64_t j = 0; j < T; ++j) {
            A bj = 0;
            if (mask.present) {
              if (j < mask.dims[3]) {
                int64_t mi =
                    (((mask.dims[0] == 1 ? 0 : b) * mask.dims[1] + (mask.dims[1] == 1 ? 0 : h)) *
                         mask.dims[2] +
                     (mask.dims[2] == 1 ? 0 : i)) *
                        mask.dims[3] +
                    j;
                bj += mask.add[mi];
              } else {
                bj = neg_inf;
              }
            }
            if (is_causal_ && j > i + off) bj = neg_inf;
            if (windowed) {
              int64_t diff = i + off - j;
              if ((left_window_ >= 0 && diff > left_window_) ||
                  (right_window_ >= 0 && -diff > right_window_)) {
                bj = neg_inf;
              }
            }
            if (!nonpad.empty() && j >= nonpad[b]) bj = neg_inf;
            bias[j] = bj;
            if (bj != neg_inf) any_allowed = true;
          }
          for (int64_t j = 0; j < T; ++j) s[j] = round_t(s[j] + bias[j]);
          if (qk != nullptr && qk_mode_ == 2) std::memcpy(qk, s, T * sizeof(A));
          if (!any_allowed) {
            // A fully masked row attends to nothing: zero probabilities, zero output.
            std::fill(s, s + T, A(0));
          } else {
            A mx = neg_inf;
            for (int64_t j = 0; j < T; ++j) mx = std::max(mx, s[j]);
            if (mx == neg_inf) mx = 0;
            A sum = 0;
            if (round_softmax) {
              for (int64_t j = 0; j < T; ++j) {
                s[j] = round_t(std::exp(round_t(s[j] - mx)));
                sum = kRoundSum ? round_t(sum + s[j]) : sum + s[j];
              }
              sum = round_t(sum);
              if (sum == A(0)) sum = A(1);
              for (int64_t j = 0; j < T; ++j) s[j] = round_t(s[j] / sum);
            } else {
              for (int64_t j = 0; j < T; ++j) {
                s[j] = std::exp(s[j] - mx);
                sum += s[j];
              }
              if (sum == A(0)) sum = A(1);
              for (int64_t j = 0; j < T; ++j) s[j] /= sum;
            }
          }
          if (qk != nullptr && qk_mode_ == 3) std::memcpy(qk, s, T * sizeof(A));
          // The probabilities are cast to the element type before the product with V.
          for (int64_t j = 0; j < T; ++j) s[j] = round_t(s[j]);
        }
        // Y block = probabilities x V ([Sq, T] x [T, Dv]).
        GemmPackedRange<A>(Sq, T, scores.data(), T, vd, Dv, y.data() + (b * Hq + h) * Sq * Dv, Dv,
                           0, Dv, false, A(1));
      }
    });
    // Y in the input's layout.
    if (rank3) {
      std::vector<A> y3(y.size());
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < Hq; ++h) {
          for (int64_t i = 0; i < Sq; ++i) {
            std::copy_n(y.data() + ((b * Hq + h) * Sq + i) * Dv, Dv,
                        y3.data() + ((b * Sq + i) * Hq + h) * Dv);  // Dv may be 0 (NULL data)
          }
        }
      }
      Store(y_t, y3.data(), y3.size());
    } else {
      Store(y_t, y.data(), y.size());
    }
    if (want_[3]) {
      ep::Tensor t = ctx.output(3, {B, Hq, Sq, T}, type);
      Store(t, qk_out.data(), qk_out.size());
    }
  }

  bool is_causal_ = false, has_scale_ = false;
  int64_t q_heads_ = 0, kv_heads_ = 0, qk_mode_ = 0, left_window_ = -1, right_window_ = -1;
  float scale_ = 1.f, softcap_ = 0.f;
  NxElementType softmax_precision_ = NX_TYPE_UNDEFINED;
  bool want_[4] = {false, false, false, false};
};

}  // namespace

void RegisterAttentionKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("Attention").Versions(23).Build<Attention>(registry);
}

}  // namespace nxrt::cpu::nn
