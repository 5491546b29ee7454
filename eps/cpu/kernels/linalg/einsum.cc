// Einsum (opset 12 and later), general: diagonals, ellipsis broadcasting, sums, implicit output.
//
// Operands are strided views over their labels (a repeated label is a diagonal: its strides add).
// They are contracted left to right; each pairwise contraction is a batched GEMM
// [batch, M, K] x [batch, K, N] where labels shared and still needed are the batch, labels shared
// and no longer needed are K. A view already laid out as [batch, M, K] (or [batch, K, M], used
// transposed) feeds the GEMM without a copy, so the common batched-matmul patterns
// ("bij,bjk->bik", "bhid,bhjd->bhij", ...) run as plain batched GEMMs. float16/bfloat16 compute
// in float32.
#include <algorithm>
#include <memory>
#include <numeric>
#include <nxrt/nxrt_ep.hpp>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/dnnl_util.h"
#include "kernels/linalg/einsum_equation.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/gemm_ref.h"
#include "kernels/linalg/linalg_kernels.h"
#include "kernels/linalg/sgemm_warm_up.h"

namespace nxrt::cpu::linalg {
namespace {

template <class T>
struct View {
  std::vector<int> labels;  // unique
  std::vector<int64_t> dims, strides;
  const T* data = nullptr;
  std::shared_ptr<std::vector<T>> owner;  // set when the view owns materialised data

