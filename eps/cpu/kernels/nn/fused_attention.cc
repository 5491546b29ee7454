// com.nxrt FusedAttention: what graph fusion (src/session/graph_fusion.cc) makes of the
// attention chain exporters write out,
//   Y = Softmax(scale * (Q x Kt) [+ mask], last axis) x V,
// with Kt already transposed ([..., D, Skv]) and numpy broadcasting over the leading dimensions
// of all four inputs, as the MatMul, Add and MatMul of the chain would broadcast.
//
// Why fuse: the unfused chain writes the scores ([..., S, Skv]) and reads them back three times
// (scale, mask, softmax) before the second product. Here each thread takes a block of query rows
// of one batch entry, keeps their scores in a per-thread buffer sized to stay in L2, and runs
// product, scale, mask, softmax and the second product on it.
//
// The products: on AVX2 nxrt's panel kernel (panel_gemm.h), with Kt and V packed into panels per
// block (a copy of D x Skv and Skv x Dv floats against block x Skv x (D + Dv) multiply-adds);
// oneDNN's sgemm took 18 us for a 64 x 64 x 64 product there (13 GFLOP/s, TransformerEncoder's
// heads). On AVX-512, oneDNN's sgemm.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "common/cpu_features.h"
#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/panel_gemm.h"
#include "kernels/nn/nn_common.h"
#include "kernels/reduction/softmax_core.h"

namespace nxrt::cpu::nn {
namespace {

// Scores a thread keeps at once: 64 KiB of floats.
constexpr int64_t kScoreBlockFloats = 16384;

// The leading (batch) dimensions of a shape of rank >= 2, or of a mask of any rank.
Dims Leading(std::span<const int64_t> shape, size_t tail) {
  if (shape.size() <= tail) return {};
  return Dims(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(tail));
}

// Element offset of each batch entry of `out` in an operand whose batch dims are `in` and whose
// trailing matrix has `matrix` elements (0 along broadcast dimensions).
std::vector<int64_t> BatchOffsets(std::span<const int64_t> in, std::span<const int64_t> out,
                                  int64_t matrix) {
  const Dims strides = BroadcastStrides(in, out);
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  std::vector<int64_t> offsets(static_cast<size_t>(total), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, off = 0;
    for (size_t k = out.size(); k-- > 0;) {
      off += (rest % out[k]) * strides[k];
      rest /= out[k];
    }
    offsets[static_cast<size_t>(i)] = off * matrix;
  }
  return offsets;
}

class FusedAttention : public ep::Kernel {
 public:
  explicit FusedAttention(const ep::KernelInfo& info)
      : scale_(info.attr_float("scale", 1.0f)), panels_(KernelIsa(info) == Isa::kAvx2) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor q = ctx.input(0), kt = ctx.input(1), v = ctx.input(2);
    std::optional<ep::ConstTensor> mask = ctx.optional_input(3);
    for (const ep::ConstTensor* t : {&q, &kt, &v}) {
      NXRT_EP_ENFORCE(t->type() == NX_TYPE_FLOAT && t->rank() >= 2,
                      "FusedAttention: Q, Kt and V must be float tensors of rank 2 or more");
    }
    NXRT_EP_ENFORCE(!mask || mask->type() == NX_TYPE_FLOAT, "FusedAttention: mask must be float");
    const auto qs = q.shape(), ks = kt.shape(), vs = v.shape();
    const int64_t S = qs[qs.size() - 2], D = qs.back();
    const int64_t Skv = ks.back(), Dv = vs.back();
    NXRT_EP_ENFORCE(ks[ks.size() - 2] == D && vs[vs.size() - 2] == Skv,
                    "FusedAttention: Q " + ShapeToString(qs) + ", Kt " + ShapeToString(ks) +
                        " and V " + ShapeToString(vs) + " do not chain as matrix products");
    Dims batch = BroadcastShapes(Leading(qs, 2), Leading(ks, 2));
    batch = BroadcastShapes(batch, Leading(vs, 2));
    int64_t mask_row = 0, mask_col = 0;
    Dims mask_batch;
    if (mask) {
      const auto ms = mask->shape();
      const int64_t rows = ms.size() >= 2 ? ms[ms.size() - 2] : 1;
      const int64_t cols = ms.empty() ? 1 : ms.back();
      NXRT_EP_ENFORCE((rows == 1 || rows == S) && (cols == 1 || cols == Skv),
                      "FusedAttention: mask " + ShapeToString(ms) +
                          " does not broadcast to the scores [" + std::to_string(S) + "," +
                          std::to_string(Skv) + "]");
      mask_col = cols == 1 ? 0 : 1;
      mask_row = rows == 1 ? 0 : cols;
      mask_batch = Leading(ms, 2);
      batch = BroadcastShapes(batch, mask_batch);
    }
    Dims y_dims = batch;
    y_dims.push_back(S);
    y_dims.push_back(Dv);
    ep::Tensor y = ctx.output(0, y_dims, NX_TYPE_FLOAT);
    int64_t batches = 1;
    for (int64_t d : batch) batches *= d;
    if (batches == 0 || S == 0 || Dv == 0) return;
    float* yd = y.data<float>();
    if (Skv == 0) {  // softmax over nothing, then a product over nothing: zeros
      std::fill(yd, yd + batches * S * Dv, 0.0f);
      return;
    }
    const std::vector<int64_t> q_off = BatchOffsets(Leading(qs, 2), batch, S * D);
    const std::vector<int64_t> k_off = BatchOffsets(Leading(ks, 2), batch, D * Skv);
    const std::vector<int64_t> v_off = BatchOffsets(Leading(vs, 2), batch, Skv * Dv);
    std::vector<int64_t> m_off;
    if (mask) {
      const auto ms = mask->shape();
      const int64_t matrix =
          (ms.size() >= 2 ? ms[ms.size() - 2] : 1) * (ms.empty() ? 1 : ms.back());
      m_off = BatchOffsets(mask_batch, batch, matrix);
    }
    const float* qd = q.data<float>();
    const float* kd = kt.data<float>();
    const float* vd = v.data<float>();
    const float* md = mask ? mask->data<float>() : nullptr;

