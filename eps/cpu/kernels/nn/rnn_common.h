// Shared pieces of the recurrent operators (RNN, GRU, LSTM): attributes, activation functions,
// input unpacking and output layout. Each cell computes in float (double for double inputs);
// float16/bfloat16 inputs are widened once up front.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "common/small_vector.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {

enum class ActKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct Activation {
  ActKind kind = ActKind::kTanh;
  float alpha = 0.f, beta = 0.f;

  // Applies the activation to v[0..n) in place; the switch sits outside the element loop.
  template <class A>
  void Apply(A* v, int64_t n) const {
    const A a = static_cast<A>(alpha), b = static_cast<A>(beta);
    switch (kind) {
      case ActKind::kRelu:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] > A(0) ? v[i] : A(0);
        break;
      case ActKind::kTanh:
        if constexpr (std::is_same_v<A, float>)
          elementwise::TanhArray(v, v, n);
        else
          for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]);
        break;
      case ActKind::kSigmoid:
        if constexpr (std::is_same_v<A, float>)
          elementwise::SigmoidArray(v, v, n);
        else
          for (int64_t i = 0; i < n; ++i) v[i] = A(1) / (A(1) + std::exp(-v[i]));
        break;
      case ActKind::kAffine:
        for (int64_t i = 0; i < n; ++i) v[i] = a * v[i] + b;
        break;
      case ActKind::kLeakyRelu:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= A(0) ? v[i] : a * v[i];
        break;
      case ActKind::kThresholdedRelu:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= a ? v[i] : A(0);
        break;
      case ActKind::kScaledTanh:
        for (int64_t i = 0; i < n; ++i) v[i] = a * std::tanh(b * v[i]);
        break;
      case ActKind::kHardSigmoid:
        for (int64_t i = 0; i < n; ++i) v[i] = std::min(A(1), std::max(A(0), a * v[i] + b));
        break;
      case ActKind::kElu:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= A(0) ? v[i] : a * (std::exp(v[i]) - A(1));
        break;
      case ActKind::kSoftsign:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (A(1) + std::abs(v[i]));
        break;
      case ActKind::kSoftplus:
        for (int64_t i = 0; i < n; ++i) v[i] = std::log1p(std::exp(v[i]));
        break;
    }
  }
};

// Attributes common to RNN, GRU and LSTM. `gate_acts` is the number of activation functions one
// direction uses (1 for RNN, 2 for GRU, 3 for LSTM).
struct RnnAttributes {
  std::string op;
  int64_t hidden = 0;
  int64_t dirs = 1;
  bool reverse_only = false;
  int64_t layout = 0;
  float clip = 0.f;              // 0 = no clipping
  std::vector<Activation> acts;  // gate_acts per direction, forward first

