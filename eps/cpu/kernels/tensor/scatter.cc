// Scatter (opset 9-10 name), ScatterElements and ScatterND, with the reduction attribute (none,
// add, mul, max, min). The output starts as a copy of data; updates are applied in index order,
// sequentially, so duplicate indices behave as the spec's reference loop does.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction ParseReduction(const ep::KernelInfo& info, const char* op) {
  std::string r = info.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  ep::Fail(NX_INVALID_MODEL, std::string(op) + ": unknown reduction '" + r + "'");
}

// Arithmetic type for T: 16-bit floats compute in float.
template <class T>
using ArithOf = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float,
                                   std::conditional_t<std::is_same_v<T, bool>, int, T>>;

// Calls fn(T* out, const T* upd, apply) with `apply(T& dst, T src)` for the reduction; element
// type and reduction are resolved here, once, outside the element loops.
template <class Fn>
void DispatchScatter(NxElementType type, Reduction red, Fn&& fn) {
  if (red == Reduction::kNone) {
    DispatchMove(type,
                 [&]<class T>() { fn.template operator()<T>([](T& d, const T& s) { d = s; }); });
    return;
  }
  DispatchNumericOrBool(type, [&]<class T>() {
    using A = ArithOf<T>;
    switch (red) {
      case Reduction::kAdd:
        fn.template operator()<T>([](T& d, const T& s) { d = static_cast<T>(A(d) + A(s)); });
        break;
      case Reduction::kMul:
        fn.template operator()<T>([](T& d, const T& s) { d = static_cast<T>(A(d) * A(s)); });
        break;
      case Reduction::kMax:
        fn.template operator()<T>(
            [](T& d, const T& s) { d = static_cast<T>(std::max(A(d), A(s))); });
        break;
      default:
        fn.template operator()<T>(
            [](T& d, const T& s) { d = static_cast<T>(std::min(A(d), A(s))); });
        break;
    }
  });
}

class ScatterElements : public ep::Kernel {
 public:
  explicit ScatterElements(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", 0)), red_(ParseReduction(info, "ScatterElements")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor data = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
    std::vector<int64_t> dd = data.shape_vector(), id = indices.shape_vector();
    int64_t rank = static_cast<int64_t>(dd.size());
    NXRT_EP_ENFORCE(rank > 0 && id.size() == dd.size(),
                    "ScatterElements: data " + ShapeToString(dd) + " and indices " +
                        ShapeToString(id) + " must have the same rank >= 1");
    NXRT_EP_ENFORCE(updates.shape_vector() == id,
                    "ScatterElements: updates " + ShapeToString(updates.shape()) +
                        " must have the shape of indices " + ShapeToString(id));
    NXRT_EP_ENFORCE(updates.type() == data.type(),
                    "ScatterElements: updates and data have different element types");
    int64_t axis = NormalizeAxis(axis_, rank, "ScatterElements");
    for (int64_t k = 0; k < rank; ++k) {
      NXRT_EP_ENFORCE(k == axis || id[k] <= dd[k], "ScatterElements: indices " + ShapeToString(id) +
                                                       " exceed data " + ShapeToString(dd) +
                                                       " outside the axis");
    }
    NXRT_EP_ENFORCE(indices.type() == NX_TYPE_INT64 || indices.type() == NX_TYPE_INT32,
                    std::string("ScatterElements: indices must be int32 or int64, got ") +
                        ep::ElementTypeName(indices.type()));
    ep::Tensor y = ctx.output(0, dd, data.type());
    std::vector<int64_t> strides = StridesOf(dd);
    const int64_t axis_stride = strides[axis], axis_dim = dd[axis];
    strides[axis] = 0;
    std::vector<int64_t> id_strides = StridesOf(id);
    const int64_t n = ShapeSize(id);
    // Rows of the indices' last dimension: contiguous in indices and updates, and in data too
    // (stride 1) unless the axis is that dimension. torchvision's RoI pooling scatters
    // [150, 256, 7, 7] this way four times per Faster R-CNN run.
    const int64_t row = id.back(), data_step = axis == rank - 1 ? 0 : 1;
    Dims outer_dims(id.begin(), id.end() - 1), outer_data(strides.begin(), strides.end() - 1),
        outer_idx(id_strides.begin(), id_strides.end() - 1);
    DispatchScatter(data.type(), red_, [&]<class T>(auto apply) {
      InView<T> src(data), upd(updates);
      OutView<T> dst(y);
      T* out = dst.data();
      const int64_t total = ShapeSize(dd);
      if (total) std::copy_n(src.data(), total, out);
      if (n && row) {
        const T* u = upd.data();
        auto scatter = [&]<class I>(const I* idx) {
          Odometer walk(outer_dims, outer_data, outer_idx);
          for (int64_t r = 0; r < n / row; ++r, walk.Next()) {
            const I* ir = idx + walk.b;
            const T* ur = u + walk.b;
            T* base = out + walk.a;
            for (int64_t j = 0; j < row; ++j) {
              int64_t k = static_cast<int64_t>(ir[j]);
              if (k < 0) k += axis_dim;
              if (k < 0 || k >= axis_dim) {
                ep::Fail(NX_INVALID_ARGUMENT,
                         "ScatterElements: index " + std::to_string(static_cast<int64_t>(ir[j])) +
                             " is out of range for an axis of size " + std::to_string(axis_dim));
              }
              apply(base[j * data_step + k * axis_stride], ur[j]);
            }
          }
        };
        if (indices.type() == NX_TYPE_INT64)
          scatter(indices.data<int64_t>());
        else
          scatter(indices.data<int32_t>());
      }
      dst.Commit();
    });
  }

