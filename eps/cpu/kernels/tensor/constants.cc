// Ops that create tensors from attributes or shapes: Constant, ConstantOfShape, EyeLike, Range.
// Attribute values are copied into the kernel at creation, so Compute touches no attribute.
#include <cmath>
#include <cstring>

#include "common/attr_types.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

// More Range elements than any tensor can hold (2^62): refused before the size is computed.
constexpr int64_t kMaxRangeElements = int64_t{1} << 62;

// A tensor value owned by a kernel.
struct OwnedTensor {
  NxElementType type = NX_TYPE_FLOAT;
  std::vector<int64_t> dims;
  std::string bytes;                 // raw data for non-string types
  std::vector<std::string> strings;  // for strings

  static OwnedTensor From(const ep::ConstTensor& t, const char* op) {
    OwnedTensor o;
    o.type = t.type();
    o.dims = t.shape_vector();
    size_t n = t.size();
    if (o.type == NX_TYPE_STRING) {
      for (size_t i = 0; i < n; ++i) o.strings.emplace_back(t.string(i));
    } else {
      size_t bytes = ByteSize(o.type, n);
      NXRT_EP_ENFORCE(bytes > 0 || n == 0, std::string(op) + ": unsupported element type " +
                                               ep::ElementTypeName(o.type));
      if (bytes) o.bytes.assign(static_cast<const char*>(t.raw()), bytes);
    }
    return o;
  }
  template <class T>
  static OwnedTensor Of(NxElementType type, std::vector<int64_t> dims, const std::vector<T>& v) {
    OwnedTensor o;
    o.type = type;
    o.dims = std::move(dims);
    o.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    return o;
  }
  void WriteTo(const ep::Tensor& out) const {
    if (type == NX_TYPE_STRING) {
      for (size_t i = 0; i < strings.size(); ++i) out.set_string(i, strings[i]);
    } else if (!bytes.empty()) {
      std::memcpy(out.mutable_raw(), bytes.data(), bytes.size());
    }
  }
};

class Constant : public ep::Kernel {
 public:
  explicit Constant(const ep::KernelInfo& info) {
    if (auto t = info.attr_tensor("value")) {
      value_ = OwnedTensor::From(*t, "Constant");
    } else if (info.has_attr("value_float")) {
      value_ = OwnedTensor::Of<float>(NX_TYPE_FLOAT, {}, {info.attr_float("value_float")});
    } else if (info.has_attr("value_floats")) {
      auto v = info.attr_floats("value_floats");
      value_ = OwnedTensor::Of<float>(NX_TYPE_FLOAT, {static_cast<int64_t>(v.size())}, v);
    } else if (info.has_attr("value_int")) {
      value_ = OwnedTensor::Of<int64_t>(NX_TYPE_INT64, {}, {info.attr_int("value_int")});
    } else if (info.has_attr("value_ints")) {
      auto v = info.attr_ints("value_ints");
      value_ = OwnedTensor::Of<int64_t>(NX_TYPE_INT64, {static_cast<int64_t>(v.size())}, v);
    } else if (info.has_attr("value_string")) {
      value_.type = NX_TYPE_STRING;
      value_.strings = {info.attr_string("value_string", "")};
    } else if (info.has_attr("value_strings")) {
      value_.type = NX_TYPE_STRING;
      value_.strings = info.attr_strings("value_strings");
      value_.dims = {static_cast<int64_t>(value_.strings.size())};
    } else if (info.has_attr("sparse_value")) {
      ep::Fail(NX_NOT_IMPLEMENTED, "Constant: sparse_value is not supported by the CPU EP");
    } else {
      ep::Fail(NX_INVALID_MODEL, "Constant: no value attribute");
    }
  }
  void Compute(ep::KernelContext& ctx) override {
    value_.WriteTo(ctx.output(0, value_.dims, value_.type));
  }

 private:
  OwnedTensor value_;
};

// Fills `out` (of `n` elements) with copies of the `size`-byte pattern at `value`.
void FillPattern(void* out, size_t n, const void* value, size_t size) {
  if (n == 0) return;
  auto* d = static_cast<char*>(out);
  bool zero = true;
  for (size_t i = 0; i < size; ++i) zero &= static_cast<const char*>(value)[i] == 0;
  if (zero) {
    std::memset(d, 0, n * size);
    return;
  }
  std::memcpy(d, value, size);
  // Doubling copies: log2(n) memcpy calls.
  size_t done = 1;
  while (done < n) {
    size_t c = std::min(done, n - done);
    std::memcpy(d + done * size, d, c * size);
    done += c;
  }
}

class ConstantOfShape : public ep::Kernel {
 public:
  explicit ConstantOfShape(const ep::KernelInfo& info) {
    if (auto t = info.attr_tensor("value")) {
      NXRT_EP_ENFORCE(t->size() == 1, "ConstantOfShape: 'value' must hold one element");
      value_ = OwnedTensor::From(*t, "ConstantOfShape");
    } else {
      value_ = OwnedTensor::Of<float>(NX_TYPE_FLOAT, {1}, {0.0f});
    }
  }
  void Compute(ep::KernelContext& ctx) override {
    const Dims dims = ReadInts(ctx.input(0), "ConstantOfShape", "input");
    for (int64_t d : dims)
      NXRT_EP_ENFORCE(d >= 0, "ConstantOfShape: negative dim in " + ShapeToString(dims));
    ep::Tensor y = ctx.output(0, dims, value_.type);
    size_t n = static_cast<size_t>(ShapeSize(dims));
    if (value_.type == NX_TYPE_STRING) {
      for (size_t i = 0; i < n; ++i) y.set_string(i, value_.strings[0]);
    } else {
      size_t size = ElementSize(value_.type);
      NXRT_EP_ENFORCE(size > 0, "ConstantOfShape: unsupported value type");
      FillPattern(n ? y.mutable_raw() : nullptr, n, value_.bytes.data(), size);
    }
  }

