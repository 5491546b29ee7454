// com.microsoft EmbedLayerNormalization: BERT's embedding block in one pass per token,
//   e = word_embedding[input_ids] + position_embedding[position] [+ segment_embedding[segment_ids]]
//   output = LayerNorm(e) * gamma + beta
// position is the token's index in its sequence unless position_ids ([B, S] or [1, S]) is given.
// mask_index (int32 [B]) is the number of attended tokens of each sequence (the sum of the 0/1
// mask; zeros without a mask), the form the fused Attention takes as right-padding lengths.
// embedding_sum (optional) is e itself.
#include <cmath>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"

namespace nxrt::cpu::contrib {
namespace {

constexpr const char* kOp = "EmbedLayerNormalization";

// A [rows, H] embedding table.
struct Table {
  const float* data = nullptr;
  int64_t rows = 0;
};

Table ReadTable(const ep::ConstTensor& t, int64_t hidden, const char* name) {
  RequireFloat(t, kOp, name);
  NXRT_EP_ENFORCE(t.rank() == 2 && t.shape()[1] == hidden,
                  std::string(kOp) + ": " + name + " must be [rows, " + std::to_string(hidden) +
                      "], got " + DimsToString(t.shape()));
  return {t.data<float>(), t.shape()[0]};
}

// Row `id` of `table`, or an error naming the input when it is out of range.
const float* TableRow(const Table& table, int64_t id, int64_t hidden, const char* what) {
  if (id < 0 || id >= table.rows) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(kOp) + ": " + what + " " + std::to_string(id) +
                                      " is outside [0, " + std::to_string(table.rows) + ")");
  }
  return table.data + id * hidden;
}

class EmbedLayerNorm : public ep::Kernel {
 public:
  explicit EmbedLayerNorm(const ep::KernelInfo& info) {
    epsilon_ = info.attr_float("epsilon", 1e-12f);
    want_sum_ = info.output_count() > 2 && info.output(2).present();
    want_mask_index_ = info.output_count() > 1 && info.output(1).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor ids_t = ctx.input(0);
    NXRT_EP_ENFORCE(ids_t.rank() == 2, std::string(kOp) +
                                           ": input_ids must be [batch, sequence], got " +
                                           DimsToString(ids_t.shape()));
    const int64_t B = ids_t.shape()[0], S = ids_t.shape()[1];
    ep::ConstTensor word_t = ctx.input(2);
    NXRT_EP_ENFORCE(word_t.rank() == 2, std::string(kOp) + ": word_embedding must be 2-D");
    const int64_t H = word_t.shape()[1];
    const Table word = ReadTable(word_t, H, "word_embedding");
    const Table pos = ReadTable(ctx.input(3), H, "position_embedding");
    const std::vector<int64_t> ids = nn::ReadInt64s(ids_t, "input_ids");
    std::vector<int64_t> segments;
    Table seg;
    if (ctx.has_input(1) && ctx.has_input(4)) {
      segments = nn::ReadInt64s(ctx.input(1), "segment_ids");
      NXRT_EP_ENFORCE(static_cast<int64_t>(segments.size()) == B * S,
                      std::string(kOp) + ": segment_ids must have input_ids' shape");
      seg = ReadTable(ctx.input(4), H, "segment_embedding");
    }
    const float* gamma = ChannelVector(ctx.input(5), H, kOp, "gamma");
    const float* beta = ctx.has_input(6) ? ChannelVector(ctx.input(6), H, kOp, "beta") : nullptr;
    std::vector<int64_t> mask;
    if (ctx.has_input(7)) {
      mask = nn::ReadInt64s(ctx.input(7), "mask");
      NXRT_EP_ENFORCE(static_cast<int64_t>(mask.size()) == B * S,
                      std::string(kOp) + ": mask must have input_ids' shape");
    }
    // Position of token (b, s): s, or position_ids shared by the batch ([1, S]) or per entry.
    std::vector<int64_t> positions;
    if (ctx.has_input(8)) {
      positions = nn::ReadInt64s(ctx.input(8), "position_ids");
      NXRT_EP_ENFORCE(
          static_cast<int64_t>(positions.size()) == S ||
              static_cast<int64_t>(positions.size()) == B * S,
          std::string(kOp) + ": position_ids must be [batch, sequence] or [1, sequence]");
    }
    const bool shared_positions = static_cast<int64_t>(positions.size()) == S;

    ep::Tensor y = ctx.output(0, {B, S, H}, NX_TYPE_FLOAT);
    if (want_mask_index_) {
      ep::Tensor mi = ctx.output(1, {B}, NX_TYPE_INT32);
      int32_t* m = mi.data<int32_t>();
      for (int64_t b = 0; b < B; ++b) {
        int32_t count = 0;
        for (int64_t s = 0; s < S && !mask.empty(); ++s) count += mask[b * S + s] != 0;
        m[b] = count;
      }
    }
    ep::Tensor sum_t;
    if (want_sum_) sum_t = ctx.output(2, {B, S, H}, NX_TYPE_FLOAT);
    float* yd = y.data<float>();
    float* sum_d = sum_t.valid() ? sum_t.data<float>() : nullptr;
    const float eps = epsilon_;
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, H));
    ParallelFor(ctx.threads(), B * S, grain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t s = t % S;
        int64_t p = s;
        if (!positions.empty()) p = shared_positions ? positions[s] : positions[t];
        const float* w = TableRow(word, ids[t], H, "input id");
        const float* pe = TableRow(pos, p, H, "position");
        const float* se = segments.empty() ? nullptr : TableRow(seg, segments[t], H, "segment id");
        float* e = sum_d != nullptr ? sum_d + t * H : yd + t * H;
        float total = 0.0f;
        if (se != nullptr) {
#pragma omp simd reduction(+ : total)
          for (int64_t c = 0; c < H; ++c) {
            e[c] = w[c] + pe[c] + se[c];
            total += e[c];
          }
        } else {
#pragma omp simd reduction(+ : total)
          for (int64_t c = 0; c < H; ++c) {
            e[c] = w[c] + pe[c];
            total += e[c];
          }
        }
        const float mean = total / static_cast<float>(H);
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < H; ++c) var += (e[c] - mean) * (e[c] - mean);
        const float inv = 1.0f / std::sqrt(var / static_cast<float>(H) + eps);
        float* yr = yd + t * H;
        for (int64_t c = 0; c < H; ++c) {
          yr[c] = (e[c] - mean) * inv * gamma[c] + (beta != nullptr ? beta[c] : 0.0f);
        }
      }
    });
  }

 private:
  float epsilon_ = 1e-12f;
  bool want_sum_ = false, want_mask_index_ = false;
};

}  // namespace

void RegisterEmbedLayerNormKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("EmbedLayerNormalization", "com.microsoft")
      .Versions(1)
      .Build<EmbedLayerNorm>(registry);
}

}  // namespace nxrt::cpu::contrib