  RnnAttributes(const ep::KernelInfo& info, size_t gate_acts,
                const std::vector<std::string>& defaults) {
    op = info.op_type();
    hidden = info.attr_int("hidden_size", 0);
    std::string direction = info.attr_string("direction", "forward");
    if (direction == "bidirectional") {
      dirs = 2;
    } else if (direction == "reverse") {
      reverse_only = true;
    } else {
      NXRT_EP_ENFORCE(direction == "forward", op + ": unknown direction '" + direction + "'");
    }
    layout = info.attr_int("layout", 0);
    NXRT_EP_ENFORCE(layout == 0 || layout == 1, op + ": layout must be 0 or 1");
    clip = info.attr_float("clip", 0.f);
    NXRT_EP_ENFORCE(clip >= 0.f, op + ": clip must be non-negative");
    std::vector<std::string> names = info.attr_strings("activations");
    std::vector<float> alphas = info.attr_floats("activation_alpha");
    std::vector<float> betas = info.attr_floats("activation_beta");
    if (names.empty()) {
      for (int64_t d = 0; d < dirs; ++d)
        names.insert(names.end(), defaults.begin(), defaults.end());
    } else if (names.size() == gate_acts && dirs == 2) {
      // One set given for a bidirectional node: use it for both directions.
      std::vector<std::string> twice = names;
      twice.insert(twice.end(), names.begin(), names.end());
      names = twice;
    }
    NXRT_EP_ENFORCE(names.size() == gate_acts * static_cast<size_t>(dirs),
                    op + ": expected " + std::to_string(gate_acts * dirs) + " activations, got " +
                        std::to_string(names.size()));
    size_t ai = 0, bi = 0;
    for (const std::string& n : names) acts.push_back(ParseActivation(n, alphas, ai, betas, bi));
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  Activation ParseActivation(const std::string& name, const std::vector<float>& alphas, size_t& ai,
                             const std::vector<float>& betas, size_t& bi) const {
    Activation a;
    std::string n = Lower(name);
    // alpha/beta lists are consumed in order by the functions that take them.
    auto take_alpha = [&](float fallback) { return ai < alphas.size() ? alphas[ai++] : fallback; };
    auto take_beta = [&](float fallback) { return bi < betas.size() ? betas[bi++] : fallback; };
    if (n == "relu") {
      a.kind = ActKind::kRelu;
    } else if (n == "tanh") {
      a.kind = ActKind::kTanh;
    } else if (n == "sigmoid") {
      a.kind = ActKind::kSigmoid;
    } else if (n == "affine") {
      a.kind = ActKind::kAffine;
      a.alpha = take_alpha(1.f);
      a.beta = take_beta(0.f);
    } else if (n == "leakyrelu") {
      a.kind = ActKind::kLeakyRelu;
      a.alpha = take_alpha(0.01f);
    } else if (n == "thresholdedrelu") {
      a.kind = ActKind::kThresholdedRelu;
      a.alpha = take_alpha(1.f);
    } else if (n == "scaledtanh") {
      a.kind = ActKind::kScaledTanh;
      a.alpha = take_alpha(1.f);
      a.beta = take_beta(1.f);
    } else if (n == "hardsigmoid") {
      a.kind = ActKind::kHardSigmoid;
      a.alpha = take_alpha(0.2f);
      a.beta = take_beta(0.5f);
    } else if (n == "elu") {
      a.kind = ActKind::kElu;
      a.alpha = take_alpha(1.f);
    } else if (n == "softsign") {
      a.kind = ActKind::kSoftsign;
    } else if (n == "softplus") {
      a.kind = ActKind::kSoftplus;
    } else {
      ep::Fail(NX_NOT_IMPLEMENTED, op + ": unsupported activation '" + name + "'");
    }
    return a;
  }
};

// A read-only view of an input as A values: the tensor's own memory when its element type is A,
// otherwise a widened copy.
template <class A>
struct InputView {
  InputView() = default;
  InputView(const InputView&) = delete;  // ptr may point into own
  InputView& operator=(const InputView&) = delete;
  InputView(InputView&&) noexcept = default;
  InputView& operator=(InputView&&) noexcept = default;
  std::vector<A> own;
  const A* ptr = nullptr;
  bool present() const { return ptr != nullptr; }
};

template <class A>
inline InputView<A> ViewAs(const ep::ConstTensor& t) {
  InputView<A> v;
  if (t.type() == TypeOf<A>::value) {
    v.ptr = t.data<A>();
    return v;
  }
  v.own.resize(t.size());
  DispatchFloat(t.type(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.own.size(); ++i)
      v.own[i] = static_cast<A>(static_cast<AccOf<T>>(p[i]));
  });
  v.ptr = v.own.data();
  return v;
}

// A writable output as A values: the tensor's memory when its type is A, otherwise a staging
// buffer that Finish() converts into the tensor.
template <class A>
struct OutputView {
  OutputView() = default;
  OutputView(const OutputView&) = delete;  // ptr may point into own
  OutputView& operator=(const OutputView&) = delete;
  OutputView(OutputView&&) noexcept = default;
  OutputView& operator=(OutputView&&) noexcept = default;
  ep::Tensor tensor;
  std::vector<A> own;
  A* ptr = nullptr;
  bool present() const { return ptr != nullptr; }
  void Finish() {
    if (ptr == nullptr || own.empty()) return;
    DispatchFloat(tensor.type(), [&]<class T>() {
      T* p = tensor.template data<T>();
      for (size_t i = 0; i < own.size(); ++i) p[i] = static_cast<T>(own[i]);
    });
  }
};

template <class A>
inline OutputView<A> MakeOutput(ep::KernelContext& ctx, size_t index, bool wanted,
                                const Dims& shape, NxElementType type) {
  OutputView<A> v;
  if (!wanted) return v;
  v.tensor = ctx.output(index, shape, type);
  if (type == TypeOf<A>::value) {
    v.ptr = v.tensor.template data<A>();
  } else {
    v.own.assign(v.tensor.size(), A(0));
    v.ptr = v.own.data();
  }
  return v;
}

