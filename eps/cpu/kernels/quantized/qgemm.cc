// QGemm (com.microsoft, version 1): Gemm on 8-bit A [M, K] and B [K, N] (each optionally
// transposed) with per-tensor A and per-tensor or per-column B quantization, an optional int32
// bias C (in the product's scale) and either a float output or, when y_scale is given, an 8-bit
// one:
//   acc = (A - za)(B - zb) + C          (exact, int32)
//   Y   = acc * alpha * sa * sb[j]      (float output)
//   Y   = round(acc * alpha * sa * sb[j] / sy) + zy, saturated (quantized output).
#include <optional>
#include <string>
#include <vector>

#include "common/cpu_features.h"
#include "kernels/quantized/int8_gemm_core.h"
#include "kernels/quantized/int8_weights.h"
#include "kernels/quantized/qlinear_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

constexpr size_t kA = 0, kAScale = 1, kAZero = 2, kB = 3, kBScale = 4, kBZero = 5, kC = 6,
                 kYScale = 7, kYZero = 8;

class QGemm : public ep::Kernel {
 public:
  explicit QGemm(const ep::KernelInfo& info)
      : op_(info.describe()), path_(KernelInt8GemmPath(info)) {
    alpha_ = info.attr_float("alpha", 1.f);
    trans_a_ = info.attr_int("transA", 0) != 0;
    trans_b_ = info.attr_int("transB", 0) != 0;
    weights_.transposed = trans_b_;
    packed_b_ = PackConstantInt8Weights(info, path_, weights_, op_);
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(kA), b = ctx.input(kB);
    NXRT_EP_ENFORCE(linalg::IsInt8Type(a.type()) && linalg::IsInt8Type(b.type()),
                    op_ + ": A and B must be int8 or uint8");
    NXRT_EP_ENFORCE(a.rank() == 2 && b.rank() == 2, op_ + ": A and B must be 2-D");
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    NXRT_EP_ENFORCE(k == kb, op_ + ": inner dimensions of A and B differ");
    const QParams qa = ReadQParams(ctx, kAScale, kAZero, a.type(), op_ + ": A");
    std::optional<PackedInt8B> local;
    const PackedInt8B& w = RunInt8Weights(ctx, path_, weights_, packed_b_, local, op_);

    // A as [M, K] rows for the blocked product (int8_gemm_core.h); a transposed A is gathered.
    const void* a_rows = a.raw();
    std::vector<uint8_t> gathered;
    if (trans_a_) {
      gathered.resize(static_cast<size_t>(m * k));
      const uint8_t* src = static_cast<const uint8_t*>(a.raw());  // 1-byte elements either way
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) gathered[i * k + j] = src[j * m + i];
      a_rows = gathered.data();
    }
    thread_local PreparedInt8A prepared;  // reused across runs
    PrepareInt8A(a_rows, a.type(), m, k, qa.zero_point, w, prepared);
    thread_local std::vector<int32_t> product;
    product.resize(static_cast<size_t>(m * n));
    Int8GemmOutput out;
    out.y32 = product.data();
    out.ldy = n;
    Int8Gemm(prepared, w, out, ctx.threads());
    // By pointer: inside the parallel loop below, `product` would name each thread's own buffer.
    const int32_t* sums = product.data();
    // C: int32, broadcast to [M, N] (a scalar, a row of N, a column of M or the full matrix).
    const int32_t* c = nullptr;
    int64_t c_row_stride = 0, c_col_stride = 0;
    if (auto ct = ctx.optional_input(kC)) {
      NXRT_EP_ENFORCE(ct->type() == NX_TYPE_INT32, op_ + ": C must be int32");
      c = ct->data<int32_t>();
      auto cs = ct->shape();
      const int64_t rows = cs.size() == 2 ? cs[0] : 1;
      const int64_t cols = cs.empty() ? 1 : cs.back();
      NXRT_EP_ENFORCE((rows == 1 || rows == m) && (cols == 1 || cols == n) && cs.size() <= 2,
                      op_ + ": C cannot be broadcast to [M, N]");
      c_row_stride = rows == 1 ? 0 : cols;
      c_col_stride = cols == 1 ? 0 : 1;
    }

    std::optional<QParams> qy;
    NxElementType y_type = NX_TYPE_FLOAT;
    if (kYScale < ctx.input_count() && ctx.optional_input(kYScale)) {
      auto yz = kYZero < ctx.input_count() ? ctx.optional_input(kYZero) : std::nullopt;
      y_type = yz ? yz->type() : NX_TYPE_UINT8;
      NXRT_EP_ENFORCE(linalg::IsInt8Type(y_type), op_ + ": y_zero_point must be int8 or uint8");
      qy = ReadQParams(ctx, kYScale, kYZero, y_type, op_ + ": Y");
    }
    ep::Tensor y = ctx.output(0, Dims{m, n}, y_type);
    void* py = y.mutable_raw();
    const float base = alpha_ * qa.scale;
    ctx.parallel_for(static_cast<size_t>(n), 16, [&](size_t j0, size_t j1) {
      for (int64_t j = static_cast<int64_t>(j0); j < static_cast<int64_t>(j1); ++j) {
        const float scale = base * w.scale[j];
        for (int64_t i = 0; i < m; ++i) {
          int32_t acc = sums[i * n + j];
          if (c != nullptr) acc += c[i * c_row_stride + j * c_col_stride];
          const float v = static_cast<float>(acc) * scale;
          if (qy) {
            StoreQ(v / qy->scale, qy->zero_point, y_type, py, i * n + j);
          } else {
            static_cast<float*>(py)[i * n + j] = v;
          }
        }
      }
    });
  }

 private:
  std::string op_;
  float alpha_ = 1.f;
  bool trans_a_ = false, trans_b_ = false;
  Int8GemmPath path_;
  Int8WeightSlots weights_{.b = kB, .scale = kBScale, .zero = kBZero};
  std::optional<PackedInt8B> packed_b_;  // a constant B, its scale and zero point
};

}  // namespace

void RegisterQGemmKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("QGemm", "com.microsoft").Versions(1).Build<QGemm>(registry);
}

}  // namespace nxrt::cpu::quantized
