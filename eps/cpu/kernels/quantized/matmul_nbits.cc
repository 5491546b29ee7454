// MatMulNBits (com.microsoft, version 1) for bits = 4 and float32 A: Y = A * dequant(B)^T + bias
// where B [N, k_blocks, block_size / 2] holds two 4-bit values per byte (the lower nibble first),
// each block of block_size values along K has its own scale and zero point (4-bit packed, two
// blocks per byte, or float; 8 when absent). The g_idx input is not supported.
//
// A is always multiplied in fp32. accuracy_level names the lowest precision the computation may
// use (1 fp32, 2 fp16, 3 bf16, 4 int8): fp32 satisfies every level. onnxruntime takes level 4
// as leave to quantize A to int8 per block, so its results then differ from nxrt's (and from
// its own level 0) by that rounding.
//
// Few rows of A (M = 1 is decoder token generation) stay on the 4-bit data: each thread takes a
// range of output columns and per block computes scale * (sum a_j q_j - zp * sum a_j) for every
// row, with the block sums of A computed once. Larger M dequantizes panels of 64 columns of B
// to float, each multiplied with all of A by an SGEMM.
#include <immintrin.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

// Up to this many rows of A, B stays 4-bit (SmallM); above, dequantizing panels of it for SGEMMs
// costs less than reading every block again per row (measured on AVX2 at K = N = 4096).
constexpr int64_t kSmallM = 16;
constexpr size_t kA = 0, kB = 1, kScales = 2, kZeros = 3, kGIdx = 4, kBias = 5;

