// Gather, GatherElements and GatherND. Indices (int32 or int64) are validated and normalised
// up front, so the copy loops never read outside the data tensor; Gather and GatherND copy
// whole contiguous inner blocks per index.
#include <cstring>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

constexpr int64_t kGrainElems = int64_t{1} << 14;

// Calls fn.template operator()<I>() for an int32 or int64 index tensor type.
template <class Fn>
void DispatchIndex(NxElementType t, Fn&& fn) {
  if (t == NX_TYPE_INT32) return fn.template operator()<int32_t>();
  if (t == NX_TYPE_INT64) return fn.template operator()<int64_t>();
  ep::Fail(NX_INVALID_ARGUMENT,
           std::string("indices must be int32 or int64, got ") + ep::ElementTypeName(t));
}

// Throws (naming the first bad value) unless every index is in [-dim, dim).
template <class I>
void CheckIndices(const I* idx, int64_t n, int64_t dim, const char* op) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = static_cast<int64_t>(idx[i]);
    ok &= v >= -dim && v < dim;
  }
  if (ok) return;
  for (int64_t i = 0; i < n; ++i) NormalizeIndex(static_cast<int64_t>(idx[i]), dim, op);
}

// Copies `items` blocks of `inner` elements: block i goes from src + src_off(i) to dst + i*inner.
template <class T, class Offset>
void GatherBlocks(const T* src, T* dst, int64_t items, int64_t inner, int threads,
                  Offset&& src_off) {
  int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, inner));
  ParallelFor(threads, items, grain, [&](int64_t begin, int64_t end) {
    if (inner == 1) {
      for (int64_t i = begin; i < end; ++i) dst[i] = src[src_off(i)];
      return;
    }
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(dst + i * inner, src + src_off(i), static_cast<size_t>(inner) * sizeof(T));
  });
}

