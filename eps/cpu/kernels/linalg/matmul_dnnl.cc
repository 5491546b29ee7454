#include "kernels/linalg/matmul_dnnl.h"

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>

#include "common/parallel.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::linalg {

using dnnl::memory;

struct DnnlPackedMatMul::Plan {
  dnnl::matmul prim;
  memory::desc src_md, w_md, dst_md, scratch_md;
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
                                   float alpha)
    : w_(w), w_md_(w_md), k_(k), n_(n), alpha_(alpha) {}

DnnlPackedMatMul::~DnnlPackedMatMul() = default;

std::shared_ptr<DnnlPackedMatMul::Plan> DnnlPackedMatMul::GetPlan(int64_t m, int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(m, threads);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  auto plan = std::make_shared<Plan>();
  const auto f32 = memory::data_type::f32;
  plan->src_md = memory::desc({m, k_}, f32, memory::format_tag::ab);
  plan->w_md = w_md_;
  plan->dst_md = memory::desc({m, n_}, f32, memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->src_md, plan->w_md, plan->dst_md),
                                    attr, DnnlEngine());
    plan->prim = dnnl::matmul(pd);
    plan->scratch_md = pd.scratchpad_desc();
    plan->scratch_bytes = plan->scratch_md.get_size();
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("MatMul: oneDNN could not build the matmul: ") + e.what());
  }
  plans_.emplace(key, plan);
  return plan;
}

int DnnlPackedMatMul::RowSlices(int64_t m, int threads) const {
  if (threads <= 1 || m < 2 * kMinSliceRows) return 1;
  if (static_cast<double>(m) * static_cast<double>(k_) * static_cast<double>(n_) < kMinParallelMacs)
    return 1;
  return static_cast<int>(std::min<int64_t>(threads, m / kMinSliceRows));
}

void DnnlPackedMatMul::Prepare(int64_t m, int threads) {
  if (m <= 0 || n_ == 0 || k_ == 0) return;
  const int slices = RowSlices(m, threads);
  if (slices > 1) {
    OmpThreadScope scope(1);
    for (int s = 0; s < slices; ++s) GetPlan(m * (s + 1) / slices - m * s / slices, 1);
    return;
  }
  OmpThreadScope scope(threads);
  GetPlan(m, threads);
}

void DnnlPackedMatMul::RunPlan(const Plan& plan, const float* a, float* c) {
  auto& eng = DnnlEngine();
  auto& strm = DnnlStream();
  plan.prim.execute(
      strm, {{DNNL_ARG_SRC, memory(plan.src_md, eng, const_cast<float*>(a))},
             {DNNL_ARG_WEIGHTS, memory(plan.w_md, eng, const_cast<float*>(w_))},
             {DNNL_ARG_DST, memory(plan.dst_md, eng, c)},
             {DNNL_ARG_SCRATCHPAD,
              memory(plan.scratch_md, eng, ThreadScratch(kScratchPad, plan.scratch_bytes))}});
  strm.wait();
}

void DnnlPackedMatMul::Run(const float* a, int64_t m, float* c, int threads) {
  if (m == 0 || n_ == 0) return;
  if (k_ == 0) {
    std::fill(c, c + m * n_, 0.0f);
    return;
  }
  const int slices = RowSlices(m, threads);
  if (slices <= 1) {
    RunPlan(*GetPlan(m, threads), a, c);
    return;
  }
  // Row slices on the session's pool, one single-threaded primitive each (ParallelFor runs
  // every chunk with one OpenMP thread).
  ParallelFor(threads, slices, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t r0 = m * s / slices, r1 = m * (s + 1) / slices;
      RunPlan(*GetPlan(r1 - r0, 1), a + r0 * k_, c + r0 * n_);
    }
  });
}

}  // namespace nxrt::cpu::linalg