class MatMulNBits : public ep::Kernel {
 public:
  explicit MatMulNBits(const ep::KernelInfo& info) : op_(info.describe()) {
    k_ = info.attr_int("K");
    n_ = info.attr_int("N");
    bits_ = info.attr_int("bits", 4);
    block_ = info.attr_int("block_size");
    const int64_t level = info.attr_int("accuracy_level", 0);
    NXRT_EP_ENFORCE(level >= 0 && level <= 4, op_ + ": accuracy_level must be 0..4");
    NXRT_EP_ENFORCE(bits_ == 4, op_ + ": only bits = 4 is supported");
    NXRT_EP_ENFORCE(block_ >= 16 && (block_ & (block_ - 1)) == 0,
                    op_ + ": block_size must be a power of 2 and at least 16");
    blocks_ = (k_ + block_ - 1) / block_;
    // onnxruntime's results with g_idx (even the identity mapping) do not follow the plain
    // block formula, and its documentation does not say what they follow: rejected, not guessed.
    if (kGIdx < info.input_count() && info.input(kGIdx).present()) {
      ep::Fail(NX_NOT_IMPLEMENTED, op_ + ": the g_idx input is not supported");
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(kA);
    ep::ConstTensor b = ctx.input(kB);
    ep::ConstTensor scales = ctx.input(kScales);
    NXRT_EP_ENFORCE(a.type() == NX_TYPE_FLOAT, op_ + ": only float32 A is supported");
    NXRT_EP_ENFORCE(scales.type() == NX_TYPE_FLOAT, op_ + ": scales must be float32");
    NXRT_EP_ENFORCE(
        b.type() == NX_TYPE_UINT8 && static_cast<int64_t>(b.size()) == n_ * blocks_ * block_ / 2,
        op_ + ": B must be uint8 [N, k_blocks, block_size / 2]");
    NXRT_EP_ENFORCE(static_cast<int64_t>(scales.size()) == n_ * blocks_,
                    op_ + ": scales must have N * k_blocks elements");
    auto as = a.shape();
    NXRT_EP_ENFORCE(!as.empty() && as.back() == k_, op_ + ": A's last dimension must be K");

    View v;
    v.b = b.data<uint8_t>();
    v.scales = scales.data<float>();
    std::vector<float> zeros;  // one float zero point per (n, block)
    if (auto z = ctx.optional_input(kZeros)) zeros = ReadZeros(*z);
    v.zeros = zeros.empty() ? nullptr : zeros.data();
    const float* bias = nullptr;
    if (auto bt = ctx.optional_input(kBias)) {
      NXRT_EP_ENFORCE(bt->type() == NX_TYPE_FLOAT && static_cast<int64_t>(bt->size()) == n_,
                      op_ + ": bias must be float32 with N elements");
      bias = bt->data<float>();
    }

    Dims out(as.begin(), as.end());
    out.back() = n_;
    ep::Tensor y = ctx.output(0, out, NX_TYPE_FLOAT);
    const int64_t m = ShapeSize(as) / std::max<int64_t>(k_, 1);
    if (m == 0 || n_ == 0) return;
    float* py = y.data<float>();
    if (m <= kSmallM) {
      SmallM(ctx, m, a.data<float>(), v, bias, py);
    } else {
      Gemm(ctx, m, a.data<float>(), v, bias, py);
    }
  }

 private:
  struct View {
    const uint8_t* b = nullptr;
    const float* scales = nullptr;
    const float* zeros = nullptr;  // null: 8
  };

  // Zero points as floats per (n, block): packed 4-bit (uint8 [N, ceil(k_blocks / 2)]) or float.
  std::vector<float> ReadZeros(const ep::ConstTensor& z) const {
    std::vector<float> out(static_cast<size_t>(n_ * blocks_));
    if (z.type() == NX_TYPE_UINT8) {
      const int64_t row = (blocks_ + 1) / 2;
      NXRT_EP_ENFORCE(static_cast<int64_t>(z.size()) == n_ * row,
                      op_ + ": packed zero_points must be uint8 [N, ceil(k_blocks / 2)]");
      const uint8_t* p = z.data<uint8_t>();
      for (int64_t n = 0; n < n_; ++n) {
        for (int64_t blk = 0; blk < blocks_; ++blk) {
          const uint8_t byte = p[n * row + blk / 2];
          out[n * blocks_ + blk] = static_cast<float>(blk % 2 == 0 ? byte & 0xF : byte >> 4);
        }
      }
    } else {
      NXRT_EP_ENFORCE(z.type() == NX_TYPE_FLOAT && static_cast<int64_t>(z.size()) == n_ * blocks_,
                      op_ + ": zero_points must be uint8 (packed) or float32 [N, k_blocks]");
      std::copy(z.data<float>(), z.data<float>() + n_ * blocks_, out.begin());
    }
    return out;
  }

  float Zero(const View& v, int64_t n, int64_t blk) const {
    return v.zeros != nullptr ? v.zeros[n * blocks_ + blk] : 8.f;
  }

  // Unpacks block `blk` of column n into q[0..block_) as floats (the raw 4-bit values).
  void UnpackBlock(const View& v, int64_t n, int64_t blk, float* q) const {
    const uint8_t* src = v.b + (n * blocks_ + blk) * (block_ / 2);
    for (int64_t j = 0; j < block_ / 2; ++j) {
      q[2 * j] = static_cast<float>(src[j] & 0xF);
      q[2 * j + 1] = static_cast<float>(src[j] >> 4);
    }
  }

  // y[i, n] = sum over blocks of scale * (a_i . q - zp * sum(a_i)) + bias[n], for m rows of A
  // (few: each block of B is read once for every row).
  //
  // Byte j of a block holds q[2j] (low nibble) and q[2j + 1] (high nibble), so A is copied per
  // block as its even elements then its odd ones: 8 bytes of B then widen to 8 low and 8 high
  // values that multiply 8 consecutive floats each, with no shuffles in the inner loop.
  void SmallM(ep::KernelContext& ctx, int64_t m, const float* a, const View& v, const float* bias,
              float* y) const {
    const int64_t kp = blocks_ * block_, half = block_ / 2;
    std::vector<float> ap(static_cast<size_t>(m * kp), 0.f);  // zero-padded past K
    std::vector<float> asum(static_cast<size_t>(m * blocks_), 0.f);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t k = 0; k < k_; ++k) {
        const int64_t blk = k / block_, j = k % block_;
        ap[i * kp + blk * block_ + (j % 2) * half + j / 2] = a[i * k_ + k];
        asum[i * blocks_ + blk] += a[i * k_ + k];
      }
    }
    const size_t grain = static_cast<size_t>(std::max<int64_t>(1, 32768 / (m * k_ + 1)));
    ctx.parallel_for(static_cast<size_t>(n_), grain, [&](size_t n0, size_t n1) {
      for (int64_t n = static_cast<int64_t>(n0); n < static_cast<int64_t>(n1); ++n) {
        for (int64_t i = 0; i < m; ++i) {
          const float* ai = ap.data() + i * kp;
          __m256 acc = _mm256_setzero_ps();
          float correction = 0.f;
          for (int64_t blk = 0; blk < blocks_; ++blk) {
            const uint8_t* src = v.b + (n * blocks_ + blk) * half;
            const float* even = ai + blk * block_;
            const float* odd = even + half;
            __m256 dot = _mm256_setzero_ps();
            for (int64_t j = 0; j < half; j += 8) {
              const __m256i bytes =
                  _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + j)));
              const __m256i lo = _mm256_and_si256(bytes, _mm256_set1_epi32(0xF));
              const __m256i hi = _mm256_srli_epi32(bytes, 4);
              dot = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_loadu_ps(even + j), dot);
              dot = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_loadu_ps(odd + j), dot);
            }
            const float scale = v.scales[n * blocks_ + blk];
            acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(scale), acc);
            correction += scale * Zero(v, n, blk) * asum[i * blocks_ + blk];
          }
          const float r = HorizontalSum(acc) - correction;
          y[i * n_ + n] = bias != nullptr ? r + bias[n] : r;
        }
      }
    });
  }

  static float HorizontalSum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // Per task, a panel of kPanel columns of B is dequantized to float [kPanel, K] (the
  // thread's own buffer, in cache) and multiplied with all of A by a single-threaded SGEMM
  // into those columns of Y: no dequantized copy of the whole of B.
  void Gemm(ep::KernelContext& ctx, int64_t m, const float* a, const View& v, const float* bias,
            float* y) const {
    constexpr int64_t kPanel = 64;
    const int64_t panels = (n_ + kPanel - 1) / kPanel;
    ctx.parallel_for(static_cast<size_t>(panels), 1, [&](size_t p0, size_t p1) {
      // oneDNN's SGEMM below must stay on this thread: this thread's OpenMP setting is not the
      // session's, and an OpenMP team per chunk would fight the pool for the cores.
      SingleOmpThread one;
      std::vector<float> q(static_cast<size_t>(blocks_ * block_));
      std::vector<float> panel(static_cast<size_t>(kPanel * k_));
      for (int64_t p = static_cast<int64_t>(p0); p < static_cast<int64_t>(p1); ++p) {
        const int64_t n0 = p * kPanel, cols = std::min(kPanel, n_ - n0);
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t n = n0 + c;
          for (int64_t blk = 0; blk < blocks_; ++blk) {
            UnpackBlock(v, n, blk, q.data() + blk * block_);
          }
          float* row = panel.data() + c * k_;
          for (int64_t blk = 0; blk < blocks_; ++blk) {
            const float zero = Zero(v, n, blk), scale = v.scales[n * blocks_ + blk];
            const int64_t end = std::min(k_, (blk + 1) * block_);
            for (int64_t k = blk * block_; k < end; ++k) row[k] = (q[k] - zero) * scale;
          }
        }
        linalg::Sgemm(false, true, m, cols, k_, 1.f, a, k_, panel.data(), k_, 0.f, y + n0, n_);
        if (bias != nullptr) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t c = 0; c < cols; ++c) y[i * n_ + n0 + c] += bias[n0 + c];
          }
        }
      }
    });
  }

  std::string op_;
  int64_t k_ = 0, n_ = 0, bits_ = 4, block_ = 32, blocks_ = 0;
};

}  // namespace

void RegisterMatMulNBitsKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MatMulNBits", "com.microsoft").Versions(1).Build<MatMulNBits>(registry);
}

}  // namespace nxrt::cpu::quantized
