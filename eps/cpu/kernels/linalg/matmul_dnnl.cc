#include "kernels/linalg/matmul_dnnl.h"

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/parallel.h"
#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/gemv.h"
#include "kernels/linalg/panel_rows.h"

namespace nxrt::cpu::linalg {

using dnnl::memory;

struct DnnlPackedMatMul::Plan {
  dnnl::matmul prim;
  memory::desc src_md, w_md, dst_md, bias_md, scratch_md;
  size_t scratch_bytes = 0;
};

namespace {

// The row count the weight layout is chosen for: a typical activation (a sequence, a batch of
// positions); brgemm's layout follows K and N.
constexpr int64_t kLayoutRows = 128;

memory::desc PlainNk(int64_t k, int64_t n) {
  return memory::desc({k, n}, memory::data_type::f32, memory::format_tag::ba);
}

}  // namespace

memory::desc PreferredMatMulWeights(int64_t k, int64_t n) {
  const auto f32 = memory::data_type::f32;
  try {
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(memory::desc({kLayoutRows, k}, f32, memory::format_tag::ab),
                           memory::desc({k, n}, f32, memory::format_tag::any),
                           memory::desc({kLayoutRows, n}, f32, memory::format_tag::ab)),
        DnnlEngine());
    return pd.weights_desc();
  } catch (const dnnl::error&) {
    return PlainNk(k, n);
  }
}

bool IsPlainMatMulWeights(const memory::desc& md) {
  const int64_t k = md.dims()[0], n = md.dims()[1];
  const auto f32 = memory::data_type::f32;
  return md == PlainNk(k, n) || md == memory::desc({k, n}, f32, memory::format_tag::ab);
}

void PackMatMulWeights(const float* w, bool w_is_nk, int64_t k, int64_t n, const memory::desc& md,
                       void* dst) {
  const memory::desc from({k, n}, memory::data_type::f32,
                          w_is_nk ? memory::format_tag::ba : memory::format_tag::ab);
  auto& eng = DnnlEngine();
  memory src(from, eng, const_cast<float*>(w)), out(md, eng, dst);
  dnnl::reorder(src, out).execute(DnnlStream(), src, out);
  DnnlStream().wait();
}

DnnlPackedMatMul::DnnlPackedMatMul(const float* w, const memory::desc& w_md, int64_t k, int64_t n,
                                   float alpha, bool has_bias, std::vector<DnnlEltwise> post)
    : w_(w),
      w_md_(w_md),
      k_(k),
      n_(n),
      alpha_(alpha),
      has_bias_(has_bias),
      post_(std::move(post)),
      column_sliceable_(w_md == PlainNk(k, n)) {
  const auto first_after = std::find_if(
      post_.begin(), post_.end(), [](const DnnlEltwise& e) { return FasterAfterThePrimitive(e); });
  post_in_primitive_.assign(post_.begin(), first_after);
  post_after_.assign(first_after, post_.end());
  using Tag = memory::format_tag;
  const std::pair<Tag, int64_t> panels[] = {
      {Tag::BA16a64b, 64}, {Tag::BA16a48b, 48}, {Tag::BA16a32b, 32}, {Tag::BA16a16b, 16}};
  for (auto [tag, width] : panels) {
    if (k > 0 && n > 0 && w_md == memory::desc({k, n}, memory::data_type::f32, tag)) {
      panel_width_ = width;
      panel_floats_ = (k + 15) / 16 * 16 * width;
    }
  }
}

DnnlPackedMatMul::~DnnlPackedMatMul() = default;

