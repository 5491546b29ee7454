// com.microsoft MultiHeadAttention: attention over already projected Q, K, V,
//   output [B, S, Dv] = per head Softmax(scale * (Q + bq)(K + bk)^T + mask + attention_bias)(V +
//   bv)
// Accepted layouts:
//   query [B, S, D], key [B, L, D], value [B, L, Dv]          (separate)
//   query [B, S, N, 3, H], no key/value                         (packed QKV, self-attention)
//   query [B, S, D], key [B, L, N, 2, H], no value              (packed KV, cross-attention)
//   query [B, S, D], key [B, N, L, H], value [B, N, L, Hv]      (K/V already per head: no bias)
// past_key/past_value ([B, N, P, H]) precede the new keys/values; present_key/present_value
// ([B, N, P + L, H]) return the whole. key_padding_mask is [B] (lengths), [B, T] or [B, S, T];
// masked scores get mask_filter_value added; `unidirectional` adds causal masking.
//
// Bias is added while gathering into per-head buffers; strided views avoid copies otherwise.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/contrib/attention_core.h"
#include "kernels/contrib/contrib_common.h"

namespace nxrt::cpu::contrib {
namespace {

constexpr const char* kOp = "MultiHeadAttention";

// Copies rows of a [B, N, rows, h] strided view into a contiguous [B, N, P + rows, h] buffer at
// row offset P, adding bias[n * h + c] when bias is given.
void Gather(const HeadMatrix<const float>& src, int64_t B, int64_t N, int64_t rows, int64_t h,
            const float* bias, float* dst, int64_t total, int64_t offset) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      float* d = dst + ((b * N + n) * total + offset) * h;
      const float* bn = bias != nullptr ? bias + n * h : nullptr;
      for (int64_t r = 0; r < rows; ++r) {
        const float* s = src.at(b, n, r);
        float* dr = d + r * h;
        if (bn != nullptr) {
#pragma omp simd
          for (int64_t c = 0; c < h; ++c) dr[c] = s[c] + bn[c];
        } else {
          std::memcpy(dr, s, h * sizeof(float));
        }
      }
    }
  }
}

// Copies a [B, N, P, h] past into the first P rows of each head of a [B, N, T, h] buffer.
void CopyPast(const float* past, int64_t B, int64_t N, int64_t P, int64_t h, float* dst,
              int64_t total) {
  for (int64_t bn = 0; bn < B * N; ++bn) {
    std::memcpy(dst + bn * total * h, past + bn * P * h, P * h * sizeof(float));
  }
}

class MultiHeadAttention : public ep::Kernel {
 public:
  explicit MultiHeadAttention(const ep::KernelInfo& info) {
    num_heads_ = info.attr_int("num_heads");
    NXRT_EP_ENFORCE(num_heads_ > 0, "MultiHeadAttention: num_heads must be positive");
    unidirectional_ = info.attr_int("unidirectional", 0) != 0;
    scale_ = info.attr_float("scale", 0.0f);
    mask_filter_value_ = info.attr_float("mask_filter_value", -10000.0f);
    for (size_t i = 0; i < 3; ++i) want_[i] = i < info.output_count() && info.output(i).present();
    NXRT_EP_ENFORCE(info.output_count() <= 3 || !info.output(3).present(),
                    "MultiHeadAttention: the qk output is not supported by the CPU EP");
  }

