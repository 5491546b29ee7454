// com.microsoft RotaryEmbedding: rotates feature pairs of every head by the angles of the
// token's position, read from cos_cache/sin_cache ([max_position, rotary_dim / 2]). Pairs are
// (x[k], x[k + rotary_dim/2]) or, interleaved, (x[2k], x[2k+1]); features beyond rotary_dim pass
// through. Differs from the ONNX-domain op (nn/rotary_embedding.cc) in its input order (input,
// position_ids, cos_cache, sin_cache), in taking a 4-D input as [B, N, S, H], and in
// position_ids, which is [B, S] or a single start position ([1]: token s is at start + s).
#include <string>
#include <vector>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"

namespace nxrt::cpu::contrib {
namespace {

constexpr const char* kOp = "RotaryEmbedding";

class RotaryEmbeddingContrib : public ep::Kernel {
 public:
  explicit RotaryEmbeddingContrib(const ep::KernelInfo& info) {
    interleaved_ = info.attr_int("interleaved", 0) != 0;
    rotary_dim_ = info.attr_int("rotary_embedding_dim", 0);
    num_heads_ = info.attr_int("num_heads", 0);
    NXRT_EP_ENFORCE(info.attr_int("is_packed_batching", 0) == 0,
                    "RotaryEmbedding: is_packed_batching is not supported by the CPU EP");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), cos = ctx.input(2), sin = ctx.input(3);
    RequireFloat(x, kOp, "input");
    RequireFloat(cos, kOp, "cos_cache");
    RequireFloat(sin, kOp, "sin_cache");
    const auto xs = x.shape(), cs = cos.shape();
    NXRT_EP_ENFORCE(cs.size() == 2 && sin.shape_vector() == cos.shape_vector(),
                    "RotaryEmbedding: cos_cache and sin_cache must both be [max_position, d/2]");
    const int64_t half = cs[1], rot = 2 * half, max_pos = cs[0];
    NXRT_EP_ENFORCE(rotary_dim_ == 0 || rotary_dim_ == rot,
                    "RotaryEmbedding: rotary_embedding_dim does not match the caches");
    // Element (b, s, n, d) is at b*sb + s*ss + n*sn + d.
    int64_t B, S, N, H, sb, ss, sn;
    if (xs.size() == 4) {  // [B, N, S, H]
      B = xs[0], N = xs[1], S = xs[2], H = xs[3];
      ss = H, sn = S * H, sb = N * S * H;
    } else {
      NXRT_EP_ENFORCE(xs.size() == 3,
                      "RotaryEmbedding: input must be 3-D or 4-D, got " + DimsToString(xs));
      B = xs[0], S = xs[1];
      // Without num_heads the heads are as wide as the rotation.
      H = num_heads_ > 0 ? xs[2] / num_heads_ : rot;
      NXRT_EP_ENFORCE(
          H > 0 && xs[2] % H == 0,
          "RotaryEmbedding: hidden size " + std::to_string(xs[2]) + " does not split into heads");
      N = xs[2] / H;
      sn = H, ss = xs[2], sb = S * xs[2];
    }
    NXRT_EP_ENFORCE(rot <= H, "RotaryEmbedding: the rotation is wider than a head");
    const std::vector<int64_t> pos = nn::ReadInt64s(ctx.input(1), "position_ids");
    const bool start_only = pos.size() == 1 && B * S != 1;
    NXRT_EP_ENFORCE(start_only || static_cast<int64_t>(pos.size()) == B * S,
                    "RotaryEmbedding: position_ids must be [B, S] or [1]");
    ep::Tensor y = ctx.output(0, xs, NX_TYPE_FLOAT);
    const float* xd = x.data<float>();
    const float* cd = cos.data<float>();
    const float* sd = sin.data<float>();
    float* yd = y.data<float>();
    const bool inter = interleaved_;
    ParallelFor(ctx.threads(), B * S, std::max<int64_t>(1, 2048 / std::max<int64_t>(1, N * H)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t b = t / S, s = t % S;
                    const int64_t p = start_only ? pos[0] + s : pos[t];
                    NXRT_EP_ENFORCE(p >= 0 && p < max_pos, "RotaryEmbedding: position " +
                                                               std::to_string(p) +
                                                               " is outside the caches");
                    const float* c = cd + p * half;
                    const float* sn_row = sd + p * half;
                    for (int64_t n = 0; n < N; ++n) {
                      const float* xi = xd + b * sb + s * ss + n * sn;
                      float* yo = yd + b * sb + s * ss + n * sn;
                      RotateHead(xi, yo, c, sn_row, half, inter);
                      for (int64_t d = rot; d < H; ++d) yo[d] = xi[d];
                    }
                  }
                });
  }

 private:
  bool interleaved_ = false;
  int64_t rotary_dim_ = 0, num_heads_ = 0;
};

}  // namespace

void RegisterRotaryContribKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("RotaryEmbedding", "com.microsoft")
      .Versions(1)
      .Build<RotaryEmbeddingContrib>(registry);
}

}  // namespace nxrt::cpu::contrib
