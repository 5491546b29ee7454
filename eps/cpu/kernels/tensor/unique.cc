// Unique: distinct elements (no axis: of the flattened input) or distinct slices along an axis,
// with the first-occurrence indices, the inverse mapping and the counts. Items are sorted
// (stable, so each group starts with its first occurrence); with sorted=0 the groups are then
// put back in order of first occurrence. Slices compare lexicographically, like numpy.unique.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <type_traits>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

template <class T>
using KeyOf = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// Three-way compare with NaN after all numbers and equal to other NaNs.
template <class K>
inline int Compare(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    bool an = std::isnan(a), bn = std::isnan(b);
    if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

class Unique : public ep::Kernel {
 public:
  explicit Unique(const ep::KernelInfo& info)
      : has_axis_(info.has_attr("axis")),
        axis_(info.attr_int("axis", 0)),
        sorted_(info.attr_int("sorted", 1) != 0) {
    for (size_t i = 0; i < 4; ++i) present_[i] = info.output(i).present();
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    NxElementType type = x.type();
    if (type == NX_TYPE_STRING) {
      Run<std::string_view>(ctx, x);
    } else {
      DispatchNumericOrBool(type, [&]<class T>() { Run<T>(ctx, x); });
    }
  }

 private:
  template <class T>
  void Run(ep::KernelContext& ctx, const ep::ConstTensor& x) {
    using K = KeyOf<T>;
    std::vector<int64_t> dims = x.shape_vector();
    int64_t outer = 1, count, inner = 1, axis = 0;
    if (has_axis_) {
      axis = NormalizeAxis(axis_, static_cast<int64_t>(dims.size()), "Unique");
      outer = Product(dims, 0, axis);
      count = dims[axis];
      inner = Product(dims, axis + 1, dims.size());
    } else {
      count = ShapeSize(dims);
    }
    int64_t m = outer * inner;  // elements per item
    InView<T> view(x);
    const T* in = view.data();
    // keys[item * m + (o * inner + i)] = x[o, item, i]
    std::vector<K> keys(static_cast<size_t>(count * m));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t it = 0; it < count; ++it)
        for (int64_t i = 0; i < inner; ++i)
          keys[it * m + o * inner + i] = static_cast<K>(in[(o * count + it) * inner + i]);
    auto cmp_items = [&](int64_t a, int64_t b) {
      for (int64_t j = 0; j < m; ++j) {
        int c = Compare(keys[a * m + j], keys[b * m + j]);
        if (c) return c;
      }
      return 0;
    };
    std::vector<int64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return cmp_items(a, b) < 0; });
    // Groups in sorted order: first occurrence and size.
    std::vector<int64_t> first, counts, group_of(count);
    for (int64_t p = 0; p < count; ++p) {
      if (p == 0 || cmp_items(order[p - 1], order[p]) != 0) {
        first.push_back(order[p]);
        counts.push_back(0);
      }
      counts.back()++;
      group_of[order[p]] = static_cast<int64_t>(first.size()) - 1;
    }
    int64_t groups = static_cast<int64_t>(first.size());
    std::vector<int64_t> rank(groups);  // output position of each sorted group
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted_) {
      std::vector<int64_t> by_first(groups);
      std::iota(by_first.begin(), by_first.end(), 0);
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (int64_t g = 0; g < groups; ++g) rank[by_first[g]] = g;
    }
    std::vector<int64_t> out_first(groups), out_counts(groups);
    for (int64_t g = 0; g < groups; ++g) {
      out_first[rank[g]] = first[g];
      out_counts[rank[g]] = counts[g];
    }
    std::vector<int64_t> ydims = has_axis_ ? dims : std::vector<int64_t>{groups};
    if (has_axis_) ydims[axis] = groups;
    ep::Tensor y = ctx.output(0, ydims, x.type());
    {
      OutView<T> dst(y);
      T* out = dst.data();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t i = 0; i < inner; ++i)
            out[(o * groups + g) * inner + i] = in[(o * count + out_first[g]) * inner + i];
      dst.Commit();
    }
    auto write = [&](size_t index, const std::vector<int64_t>& v) {
      if (index >= ctx.output_count() || !present_[index]) return;
      ep::Tensor t = ctx.output(index, {static_cast<int64_t>(v.size())}, NX_TYPE_INT64);
      if (!v.empty()) std::copy(v.begin(), v.end(), t.data<int64_t>());
    };
    std::vector<int64_t> inverse(count);
    for (int64_t it = 0; it < count; ++it) inverse[it] = rank[group_of[it]];
    write(1, out_first);
    write(2, inverse);
    write(3, out_counts);
  }

  bool has_axis_;
  int64_t axis_;
  bool sorted_;
  bool present_[4] = {};
};

}  // namespace

void RegisterUnique(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Unique").Versions(11).Build<Unique>(r);
}

}  // namespace nxrt::cpu::tensor