std::shared_ptr<DnnlPackedMatMul::Plan> DnnlPackedMatMul::GetPlan(int64_t m, int threads,
                                                                  int64_t cols) {
  if (cols < 0) cols = n_;
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(m, threads, cols);
  if (std::shared_ptr<Plan> hit = plans_.Find(key)) return hit;
  auto plan = std::make_shared<Plan>();
  const auto f32 = memory::data_type::f32;
  plan->src_md = memory::desc({m, k_}, f32, memory::format_tag::ab);
  // A slice of columns reads its rows of the [N, K] weight and writes its columns of C, whose
  // rows stay n_ apart.
  plan->w_md = cols == n_ ? w_md_ : PlainNk(k_, cols);
  plan->dst_md = cols == n_ ? memory::desc({m, n_}, f32, memory::format_tag::ab)
                            : memory::desc({m, cols}, f32, memory::dims{n_, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
  if (!post_in_primitive_.empty()) {
    dnnl::post_ops ops;
    for (const DnnlEltwise& e : post_in_primitive_)
      ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    attr.set_post_ops(ops);
  }
  if (has_bias_) plan->bias_md = memory::desc({1, cols}, f32, memory::format_tag::ab);
  try {
    dnnl::matmul::primitive_desc pd(
        has_bias_ ? dnnl::matmul::desc(plan->src_md, plan->w_md, plan->bias_md, plan->dst_md)
                  : dnnl::matmul::desc(plan->src_md, plan->w_md, plan->dst_md),
        attr, DnnlEngine());
    audit_.Record(pd, "matrix multiplication");
    plan->prim = dnnl::matmul(pd);
    plan->scratch_md = pd.scratchpad_desc();
    plan->scratch_bytes = plan->scratch_md.get_size();
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("MatMul: oneDNN could not build the matmul: ") + e.what());
  }
  plans_.Insert(key, plan);
  return plan;
}

int DnnlPackedMatMul::RowSlices(int64_t m, int threads) const {
  if (threads <= 1 || m < 2 * kMinSliceRows) return 1;
  if (static_cast<double>(m) * static_cast<double>(k_) * static_cast<double>(n_) < kMinParallelMacs)
    return 1;
  return static_cast<int>(std::min<int64_t>(threads, m / kMinSliceRows));
}

int DnnlPackedMatMul::ColumnSlices(int64_t m, int threads) const {
  if (threads <= 1 || !column_sliceable_ || n_ < 2 * kMinSliceColumns) return 1;
  if (static_cast<double>(m) * static_cast<double>(k_) * static_cast<double>(n_) < kMinParallelMacs)
    return 1;
  return static_cast<int>(std::min<int64_t>(threads, n_ / kMinSliceColumns));
}

std::pair<int64_t, int64_t> DnnlPackedMatMul::Columns(int slice, int slices) const {
  auto edge = [&](int s) {
    return s == slices ? n_ : (n_ * s / slices + kColumnAlign / 2) / kColumnAlign * kColumnAlign;
  };
  return {edge(slice), edge(slice + 1)};
}

bool DnnlPackedMatMul::FewRowsOverPanels(int64_t m) const {
  return panel_width_ > 0 && m > 1 && m < kPanelRowsBelow;
}

void DnnlPackedMatMul::Prepare(int64_t m, int threads) {
  if (m <= 0 || n_ == 0 || k_ == 0 || (m == 1 && (column_sliceable_ || panel_width_ > 0)) ||
      FewRowsOverPanels(m))
    return;  // Run: Gemv or PanelRows
  if (const int slices = ColumnSlices(m, threads); slices > 1) {
    OmpThreadScope scope(1);
    for (int s = 0; s < slices; ++s) {
      auto [c0, c1] = Columns(s, slices);
      GetPlan(m, 1, c1 - c0);
    }
    return;
  }
  const int slices = RowSlices(m, threads);
  if (slices > 1) {
    OmpThreadScope scope(1);
    for (int s = 0; s < slices; ++s) GetPlan(m * (s + 1) / slices - m * s / slices, 1);
    return;
  }
  OmpThreadScope scope(threads);
  GetPlan(m, threads);
}

void DnnlPackedMatMul::RunPlan(const Plan& plan, const float* a, const float* w, float* c,
                               const float* bias) {
  auto& eng = DnnlEngine();
  auto& strm = DnnlStream();
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(plan.src_md, eng, const_cast<float*>(a))},
      {DNNL_ARG_WEIGHTS, memory(plan.w_md, eng, const_cast<float*>(w))},
      {DNNL_ARG_DST, memory(plan.dst_md, eng, c)},
      {DNNL_ARG_SCRATCHPAD,
       memory(plan.scratch_md, eng, ThreadScratch(kScratchPad, plan.scratch_bytes))}};
  if (has_bias_) args.emplace(DNNL_ARG_BIAS, memory(plan.bias_md, eng, const_cast<float*>(bias)));
  plan.prim.execute(strm, args);
  strm.wait();
}

