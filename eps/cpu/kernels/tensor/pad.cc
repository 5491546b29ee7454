// Pad (constant / reflect / edge / wrap; attribute form before opset 11, inputs since, axes since
// 18) and CenterCropPad.
//
// Each output row copies its interior with one memcpy; only the padded border elements (and the
// outer coordinates, once per row) map an output coordinate to an input one (or to "constant"),
// computed on the spot so a run allocates nothing. Negative pads crop.
#include <algorithm>
#include <cstring>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode ParseMode(const std::string& m) {
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  ep::Fail(NX_INVALID_MODEL, "Pad: unknown mode '" + m + "'");
}

// Input coordinate read by output coordinate `o` of an axis of size n padded by `begin` in
// front, or -1 for a constant-filled position.
int64_t SourceIndex(PadMode mode, int64_t o, int64_t begin, int64_t n) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kWrap:
      return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

template <class T>
void PadCopy(const T* src, T* dst, PadMode mode, const Dims& in_dims, const Dims& out_dims,
             const Dims& begin, T value, int threads) {
  size_t rank = in_dims.size();
  size_t last = rank - 1;
  Dims in_strides = StridesOf(in_dims);
  int64_t n_out = out_dims[last], n_in = in_dims[last];
  // Interior of a row: output positions that read input position o - begin, in order.
  int64_t lo = std::clamp<int64_t>(begin[last], 0, n_out);
  int64_t hi = std::clamp<int64_t>(begin[last] + n_in, lo, n_out);
  // Source position of output position o of the last axis (-1: the fill value).
  auto row_source = [&](int64_t o) { return SourceIndex(mode, o, begin[last], n_in); };
  int64_t rows = Product(out_dims, 0, last);
  int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, n_out));
  ParallelFor(threads, rows, grain, [&](int64_t rb, int64_t re) {
    Dims idx(last, 0);
    int64_t rem = rb;
    for (size_t k = last; k-- > 0;) {
      idx[k] = rem % out_dims[k];
      rem /= out_dims[k];
    }
    for (int64_t r = rb; r < re; ++r) {
      T* out = dst + r * n_out;
      int64_t off = 0;
      bool constant_row = false;
      for (size_t k = 0; k < last; ++k) {
        int64_t s = SourceIndex(mode, idx[k], begin[k], in_dims[k]);
        if (s < 0) {
          constant_row = true;
          break;
        }
        off += s * in_strides[k];
      }
      if (constant_row) {
        std::fill_n(out, n_out, value);
      } else {
        const T* in = src + off;
        for (int64_t o = 0; o < lo; ++o) {
          const int64_t s = row_source(o);
          out[o] = s < 0 ? value : in[s];
        }
        if (hi > lo) std::memcpy(out + lo, in + (lo - begin[last]), (hi - lo) * sizeof(T));
        for (int64_t o = hi; o < n_out; ++o) {
          const int64_t s = row_source(o);
          out[o] = s < 0 ? value : in[s];
        }
      }
      for (size_t k = last; k-- > 0;) {
        if (++idx[k] < out_dims[k]) break;
        idx[k] = 0;
      }
    }
  });
}

