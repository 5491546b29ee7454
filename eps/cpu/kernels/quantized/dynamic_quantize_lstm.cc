// DynamicQuantizeLSTM (com.microsoft, version 1): an LSTM (gate order i, o, f, c, as the ONNX
// LSTM) whose W [dirs, input, 4*hidden] and R [dirs, hidden, 4*hidden] are 8-bit with a scale
// and zero point per direction or per direction and output column. Note W and R are stored
// transposed relative to the ONNX LSTM.
//
// As in onnxruntime, the float operand of each gate product is quantized to uint8 at run time:
// X once for all time steps (one range over the whole tensor), H_{t-1} once per step (one range
// over the batch). The integer products are exact; their sum is scaled by
// x_scale * w_scale[column] back to float before the usual cell math. sequence_lens is accepted
// only when every length is X's (see Run).
#include <cstring>
#include <optional>

#include "common/cpu_features.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/nn/rnn_common.h"
#include "kernels/quantized/int8_gemm_core.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {
namespace {

using nn::Activation;
using nn::InputView;
using nn::LstmCellStep;
using nn::RnnAttributes;
using nn::ViewAs;

constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kLens = 4, kInitH = 5, kInitC = 6, kP = 7,
                 kWScale = 8, kWZero = 9, kRScale = 10, kRZero = 11;

// One quantized weight input (W or R) packed per direction.
using PackedPerDirection = std::vector<PackedInt8B>;

// Packs a weight input `w` ([dirs, k, gates]) per direction with its scale and zero point, which
// hold one value per direction or one per direction and column.
PackedPerDirection PackWeight(Int8GemmPath path, const ep::ConstTensor& w,
                              const ep::ConstTensor& scale,
                              const std::optional<ep::ConstTensor>& zero, const std::string& op,
                              const char* what) {
  NXRT_EP_ENFORCE(linalg::IsInt8Type(w.type()), op + ": " + what + " must be int8 or uint8");
  auto ws = w.shape();
  NXRT_EP_ENFORCE(ws.size() == 3, op + ": " + what + " must have rank 3");
  const int64_t dirs = ws[0], k = ws[1], n = ws[2];
  const int64_t per = static_cast<int64_t>(scale.size());
  NXRT_EP_ENFORCE(per == dirs || per == dirs * n, op + ": " + what +
                                                      " scale must have [num_directions] or "
                                                      "[num_directions, 4*hidden_size] elements");
  NXRT_EP_ENFORCE(scale.type() == NX_TYPE_FLOAT, op + ": " + what + " scale must be float");
  std::vector<float> all_scales(scale.data<float>(), scale.data<float>() + per);
  std::vector<int32_t> all_zeros(static_cast<size_t>(per), 0);
  if (zero) {
    NXRT_EP_ENFORCE(zero->type() == w.type() && static_cast<int64_t>(zero->size()) == per,
                    op + ": " + what + " zero point must match its weight's type and scale's size");
    for (int64_t i = 0; i < per; ++i) {
      all_zeros[i] = w.type() == NX_TYPE_INT8 ? int32_t(zero->data<int8_t>()[i])
                                              : int32_t(zero->data<uint8_t>()[i]);
    }
  }
  const int64_t cols = per / dirs;  // 1 (per direction) or n (per column)
  PackedPerDirection packed;
  for (int64_t d = 0; d < dirs; ++d) {
    std::vector<float> s(all_scales.begin() + d * cols, all_scales.begin() + (d + 1) * cols);
    std::vector<int32_t> z(all_zeros.begin() + d * cols, all_zeros.begin() + (d + 1) * cols);
    const auto* base = static_cast<const unsigned char*>(w.raw()) + d * k * n;  // 1-byte elements
    packed.push_back(PackInt8B(path, base, w.type(), k, n, z, s));
  }
  return packed;
}

class DynamicQuantizeLstm : public ep::Kernel {
 public:
  explicit DynamicQuantizeLstm(const ep::KernelInfo& info)
      : at_(info, 3, {"Sigmoid", "Tanh", "Tanh"}),
        op_(info.describe()),
        path_(KernelInt8GemmPath(info)) {
    input_forget_ = info.attr_int("input_forget", 0) != 0;
    // The op has no layout attribute: [seq, batch, ...] always.
    NXRT_EP_ENFORCE(at_.layout == 0, op_ + ": layout is not an attribute of this op");
    for (size_t i = 0; i < 3; ++i) want_[i] = i < info.output_count() && info.output(i).present();
    // Constant weights (the usual case) are packed once here.
    packed_w_ = PackIfConstant(info, kW, kWScale, kWZero, "W");
    packed_r_ = PackIfConstant(info, kR, kRScale, kRZero, "R");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(kX);
    NXRT_EP_ENFORCE(x.type() == NX_TYPE_FLOAT, op_ + ": X must be float");
    PackedPerDirection local_w, local_r;
    const PackedPerDirection& pw =
        packed_w_ ? *packed_w_ : (local_w = PackAtRun(ctx, kW, kWScale, kWZero, "W"));
    const PackedPerDirection& pr =
        packed_r_ ? *packed_r_ : (local_r = PackAtRun(ctx, kR, kRScale, kRZero, "R"));
    Run(ctx, x, pw, pr);
  }

