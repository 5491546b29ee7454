// The scaled dot-product attention shared by com.microsoft Attention and MultiHeadAttention:
// for every (batch b, head n),
//   out[b, :, n] = Softmax(scale * Q K^T + bias) V
// where Q is [S, H], K [T, H], V [T, Hv] (each read through strides, so packed QKV buffers,
// BSNH and BNSH layouts need no copies) and bias is the additive row of masking
// (mask_filter_value where a key is masked by a key mask or causality) plus an optional
// attention_bias [B|1, N|1, S, T].
//
// Work is split into (b, n, block of query rows) jobs; each keeps its scores ([rows, T]) in a
// per-thread buffer sized to stay in L2 and runs both products through oneDNN's sgemm on the
// calling thread.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <vector>

namespace nxrt::cpu::contrib {

// A [B, N, rows, cols] view: element (b, n, r, c) is at data[b*sb + n*sn + r*sr + c].
template <class P>
struct HeadMatrix {
  P* data = nullptr;
  int64_t sb = 0, sn = 0, sr = 0;
  P* at(int64_t b, int64_t n, int64_t r) const { return data + b * sb + n * sn + r * sr; }
};

// Which keys each query may see, besides causality.
struct KeyMask {
  enum class Kind {
    kNone,
    kEnd,       // keys j >= end[b] are masked (right padding)
    kStartEnd,  // keys j < start[b] or j >= end[b] are masked
    kRaw2d,     // raw[b, j] == 0 masks key j ([B, T])
    kRaw3d,     // raw[b, i, j] == 0 masks key j for query i ([B, S, T])
  } kind = Kind::kNone;
  std::vector<int64_t> end, start;
  std::vector<int32_t> raw;
  int64_t raw_cols = 0;  // last-axis length of the raw mask (>= T)
  int64_t raw_rows = 0;  // second-axis length of a 3-D raw mask (>= S)
};

struct AttentionProblem {
  int64_t batch = 0, heads = 0, seq = 0, total = 0, head_size = 0, v_head_size = 0;
  float scale = 1.0f;
  float mask_filter_value = -10000.0f;
  bool causal = false;
  int64_t causal_offset = 0;  // query i sees keys j <= i + causal_offset (the past length)
  HeadMatrix<const float> q, k, v;
  HeadMatrix<float> out;
  KeyMask mask;
  // attention_bias [B|1, N|1, S, T] with zero strides along broadcast axes; null when absent.
  const float* attn_bias = nullptr;
  int64_t bias_sb = 0, bias_sn = 0;
};

// Reads mask_index / key_padding_mask (int32) of shape [B], [2B], [B, T] or [B, S, T] into a
// KeyMask; `op` names the operator in errors. (onnxruntime's CPU kernels take no 4-D masks.)
KeyMask MakeKeyMask(const ep::ConstTensor& mask, int64_t batch, int64_t seq, int64_t total,
                    const char* op);

// Checks attention_bias against [B|1, N|1, S, T] and fills the problem's bias fields.
void SetAttentionBias(AttentionProblem& p, const ep::ConstTensor& bias, const char* op);

void RunAttention(const AttentionProblem& p, int threads);

}  // namespace nxrt::cpu::contrib