  int64_t size() const { return ShapeSize(dims); }
  int find(int label) const {
    auto it = std::find(labels.begin(), labels.end(), label);
    return it == labels.end() ? -1 : static_cast<int>(it - labels.begin());
  }
  bool contiguous_as(const std::vector<int>& order) const {
    if (labels != order) return false;
    int64_t s = 1;
    for (size_t i = labels.size(); i-- > 0;) {
      if (dims[i] != 1 && strides[i] != s) return false;
      s *= dims[i];
    }
    return true;
  }
};

// The view of one input: one entry per distinct label; repeated labels (diagonals) add their
// strides; axes of extent 1 under a wider label broadcast with stride 0.
template <class T>
View<T> MakeView(const T* data, std::span<const int64_t> shape, const std::vector<int>& labels,
                 const std::vector<int64_t>& label_size) {
  View<T> v;
  v.data = data;
  int64_t stride = 1;
  std::vector<int64_t> axis_stride(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    axis_stride[a] = stride;
    stride *= shape[a];
  }
  for (size_t a = 0; a < shape.size(); ++a) {
    const int64_t s = (shape[a] == 1 && label_size[labels[a]] != 1) ? 0 : axis_stride[a];
    int at = v.find(labels[a]);
    if (at < 0) {
      v.labels.push_back(labels[a]);
      v.dims.push_back(label_size[labels[a]]);
      v.strides.push_back(s);
    } else {
      NXRT_EP_ENFORCE(shape[a] == v.dims[at] || s == 0 || v.strides[at] == 0,
                      "Einsum: a repeated label must have equal extents");
      v.strides[at] += s;
    }
  }
  return v;
}

// Copies v into `out` (contiguous, labels in `order`), summing over v's labels not in `order`.
template <class T>
void MaterializeInto(const View<T>& v, const std::vector<int>& order, T* out) {
  using A = WrapArith<T>;
  std::vector<int64_t> odims, ostr, sdims, sstr;
  for (int l : order) {
    int at = v.find(l);
    NXRT_EP_ENFORCE(at >= 0, "Einsum: internal error, label missing from operand");
    odims.push_back(v.dims[at]);
    ostr.push_back(v.strides[at]);
  }
  for (size_t i = 0; i < v.labels.size(); ++i) {
    if (std::find(order.begin(), order.end(), v.labels[i]) == order.end()) {
      sdims.push_back(v.dims[i]);
      sstr.push_back(v.strides[i]);
    }
  }
  const int64_t out_count = ShapeSize(odims), sum_count = ShapeSize(sdims);
  std::vector<int64_t> oi(odims.size(), 0), si(sdims.size(), 0);
  int64_t base = 0;
  for (int64_t o = 0; o < out_count; ++o) {
    A acc = A(0);
    if (sum_count > 0) {
      int64_t off = base;
      std::fill(si.begin(), si.end(), 0);
      for (int64_t s = 0; s < sum_count; ++s) {
        acc = A(acc + A(v.data[off]));
        for (size_t d = sdims.size(); d-- > 0;) {
          off += sstr[d];
          if (++si[d] < sdims[d]) break;
          off -= sstr[d] * sdims[d];
          si[d] = 0;
        }
      }
    }
    out[o] = T(acc);
    for (size_t d = odims.size(); d-- > 0;) {
      base += ostr[d];
      if (++oi[d] < odims[d]) break;
      base -= ostr[d] * odims[d];
      oi[d] = 0;
    }
  }
}

template <class T>
View<T> Materialize(const View<T>& v, const std::vector<int>& order) {
  if (v.contiguous_as(order)) return v;
  View<T> r;
  r.labels = order;
  for (int l : order) r.dims.push_back(v.dims[v.find(l)]);
  r.strides.resize(order.size());
  int64_t s = 1;
  for (size_t i = order.size(); i-- > 0;) {
    r.strides[i] = s;
    s *= r.dims[i];
  }
  r.owner = std::make_shared<std::vector<T>>(static_cast<size_t>(s));
  MaterializeInto(v, order, r.owner->data());
  r.data = r.owner->data();
  return r;
}

// Concatenation helper.
std::vector<int> Cat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> out;
  for (auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

template <class T>
void BatchedProduct(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a, bool ta, const T* b,
                    bool tb, T* c, int threads) {
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = a + i * m * k;
    const T* bi = b + i * k * n;
    T* ci = c + i * m * n;
    if constexpr (std::is_same_v<T, float>) {
      Sgemm(ta, tb, m, n, k, 1.0f, ai, ta ? m : k, bi, tb ? k : n, 0.0f, ci, n);
    } else {
      MatView<T> av = ta ? MatView<T>{ai, 1, m} : MatView<T>{ai, k, 1};
      MatView<T> bv = tb ? MatView<T>{bi, 1, k} : MatView<T>{bi, n, 1};
      GemmRef<T>(m, n, k, av, bv, ci, n, false, threads);
    }
  }
}

// Contracts x and y over their shared labels not in `keep`; x-only or y-only labels not in
// `keep` are summed out first. If `out` is given and the result's label order equals
// `out_order`, the GEMM writes straight into it (and `wrote_out` is set).
template <class T>
View<T> Contract(const View<T>& x, const View<T>& y, const std::vector<bool>& keep,
                 const std::vector<int>* out_order, T* out, bool* wrote_out, int threads) {
  std::vector<int> batch, m, kk, n;
  for (int l : x.labels) {
    const bool in_y = y.find(l) >= 0;
    if (in_y)
      (keep[l] ? batch : kk).push_back(l);
    else if (keep[l])
      m.push_back(l);
  }
  for (int l : y.labels) {
    if (x.find(l) < 0 && keep[l]) n.push_back(l);
  }
  auto extent = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= x.find(l) >= 0 ? x.dims[x.find(l)] : y.dims[y.find(l)];
    return p;
  };
  const int64_t B = extent(batch), M = extent(m), N = extent(n), K = extent(kk);
  // Pick layouts needing no copy when possible: x as [b, m, k] or [b, k, m]; y as [b, k, n] or
  // [b, n, k].
  std::vector<int> x_mk = Cat({&batch, &m, &kk}), x_km = Cat({&batch, &kk, &m});
  std::vector<int> y_kn = Cat({&batch, &kk, &n}), y_nk = Cat({&batch, &n, &kk});
  bool ta = false, tb = false;
  View<T> xa, yb;
  if (!x.contiguous_as(x_mk) && x.contiguous_as(x_km)) {
    ta = true;
    xa = x;
  } else {
    xa = Materialize(x, x_mk);
  }
  if (!y.contiguous_as(y_kn) && y.contiguous_as(y_nk)) {
    tb = true;
    yb = y;
  } else {
    yb = Materialize(y, y_kn);
  }
  View<T> r;
  r.labels = Cat({&batch, &m, &n});
  for (int l : r.labels) r.dims.push_back(x.find(l) >= 0 ? x.dims[x.find(l)] : y.dims[y.find(l)]);
  r.strides.resize(r.labels.size());
  int64_t s = 1;
  for (size_t i = r.labels.size(); i-- > 0;) {
    r.strides[i] = s;
    s *= r.dims[i];
  }
  T* dst;
  if (out != nullptr && out_order != nullptr && *out_order == r.labels) {
    dst = out;
    *wrote_out = true;
  } else {
    r.owner = std::make_shared<std::vector<T>>(static_cast<size_t>(s));
    dst = r.owner->data();
  }
  BatchedProduct<T>(B, M, N, K, xa.data, ta, yb.data, tb, dst, threads);
  r.data = dst;
  return r;
}

template <class T>
void RunEinsum(const EinsumShapes& es, const std::vector<const T*>& inputs,
               const std::vector<std::span<const int64_t>>& shapes, T* out, int threads) {
  const size_t n = inputs.size();
  const size_t num_labels = es.label_size.size();
  // For each operand position, which labels are still needed afterwards (by later operands or
  // the output).
  std::vector<std::vector<bool>> needed_after(n, std::vector<bool>(num_labels, false));
  std::vector<bool> acc(num_labels, false);
  for (int l : es.output_labels) acc[l] = true;
  for (size_t i = n; i-- > 0;) {
    needed_after[i] = acc;
    for (int l : es.input_labels[i]) acc[l] = true;
  }
  View<T> cur = MakeView(inputs[0], shapes[0], es.input_labels[0], es.label_size);
  bool wrote_out = false;
  for (size_t i = 1; i < n; ++i) {
    View<T> next = MakeView(inputs[i], shapes[i], es.input_labels[i], es.label_size);
    const bool last = i + 1 == n;
    cur = Contract(cur, next, needed_after[i], last ? &es.output_labels : nullptr,
                   last ? out : nullptr, &wrote_out, threads);
  }
  if (!wrote_out) MaterializeInto(cur, es.output_labels, out);
}

class Einsum : public ep::Kernel {
 public:
  explicit Einsum(const ep::KernelInfo& info)
      : op_(info.describe()),
        eq_(ParseEinsumEquation(info.attr_string("equation", ""), info.describe())) {
    StartSgemmWarmUp();  // contractions run as sgemm calls
  }