 private:
  std::optional<PackedPerDirection> PackIfConstant(const ep::KernelInfo& info, size_t w, size_t s,
                                                   size_t z, const char* what) const {
    auto wt = info.constant_input(w);
    auto st = info.constant_input(s);
    if (!wt || !st) return std::nullopt;
    std::optional<ep::ConstTensor> zt;
    if (z < info.input_count() && info.input(z).present()) {
      zt = info.constant_input(z);
      if (!zt) return std::nullopt;
    }
    return PackWeight(path_, *wt, *st, zt, op_, what);
  }

  PackedPerDirection PackAtRun(ep::KernelContext& ctx, size_t w, size_t s, size_t z,
                               const char* what) const {
    return PackWeight(path_, ctx.input(w), ctx.input(s), ctx.optional_input(z), op_, what);
  }

  void Run(ep::KernelContext& ctx, const ep::ConstTensor& x, const PackedPerDirection& pw,
           const PackedPerDirection& pr) const {
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 3, op_ + ": X must have rank 3");
    const int64_t S = xs[0], N = xs[1], I = xs[2], D = at_.dirs;
    NXRT_EP_ENFORCE(static_cast<int64_t>(pw.size()) == D && static_cast<int64_t>(pr.size()) == D,
                    op_ + ": W and R must have num_directions = " + std::to_string(D));
    NXRT_EP_ENFORCE(pw[0].k == I && pw[0].n % 4 == 0, op_ + ": W must be [dirs, input, 4*hidden]");
    const int64_t H = pw[0].n / 4, G = 4 * H;
    NXRT_EP_ENFORCE(at_.hidden == 0 || at_.hidden == H, op_ + ": hidden_size does not match W");
    NXRT_EP_ENFORCE(pr[0].k == H && pr[0].n == G, op_ + ": R must be [dirs, hidden, 4*hidden]");

    InputView<float> b, init_h, init_c, p;
    auto view_optional = [&](size_t i, InputView<float>& v, int64_t count, const char* what) {
      if (auto t = ctx.optional_input(i)) {
        NXRT_EP_ENFORCE(static_cast<int64_t>(t->size()) == count,
                        op_ + ": " + what + " has " + std::to_string(t->size()) +
                            " elements, expected " + std::to_string(count));
        v = ViewAs<float>(*t);
      }
    };
    view_optional(kB, b, D * 2 * G, "B");
    view_optional(kInitH, init_h, D * N * H, "initial_h");
    view_optional(kInitC, init_c, D * N * H, "initial_c");
    view_optional(kP, p, D * 3 * H, "P");
    std::vector<int64_t> lens(static_cast<size_t>(N), S);
    if (auto l = ctx.optional_input(kLens)) {
      lens = nn::ReadInt64s(*l, "sequence_lens");
      NXRT_EP_ENFORCE(static_cast<int64_t>(lens.size()) == N,
                      op_ + ": sequence_lens must have one entry per batch item");
      for (int64_t v : lens) NXRT_EP_ENFORCE(v >= 0 && v <= S, op_ + ": bad sequence_lens");
      // Sequences shorter than X change onnxruntime's per-step quantization ranges by rules its
      // documentation does not give (nxrt's guesses missed by 1e-3 to 5e-2): refused rather than
      // answered differently. Lengths equal to the sequence length are the plain case.
      for (int64_t v : lens) {
        if (v != S) ep::Fail(NX_NOT_IMPLEMENTED, op_ + ": sequence_lens shorter than X");
      }
    }

