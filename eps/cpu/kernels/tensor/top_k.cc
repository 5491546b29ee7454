// TopK (k attribute in opset 1, K input since 10, largest/sorted since 11). Each slice along the
// axis is copied into a (value, index) buffer and partially sorted. Ties go to the lower index;
// NaN counts as larger than every number, so the ordering stays a strict weak order.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

template <class T>
using KeyOf = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class K>
inline bool IsNan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(v);
  else
    return false;
}

// a before b in "largest first" order.
template <class K>
struct LargestFirst {
  static bool Beats(K v, K worst) { return v > worst || (IsNan(v) && !IsNan(worst)); }
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    bool an = IsNan(a.first), bn = IsNan(b.first);
    if (an != bn) return an;
    if (!an && a.first != b.first) return a.first > b.first;
    return a.second < b.second;
  }
};
template <class K>
struct SmallestFirst {
  static bool Beats(K v, K worst) { return v < worst || (!IsNan(v) && IsNan(worst)); }
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    bool an = IsNan(a.first), bn = IsNan(b.first);
    if (an != bn) return bn;
    if (!an && a.first != b.first) return a.first < b.first;
    return a.second < b.second;
  }
};

class TopK : public ep::Kernel {
 public:
  explicit TopK(const ep::KernelInfo& info)
      : k_attr_(info.opset() < 10 ? info.attr_int("k") : -1),
        axis_(info.attr_int("axis", -1)),
        largest_(info.attr_int("largest", 1) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    std::vector<int64_t> dims = x.shape_vector();
    int64_t rank = static_cast<int64_t>(dims.size());
    NXRT_EP_ENFORCE(rank > 0, "TopK: input must have rank >= 1");
    int64_t axis = NormalizeAxis(axis_, rank, "TopK");
    int64_t k = k_attr_;
    if (k < 0) {
      ep::ConstTensor kt = ctx.input(1);
      NXRT_EP_ENFORCE(kt.size() == 1, "TopK: K must hold exactly one value");
      k = ReadInts(kt, "TopK", "K")[0];
    }
    int64_t dim = dims[axis];
    NXRT_EP_ENFORCE(k >= 0 && k <= dim, "TopK: k = " + std::to_string(k) + " is outside [0, " +
                                            std::to_string(dim) + "]");
    std::vector<int64_t> out_dims = dims;
    out_dims[axis] = k;
    ep::Tensor values = ctx.output(0, out_dims, x.type());
    ep::Tensor indices = ctx.output(1, out_dims, NX_TYPE_INT64);
    int64_t outer = Product(dims, 0, axis), inner = Product(dims, axis + 1, dims.size());
    if (outer * inner * k == 0) return;
    DispatchNumeric(x.type(), [&]<class T>() {
      if (largest_)
        Run<T>(x, values, indices, outer, dim, inner, k, LargestFirst<KeyOf<T>>(), ctx);
      else
        Run<T>(x, values, indices, outer, dim, inner, k, SmallestFirst<KeyOf<T>>(), ctx);
    });
  }

 private:
  template <class T, class Cmp>
  static void Run(const ep::ConstTensor& x, const ep::Tensor& values, const ep::Tensor& indices,
                  int64_t outer, int64_t dim, int64_t inner, int64_t k, Cmp cmp,
                  ep::KernelContext& ctx) {
    using K = KeyOf<T>;
    const T* in = x.data<T>();
    T* vout = values.data<T>();
    int64_t* iout = indices.data<int64_t>();
    int64_t slices = outer * inner;
    int64_t grain = std::max<int64_t>(1, 16384 / dim);
    ParallelFor(ctx.threads(), slices, grain, [&](int64_t b, int64_t e) {
      std::vector<std::pair<K, int64_t>> buf(dim);
      // Small k: one pass keeping the best k in a sorted buffer; most elements are rejected
      // by a single comparison with the current k-th best.
      bool small_k = k <= 32 && k * 4 <= dim;
      for (int64_t s = b; s < e; ++s) {
        int64_t o = s / inner, i = s % inner;
        const T* p = in + o * dim * inner + i;
        if (small_k) {
          int64_t filled = 0;
          for (int64_t j = 0; j < dim; ++j) {
            K v = static_cast<K>(p[j * inner]);
            // Later indices lose ties, so only a strictly better value can enter.
            if (filled == k && !Cmp::Beats(v, buf[k - 1].first)) continue;
            std::pair<K, int64_t> item{v, j};
            int64_t pos = filled < k ? filled++ : k - 1;
            while (pos > 0 && cmp(item, buf[pos - 1])) {
              buf[pos] = buf[pos - 1];
              --pos;
            }
            buf[pos] = item;
          }
        } else {
          for (int64_t j = 0; j < dim; ++j) buf[j] = {static_cast<K>(p[j * inner]), j};
          if (k == 1) {
            auto best = std::min_element(buf.begin(), buf.end(), cmp);
            std::swap(buf[0], *best);
          } else if (k < dim) {
            std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), cmp);
          } else {
            std::sort(buf.begin(), buf.end(), cmp);
          }
        }
        T* vp = vout + o * k * inner + i;
        int64_t* ip = iout + o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vp[j * inner] = p[buf[j].second * inner];
          ip[j * inner] = buf[j].second;
        }
      }
    });
  }

  int64_t k_attr_;
  int64_t axis_;
  bool largest_;
};

}  // namespace

void RegisterTopK(NxKernelRegistry* r) {
  ep::KernelDefBuilder("TopK").Versions(1).Constraint("T", NumericTypes(), {0}, {0}).Build<TopK>(r);
}

}  // namespace nxrt::cpu::tensor