    // Row blocks: scores of a block fit kScoreBlockFloats, and there are a few per thread.
    const int threads = ctx.threads();
    int64_t rows = std::clamp<int64_t>(kScoreBlockFloats / Skv, 1, S);
    while (rows > 8 && batches * ((S + rows - 1) / rows) < 4 * int64_t{threads}) rows /= 2;
    const int64_t blocks = (S + rows - 1) / rows;
    const int64_t ld = panels_ ? linalg::PanelCount(Skv) * linalg::kPanelWidth : Skv;
    const int64_t dv_padded = linalg::PanelCount(Dv) * linalg::kPanelWidth;
    const size_t scratch_floats =
        static_cast<size_t>(rows * ld) +
        (panels_ ? static_cast<size_t>(D * ld + Skv * dv_padded +
                                       (dv_padded != Dv ? rows * dv_padded : 0))
                 : 0);
    ParallelFor(threads, batches * blocks, 1, [&](int64_t begin, int64_t end) {
      float* scores = static_cast<float*>(
          linalg::ThreadScratch(linalg::kScratchC, scratch_floats * sizeof(float)));
      float* kt_panels = scores + rows * ld;
      float* v_panels = kt_panels + D * ld;
      float* y_padded = v_panels + Skv * dv_padded;
      int64_t packed = -1;  // the batch entry whose Kt and V are in panels
      for (int64_t job = begin; job < end; ++job) {
        const int64_t b = job / blocks, r0 = (job % blocks) * rows;
        const int64_t n = std::min(rows, S - r0);
        const size_t bi = static_cast<size_t>(b);
        const float* qb = qd + q_off[bi] + r0 * D;
        float* yb = yd + (b * S + r0) * Dv;
        if (D == 0) {
          std::fill(scores, scores + n * ld, 0.0f);
        } else if (panels_) {
          if (packed != b) {
            linalg::PackPanels(kd + k_off[bi], false, D, Skv, kt_panels);
            linalg::PackPanels(vd + v_off[bi], false, Skv, Dv, v_panels);
            packed = b;
          }
          linalg::MultiplyPanels(qb, D, n, kt_panels, D, linalg::PanelCount(Skv), scores, ld);
        } else {
          linalg::Sgemm(false, false, n, Skv, D, 1.0f, qb, D, kd + k_off[bi], Skv, 0.0f, scores,
                        ld);
        }
        for (int64_t i = 0; i < n; ++i) {
          float* row = scores + i * ld;
          if (md == nullptr) {
            for (int64_t j = 0; j < Skv; ++j) row[j] *= scale_;
          } else {
            const float* m = md + m_off[bi] + (r0 + i) * mask_row;
            if (mask_col == 1) {
              for (int64_t j = 0; j < Skv; ++j) row[j] = row[j] * scale_ + m[j];
            } else {
              for (int64_t j = 0; j < Skv; ++j) row[j] = row[j] * scale_ + m[0];
            }
          }
          reduction::Row<reduction::Mode::kSoftmax>(row, row, Skv);
        }
        if (panels_) {
          if (dv_padded == Dv) {
            linalg::MultiplyPanels(scores, ld, n, v_panels, Skv, linalg::PanelCount(Dv), yb, Dv);
          } else {
            linalg::MultiplyPanels(scores, ld, n, v_panels, Skv, linalg::PanelCount(Dv), y_padded,
                                   dv_padded);
            for (int64_t i = 0; i < n; ++i)
              std::memcpy(yb + i * Dv, y_padded + i * dv_padded, static_cast<size_t>(Dv) * 4);
          }
        } else {
          linalg::Sgemm(false, false, n, Dv, Skv, 1.0f, scores, ld, vd + v_off[bi], Dv, 0.0f, yb,
                        Dv);
        }
      }
    });
  }

 private:
  float scale_;
  bool panels_;
};

}  // namespace

void RegisterFusedAttentionKernel(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("FusedAttention", "com.nxrt").Versions(1).Build<FusedAttention>(registry);
}

}  // namespace nxrt::cpu::nn
