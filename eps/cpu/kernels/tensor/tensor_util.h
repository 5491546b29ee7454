// Helpers shared by the tensor / data-movement kernels: axis and index normalisation, reading
// small integer tensors (shapes, axes, pads), element-type dispatch that includes strings, and a
// whole-tensor copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "common/parallel.h"
#include "common/small_vector.h"

namespace nxrt::cpu::tensor {

// Contiguous (row-major) element strides of `dims`.
inline Dims StridesOf(std::span<const int64_t> dims) {
  Dims s(dims.size());
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    s[k] = stride;
    stride *= dims[k];
  }
  return s;
}

// Product of dims[begin, end).
inline int64_t Product(std::span<const int64_t> dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// Maps an axis in [-rank, rank) to [0, rank); throws naming the op otherwise.
inline int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": axis " + std::to_string(axis) +
                                      " is out of range for a tensor of rank " +
                                      std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Maps an index in [-dim, dim) to [0, dim); throws naming the op otherwise. Indices address real
// memory, so an out-of-range value is an error rather than something to clamp.
inline int64_t NormalizeIndex(int64_t index, int64_t dim, const char* op) {
  if (index < -dim || index >= dim) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": index " + std::to_string(index) +
                                      " is out of range for an axis of size " +
                                      std::to_string(dim));
  }
  return index < 0 ? index + dim : index;
}

inline bool IsIntegerType(NxElementType t) {
  switch (t) {
    case NX_TYPE_INT8:
    case NX_TYPE_INT16:
    case NX_TYPE_INT32:
    case NX_TYPE_INT64:
    case NX_TYPE_UINT8:
    case NX_TYPE_UINT16:
    case NX_TYPE_UINT32:
    case NX_TYPE_UINT64:
      return true;
    default:
      return false;
  }
}

// All elements of an integer tensor (shapes, axes, pads, indices) widened to int64.
inline Dims ReadInts(const ep::ConstTensor& t, const char* op, const char* what) {
  if (!IsIntegerType(t.type())) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": input '" + what +
                                      "' must be an integer tensor, got " +
                                      ep::ElementTypeName(t.type()));
  }
  size_t n = t.size();
  Dims out(n);
  if (n == 0) return out;
  DispatchInteger(t.type(), [&]<class I>() {
    const I* p = t.data<I>();
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(p[i]);
  });
  return out;
}

// The single element of a scalar (or one-element) numeric tensor, as double / int64.
inline double ReadScalarDouble(const ep::ConstTensor& t, const char* op, const char* what) {
  if (t.size() != 1) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": input '" + what +
                                      "' must hold exactly one element, got " +
                                      std::to_string(t.size()));
  }
  if (t.type() == NX_TYPE_BOOL) return *t.data<bool>() ? 1.0 : 0.0;
  return DispatchNumeric(t.type(), [&]<class T>() { return static_cast<double>(*t.data<T>()); });
}
inline int64_t ReadScalarInt(const ep::ConstTensor& t, const char* op, const char* what) {
  if (IsIntegerType(t.type())) {
    if (t.size() != 1) {
      ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": input '" + what +
                                        "' must hold exactly one element, got " +
                                        std::to_string(t.size()));
    }
    return ReadInts(t, op, what)[0];
  }
  const double v = ReadScalarDouble(t, op, what);
  // 2^63 is exact in double; NaN fails both comparisons.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": input '" + what + "' (" + std::to_string(v) +
                                      ") is not an int64 value");
  }
  return static_cast<int64_t>(v);
}

// Bytes taken by `count` elements of type t, including the packed 4-bit and 2-bit types.
inline size_t ByteSize(NxElementType t, size_t count) {
  switch (t) {
    case NX_TYPE_INT4:
    case NX_TYPE_UINT4:
    case NX_TYPE_FLOAT4E2M1:
      return (count + 1) / 2;
    case NX_TYPE_INT2:
    case NX_TYPE_UINT2:
      return (count + 3) / 4;
    default:
      return ElementSize(t) * count;
  }
}

// Calls fn.template operator()<T>() with the storage type used to move elements of type t:
// a same-width unsigned integer (or Bytes16) for fixed-size types, std::string_view for
// strings. string_view is trivially copyable, so one templated copy routine serves both.
template <class Fn>
decltype(auto) DispatchMove(NxElementType t, Fn&& fn) {
  if (t == NX_TYPE_STRING) return fn.template operator()<std::string_view>();
  return DispatchBySize(t, fn);
}

