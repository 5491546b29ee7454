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
// com.microsoft QAttention (quantize_dynamic's Attention) projects 8-bit input and weights on the
// blocked 8-bit GEMM, then attends the same way.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/contrib/attention_core.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"
#include "kernels/quantized/int8_weights.h"

namespace nxrt::cpu::contrib {
namespace {

class AttentionContrib : public ep::Kernel {
 public:
  explicit AttentionContrib(const ep::KernelInfo& info, const char* op = "Attention") : op_(op) {
    num_heads_ = info.attr_int("num_heads");
    unidirectional_ = info.attr_int("unidirectional", 0) != 0;
    qkv_sizes_ = info.attr_ints("qkv_hidden_sizes");
    scale_ = info.attr_float("scale", 0.0f);
    mask_filter_value_ = info.attr_float("mask_filter_value", -10000.0f);
    NXRT_EP_ENFORCE(info.attr_int("do_rotary", 0) == 0,
                    op_ + ": do_rotary is not supported by the CPU EP");
    NXRT_EP_ENFORCE(info.attr_int("past_present_share_buffer", 0) == 0,
                    op_ + ": past_present_share_buffer is not supported by the CPU EP");
    NXRT_EP_ENFORCE(num_heads_ > 0, op_ + ": num_heads must be positive");
    NXRT_EP_ENFORCE(qkv_sizes_.empty() || qkv_sizes_.size() == 3,
                    op_ + ": qkv_hidden_sizes must have three values");
    want_present_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), w = ctx.input(1);
    RequireFloat(x, op_.c_str(), "input");
    RequireFloat(w, op_.c_str(), "weights");
    const Projection pr = Split(x.shape(), w.shape());
    const int64_t tokens = pr.B * pr.S, ld = pr.ld, in = x.shape()[2];

    // QKV = input x weights + bias, one GEMM over all B * S tokens.
    std::vector<float> qkv(static_cast<size_t>(tokens * ld));
    if (ctx.has_input(2)) {
      const float* bias = ChannelVector(ctx.input(2), ld, op_.c_str(), "bias");
      for (int64_t t = 0; t < tokens; ++t) std::memcpy(&qkv[t * ld], bias, ld * sizeof(float));
    }
    if (tokens > 0 && ld > 0) {
      linalg::OmpThreadScope scope(ctx.threads());
      linalg::Sgemm(false, false, tokens, ld, in, 1.0f, x.data<float>(), in, w.data<float>(), ld,
                    ctx.has_input(2) ? 1.0f : 0.0f, qkv.data(), ld);
    }
    Attend(ctx, qkv, pr, {3, 4, 5});
  }

 protected:
  // The projection's sizes: B tokens of S, ld = Dq + Dk + Dv columns.
  struct Projection {
    int64_t B = 0, S = 0, ld = 0, dq = 0, dk = 0, dv = 0;
  };
  // Where the optional inputs are (kNone: the op has no such input).
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Slots {
    size_t mask, past, attention_bias;
  };

  Projection Split(std::span<const int64_t> xs, std::span<const int64_t> ws) const {
    NXRT_EP_ENFORCE(xs.size() == 3,
                    op_ + ": input must be [B, S, hidden], got " + DimsToString(xs));
    NXRT_EP_ENFORCE(ws.size() == 2 && ws[0] == xs[2],
                    op_ + ": weights of shape " + DimsToString(ws) +
                        " do not match input of shape " + DimsToString(xs));
    Projection p;
    p.B = xs[0], p.S = xs[1], p.ld = ws[1];
    p.dq = p.ld / 3, p.dk = p.ld / 3, p.dv = p.ld - 2 * (p.ld / 3);
    if (!qkv_sizes_.empty()) p.dq = qkv_sizes_[0], p.dk = qkv_sizes_[1], p.dv = qkv_sizes_[2];
    NXRT_EP_ENFORCE(p.dq + p.dk + p.dv == p.ld && p.dq == p.dk && p.dq % num_heads_ == 0 &&
                        p.dv % num_heads_ == 0,
                    op_ + ": weights' " + std::to_string(p.ld) +
                        " columns do not split into Q, K, V sizes divisible by num_heads " +
                        std::to_string(num_heads_));
    return p;
  }