// The working buffers of one run of a recurrent node (input projections, gates, states, ...),
// carved 64-byte aligned from one block of this thread's scratch: it grows to the largest run
// seen and is reused, so a steady-state run allocates nothing. buffer(0) (the projections, which
// the GEMM overwrites) is left as it is; every other buffer starts zeroed.
template <class A, size_t K>
class RnnWorkspace {
 public:
  explicit RnnWorkspace(const std::array<int64_t, K>& sizes) {
    size_t offsets[K], total = 0;
    for (size_t i = 0; i < K; ++i) {
      offsets[i] = total;
      total += (static_cast<size_t>(sizes[i]) * sizeof(A) + 63) / 64 * 64;
    }
    auto* base =
        static_cast<unsigned char*>(linalg::ThreadScratch(linalg::kScratchRecurrent, total));
    for (size_t i = 0; i < K; ++i) {
      buffers_[i] = reinterpret_cast<A*>(base + offsets[i]);
      if (i > 0) std::fill_n(buffers_[i], sizes[i], A(0));
    }
  }
  A* buffer(size_t i) const { return buffers_[i]; }

 private:
  std::array<A*, K> buffers_{};
};

// Problem sizes and the inputs of one recurrent node.
template <class A>
struct RnnInputs {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int64_t layout = 0;
  InputView<A> x, w, r, b, init_h, init_c, p;  // b, init_*, p may be absent
  Dims lens;  // per batch item; empty when sequence_lens is absent (every sequence is `seq` long)

  int64_t Len(int64_t bi) const { return lens.empty() ? seq : lens[bi]; }

  // Row of X for (time, batch) under the layout.
  int64_t XRow(int64_t t, int64_t bi) const { return layout == 0 ? t * batch + bi : bi * seq + t; }
  // Offset of Y[t, d, b, :] (layout 0) or Y[b, t, d, :] (layout 1).
  int64_t YOffset(int64_t t, int64_t d, int64_t bi) const {
    return (layout == 0 ? (t * dirs + d) * batch + bi : (bi * seq + t) * dirs + d) * hidden;
  }
  // Offset of Y_h[d, b, :] (layout 0) or Y_h[b, d, :] (layout 1); also initial_h/initial_c.
  int64_t StateOffset(int64_t d, int64_t bi) const {
    return (layout == 0 ? d * batch + bi : bi * dirs + d) * hidden;
  }
  Dims YShape() const {
    return layout == 0 ? Dims{seq, dirs, batch, hidden} : Dims{batch, seq, dirs, hidden};
  }
  Dims StateShape() const {
    return layout == 0 ? Dims{dirs, batch, hidden} : Dims{batch, dirs, hidden};
  }
};

// Reads and validates X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P).
template <class A>
RnnInputs<A> ReadRnnInputs(ep::KernelContext& ctx, const RnnAttributes& at, int64_t gates) {
  RnnInputs<A> in;
  const std::string& op = at.op;
  ep::ConstTensor x = ctx.input(0), w = ctx.input(1), r = ctx.input(2);
  auto xs = x.shape();
  NXRT_EP_ENFORCE(xs.size() == 3, op + ": X must have rank 3, got " + DimsToString(xs));
  in.layout = at.layout;
  in.seq = at.layout == 0 ? xs[0] : xs[1];
  in.batch = at.layout == 0 ? xs[1] : xs[0];
  in.input = xs[2];
  in.dirs = at.dirs;
  auto ws = w.shape();
  NXRT_EP_ENFORCE(ws.size() == 3 && ws[0] == at.dirs && ws[2] == in.input && ws[1] % gates == 0,
                  op + ": W has shape " + DimsToString(ws) + ", expected [" +
                      std::to_string(at.dirs) + ", " + std::to_string(gates) + "*hidden, " +
                      std::to_string(in.input) + "]");
  in.hidden = ws[1] / gates;
  NXRT_EP_ENFORCE(
      at.hidden == 0 || at.hidden == in.hidden,
      op + ": hidden_size " + std::to_string(at.hidden) + " does not match W " + DimsToString(ws));
  int64_t H = in.hidden;
  auto rs = r.shape();
  NXRT_EP_ENFORCE(rs.size() == 3 && rs[0] == at.dirs && rs[1] == gates * H && rs[2] == H,
                  op + ": R has shape " + DimsToString(rs) + ", expected [" +
                      std::to_string(at.dirs) + ", " + std::to_string(gates * H) + ", " +
                      std::to_string(H) + "]");
  in.x = ViewAs<A>(x);
  in.w = ViewAs<A>(w);
  in.r = ViewAs<A>(r);
  if (auto b = ctx.optional_input(3)) {
    NXRT_EP_ENFORCE(static_cast<int64_t>(b->size()) == at.dirs * 2 * gates * H,
                    op + ": B has shape " + DimsToString(b->shape()) + ", expected [" +
                        std::to_string(at.dirs) + ", " + std::to_string(2 * gates * H) + "]");
    in.b = ViewAs<A>(*b);
  }
  if (auto l = ctx.optional_input(4)) {
    const std::vector<int64_t> lens = ReadInt64s(*l, "sequence_lens");
    NXRT_EP_ENFORCE(static_cast<int64_t>(lens.size()) == in.batch,
                    op + ": sequence_lens must have one entry per batch item");
    for (int64_t v : lens) {
      NXRT_EP_ENFORCE(v >= 0 && v <= in.seq,
                      op + ": sequence_lens value " + std::to_string(v) + " is out of range");
    }
    in.lens = lens;
  }
  auto read_state = [&](size_t i, InputView<A>& dst, const char* name) {
    if (auto s = ctx.optional_input(i)) {
      NXRT_EP_ENFORCE(static_cast<int64_t>(s->size()) == at.dirs * in.batch * H,
                      op + ": " + name + " has shape " + DimsToString(s->shape()) + ", expected " +
                          std::to_string(at.dirs * in.batch * H) + " elements");
      dst = ViewAs<A>(*s);
    }
  };
  read_state(5, in.init_h, "initial_h");
  if (gates == 4) {
    read_state(6, in.init_c, "initial_c");
    if (auto p = ctx.optional_input(7)) {
      NXRT_EP_ENFORCE(static_cast<int64_t>(p->size()) == at.dirs * 3 * H,
                      op + ": P must have shape [num_directions, 3*hidden_size]");
      in.p = ViewAs<A>(*p);
    }
  }
  return in;
}