    const Dims y_shape{S, D, N, H}, state_shape{D, N, H};
    float* y = want_[0] ? ctx.output(0, y_shape, NX_TYPE_FLOAT).data<float>() : nullptr;
    float* yh = want_[1] ? ctx.output(1, state_shape, NX_TYPE_FLOAT).data<float>() : nullptr;
    float* yc = want_[2] ? ctx.output(2, state_shape, NX_TYPE_FLOAT).data<float>() : nullptr;
    if (y != nullptr) std::fill(y, y + S * D * N * H, 0.f);
    if (S == 0 || N == 0) {
      if (yh != nullptr) std::fill(yh, yh + D * N * H, 0.f);
      if (yc != nullptr) std::fill(yc, yc + D * N * H, 0.f);
      return;
    }

    // X is quantized once: both directions see the same tensor.
    const float* px = x.data<float>();
    PreparedInt8A xq, hq;  // the layout of pw[d] and pr[d] (int8_gemm_core.h)
    QuantizeFloatA(px, S * N, I, pw[0], xq);
    // y = scale * (quantized product): the projections and the gates, G floats per row.
    auto product = [&](const PreparedInt8A& a, const PackedInt8B& w, float* out) {
      Int8GemmOutput o;
      o.y = out;
      o.ldy = G;
      Int8Gemm(a, w, o, ctx.threads());
    };

    std::vector<float> proj(static_cast<size_t>(S * N * G)), gates(static_cast<size_t>(N * G));
    std::vector<float> h(static_cast<size_t>(N * H)), c(static_cast<size_t>(N * H));
    std::vector<float> bias(static_cast<size_t>(G)), tmp(static_cast<size_t>(H));
    for (int64_t d = 0; d < D; ++d) {
      product(xq, pw[d], proj.data());
      for (int64_t j = 0; j < G; ++j) {
        bias[j] = b.present() ? b.ptr[d * 2 * G + j] + b.ptr[d * 2 * G + G + j] : 0.f;
      }
      for (int64_t i = 0; i < N * H; ++i) {
        h[i] = init_h.present() ? init_h.ptr[d * N * H + i] : 0.f;
        c[i] = init_c.present() ? init_c.ptr[d * N * H + i] : 0.f;
      }
      const float* pd = p.present() ? p.ptr + d * 3 * H : nullptr;
      const Activation& f = at_.acts[d * 3];
      const Activation& g = at_.acts[d * 3 + 1];
      const Activation& hact = at_.acts[d * 3 + 2];
      const bool reverse = at_.reverse_only || d == 1;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t t = reverse ? S - 1 - s : s;
        QuantizeFloatA(h.data(), N, H, pr[d], hq);  // one range over all of h, as onnxruntime
        product(hq, pr[d], gates.data());
        for (int64_t bi = 0; bi < N; ++bi) {
          if (t >= lens[bi]) continue;
          float* gb = gates.data() + bi * G;
          const float* xr = proj.data() + (t * N + bi) * G;
          for (int64_t j = 0; j < G; ++j) gb[j] += xr[j] + bias[j];
          LstmCellStep(gb, c.data() + bi * H, h.data() + bi * H, tmp.data(), pd, H, at_.clip,
                       input_forget_, f, g, hact);
          if (y != nullptr) std::memcpy(y + ((t * D + d) * N + bi) * H, h.data() + bi * H, H * 4);
        }
      }
      if (yh != nullptr) std::memcpy(yh + d * N * H, h.data(), N * H * sizeof(float));
      if (yc != nullptr) std::memcpy(yc + d * N * H, c.data(), N * H * sizeof(float));
    }
  }

  RnnAttributes at_;
  std::string op_;
  Int8GemmPath path_ = Int8GemmPath::kAvx2;
  std::optional<PackedPerDirection> packed_w_, packed_r_;
  bool input_forget_ = false;
  bool want_[3] = {false, false, false};
};

}  // namespace

void RegisterDynamicQuantizeLstmKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("DynamicQuantizeLSTM", "com.microsoft")
      .Versions(1)
      .Build<DynamicQuantizeLstm>(registry);
}

}  // namespace nxrt::cpu::quantized