  // The attention over the projected QKV ([B * S, ld]): output 0, and output 1 (present).
  void Attend(ep::KernelContext& ctx, std::vector<float>& qkv, const Projection& pr,
              Slots slots) const {
    const int64_t B = pr.B, S = pr.S, ld = pr.ld, dq = pr.dq, dk = pr.dk, dv = pr.dv;
    const int64_t N = num_heads_, H = dq / N, Hv = dv / N;
    const char* op = op_.c_str();
    // The past, [2, B, N, P, H].
    int64_t P = 0;
    const float* past = nullptr;
    if (auto pt = Optional(ctx, slots.past)) {
      RequireFloat(*pt, op, "past");
      const auto ps = pt->shape();
      NXRT_EP_ENFORCE(
          ps.size() == 5 && ps[0] == 2 && ps[1] == B && ps[2] == N && ps[4] == H && H == Hv,
          op_ + ": past of shape " + DimsToString(ps) + " is not [2, " + std::to_string(B) + ", " +
              std::to_string(N) + ", P, " + std::to_string(H) + "]");
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
      NXRT_EP_ENFORCE(H == Hv, op_ + ": present needs equal Q/K and V head sizes");
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
    if (auto m = Optional(ctx, slots.mask)) p.mask = MakeKeyMask(*m, B, S, T, op);
    if (auto ab = Optional(ctx, slots.attention_bias)) SetAttentionBias(p, *ab, op);
    ep::Tensor y = ctx.output(0, {B, S, dv}, NX_TYPE_FLOAT);
    p.out = {y.data<float>(), S * dv, Hv, dv};
    RunAttention(p, ctx.threads());
  }

  std::string op_;

 private:
  static std::optional<ep::ConstTensor> Optional(ep::KernelContext& ctx, size_t slot) {
    if (slot == kNone || slot >= ctx.input_count()) return std::nullopt;
    return ctx.optional_input(slot);
  }

  int64_t num_heads_ = 0;
  bool unidirectional_ = false, want_present_ = false;
  std::vector<int64_t> qkv_sizes_;
  float scale_ = 0.0f, mask_filter_value_ = -10000.0f;
};

// com.microsoft QAttention (what quantize_dynamic makes of Attention): the projection from 8-bit
// input and weights, QKV = (input - izp)(weights - wzp) * input_scale * weight_scale[column] +
// bias, exact in int32 on the blocked 8-bit GEMM (the weights packed once when they, their
// scale and zero point are constants), then Attention's attention. Inputs: input, weights, bias,
// input_scale, weight_scale, mask_index, input_zero_point, weight_zero_point, past.
class QAttention : public AttentionContrib {
 public:
  explicit QAttention(const ep::KernelInfo& info)
      : AttentionContrib(info, "QAttention"),
        path_(quantized::KernelInt8GemmPath(info)),
        packed_(quantized::PackConstantInt8Weights(info, path_, kWeights, op_)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), w = ctx.input(1);
    NXRT_EP_ENFORCE(linalg::IsInt8Type(x.type()) && linalg::IsInt8Type(w.type()),
                    op_ + ": input and weights must be int8 or uint8");
    const Projection pr = Split(x.shape(), w.shape());
    const int64_t tokens = pr.B * pr.S, in = x.shape()[2];
    ep::ConstTensor xs = ctx.input(3);
    NXRT_EP_ENFORCE(xs.type() == NX_TYPE_FLOAT && xs.size() == 1,
                    op_ + ": input_scale must be a float scalar");
    const std::vector<int32_t> x_zp =
        linalg::ReadZeroPoint(ctx.input_count() > 6 ? ctx.optional_input(6) : std::nullopt,
                              x.type(), 1, op_ + ": input_zero_point");
    std::optional<quantized::PackedInt8B> local;
    const quantized::PackedInt8B& pw =
        quantized::RunInt8Weights(ctx, path_, kWeights, packed_, local, op_);
    const float* bias = ChannelVector(ctx.input(2), pr.ld, op_.c_str(), "bias");

    std::vector<float> qkv(static_cast<size_t>(tokens * pr.ld));
    if (tokens > 0 && pr.ld > 0) {
      thread_local quantized::PreparedInt8A prepared;  // reused across runs
      quantized::PrepareInt8A(x.raw(), x.type(), tokens, in, x_zp[0], pw, prepared);
      prepared.scale = xs.data<float>()[0];
      quantized::Int8GemmOutput out;
      out.y = qkv.data();
      out.ldy = pr.ld;
      out.bias = bias;
      quantized::Int8Gemm(prepared, pw, out, ctx.threads());
    }
    Attend(ctx, qkv, pr, {5, 8, kNone});
  }

 private:
  static constexpr quantized::Int8WeightSlots kWeights{.b = 1,
                                                       .scale = 4,
                                                       .zero = 7,
                                                       .b_name = "weights",
                                                       .scale_name = "weight_scale",
                                                       .zero_name = "weight_zero_point"};

  quantized::Int8GemmPath path_;
  std::optional<quantized::PackedInt8B> packed_;  // constant weights
};

}  // namespace

void RegisterAttentionContribKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("Attention", "com.microsoft").Versions(1).Build<AttentionContrib>(registry);
  ep::KernelDefBuilder("QAttention", "com.microsoft").Versions(1).Build<QAttention>(registry);
}

}  // namespace nxrt::cpu::contrib
