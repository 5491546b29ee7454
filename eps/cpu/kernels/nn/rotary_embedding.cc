// RotaryEmbedding (opset 23): rotates pairs of features of every head by position-dependent
// angles given as cos/sin caches. Pairs are (x[k], x[k + d/2]) or, interleaved, (x[2k], x[2k+1]);
// features beyond rotary_embedding_dim pass through.
#include <cstring>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class RotaryEmbedding : public ep::Kernel {
 public:
  explicit RotaryEmbedding(const ep::KernelInfo& info) {
    interleaved_ = info.attr_int("interleaved", 0) != 0;
    rotary_dim_ = info.attr_int("rotary_embedding_dim", 0);
    num_heads_ = info.attr_int("num_heads", 0);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), cos = ctx.input(1), sin = ctx.input(2);
    auto xs = x.shape();
    int64_t B, S, H, D;
    // Element (b, s, h, d) of the input is at b*sb + s*ss + h*sh + d.
    int64_t sb, ss, sh;
    if (xs.size() == 4) {
      B = xs[0], H = xs[1], S = xs[2], D = xs[3];
      ss = D, sh = S * D, sb = H * S * D;
    } else if (xs.size() == 3) {
      NXRT_EP_ENFORCE(num_heads_ > 0 && xs[2] % num_heads_ == 0,
                      "RotaryEmbedding: 3-D input needs num_heads dividing the hidden size");
      B = xs[0], S = xs[1], H = num_heads_, D = xs[2] / num_heads_;
      sh = D, ss = H * D, sb = S * H * D;
    } else {
      ep::Fail(NX_INVALID_ARGUMENT,
               "RotaryEmbedding: input must be 3-D or 4-D, got " + DimsToString(xs));
    }
    int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : D;
    NXRT_EP_ENFORCE(rot <= D && rot % 2 == 0,
                    "RotaryEmbedding: rotary_embedding_dim must be even and at most the head size");
    const int64_t half = rot / 2;
    std::vector<int64_t> positions;
    auto cs = cos.shape();
    NXRT_EP_ENFORCE(cs.size() >= 2 && cs.back() == half && sin.shape_vector() == cos.shape_vector(),
                    "RotaryEmbedding: cos/sin caches of shape " + DimsToString(cs) +
                        " do not match rotary dimension " + std::to_string(rot));
    if (auto p = ctx.optional_input(3)) {
      positions = ReadInt64s(*p, "position_ids");
      NXRT_EP_ENFORCE(cs.size() == 2, "RotaryEmbedding: with position_ids the caches must be 2-D");
      NXRT_EP_ENFORCE(static_cast<int64_t>(positions.size()) == B * S ||
                          static_cast<int64_t>(positions.size()) == S,
                      "RotaryEmbedding: position_ids must have shape [batch, sequence]");
      for (int64_t v : positions) {
        NXRT_EP_ENFORCE(v >= 0 && v < cs[0], "RotaryEmbedding: position id " + std::to_string(v) +
                                                 " is outside the cache");
      }
    } else {
      NXRT_EP_ENFORCE(
          cs.size() == 3 && cs[0] == B && cs[1] == S,
          "RotaryEmbedding: without position_ids the caches must be [batch, seq, dim/2]");
    }
    ep::Tensor y = ctx.output(0, xs, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      std::vector<double> cv = ReadDoubles(cos, "cos_cache"), sv = ReadDoubles(sin, "sin_cache");
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      ParallelFor(ctx.threads(), B * S, 16, [&](int64_t begin, int64_t end) {
        for (int64_t bs = begin; bs < end; ++bs) {
          int64_t b = bs / S, s = bs % S;
          int64_t row;
          if (positions.empty()) {
            row = bs;
          } else {
            row = static_cast<int64_t>(positions.size()) == B * S ? positions[bs] : positions[s];
          }
          const double* c = cv.data() + row * half;
          const double* sn = sv.data() + row * half;
          for (int64_t h = 0; h < H; ++h) {
            const T* xi = xd + b * sb + s * ss + h * sh;
            T* yo = yd + b * sb + s * ss + h * sh;
            for (int64_t k = 0; k < half; ++k) {
              int64_t i1 = interleaved_ ? 2 * k : k;
              int64_t i2 = interleaved_ ? 2 * k + 1 : k + half;
              A x1 = static_cast<A>(xi[i1]), x2 = static_cast<A>(xi[i2]);
              A ck = static_cast<A>(c[k]), sk = static_cast<A>(sn[k]);
              yo[i1] = static_cast<T>(ck * x1 - sk * x2);
              yo[i2] = static_cast<T>(sk * x1 + ck * x2);
            }
            for (int64_t d = rot; d < D; ++d) yo[d] = xi[d];
          }
        }
      });
    });
  }

 private:
  bool interleaved_ = false;
  int64_t rotary_dim_ = 0, num_heads_ = 0;
};

}  // namespace

void RegisterRotaryEmbeddingKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("RotaryEmbedding").Versions(23).Build<RotaryEmbedding>(registry);
}

}  // namespace nxrt::cpu::nn