  void Compute(ep::KernelContext& ctx) override {
    const size_t n = ctx.input_count();
    NXRT_EP_ENFORCE(n >= 1, op_ + ": needs at least one input");
    std::vector<ep::ConstTensor> ins;
    std::vector<std::span<const int64_t>> shapes;
    for (size_t i = 0; i < n; ++i) {
      ins.push_back(ctx.input(i));
      shapes.push_back(ins.back().shape());
      NXRT_EP_ENFORCE(ins.back().type() == ins[0].type(), op_ + ": inputs differ in type");
    }
    EinsumShapes es = ResolveEinsum(eq_, shapes, op_);
    std::vector<int64_t> y_dims;
    for (int l : es.output_labels) y_dims.push_back(es.label_size[l]);
    const NxElementType t = ins[0].type();
    ep::Tensor y = ctx.output(0, y_dims, t);
    const size_t y_count = static_cast<size_t>(ShapeSize(y_dims));
    if (y_count == 0) return;
    const int threads = ctx.threads();
    OmpThreadScope scope(threads);
    DispatchNumeric(t, [&]<class T>() {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        std::vector<std::vector<float>> conv(n);
        std::vector<const float*> ptrs;
        for (size_t i = 0; i < n; ++i) {
          conv[i] = ToFloatVector(ins[i].data<T>(), ins[i].size());
          ptrs.push_back(conv[i].data());
        }
        std::vector<float> yf(y_count);
        RunEinsum<float>(es, ptrs, shapes, yf.data(), threads);
        FromFloat(yf.data(), y_count, y.data<T>());
      } else {
        std::vector<const T*> ptrs;
        for (auto& in : ins) ptrs.push_back(in.data<T>());
        RunEinsum<T>(es, ptrs, shapes, y.data<T>(), threads);
      }
    });
  }

 private:
  std::string op_;
  EinsumEquation eq_;
};

}  // namespace

void RegisterEinsumKernels(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Einsum").Versions(12).Build<Einsum>(r);
}

}  // namespace nxrt::cpu::linalg