// Runs fn.template operator()<A>() with A = double for double inputs, float otherwise.
template <class Fn>
inline void DispatchRnnCompute(NxElementType t, const std::string& op, Fn&& fn) {
  switch (t) {
    case NX_TYPE_DOUBLE:
      fn.template operator()<double>();
      break;
    case NX_TYPE_FLOAT:
    case NX_TYPE_FLOAT16:
    case NX_TYPE_BFLOAT16:
      fn.template operator()<float>();
      break;
    default:
      ep::Fail(NX_NOT_IMPLEMENTED,
               op + ": element type " + ep::ElementTypeName(t) + " is not supported");
  }
}

template <class A>
inline void ClipInPlace(A* v, int64_t n, float clip) {
  if (clip <= 0.f) return;
  const A c = static_cast<A>(clip);
  for (int64_t i = 0; i < n; ++i) v[i] = std::min(c, std::max(-c, v[i]));
}

// One LSTM cell update for one batch item, shared by LSTM and com.microsoft DynamicQuantizeLSTM.
// gates = the pre-activations [i, o, f, c] (H each, overwritten), c / h = its cell and hidden
// state (updated), tmp = H scratch values, peephole = [Pi, Po, Pf] or nullptr. With
// `input_forget` the forget gate is 1 - i (coupled input and forget gates).
template <class A>
inline void LstmCellStep(A* gates, A* c, A* h, A* tmp, const A* peephole, int64_t H, float clip,
                         bool input_forget, const Activation& f, const Activation& g,
                         const Activation& hact) {
  A* gi = gates;
  A* go = gates + H;
  A* gf = gates + 2 * H;
  A* gc = gates + 3 * H;
  if (peephole != nullptr) {
    for (int64_t k = 0; k < H; ++k) {
      gi[k] += peephole[k] * c[k];
      gf[k] += peephole[2 * H + k] * c[k];
    }
  }
  ClipInPlace(gi, H, clip);
  f.Apply(gi, H);
  if (input_forget) {
    for (int64_t k = 0; k < H; ++k) gf[k] = A(1) - gi[k];
  } else {
    ClipInPlace(gf, H, clip);
    f.Apply(gf, H);
  }
  ClipInPlace(gc, H, clip);
  g.Apply(gc, H);
  for (int64_t k = 0; k < H; ++k) c[k] = gf[k] * c[k] + gi[k] * gc[k];
  if (peephole != nullptr) {
    for (int64_t k = 0; k < H; ++k) go[k] += peephole[H + k] * c[k];
  }
  ClipInPlace(go, H, clip);
  f.Apply(go, H);
  std::memcpy(tmp, c, static_cast<size_t>(H) * sizeof(A));
  hact.Apply(tmp, H);
  for (int64_t k = 0; k < H; ++k) h[k] = go[k] * tmp[k];
}

}  // namespace nxrt::cpu::nn