 private:
  int64_t axis_;
  Reduction red_;
};

// Where ScatterND's updates go: runs of index tuples whose slices lie one after another in the
// output, each copied (or reduced) as one block. torch's slice assignment x[:, :, a:, b:] = v
// exports as ScatterND with one tuple per element (MViTv2's relative positions: 1.2M tuples for a
// [1, 2, 784, 784] attention map); its runs are the rows of the box.
struct ScatterPlan {
  std::vector<int64_t> data_dims;
  struct Run {
    int64_t out, upd, count;  // elements
  };
  std::vector<Run> runs;
};

ScatterPlan PlanScatterND(const std::vector<int64_t>& dd, const std::vector<int64_t>& id,
                          const ep::ConstTensor& indices) {
  const int64_t r = static_cast<int64_t>(dd.size()), q = static_cast<int64_t>(id.size());
  const int64_t k = id[static_cast<size_t>(q - 1)];
  const std::vector<int64_t> strides = StridesOf(dd);
  const std::vector<int64_t> raw = ReadInts(indices, "ScatterND", "indices");
  const int64_t tuples = Product(id, 0, q - 1), inner = Product(dd, k, r);
  ScatterPlan plan;
  plan.data_dims = dd;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    const int64_t* tuple = raw.data() + t * k;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = dd[static_cast<size_t>(j)], i = tuple[j];
      // One unsigned compare for both ends; the error message only when it fails.
      if (static_cast<uint64_t>(i < 0 ? i + dim : i) >= static_cast<uint64_t>(dim))
        NormalizeIndex(i, dim, "ScatterND");
      off += (i < 0 ? i + dim : i) * strides[static_cast<size_t>(j)];
    }
    if (!plan.runs.empty() && plan.runs.back().out + plan.runs.back().count == off) {
      plan.runs.back().count += inner;
    } else {
      plan.runs.push_back({off, t * inner, inner});
    }
  }
  return plan;
}

class ScatterND : public ep::Kernel {
 public:
  explicit ScatterND(const ep::KernelInfo& info)
      : red_(ParseReduction(info, "ScatterND")),
        constant_indices_(info.constant_input(1).has_value()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor data = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
    std::vector<int64_t> dd = data.shape_vector(), id = indices.shape_vector();
    int64_t r = static_cast<int64_t>(dd.size()), q = static_cast<int64_t>(id.size());
    NXRT_EP_ENFORCE(r >= 1 && q >= 1, "ScatterND: data and indices must have rank >= 1");
    int64_t k = id[q - 1];
    NXRT_EP_ENFORCE(k >= 1 && k <= r, "ScatterND: last indices dim " + std::to_string(k) +
                                          " must be in [1, " + std::to_string(r) + "]");
    std::vector<int64_t> ud(id.begin(), id.end() - 1);
    ud.insert(ud.end(), dd.begin() + k, dd.end());
    NXRT_EP_ENFORCE(updates.shape_vector() == ud, "ScatterND: updates shape " +
                                                      ShapeToString(updates.shape()) + " must be " +
                                                      ShapeToString(ud));
    NXRT_EP_ENFORCE(updates.type() == data.type(),
                    "ScatterND: updates and data have different element types");
    std::shared_ptr<const ScatterPlan> plan = Plan(dd, id, indices);
    ep::Tensor y = ctx.output(0, dd, data.type());
    DispatchScatter(data.type(), red_, [&]<class T>(auto apply) {
      InView<T> src(data), upd(updates);
      OutView<T> dst(y);
      T* out = dst.data();
      int64_t total = ShapeSize(dd);
      if (total && out != src.data()) std::copy_n(src.data(), total, out);
      const T* u = upd.data();
      for (const ScatterPlan::Run& run : plan->runs) {
        T* o = out + run.out;
        const T* s = u + run.upd;
        if (red_ == Reduction::kNone) {
          std::copy_n(s, run.count, o);
        } else {
          for (int64_t i = 0; i < run.count; ++i) apply(o[i], s[i]);
        }
      }
      dst.Commit();
    });
  }

 private:
  // Constant indices are planned once per data shape (runs of a session may overlap).
  std::shared_ptr<const ScatterPlan> Plan(const std::vector<int64_t>& dd,
                                          const std::vector<int64_t>& id,
                                          const ep::ConstTensor& indices) {
    if (!constant_indices_) return std::make_shared<ScatterPlan>(PlanScatterND(dd, id, indices));
    std::lock_guard<std::mutex> lock(mu_);
    if (!cached_ || cached_->data_dims != dd)
      cached_ = std::make_shared<ScatterPlan>(PlanScatterND(dd, id, indices));
    return cached_;
  }

  Reduction red_;
  bool constant_indices_;
  std::mutex mu_;
  std::shared_ptr<const ScatterPlan> cached_;
};

}  // namespace

void RegisterScatter(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Scatter").Versions(9).Build<ScatterElements>(r);
  ep::KernelDefBuilder("ScatterElements").Versions(11).Build<ScatterElements>(r);
  ep::KernelDefBuilder("ScatterND").Versions(11).MayInplace(0, 0).Build<ScatterND>(r);
}

}  // namespace nxrt::cpu::tensor
