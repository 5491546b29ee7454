#include "kernels/contrib/attention_core.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/parallel.h"
#include "kernels/contrib/contrib_common.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/reduction/softmax_core.h"

namespace nxrt::cpu::contrib {
namespace {

// Scores a job keeps at once: 64 KiB of floats.
constexpr int64_t kScoreBlockFloats = 16384;

// Fills bias[0, T) for query row i of batch b, head n: 0 where the key is visible,
// mask_filter_value where masked, plus attention_bias.
void MaskRow(const AttentionProblem& p, int64_t b, int64_t n, int64_t i, float* bias) {
  const int64_t T = p.total;
  const float filter = p.mask_filter_value;
  const KeyMask& m = p.mask;
  switch (m.kind) {
    case KeyMask::Kind::kNone:
      std::fill(bias, bias + T, 0.0f);
      break;
    case KeyMask::Kind::kEnd:
    case KeyMask::Kind::kStartEnd: {
      const int64_t end = std::clamp<int64_t>(m.end[b], 0, T);
      const int64_t start =
          m.kind == KeyMask::Kind::kStartEnd ? std::clamp<int64_t>(m.start[b], 0, end) : 0;
      std::fill(bias, bias + T, filter);
      std::fill(bias + start, bias + end, 0.0f);
      break;
    }
    case KeyMask::Kind::kRaw2d: {
      const int32_t* r = m.raw.data() + b * m.raw_cols;
      for (int64_t j = 0; j < T; ++j) bias[j] = r[j] != 0 ? 0.0f : filter;
      break;
    }
    case KeyMask::Kind::kRaw3d: {
      const int32_t* r = m.raw.data() + (b * m.raw_rows + i) * m.raw_cols;
      for (int64_t j = 0; j < T; ++j) bias[j] = r[j] != 0 ? 0.0f : filter;
      break;
    }
  }
  if (p.causal) {
    const int64_t last = std::max<int64_t>(-1, std::min<int64_t>(T - 1, i + p.causal_offset));
    std::fill(bias + last + 1, bias + T, filter);
  }
  if (p.attn_bias != nullptr) {
    const float* ab = p.attn_bias + b * p.bias_sb + n * p.bias_sn + i * T;
#pragma omp simd
    for (int64_t j = 0; j < T; ++j) bias[j] += ab[j];
  }
}

}  // namespace

KeyMask MakeKeyMask(const ep::ConstTensor& mask, int64_t batch, int64_t seq, int64_t total,
                    const char* op) {
  KeyMask m;
  const auto ms = mask.shape();
  const std::vector<int64_t> values = nn::ReadInt64s(mask, "mask_index");
  auto fail = [&]() {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": mask of shape " + DimsToString(ms) +
                                      " does not fit batch " + std::to_string(batch) +
                                      ", sequence " + std::to_string(seq) + ", total length " +
                                      std::to_string(total));
  };
  auto raw = [&]() { m.raw.assign(values.begin(), values.end()); };
  if (ms.size() == 1 && ms[0] == batch) {
    m.kind = KeyMask::Kind::kEnd;
    m.end = values;
  } else if (ms.size() == 1 && ms[0] == 2 * batch) {
    m.kind = KeyMask::Kind::kStartEnd;
    m.end.assign(values.begin(), values.begin() + batch);
    m.start.assign(values.begin() + batch, values.end());
  } else if (ms.size() == 2 && ms[0] == batch && ms[1] == total) {
    m.kind = KeyMask::Kind::kRaw2d;
    m.raw_cols = total;
    raw();
  } else if (ms.size() == 3 && ms[0] == batch && ms[1] == seq && ms[2] == total) {
    m.kind = KeyMask::Kind::kRaw3d;
    m.raw_rows = seq;
    m.raw_cols = total;
    raw();
  } else {
    fail();
  }
  return m;
}

void SetAttentionBias(AttentionProblem& p, const ep::ConstTensor& bias, const char* op) {
  RequireFloat(bias, op, "attention_bias");
  const auto bs = bias.shape();
  NXRT_EP_ENFORCE(bs.size() == 4 && (bs[0] == 1 || bs[0] == p.batch) &&
                      (bs[1] == 1 || bs[1] == p.heads) && bs[2] == p.seq && bs[3] == p.total,
                  std::string(op) + ": attention_bias of shape " + DimsToString(bs) +
                      " does not broadcast to [" + std::to_string(p.batch) + "," +
                      std::to_string(p.heads) + "," + std::to_string(p.seq) + "," +
                      std::to_string(p.total) + "]");
  p.attn_bias = bias.data<float>();
  p.bias_sn = bs[1] == 1 ? 0 : p.seq * p.total;
  p.bias_sb = bs[0] == 1 ? 0 : bs[1] * p.seq * p.total;
}

void RunAttention(const AttentionProblem& p, int threads) {
  const int64_t B = p.batch, N = p.heads, S = p.seq, T = p.total;
  const int64_t H = p.head_size, Hv = p.v_head_size;
  if (B == 0 || N == 0 || S == 0 || Hv == 0) return;
  if (T == 0) {  // nothing to attend to: zeros
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) std::fill_n(p.out.at(b, n, i), Hv, 0.0f);
    return;
  }
  // Row blocks: scores of a block fit kScoreBlockFloats, with a few jobs per thread.
  int64_t rows = std::clamp<int64_t>(kScoreBlockFloats / T, 1, S);
  while (rows > 8 && B * N * ((S + rows - 1) / rows) < 4 * int64_t{threads}) rows /= 2;
  const int64_t blocks = (S + rows - 1) / rows;
  const size_t scratch_bytes = static_cast<size_t>(rows * T + T) * sizeof(float);
  ParallelFor(threads, B * N * blocks, 1, [&](int64_t begin, int64_t end) {
    float* scores = static_cast<float*>(linalg::ThreadScratch(linalg::kScratchC, scratch_bytes));
    float* bias = scores + rows * T;
    for (int64_t job = begin; job < end; ++job) {
      const int64_t bn = job / blocks, r0 = (job % blocks) * rows;
      const int64_t b = bn / N, n = bn % N;
      const int64_t m = std::min(rows, S - r0);
      // scores = scale * Q K^T
      if (H > 0) {
        linalg::Sgemm(false, true, m, T, H, p.scale, p.q.at(b, n, r0), p.q.sr, p.k.at(b, n, 0),
                      p.k.sr, 0.0f, scores, T);
      } else {
        std::fill(scores, scores + m * T, 0.0f);
      }
      for (int64_t i = 0; i < m; ++i) {
        float* row = scores + i * T;
        MaskRow(p, b, n, r0 + i, bias);
#pragma omp simd
        for (int64_t j = 0; j < T; ++j) row[j] += bias[j];
        reduction::Row<reduction::Mode::kSoftmax>(row, row, T);
      }
      // out rows = probabilities x V
      linalg::Sgemm(false, false, m, Hv, T, 1.0f, scores, T, p.v.at(b, n, 0), p.v.sr, 0.0f,
                    p.out.at(b, n, r0), p.out.sr);
    }
  });
}

}  // namespace nxrt::cpu::contrib