 private:
  OwnedTensor value_;
};

class EyeLike : public ep::Kernel {
 public:
  explicit EyeLike(const ep::KernelInfo& info)
      : dtype_(AttrElementType(info, "dtype", 0)), k_(info.attr_int("k", 0)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    NXRT_EP_ENFORCE(s.size() == 2, "EyeLike: input must be 2-D, got " + ShapeToString(s));
    NxElementType type = dtype_ != NX_TYPE_UNDEFINED ? dtype_ : x.type();
    ep::Tensor y = ctx.output(0, s, type);
    int64_t rows = s[0], cols = s[1];
    if (rows * cols == 0) return;
    DispatchNumericOrBool(type, [&]<class T>() {
      T* out = y.data<T>();
      std::fill_n(out, rows * cols, T{});
      for (int64_t i = std::max<int64_t>(0, -k_); i < rows && i + k_ < cols; ++i)
        out[i * cols + i + k_] = OneOf<T>();
    });
  }

 private:
  NxElementType dtype_;
  int64_t k_;
};

class Range : public ep::Kernel {
 public:
  explicit Range(const ep::KernelInfo& info)
      : stash_(AttrElementType(info, "stash_type", NX_TYPE_FLOAT)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor start = ctx.input(0), limit = ctx.input(1), delta = ctx.input(2);
    NxElementType type = start.type();
    NXRT_EP_ENFORCE(limit.type() == type && delta.type() == type,
                    "Range: start, limit and delta must have the same type");
    if (IsIntegerType(type)) {
      int64_t s = ReadScalarInt(start, "Range", "start");
      int64_t l = ReadScalarInt(limit, "Range", "limit");
      int64_t d = ReadScalarInt(delta, "Range", "delta");
      NXRT_EP_ENFORCE(d != 0, "Range: delta must not be 0");
      // In 128 bits: limit - start and -delta may not fit in int64.
      using Wide = __int128;
      Wide count = 0;
      if (d > 0 && l > s) count = (Wide{l} - s + d - 1) / d;
      if (d < 0 && l < s) count = (Wide{s} - l - d - 1) / -Wide{d};
      NXRT_EP_ENFORCE(count <= kMaxRangeElements, "Range: too many elements");
      const int64_t n = static_cast<int64_t>(count);
      ep::Tensor y = ctx.output(0, {n}, type);
      DispatchInteger(type, [&]<class T>() {
        T* out = y.data<T>();
        // Every value lies between start and limit; the product alone may not fit in int64.
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<T>(static_cast<int64_t>(Wide{s} + Wide{i} * d));
      });
      return;
    }
    double s = ReadScalarDouble(start, "Range", "start");
    double l = ReadScalarDouble(limit, "Range", "limit");
    double d = ReadScalarDouble(delta, "Range", "delta");
    NXRT_EP_ENFORCE(d != 0.0, "Range: delta must not be 0");
    double count = std::ceil((l - s) / d);
    NXRT_EP_ENFORCE(std::isfinite(count), "Range: the number of elements is not finite");
    NXRT_EP_ENFORCE(count <= static_cast<double>(kMaxRangeElements), "Range: too many elements");
    int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    ep::Tensor y = ctx.output(0, {n}, type);
    // 16-bit floats compute in the stash type (float by default) and round once per element.
    bool stash_float = stash_ != NX_TYPE_DOUBLE;
    DispatchFloat(type, [&]<class T>() {
      T* out = y.data<T>();
      if constexpr (std::is_same_v<T, float>) {
        // np.arange semantics: values computed in double, then rounded to float.
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(s + i * d);
      } else if constexpr (std::is_same_v<T, double>) {
        for (int64_t i = 0; i < n; ++i) out[i] = s + i * d;
      } else if (stash_float) {
        float sf = static_cast<float>(s), df = static_cast<float>(d);
        for (int64_t i = 0; i < n; ++i) out[i] = T(sf + static_cast<float>(i) * df);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = T(static_cast<float>(s + i * d));
      }
    });
  }

 private:
  NxElementType stash_;
};

}  // namespace

void RegisterConstants(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Constant").Versions(1).Build<Constant>(r);
  ep::KernelDefBuilder("ConstantOfShape").Versions(9).Build<ConstantOfShape>(r);
  ep::KernelDefBuilder("EyeLike")
      .Versions(9)
      .Constraint("T2", NumericOrBoolTypes(), {}, {0})
      .Build<EyeLike>(r);
  ep::KernelDefBuilder("Range")
      .Versions(11)
      .Constraint("T", NumericTypes(), {0, 1, 2}, {0})
      .Build<Range>(r);
}

}  // namespace nxrt::cpu::tensor
