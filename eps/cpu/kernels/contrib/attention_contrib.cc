// com.microsoft Attention: BERT/GPT-2 self-attention fused with its input projection,
//   QKV = input [B, S, in] x weights [in, Dq + Dk + Dv] + bias
//   output [B, S, Dv] = per head Softmax(scale * Q K^T + mask) V
// with mask_index as right-padding lengths ([B]), end/start positions ([2B]), or a raw 0/1 mask
// ([B, T], [B, S, T]); masked scores get mask_filter_value added. `unidirectional`
// adds causal masking. With `past` ([2, B, N, P, H]) the keys and values are the past's followed
// by the new ones, returned as `present` ([2, B, N, P + S, H]). attention_bias
// ([B|1, N|1, S, T]) is added to the scores.
//
// The projection is one sgemm over all tokens; the attention itself runs in attention_core.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/contrib/attention_core.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::contrib {
namespace {

constexpr const char* kOp = "Attention";

class AttentionContrib : public ep::Kernel {
 public:
  explicit AttentionContrib(const ep::KernelInfo& info) {
    num_heads_ = info.attr_int("num_heads");
    unidirectional_ = info.attr_int("unidirectional", 0) != 0;
    qkv_sizes_ = info.attr_ints("qkv_hidden_sizes");
    scale_ = info.attr_float("scale", 0.0f);
    mask_filter_value_ = info.attr_float("mask_filter_value", -10000.0f);
    NXRT_EP_ENFORCE(info.attr_int("do_rotary", 0) == 0,
                    "Attention: do_rotary is not supported by the CPU EP");
    NXRT_EP_ENFORCE(info.attr_int("past_present_share_buffer", 0) == 0,
                    "Attention: past_present_share_buffer is not supported by the CPU EP");
    NXRT_EP_ENFORCE(num_heads_ > 0, "Attention: num_heads must be positive");
    NXRT_EP_ENFORCE(qkv_sizes_.empty() || qkv_sizes_.size() == 3,
                    "Attention: qkv_hidden_sizes must have three values");
    want_present_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), w = ctx.input(1);
    RequireFloat(x, kOp, "input");
    RequireFloat(w, kOp, "weights");
    const auto xs = x.shape(), ws = w.shape();
    NXRT_EP_ENFORCE(xs.size() == 3,
                    "Attention: input must be [B, S, hidden], got " + DimsToString(xs));
    NXRT_EP_ENFORCE(ws.size() == 2 && ws[0] == xs[2],
                    "Attention: weights of shape " + DimsToString(ws) +
                        " do not match input of shape " + DimsToString(xs));
    const int64_t B = xs[0], S = xs[1], in = xs[2], ld = ws[1], N = num_heads_;
    int64_t dq = ld / 3, dk = ld / 3, dv = ld - 2 * (ld / 3);
    if (!qkv_sizes_.empty()) dq = qkv_sizes_[0], dk = qkv_sizes_[1], dv = qkv_sizes_[2];
    NXRT_EP_ENFORCE(dq + dk + dv == ld && dq == dk && dq % N == 0 && dv % N == 0,
                    "Attention: weights' " + std::to_string(ld) +
                        " columns do not split into Q, K, V sizes divisible by num_heads " +
                        std::to_string(N));
    const int64_t H = dq / N, Hv = dv / N;

    // QKV = input x weights + bias, one GEMM over all B * S tokens.
    std::vector<float> qkv(static_cast<size_t>(B * S * ld));
    const int64_t tokens = B * S;
    if (ctx.has_input(2)) {
      const float* bias = ChannelVector(ctx.input(2), ld, kOp, "bias");
      for (int64_t t = 0; t < tokens; ++t) std::memcpy(&qkv[t * ld], bias, ld * sizeof(float));
    }
    if (tokens > 0 && ld > 0) {
      linalg::OmpThreadScope scope(ctx.threads());
      linalg::Sgemm(false, false, tokens, ld, in, 1.0f, x.data<float>(), in, w.data<float>(), ld,
                    ctx.has_input(2) ? 1.0f : 0.0f, qkv.data(), ld);
    }

    // The past, [2, B, N, P, H].
    int64_t P = 0;
    const float* past = nullptr;
    if (auto pt = ctx.optional_input(4)) {
      RequireFloat(*pt, kOp, "past");
      const auto ps = pt->shape();
      NXRT_EP_ENFORCE(
          ps.size() == 5 && ps[0] == 2 && ps[1] == B && ps[2] == N && ps[4] == H && H == Hv,
          "Attention: past of shape " + DimsToString(ps) + " is not [2, " + std::to_string(B) +
              ", " + std::to_string(N) + ", P, " + std::to_string(H) + "]");
      P = ps[3];
      past = pt->data<float>();
    }
    const int64_t T = P + S;

    AttentionProblem p;
    p.batch = B, p.heads = N, p.seq = S, p.total = T, p.head_size = H, p.v_head_size = Hv;
    p.scale = scale_ > 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(H));
    p.mask_filter_value = mask_filter_value_;
    p.causal = unidirectional_;
    p.causal_offset = P;
    p.q = {qkv.data(), S * ld, H, ld};
    // Keys and values: straight from the QKV buffer, or gathered into a [2, B, N, T, H] cache
    // (the present output itself when it is wanted) when a past precedes them.
    std::vector<float> cache_buf;
    float* cache = nullptr;
    if (want_present_) {
      NXRT_EP_ENFORCE(H == Hv, "Attention: present needs equal Q/K and V head sizes");
      cache = ctx.output(1, {2, B, N, T, H}, NX_TYPE_FLOAT).data<float>();
    } else if (past != nullptr) {
      cache_buf.resize(static_cast<size_t>(2 * B * N * T * H));
      cache = cache_buf.data();
    }
    if (cache != nullptr) {
      const int64_t half = B * N * T * H;
      for (int64_t kv = 0; kv < 2; ++kv) {
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t n = 0; n < N; ++n) {
            float* dst = cache + kv * half + (b * N + n) * T * H;
            if (P > 0) {
              std::memcpy(dst, past + kv * B * N * P * H + (b * N + n) * P * H,
                          P * H * sizeof(float));
            }
            for (int64_t s = 0; s < S; ++s) {
              std::memcpy(dst + (P + s) * H, &qkv[(b * S + s) * ld + dq + kv * dk + n * H],
                          H * sizeof(float));
            }
          }
        }
      }
      p.k = {cache, N * T * H, T * H, H};
      p.v = {cache + half, N * T * H, T * H, H};
    } else {
      p.k = {qkv.data() + dq, S * ld, H, ld};
      p.v = {qkv.data() + dq + dk, S * ld, Hv, ld};
    }
    if (auto m = ctx.optional_input(3)) p.mask = MakeKeyMask(*m, B, S, T, kOp);
    if (auto ab = ctx.optional_input(5)) SetAttentionBias(p, *ab, kOp);
    ep::Tensor y = ctx.output(0, {B, S, dv}, NX_TYPE_FLOAT);
    p.out = {y.data<float>(), S * dv, Hv, dv};
    RunAttention(p, ctx.threads());
  }

 private:
  int64_t num_heads_ = 0;
  bool unidirectional_ = false, want_present_ = false;
  std::vector<int64_t> qkv_sizes_;
  float scale_ = 0.0f, mask_filter_value_ = -10000.0f;
};

}  // namespace

void RegisterAttentionContribKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("Attention", "com.microsoft").Versions(1).Build<AttentionContrib>(registry);
}

}  // namespace nxrt::cpu::contrib
