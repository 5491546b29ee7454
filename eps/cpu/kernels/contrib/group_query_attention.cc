// com.microsoft GroupQueryAttention: decoder self-attention with a KV cache and grouped heads
// (num_heads query heads share kv_num_heads key/value heads), as LLM exporters emit it.
//   query [B, S, N*H] (or packed [B, S, (N + 2*kvN)*H] with key/value absent),
//   key/value [B, S, kvN*H], past_key/past_value [B, kvN, P_buf, H],
//   seqlens_k [B] (int32: total length - 1 per sequence), total_sequence_length (scalar).
// Sequence b has T_b = seqlens_k[b] + 1 tokens; its new tokens sit at positions
// past_b .. past_b + S - 1 with past_b = T_b - S (0 for the first prompt, S == total length).
// present_key/present_value ([B, kvN, max(total, P_buf), H]) hold the past's first past_b rows,
// then the new keys/values (rotated when do_rotary), zeros after. Each query sees the keys at or
// before its position (always causal), within local_window_size of it when that is positive;
// scores are scale * QK^T, optionally soft-capped (softcap * tanh(x / softcap)), and masked keys
// get no weight at all.
//
// Per (b, query head) job: one sgemm for the scores of all S rows against the visible prefix,
// the softmax over each row's visible range, and one sgemm with V.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/reduction/softmax_core.h"