  void Compute(ep::KernelContext& ctx) override {
    const int64_t N = num_heads_;
    ep::ConstTensor q = ctx.input(0);
    RequireFloat(q, kOp, "query");
    auto key = ctx.optional_input(1), value = ctx.optional_input(2);
    NXRT_EP_ENFORCE(!ctx.has_input(9), "MultiHeadAttention: cache_indirection is not supported");
    const auto qs = q.shape();
    const int64_t B = qs[0], S = qs.size() >= 2 ? qs[1] : 0;
    int64_t H = 0, Hv = 0, L = 0;
    HeadMatrix<const float> qv, kv, vv;
    bool kv_per_head = false;  // K/V given as [B, N, L, H]: no bias
    if (qs.size() == 5) {
      NXRT_EP_ENFORCE(!key && !value && qs[2] == N && qs[3] == 3,
                      "MultiHeadAttention: packed QKV must be [B, S, N, 3, H] without key/value");
      H = Hv = qs[4];
      L = S;
      const float* d = q.data<float>();
      const int64_t sr = N * 3 * H;
      qv = {d, S * sr, 3 * H, sr};
      kv = {d + H, S * sr, 3 * H, sr};
      vv = {d + 2 * H, S * sr, 3 * H, sr};
    } else {
      NXRT_EP_ENFORCE(qs.size() == 3 && qs[2] % N == 0,
                      "MultiHeadAttention: query must be [B, S, D] with D divisible by num_heads, "
                      "got " +
                          DimsToString(qs));
      NXRT_EP_ENFORCE(key.has_value(), "MultiHeadAttention: key is required with a 3-D query");
      H = qs[2] / N;
      qv = {q.data<float>(), S * qs[2], H, qs[2]};
      RequireFloat(*key, kOp, "key");
      const auto ks = key->shape();
      const float* kd = key->data<float>();
      if (ks.size() == 5) {
        NXRT_EP_ENFORCE(!value && ks[0] == B && ks[2] == N && ks[3] == 2 && ks[4] == H,
                        "MultiHeadAttention: packed KV must be [B, L, N, 2, H] without value");
        L = ks[1];
        Hv = H;
        const int64_t sr = N * 2 * H;
        kv = {kd, L * sr, 2 * H, sr};
        vv = {kd + H, L * sr, 2 * H, sr};
      } else {
        NXRT_EP_ENFORCE(value.has_value(), "MultiHeadAttention: value is required");
        RequireFloat(*value, kOp, "value");
        const auto vs = value->shape();
        const float* vd = value->data<float>();
        if (ks.size() == 4) {
          NXRT_EP_ENFORCE(ks[0] == B && ks[1] == N && ks[3] == H && vs.size() == 4 && vs[0] == B &&
                              vs[1] == N && vs[2] == ks[2],
                          "MultiHeadAttention: per-head key/value must be [B, N, L, H]");
          kv_per_head = true;
          L = ks[2];
          Hv = vs[3];
          kv = {kd, N * L * H, L * H, H};
          vv = {vd, N * L * Hv, L * Hv, Hv};
        } else {
          NXRT_EP_ENFORCE(ks.size() == 3 && ks[0] == B && ks[2] == qs[2] && vs.size() == 3 &&
                              vs[0] == B && vs[1] == ks[1] && vs[2] % N == 0,
                          "MultiHeadAttention: key " + DimsToString(ks) + " and value " +
                              DimsToString(vs) + " do not match query " + DimsToString(qs));
          L = ks[1];
          Hv = vs[2] / N;
          kv = {kd, L * ks[2], H, ks[2]};
          vv = {vd, L * vs[2], Hv, vs[2]};
        }
      }
    }
    const int64_t Dq = N * H, Dv = N * Hv;
    const float* bias = nullptr;
    if (auto bt = ctx.optional_input(3)) {
      NXRT_EP_ENFORCE(!kv_per_head, "MultiHeadAttention: bias needs key/value in [B, L, D] form");
      bias = ChannelVector(*bt, 2 * Dq + Dv, kOp, "bias");
    }
    auto past_k = ctx.optional_input(6), past_v = ctx.optional_input(7);
    NXRT_EP_ENFORCE(past_k.has_value() == past_v.has_value(),
                    "MultiHeadAttention: past_key and past_value go together");
    int64_t P = 0;
    if (past_k) {
      RequireFloat(*past_k, kOp, "past_key");
      RequireFloat(*past_v, kOp, "past_value");
      const auto pk = past_k->shape(), pv = past_v->shape();
      NXRT_EP_ENFORCE(pk.size() == 4 && pk[0] == B && pk[1] == N && pk[3] == H && pv.size() == 4 &&
                          pv[0] == B && pv[1] == N && pv[2] == pk[2] && pv[3] == Hv,
                      "MultiHeadAttention: past_key " + DimsToString(pk) + " / past_value " +
                          DimsToString(pv) + " are not [B, N, P, H]");
      P = pk[2];
    }
    const int64_t T = P + L;

    // Q with its bias, gathered per head; K and V likewise when a bias or past must be merged
    // in or a present is returned, else read in place.
    std::vector<float> q_buf;
    if (bias != nullptr) {
      q_buf.resize(static_cast<size_t>(B * N * S * H));
      Gather(qv, B, N, S, H, bias, q_buf.data(), S, 0);
      qv = {q_buf.data(), N * S * H, S * H, H};
    }
    const bool gather_kv = bias != nullptr || P > 0 || want_[1] || want_[2];
    std::vector<float> k_buf, v_buf;
    if (gather_kv) {
      float* kd = want_[1] ? ctx.output(1, {B, N, T, H}, NX_TYPE_FLOAT).data<float>() : nullptr;
      float* vd = want_[2] ? ctx.output(2, {B, N, T, Hv}, NX_TYPE_FLOAT).data<float>() : nullptr;
      if (kd == nullptr) {
        k_buf.resize(static_cast<size_t>(B * N * T * H));
        kd = k_buf.data();
      }
      if (vd == nullptr) {
        v_buf.resize(static_cast<size_t>(B * N * T * Hv));
        vd = v_buf.data();
      }
      if (P > 0) {
        CopyPast(past_k->data<float>(), B, N, P, H, kd, T);
        CopyPast(past_v->data<float>(), B, N, P, Hv, vd, T);
      }
      Gather(kv, B, N, L, H, bias != nullptr ? bias + Dq : nullptr, kd, T, P);
      Gather(vv, B, N, L, Hv, bias != nullptr ? bias + 2 * Dq : nullptr, vd, T, P);
      kv = {kd, N * T * H, T * H, H};
      vv = {vd, N * T * Hv, T * Hv, Hv};
    }

    AttentionProblem p;
    p.batch = B, p.heads = N, p.seq = S, p.total = T, p.head_size = H, p.v_head_size = Hv;
    p.scale = scale_ > 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(H));
    p.mask_filter_value = mask_filter_value_;
    p.causal = unidirectional_;
    p.causal_offset = T - S;
    p.q = qv, p.k = kv, p.v = vv;
    if (auto m = ctx.optional_input(4)) p.mask = MakeKeyMask(*m, B, S, T, kOp);
    if (auto ab = ctx.optional_input(5)) SetAttentionBias(p, *ab, kOp);
    ep::Tensor y = ctx.output(0, {B, S, Dv}, NX_TYPE_FLOAT);
    p.out = {y.data<float>(), S * Dv, Hv, Dv};
    RunAttention(p, ctx.threads());
  }

 private:
  int64_t num_heads_ = 0;
  bool unidirectional_ = false;
  float scale_ = 0.0f, mask_filter_value_ = -10000.0f;
  bool want_[3] = {false, false, false};
};

}  // namespace

void RegisterMultiHeadAttentionKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MultiHeadAttention", "com.microsoft")
      .Versions(1)
      .Build<MultiHeadAttention>(registry);
}

}  // namespace nxrt::cpu::contrib