class Pad : public ep::Kernel {
 public:
  explicit Pad(const ep::KernelInfo& info)
      : legacy_(info.opset() < 11),
        mode_(ParseMode(info.attr_string("mode", "constant"))),
        pads_attr_(info.opset() < 2 ? info.attr_ints("paddings") : info.attr_ints("pads")),
        value_attr_(info.attr_float("value", 0.0f)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims in_dims = Dims(x.shape());
    int64_t rank = static_cast<int64_t>(in_dims.size());
    Dims pads = legacy_ ? Dims(pads_attr_) : ReadInts(ctx.input(1), "Pad", "pads");
    Dims axes;
    if (!legacy_ && ctx.has_input(3)) {
      axes = ReadInts(ctx.input(3), "Pad", "axes");
    } else {
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    size_t na = axes.size();
    NXRT_EP_ENFORCE(pads.size() == 2 * na, "Pad: expected " + std::to_string(2 * na) +
                                               " pads for input " + ShapeToString(in_dims) +
                                               ", got " + std::to_string(pads.size()));
    Dims begin(rank, 0), end(rank, 0);
    for (size_t i = 0; i < na; ++i) {
      int64_t a = NormalizeAxis(axes[i], rank, "Pad");
      begin[a] = pads[i];
      end[a] = pads[na + i];
    }
    Dims out_dims(rank);
    for (int64_t k = 0; k < rank; ++k) {
      out_dims[k] = in_dims[k] + begin[k] + end[k];
      NXRT_EP_ENFORCE(out_dims[k] >= 0, "Pad: pads " + ShapeToString(pads) +
                                            " remove more than the input " +
                                            ShapeToString(in_dims) + " has");
      bool pads_axis = begin[k] > 0 || end[k] > 0;
      NXRT_EP_ENFORCE(mode_ == PadMode::kConstant || in_dims[k] > 0 || !pads_axis,
                      "Pad: cannot pad an empty axis in a non-constant mode");
    }
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    if (ShapeSize(out_dims) == 0) return;
    if (rank == 0) {
      CopyTensorData(x, y, 1);
      return;
    }
    NxElementType type = x.type();
    // The fill value, as the bytes of one element (strings handled separately below).
    std::string fill_bytes(std::max<size_t>(ElementSize(type), 1), '\0');
    std::string_view fill_string;
    std::optional<ep::ConstTensor> cv = legacy_ ? std::nullopt : ctx.optional_input(2);
    if (cv && cv->size() > 0) {
      NXRT_EP_ENFORCE(cv->type() == type, "Pad: constant_value type differs from the data type");
      if (type == NX_TYPE_STRING)
        fill_string = cv->string(0);
      else
        std::memcpy(fill_bytes.data(), cv->raw(), ElementSize(type));
    } else if (legacy_ && value_attr_ != 0.0f) {
      DispatchNumericOrBool(type, [&]<class V>() {
        V v = static_cast<V>(value_attr_);
        std::memcpy(fill_bytes.data(), &v, sizeof(V));
      });
    }
    DispatchMove(type, [&]<class T>() {
      T value{};
      if constexpr (std::is_same_v<T, std::string_view>) {
        value = fill_string;
      } else {
        std::memcpy(&value, fill_bytes.data(), sizeof(T));
      }
      InView<T> src(x);
      OutView<T> dst(y);
      PadCopy<T>(src.data(), dst.data(), mode_, in_dims, out_dims, begin, value, ctx.threads());
      dst.Commit();
    });
  }

 private:
  bool legacy_;
  PadMode mode_;
  std::vector<int64_t> pads_attr_;
  float value_attr_;
};

class CenterCropPad : public ep::Kernel {
 public:
  explicit CenterCropPad(const ep::KernelInfo& info)
      : has_axes_(info.has_attr("axes")), axes_(info.attr_ints("axes")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims in_dims = Dims(x.shape());
    int64_t rank = static_cast<int64_t>(in_dims.size());
    Dims shape = ReadInts(ctx.input(1), "CenterCropPad", "shape");
    Dims axes = axes_;
    if (!has_axes_) {
      axes.clear();
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    NXRT_EP_ENFORCE(shape.size() == axes.size(), "CenterCropPad: shape " + ShapeToString(shape) +
                                                     " must have one entry per axis");
    Dims out_dims = in_dims, in_start(rank, 0), out_start(rank, 0);
    Dims box = in_dims;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = NormalizeAxis(axes[i], rank, "CenterCropPad");
      int64_t dim = in_dims[a], target = shape[i];
      NXRT_EP_ENFORCE(target >= 0, "CenterCropPad: negative target size");
      out_dims[a] = target;
      if (target < dim) {
        in_start[a] = (dim - target) / 2;  // crop: extra element comes off the end
        box[a] = target;
      } else {
        out_start[a] = (target - dim) / 2;  // pad: extra zero goes at the end
        box[a] = dim;
      }
    }
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    int64_t total = ShapeSize(out_dims);
    if (total == 0) return;
    Dims is = StridesOf(in_dims), os = StridesOf(out_dims);
    int64_t in_off = 0, out_off = 0;
    for (int64_t k = 0; k < rank; ++k) {
      in_off += in_start[k] * is[k];
      out_off += out_start[k] * os[k];
    }
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      std::fill_n(dst.data(), total, T{});
      if (ShapeSize(box) > 0)
        StridedCopy<T>(src.data() + in_off, dst.data() + out_off, box, is, os, ctx.threads());
      dst.Commit();
    });
  }

 private:
  bool has_axes_;
  std::vector<int64_t> axes_;
};

}  // namespace

void RegisterPad(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Pad").Versions(1).Build<Pad>(r);
  ep::KernelDefBuilder("CenterCropPad").Versions(18).Build<CenterCropPad>(r);
}

}  // namespace nxrt::cpu::tensor