void DnnlPackedMatMul::Run(const float* a, int64_t m, float* c, int threads, const float* bias) {
  if (m == 0 || n_ == 0) return;
  if (has_bias_ && bias == nullptr)
    throw std::runtime_error("MatMul: the fused product has no bias to add");
  if (k_ == 0) {  // oneDNN refuses an empty K: the product is zero, then the epilogue
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n_; ++j) c[r * n_ + j] = has_bias_ ? bias[j] : 0.0f;
    ApplyEltwiseRange(post_, c, m * n_);
    return;
  }
  if (m == 1 && (column_sliceable_ || panel_width_ > 0)) {
    // One row: a matrix-vector product bound by reading the weight, as one stream (gemv.h).
    // Against the plain [N, K] weight the primitive would wake oneDNN's OpenMP team for it
    // (PaddleOCR cls's 200 x 2 classifier: 14 us at one thread, 38 at two; the dot products
    // take well under 1 us); against oneDNN's column panels (a decoder step whose row count is
    // symbolic, so the weight was packed for the primitive) it took 1.3-1.6x onnxruntime's time
    // (gpt2's [768 x 50257] head).
    GemvProblem p;
    p.k = k_;
    p.n = n_;
    p.x = a;
    p.m = w_;
    p.contiguous_k = column_sliceable_;
    p.panel = column_sliceable_ ? 0 : panel_width_;
    p.ld = column_sliceable_ ? k_ : panel_floats_;
    p.alpha = alpha_;
    p.y = c;
    if (has_bias_) {
      std::copy(bias, bias + n_, c);
      p.beta = 1.0f;
    }
    Gemv(p, threads);
    ApplyEltwiseRange(post_, c, n_);
    return;
  }
  if (FewRowsOverPanels(m)) {
    PanelRowsProblem p;
    p.m = m;
    p.k = k_;
    p.n = n_;
    p.a = a;
    p.lda = k_;
    p.w = w_;
    p.panel = panel_width_;
    p.panel_stride = panel_floats_;
    p.alpha = alpha_;
    p.bias = has_bias_ ? bias : nullptr;
    p.c = c;
    p.ldc = n_;
    // The activations on each run of columns as soon as it is done, on the thread that made it.
    const auto finish = [&](int64_t j0, int64_t j1) {
      ApplyEltwiseRows(post_, c + j0, n_, m, j1 - j0);
    };
    PanelRows(p, threads, post_.empty() ? PanelRowsFinish() : PanelRowsFinish(finish));
    return;
  }
  if (const int slices = ColumnSlices(m, threads); slices > 1) {
    // Column slices: each thread reads its part of the weight, the whole of A (small).
    ParallelFor(threads, slices, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        auto [c0, c1] = Columns(static_cast<int>(s), slices);
        RunPlan(*GetPlan(m, 1, c1 - c0), a, w_ + c0 * k_, c + c0, bias ? bias + c0 : nullptr);
        if (!post_after_.empty()) ApplyEltwiseRows(post_after_, c + c0, n_, m, c1 - c0);
      }
    });
    return;
  }
  const int slices = RowSlices(m, threads);
  if (slices <= 1) {
    RunPlan(*GetPlan(m, threads), a, w_, c, bias);
    if (!post_after_.empty()) {
      ParallelFor(threads, m, std::max<int64_t>(1, 16384 / n_), [&](int64_t r0, int64_t r1) {
        ApplyEltwiseRange(post_after_, c + r0 * n_, (r1 - r0) * n_);
      });
    }
    return;
  }
  // Row slices on the session's pool, one single-threaded primitive each (ParallelFor runs
  // every chunk with one OpenMP thread), each slice's remaining activations while it is in
  // cache.
  ParallelFor(threads, slices, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t r0 = m * s / slices, r1 = m * (s + 1) / slices;
      RunPlan(*GetPlan(r1 - r0, 1), a + r0 * k_, w_, c + r0 * n_, bias);
      if (!post_after_.empty()) ApplyEltwiseRange(post_after_, c + r0 * n_, (r1 - r0) * n_);
    }
  });
}

}  // namespace nxrt::cpu::linalg