namespace nxrt::cpu::contrib {
namespace {

constexpr const char* kOp = "GroupQueryAttention";

class GroupQueryAttention : public ep::Kernel {
 public:
  explicit GroupQueryAttention(const ep::KernelInfo& info) {
    num_heads_ = info.attr_int("num_heads");
    kv_heads_ = info.attr_int("kv_num_heads");
    NXRT_EP_ENFORCE(num_heads_ > 0 && kv_heads_ > 0 && num_heads_ % kv_heads_ == 0,
                    "GroupQueryAttention: num_heads must be a positive multiple of kv_num_heads");
    scale_ = info.attr_float("scale", 0.0f);
    softcap_ = info.attr_float("softcap", 0.0f);
    window_ = info.attr_int("local_window_size", -1);
    do_rotary_ = info.attr_int("do_rotary", 0) != 0;
    interleaved_ = info.attr_int("rotary_interleaved", 0) != 0;
    NXRT_EP_ENFORCE(info.attr_int("smooth_softmax", 0) == 0,
                    "GroupQueryAttention: smooth_softmax is not supported by the CPU EP");
    NXRT_EP_ENFORCE(info.attr_int("qk_output", 0) == 0,
                    "GroupQueryAttention: qk_output is not supported by the CPU EP");
    for (size_t i = 0; i < 3; ++i) want_[i] = i < info.output_count() && info.output(i).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    const int64_t N = num_heads_, Nkv = kv_heads_;
    ep::ConstTensor q = ctx.input(0);
    RequireFloat(q, kOp, "query");
    const auto qs = q.shape();
    NXRT_EP_ENFORCE(qs.size() == 3,
                    "GroupQueryAttention: query must be [B, S, D], got " + DimsToString(qs));
    const int64_t B = qs[0], S = qs[1];
    for (size_t i : {9, 10, 11}) {
      NXRT_EP_ENFORCE(!ctx.has_input(i),
                      "GroupQueryAttention: position_ids, attention_bias and "
                      "head_sink are not supported by the CPU EP");
    }
    // Q, K, V as rows of `ld` floats with their column offsets.
    const float* qd = q.data<float>();
    const float* kd;
    const float* vd;
    int64_t H, q_ld, kv_ld, k_col = 0, v_col = 0;
    if (!ctx.has_input(1)) {  // packed QKV
      NXRT_EP_ENFORCE(!ctx.has_input(2), "GroupQueryAttention: value without key");
      NXRT_EP_ENFORCE(qs[2] % (N + 2 * Nkv) == 0,
                      "GroupQueryAttention: packed QKV width does not split into heads");
      H = qs[2] / (N + 2 * Nkv);
      q_ld = kv_ld = qs[2];
      kd = vd = qd;
      k_col = N * H;
      v_col = (N + Nkv) * H;
    } else {
      ep::ConstTensor k = ctx.input(1), v = ctx.input(2);
      RequireFloat(k, kOp, "key");
      RequireFloat(v, kOp, "value");
      NXRT_EP_ENFORCE(qs[2] % N == 0, "GroupQueryAttention: query width does not split");
      H = qs[2] / N;
      const std::vector<int64_t> kv_shape{B, S, Nkv * H};
      NXRT_EP_ENFORCE(k.shape_vector() == kv_shape && v.shape_vector() == kv_shape,
                      "GroupQueryAttention: key/value must be " + DimsToString(kv_shape));
      q_ld = qs[2];
      kv_ld = Nkv * H;
      kd = k.data<float>();
      vd = v.data<float>();
    }
    auto past_k = ctx.optional_input(3), past_v = ctx.optional_input(4);
    NXRT_EP_ENFORCE(past_k.has_value() == past_v.has_value(),
                    "GroupQueryAttention: past_key and past_value go together");
    int64_t P_buf = 0;
    if (past_k) {
      const std::vector<int64_t> ps = past_k->shape_vector();
      NXRT_EP_ENFORCE(ps.size() == 4 && ps[0] == B && ps[1] == Nkv && ps[3] == H &&
                          past_v->shape_vector() == ps,
                      "GroupQueryAttention: past_key/past_value must be [B, kvN, P, H]");
      RequireFloat(*past_k, kOp, "past_key");
      RequireFloat(*past_v, kOp, "past_value");
      P_buf = ps[2];
    }
    const std::vector<int64_t> seqlens = nn::ReadInt64s(ctx.input(5), "seqlens_k");
    NXRT_EP_ENFORCE(static_cast<int64_t>(seqlens.size()) == B,
                    "GroupQueryAttention: seqlens_k must have one value per batch entry");
    const std::vector<int64_t> total_v = nn::ReadInt64s(ctx.input(6), "total_sequence_length");
    NXRT_EP_ENFORCE(total_v.size() == 1, "GroupQueryAttention: total_sequence_length is a scalar");
    const int64_t total = total_v[0];
    const bool first_prompt = S == total;
    const int64_t Tp = std::max(total, P_buf);  // present length
    std::vector<int64_t> past_len(B), seq_len(B);
    for (int64_t b = 0; b < B; ++b) {
      seq_len[b] = seqlens[b] + 1;
      past_len[b] = first_prompt ? 0 : seq_len[b] - S;
      NXRT_EP_ENFORCE(
          past_len[b] >= 0 && past_len[b] <= P_buf && past_len[b] + S <= Tp && seq_len[b] <= Tp,
          "GroupQueryAttention: seqlens_k[" + std::to_string(b) +
              "] = " + std::to_string(seqlens[b]) + " does not fit the past and the new tokens");
    }
    const float* cos = nullptr;
    const float* sin = nullptr;
    int64_t half = 0, max_pos = 0;
    if (do_rotary_) {
      ep::ConstTensor c = ctx.input(7), s = ctx.input(8);
      RequireFloat(c, kOp, "cos_cache");
      RequireFloat(s, kOp, "sin_cache");
      NXRT_EP_ENFORCE(
          c.rank() == 2 && c.shape_vector() == s.shape_vector() && 2 * c.shape()[1] <= H,
          "GroupQueryAttention: cos_cache/sin_cache must be [max_position, <= H/2]");
      half = c.shape()[1];
      max_pos = c.shape()[0];
      cos = c.data<float>();
      sin = s.data<float>();
    }
    auto rotate = [&](float* x, int64_t position) {
      NXRT_EP_ENFORCE(position < max_pos, "GroupQueryAttention: position " +
                                              std::to_string(position) +
                                              " is outside the cos/sin caches");
      RotateHead(x, x, cos + position * half, sin + position * half, half, interleaved_);
    };

    // The caches: [B, kvN, Tp, H] each, the present outputs themselves when wanted.
    std::vector<float> k_buf, v_buf;
    float* kc = want_[1] ? ctx.output(1, {B, Nkv, Tp, H}, NX_TYPE_FLOAT).data<float>() : nullptr;
    float* vc = want_[2] ? ctx.output(2, {B, Nkv, Tp, H}, NX_TYPE_FLOAT).data<float>() : nullptr;
    if (kc == nullptr) {
      k_buf.resize(static_cast<size_t>(B * Nkv * Tp * H));
      kc = k_buf.data();
    }
    if (vc == nullptr) {
      v_buf.resize(static_cast<size_t>(B * Nkv * Tp * H));
      vc = v_buf.data();
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t pb = past_len[b];
      for (int64_t n = 0; n < Nkv; ++n) {
        float* kh = kc + (b * Nkv + n) * Tp * H;
        float* vh = vc + (b * Nkv + n) * Tp * H;
        if (pb > 0) {
          std::memcpy(kh, past_k->data<float>() + (b * Nkv + n) * P_buf * H, pb * H * 4);
          std::memcpy(vh, past_v->data<float>() + (b * Nkv + n) * P_buf * H, pb * H * 4);
        }
        for (int64_t s = 0; s < S; ++s) {
          const int64_t row = (b * S + s);
          std::memcpy(kh + (pb + s) * H, kd + row * kv_ld + k_col + n * H, H * 4);
          std::memcpy(vh + (pb + s) * H, vd + row * kv_ld + v_col + n * H, H * 4);
          if (do_rotary_) rotate(kh + (pb + s) * H, pb + s);
        }
        std::fill(kh + (pb + S) * H, kh + Tp * H, 0.0f);
        std::fill(vh + (pb + S) * H, vh + Tp * H, 0.0f);
      }
    }

    ep::Tensor y = ctx.output(0, {B, S, N * H}, NX_TYPE_FLOAT);
    float* yd = y.data<float>();
    const float scale = scale_ > 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(H));
    const int64_t group = N / Nkv;
    const float cap = softcap_;
    const int64_t window = window_;
    ParallelFor(ctx.threads(), B * N, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> qh, scores;
      for (int64_t job = begin; job < end; ++job) {
        const int64_t b = job / N, n = job % N, nk = n / group;
        const int64_t pb = past_len[b];
        // Keys visible to the last row: the prefix up to its position.
        const int64_t T = std::min(pb + S, seq_len[b]);
        if (T <= 0) continue;
        // This head's queries, contiguous and rotated.
        qh.resize(static_cast<size_t>(S * H));
        for (int64_t s = 0; s < S; ++s) {
          std::memcpy(&qh[s * H], qd + (b * S + s) * q_ld + n * H, H * 4);
          if (do_rotary_) rotate(&qh[s * H], pb + s);
        }
        scores.resize(static_cast<size_t>(S * T));
        const float* kh = kc + (b * Nkv + nk) * Tp * H;
        const float* vh = vc + (b * Nkv + nk) * Tp * H;
        linalg::Sgemm(false, true, S, T, H, scale, qh.data(), H, kh, H, 0.0f, scores.data(), T);
        for (int64_t i = 0; i < S; ++i) {
          float* row = scores.data() + i * T;
          const int64_t pos = pb + i;
          // Visible keys [lo, hi).
          const int64_t hi = std::min(pos + 1, T);
          const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
          if (hi <= lo) {
            std::fill(row, row + T, 0.0f);
            continue;
          }
          if (cap > 0.0f) {
            for (int64_t j = lo; j < hi; ++j) row[j] = cap * std::tanh(row[j] / cap);
          }
          reduction::Row<reduction::Mode::kSoftmax>(row + lo, row + lo, hi - lo);
          std::fill(row, row + lo, 0.0f);
          std::fill(row + hi, row + T, 0.0f);
        }
        linalg::Sgemm(false, false, S, H, T, 1.0f, scores.data(), T, vh, H, 0.0f,
                      yd + b * S * N * H + n * H, N * H);
      }
    });
  }

 private:
  int64_t num_heads_ = 0, kv_heads_ = 0, window_ = -1;
  float scale_ = 0.0f, softcap_ = 0.0f;
  bool do_rotary_ = false, interleaved_ = false;
  bool want_[3] = {false, false, false};
};

}  // namespace

void RegisterGroupQueryAttentionKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("GroupQueryAttention", "com.microsoft")
      .Versions(1)
      .Build<GroupQueryAttention>(registry);
}

}  // namespace nxrt::cpu::contrib