// Read access to an input as an array of T. For strings the views point into the host's
// strings, which stay valid for the whole Compute call.
template <class T>
class InView {
 public:
  explicit InView(const ep::ConstTensor& t)
      : data_(t.size() ? static_cast<const T*>(t.raw()) : nullptr) {}
  const T* data() const { return data_; }

 private:
  const T* data_;
};
template <>
class InView<std::string_view> {
 public:
  explicit InView(const ep::ConstTensor& t) : views_(t.size()) {
    for (size_t i = 0; i < views_.size(); ++i) views_[i] = t.string(i);
  }
  const std::string_view* data() const { return views_.data(); }

 private:
  std::vector<std::string_view> views_;
};

// Write access to an output as an array of T. Strings are staged as views and written to the
// host by Commit(); for other types Commit() does nothing.
template <class T>
class OutView {
 public:
  explicit OutView(const ep::Tensor& t)
      : data_(t.size() ? static_cast<T*>(t.mutable_raw()) : nullptr) {}
  T* data() const { return data_; }
  void Commit() const {}

 private:
  T* data_;
};
template <>
class OutView<std::string_view> {
 public:
  explicit OutView(const ep::Tensor& t) : tensor_(t), views_(t.size()) {}
  std::string_view* data() { return views_.data(); }
  void Commit() const {
    for (size_t i = 0; i < views_.size(); ++i) tensor_.set_string(i, views_[i]);
  }

 private:
  ep::Tensor tensor_;
  std::vector<std::string_view> views_;
};

// memcpy split over threads when it is big enough to be worth it.
inline void ParallelMemcpy(void* dst, const void* src, size_t bytes, int threads) {
  if (bytes == 0) return;
  constexpr size_t kChunk = size_t{1} << 20;  // below ~1 MiB one thread saturates a core's share
  if (bytes < 2 * kChunk || threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  ParallelFor(threads, chunks, 1, [&](int64_t begin, int64_t end) {
    size_t b = static_cast<size_t>(begin) * kChunk;
    size_t e = std::min(bytes, static_cast<size_t>(end) * kChunk);
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
  });
}

// Copies all elements of `in` into `out` (same type and element count), strings included.
inline void CopyTensorData(const ep::ConstTensor& in, const ep::Tensor& out, int threads) {
  size_t n = in.size();
  if (n == 0) return;
  if (in.type() == NX_TYPE_STRING) {
    for (size_t i = 0; i < n; ++i) out.set_string(i, in.string(i));
    return;
  }
  size_t bytes = ByteSize(in.type(), n);
  if (bytes == 0) UnsupportedType("copy", in.type());
  ParallelMemcpy(out.mutable_raw(), in.raw(), bytes, threads);
}

// Allocates output `index` with the input's type and `dims`, and copies the input into it: the
// whole job of Reshape, Flatten, Squeeze and Unsqueeze. They register Alias(0, 0), so the host
// usually hands the input's buffer out as the output, and then nothing is copied.
inline void CopyWithShape(ep::KernelContext& ctx, const ep::ConstTensor& in,
                          std::span<const int64_t> dims, size_t index = 0) {
  ep::Tensor out = ctx.output(index, dims, in.type());
  if (in.size() != 0 && in.type() != NX_TYPE_STRING && out.mutable_raw() == in.raw()) return;
  CopyTensorData(in, out, ctx.threads());
}

// The value of `T{1}` for numeric element storage types (and `true` for bool).
template <class T>
inline T OneOf() {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(1.0f);
  } else {
    return static_cast<T>(1);
  }
}

// Calls fn.template operator()<T>() for numeric types and bool.
template <class Fn>
decltype(auto) DispatchNumericOrBool(NxElementType t, Fn&& fn) {
  if (t == NX_TYPE_BOOL) return fn.template operator()<bool>();
  return DispatchNumeric(t, fn);
}

// Element-type sets for kernel definitions (KernelDefBuilder::Constraint), so a node with a type
// a kernel cannot handle is refused when the session is created instead of when it runs.
inline std::vector<NxElementType> FloatTypes() {
  return {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16};
}
inline std::vector<NxElementType> NumericTypes() {
  return {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16,
          NX_TYPE_INT8,  NX_TYPE_INT16,  NX_TYPE_INT32,   NX_TYPE_INT64,
          NX_TYPE_UINT8, NX_TYPE_UINT16, NX_TYPE_UINT32,  NX_TYPE_UINT64};
}
inline std::vector<NxElementType> NumericOrBoolTypes() {
  std::vector<NxElementType> t = NumericTypes();
  t.push_back(NX_TYPE_BOOL);
  return t;
}

}  // namespace nxrt::cpu::tensor