class Gather : public ep::Kernel {
 public:
  explicit Gather(const ep::KernelInfo& info) : axis_(info.attr_int("axis", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor data = ctx.input(0);
    ep::ConstTensor indices = ctx.input(1);
    auto ds = data.shape();
    int64_t rank = static_cast<int64_t>(ds.size());
    NXRT_EP_ENFORCE(rank > 0, "Gather: data must have rank >= 1");
    int64_t axis = NormalizeAxis(axis_, rank, "Gather");
    int64_t dim = ds[axis];
    Dims out_dims(ds.begin(), ds.begin() + axis);
    for (int64_t d : indices.shape()) out_dims.push_back(d);
    for (size_t d = static_cast<size_t>(axis) + 1; d < ds.size(); ++d) out_dims.push_back(ds[d]);
    const int64_t k = static_cast<int64_t>(indices.size());
    // Indices are checked first and read in place (negative ones count from the end).
    DispatchIndex(indices.type(), [&]<class I>() {
      const I* idx = indices.data<I>();
      CheckIndices(idx, k, dim, "Gather");
      ep::Tensor y = ctx.output(0, out_dims, data.type());
      int64_t outer = Product(ds, 0, axis), inner = Product(ds, axis + 1, ds.size());
      if (outer * k * inner == 0) return;
      DispatchMove(data.type(), [&]<class T>() {
        InView<T> src(data);
        OutView<T> dst(y);
        GatherBlocks<T>(src.data(), dst.data(), outer * k, inner, ctx.threads(), [&](int64_t i) {
          int64_t v = static_cast<int64_t>(idx[i % k]);
          if (v < 0) v += dim;
          return ((i / k) * dim + v) * inner;
        });
        dst.Commit();
      });
    });
  }

 private:
  int64_t axis_;
};

class GatherElements : public ep::Kernel {
 public:
  explicit GatherElements(const ep::KernelInfo& info) : axis_(info.attr_int("axis", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor data = ctx.input(0);
    ep::ConstTensor indices = ctx.input(1);
    Dims dd = Dims(data.shape()), id = Dims(indices.shape());
    int64_t rank = static_cast<int64_t>(dd.size());
    NXRT_EP_ENFORCE(rank > 0 && id.size() == dd.size(),
                    "GatherElements: data " + ShapeToString(dd) + " and indices " +
                        ShapeToString(id) + " must have the same rank >= 1");
    int64_t axis = NormalizeAxis(axis_, rank, "GatherElements");
    for (int64_t k = 0; k < rank; ++k) {
      NXRT_EP_ENFORCE(k == axis || id[k] <= dd[k], "GatherElements: indices " + ShapeToString(id) +
                                                       " exceed data " + ShapeToString(dd) +
                                                       " outside the axis");
    }
    ep::Tensor y = ctx.output(0, id, data.type());
    int64_t n = ShapeSize(id);
    if (n == 0) return;
    int64_t dim = dd[axis];
    Dims data_strides = StridesOf(dd);
    int64_t axis_stride = data_strides[axis];
    data_strides[axis] = 0;  // the index supplies the axis coordinate
    // Rows along the last axis: the walk runs once per row, the inner loop is flat.
    int64_t row = id[rank - 1];
    int64_t step = data_strides[rank - 1];
    Dims od(id.begin(), id.end() - 1);
    Dims os(data_strides.begin(), data_strides.end() - 1);
    Dims ot = StridesOf(od);
    DispatchIndex(indices.type(), [&]<class I>() {
      const I* idx = indices.data<I>();
      CheckIndices(idx, n, dim, "GatherElements");
      DispatchMove(data.type(), [&]<class T>() {
        InView<T> src(data);
        OutView<T> dst(y);
        const T* s = src.data();
        T* d = dst.data();
        ParallelFor(ctx.threads(), n / row, std::max<int64_t>(1, kGrainElems / row),
                    [&](int64_t begin, int64_t end) {
                      Odometer walk(od, os, ot);
                      walk.Seek(begin);
                      for (int64_t r = begin; r < end; ++r, walk.Next()) {
                        const I* ip = idx + r * row;
                        T* op = d + r * row;
                        const T* base = s + walk.a;
                        for (int64_t j = 0; j < row; ++j) {
                          int64_t v = static_cast<int64_t>(ip[j]);
                          v += v < 0 ? dim : 0;
                          op[j] = base[j * step + v * axis_stride];
                        }
                      }
                    });
        dst.Commit();
      });
    });
  }

 private:
  int64_t axis_;
};

class GatherND : public ep::Kernel {
 public:
  explicit GatherND(const ep::KernelInfo& info) : batch_dims_(info.attr_int("batch_dims", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor data = ctx.input(0);
    ep::ConstTensor indices = ctx.input(1);
    std::vector<int64_t> dd = data.shape_vector(), id = indices.shape_vector();
    int64_t r = static_cast<int64_t>(dd.size()), q = static_cast<int64_t>(id.size());
    int64_t b = batch_dims_;
    NXRT_EP_ENFORCE(r >= 1 && q >= 1, "GatherND: data and indices must have rank >= 1");
    NXRT_EP_ENFORCE(b >= 0 && b < q && b < r, "GatherND: batch_dims " + std::to_string(b) +
                                                  " must be smaller than both ranks");
    int64_t m = id[q - 1];
    NXRT_EP_ENFORCE(m >= 1 && m <= r - b, "GatherND: last indices dim " + std::to_string(m) +
                                              " must be in [1, " + std::to_string(r - b) + "]");
    for (int64_t k = 0; k < b; ++k) {
      NXRT_EP_ENFORCE(dd[k] == id[k], "GatherND: batch dims of data " + ShapeToString(dd) +
                                          " and indices " + ShapeToString(id) + " differ");
    }
    std::vector<int64_t> out_dims(id.begin(), id.end() - 1);
    out_dims.insert(out_dims.end(), dd.begin() + b + m, dd.end());
    ep::Tensor y = ctx.output(0, out_dims, data.type());
    int64_t batches = Product(dd, 0, b);
    int64_t per_batch = Product(id, b, q - 1);  // index tuples per batch
    int64_t inner = Product(dd, b + m, r);      // elements per gathered slice
    int64_t batch_stride = Product(dd, b, r);
    std::vector<int64_t> data_strides = StridesOf(dd);
    std::vector<int64_t> raw = ReadInts(indices, "GatherND", "indices");
    int64_t tuples = batches * per_batch;
    std::vector<int64_t> offsets(tuples);
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = (t / per_batch) * batch_stride;
      for (int64_t j = 0; j < m; ++j)
        off += NormalizeIndex(raw[t * m + j], dd[b + j], "GatherND") * data_strides[b + j];
      offsets[t] = off;
    }
    if (tuples * inner == 0) return;
    DispatchMove(data.type(), [&]<class T>() {
      InView<T> src(data);
      OutView<T> dst(y);
      GatherBlocks<T>(src.data(), dst.data(), tuples, inner, ctx.threads(),
                      [&](int64_t i) { return offsets[i]; });
      dst.Commit();
    });
  }

 private:
  int64_t batch_dims_;
};

}  // namespace

void RegisterGather(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Gather").Versions(1).Build<Gather>(r);
  ep::KernelDefBuilder("GatherElements").Versions(11).Build<GatherElements>(r);
  ep::KernelDefBuilder("GatherND").Versions(11).Build<GatherND>(r);
}

}  // namespace nxrt::cpu::tensor
