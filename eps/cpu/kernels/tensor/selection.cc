// Data-dependent selection: NonZero (coordinates of non-zero elements) and Compress (slices
// along an axis where a boolean condition holds). Output sizes depend on the values.
#include <cstring>
#include <type_traits>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

template <class T>
inline bool IsNonZero(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v) != 0.0f;  // -0 is zero, NaN is not
  } else {
    return v != T(0);
  }
}

class NonZero : public ep::Kernel {
 public:
  explicit NonZero(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    std::vector<int64_t> dims = x.shape_vector();
    if (dims.empty()) dims = {1};  // a scalar is treated as a 1-element vector, as numpy does
    int64_t rank = static_cast<int64_t>(dims.size());
    int64_t n = ShapeSize(dims);
    std::vector<int64_t> hits;  // linear positions of the non-zero elements
    if (n > 0) {
      DispatchNumericOrBool(x.type(), [&]<class T>() {
        const T* p = x.data<T>();
        for (int64_t i = 0; i < n; ++i)
          if (IsNonZero(p[i])) hits.push_back(i);
      });
    }
    int64_t nnz = static_cast<int64_t>(hits.size());
    ep::Tensor y = ctx.output(0, {rank, nnz}, NX_TYPE_INT64);
    if (nnz == 0) return;
    int64_t* out = y.data<int64_t>();
    for (int64_t j = 0; j < nnz; ++j) {
      int64_t rem = hits[j];
      for (int64_t k = rank; k-- > 0;) {
        out[k * nnz + j] = rem % dims[k];
        rem /= dims[k];
      }
    }
  }
};

class Compress : public ep::Kernel {
 public:
  explicit Compress(const ep::KernelInfo& info)
      : has_axis_(info.has_attr("axis")), axis_(info.attr_int("axis", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), cond = ctx.input(1);
    NXRT_EP_ENFORCE(cond.type() == NX_TYPE_BOOL, "Compress: condition must be bool");
    NXRT_EP_ENFORCE(cond.rank() == 1, "Compress: condition must be 1-D");
    std::vector<int64_t> in_dims = x.shape_vector();
    int64_t outer = 1, dim, inner = 1;
    int64_t axis = 0;
    if (has_axis_) {
      int64_t rank = static_cast<int64_t>(in_dims.size());
      axis = NormalizeAxis(axis_, rank, "Compress");
      outer = Product(in_dims, 0, axis);
      dim = in_dims[axis];
      inner = Product(in_dims, axis + 1, in_dims.size());
    } else {
      dim = ShapeSize(in_dims);
    }
    int64_t clen = static_cast<int64_t>(cond.size());
    const bool* c = clen ? cond.data<bool>() : nullptr;
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < clen; ++i) {
      if (!c[i]) continue;
      // Entries past the axis end are allowed only when false (numpy.compress semantics).
      NXRT_EP_ENFORCE(i < dim, "Compress: condition selects index " + std::to_string(i) +
                                   " but the axis has only " + std::to_string(dim) + " entries");
      keep.push_back(i);
    }
    int64_t kept = static_cast<int64_t>(keep.size());
    std::vector<int64_t> out_dims;
    if (has_axis_) {
      out_dims = in_dims;
      out_dims[axis] = kept;
    } else {
      out_dims = {kept};
    }
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    if (ShapeSize(out_dims) == 0) return;
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      const T* in = src.data();
      T* out = dst.data();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < kept; ++j) {
          std::memcpy(out + (o * kept + j) * inner, in + (o * dim + keep[j]) * inner,
                      static_cast<size_t>(inner) * sizeof(T));
        }
      }
      dst.Commit();
    });
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

}  // namespace

void RegisterSelection(NxKernelRegistry* r) {
  ep::KernelDefBuilder("NonZero")
      .Versions(9)
      .Constraint("T", NumericOrBoolTypes(), {0})
      .Build<NonZero>(r);
  ep::KernelDefBuilder("Compress").Versions(9).Build<Compress>(r);
}

}  // namespace nxrt::cpu::tensor
