// Shared machinery of the elementwise kernels: element-type lists for registration, the
// "compute type" of each storage type, and the unary / broadcasting loop drivers that every
// elementwise kernel is built from.
//
// Performance notes. The inner loops below are plain indexed loops over raw pointers with the
// per-run broadcast decision (stride 0 or 1) taken outside the loop, so GCC auto-vectorises them
// for float/int types under -O3 -mavx2. Broadcast shapes are coalesced first (adjacent
// dimensions broadcast the same way are merged), so bias-style broadcasts such as
// [N,C,H,W] + [C,1,1] or [B,S,H] + [H] become long contiguous runs.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "common/half.h"
#include "common/parallel.h"
#include "common/small_vector.h"
#include "kernels/elementwise/half_arrays.h"

namespace nxrt::cpu::elementwise {

// ---- Element type lists (registration constraints) ------------------------------------------

using TypeList = std::vector<NxElementType>;

inline TypeList FloatTypes() {
  return {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16};
}
inline TypeList IntTypes() {
  return {NX_TYPE_INT8,  NX_TYPE_INT16,  NX_TYPE_INT32,  NX_TYPE_INT64,
          NX_TYPE_UINT8, NX_TYPE_UINT16, NX_TYPE_UINT32, NX_TYPE_UINT64};
}
inline TypeList SignedIntTypes() {
  return {NX_TYPE_INT8, NX_TYPE_INT16, NX_TYPE_INT32, NX_TYPE_INT64};
}
inline TypeList Concat(TypeList a, const TypeList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline TypeList NumericTypes() { return Concat(FloatTypes(), IntTypes()); }
inline TypeList SignedNumericTypes() { return Concat(FloatTypes(), SignedIntTypes()); }
inline TypeList Float8Types() {
  return {NX_TYPE_FLOAT8E4M3FN, NX_TYPE_FLOAT8E4M3FNUZ, NX_TYPE_FLOAT8E5M2, NX_TYPE_FLOAT8E5M2FNUZ};
}

// Registers `K` for op `op` from opset `since` on, with every input and output of element type
// in `types` (the common "T for all" constraint).
template <class K>
void RegisterSameType(NxKernelRegistry* r, const char* op, int since, const TypeList& types,
                      const char* domain = "") {
  ep::KernelDefBuilder(op, domain).Versions(since).Constraint("T", types, {-1}, {-1}).Build<K>(r);
}

// ---- Compute types ----------------------------------------------------------------------------

// 16-bit floats are storage-only: arithmetic on them happens in float.
template <class T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<Half> {
  using type = float;
};
template <>
struct ComputeOf<BFloat16> {
  using type = float;
};
template <class T>
using ComputeT = typename ComputeOf<T>::type;

template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsFloatLike = std::is_floating_point_v<T> || kIsHalfLike<T>;

// Value conversion between storage / compute types (static_cast semantics; 16-bit floats via
// float with round-to-nearest-even).
template <class To, class From>
inline To As(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalfLike<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (kIsHalfLike<From>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// ---- Parallel thresholds ----------------------------------------------------------------------

// Below this many elements a kernel runs on the calling thread: the fork/join (about 1 us on
// the spinning pool, docs/threading.md) costs more.
inline constexpr int64_t kParallelThreshold = 16 * 1024;
// Smallest chunk handed to one thread.
inline constexpr int64_t kGrain = 4 * 1024;

inline int ThreadsFor(int threads, int64_t n) { return n >= kParallelThreshold ? threads : 1; }

// ---- Unary driver -----------------------------------------------------------------------------

// 16-bit float data is converted block-wise (F16C for float16) into float buffers of this size
// so that the arithmetic loops in between stay simple float loops.
inline constexpr int64_t kHalfBlock = 256;

// p[0, m) in compute type: 16-bit floats are converted into `buf`, other types are used in place.
template <class T>
inline const ComputeT<T>* ComputeBlock(const T* p, int64_t m, ComputeT<T>* buf) {
  if constexpr (kIsHalfLike<T>) {
    ToFloat(p, buf, m);
    return buf;
  } else {
    return p;
  }
}

// Stores compute-type results r[0, m) into o (converting block-wise to 16-bit floats).
template <class TO, class R>
inline void StoreBlock(const R* r, int64_t m, TO* o) {
  if constexpr (kIsHalfLike<TO> && std::is_same_v<R, float>) {
    FromFloat(r, o, m);
  } else {
    for (int64_t i = 0; i < m; ++i) o[i] = As<TO>(r[i]);
  }
}

// y[i] = f(x[i]) over one contiguous range. f takes and returns compute-type values.
template <class TI, class TO, class F>
inline void UnaryLoop(const TI* x, TO* y, int64_t n, const F& f) {
  if constexpr (kIsHalfLike<TI> || kIsHalfLike<TO>) {
    using CI = ComputeT<TI>;
    using R = decltype(f(CI{}));
    alignas(32) CI xbuf[kHalfBlock];
    alignas(32) R rbuf[kHalfBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
      const int64_t m = std::min(kHalfBlock, n - i0);
      const CI* xb = ComputeBlock(x + i0, m, xbuf);
      for (int64_t i = 0; i < m; ++i) rbuf[i] = f(xb[i]);
      StoreBlock(rbuf, m, y + i0);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = As<TO>(f(As<ComputeT<TI>>(x[i])));
  }
}

template <class TI, class TO, class F>
void ParallelUnary(int threads, const TI* x, TO* y, int64_t n, const F& f) {
  ParallelFor(ThreadsFor(threads, n), n, kGrain,
              [&](int64_t b, int64_t e) { UnaryLoop(x + b, y + b, e - b, f); });
}

// ---- Broadcasting -----------------------------------------------------------------------------

// N input shapes broadcast to one output shape, with dimensions coalesced. Every input's
// innermost stride is 0 (broadcast along the run) or 1 (contiguous run).
// Shapes and strides of up to 8 dimensions stay inline (no allocation per call).
using PlanDims = SmallVector<int64_t, 8>;

template <size_t N>
struct BroadcastPlan {
  PlanDims out_shape;               // the broadcast output shape
  PlanDims dims;                    // coalesced output dims, at least one
  std::array<PlanDims, N> strides;  // per input, element strides over `dims`
  int64_t total = 0;

  int64_t inner() const { return dims.back(); }
  int64_t inner_stride(size_t k) const { return strides[k].back(); }
};

// Plans the broadcast of `shapes`; the output shape is their multidirectional broadcast, or
// `target` when given (unidirectional: every input must broadcast to it). `what` names the op in
// error messages.
template <size_t N>
BroadcastPlan<N> PlanBroadcast(const std::array<std::span<const int64_t>, N>& shapes,
                               const char* what, const PlanDims* target = nullptr) {
  BroadcastPlan<N> p;
  if (target) {
    p.out_shape.assign(target->begin(), target->end());
  } else {
    p.out_shape.assign(shapes[0].begin(), shapes[0].end());
    for (size_t k = 1; k < N; ++k) {
      // Right-aligned, in place; a mismatch is reported by BroadcastShapes' message.
      const std::span<const int64_t> b = shapes[k];
      if (b.size() > p.out_shape.size()) {
        const size_t extra = b.size() - p.out_shape.size();
        PlanDims widened(extra, 1);
        for (int64_t d : p.out_shape) widened.push_back(d);
        p.out_shape = widened;
      }
      const size_t offset = p.out_shape.size() - b.size();
      for (size_t d = 0; d < b.size(); ++d) {
        const int64_t o = p.out_shape[offset + d];
        if (o == b[d] || b[d] == 1 || o == 1) continue;
        try {
          BroadcastShapes(p.out_shape, b);  // throws, naming both shapes
        } catch (const ep::Error& e) {
          ep::Fail(NX_INVALID_ARGUMENT, std::string(what) + ": " + e.what());
        }
      }
      for (size_t d = 0; d < b.size(); ++d)
        if (p.out_shape[offset + d] == 1) p.out_shape[offset + d] = b[d];
    }
  }
  const size_t rank = p.out_shape.size();
  // Per input and output dim: is the input's extent along it the full extent (1) or 1 (0)?
  auto in_dim = [&](size_t k, size_t d) -> int64_t {
    size_t r = shapes[k].size();
    return d + r < rank ? 1 : shapes[k][d + r - rank];
  };
  for (size_t k = 0; k < N; ++k) {
    if (shapes[k].size() > rank) {
      ep::Fail(NX_INVALID_ARGUMENT, std::string(what) + ": input shape " +
                                        ShapeToString(shapes[k]) + " cannot be broadcast to " +
                                        ShapeToString(p.out_shape));
    }
    for (size_t d = 0; d < rank; ++d) {
      int64_t v = in_dim(k, d);
      if (v != 1 && v != p.out_shape[d]) {
        ep::Fail(NX_INVALID_ARGUMENT, std::string(what) + ": input shape " +
                                          ShapeToString(shapes[k]) + " cannot be broadcast to " +
                                          ShapeToString(p.out_shape));
      }
    }
  }
  p.total = ShapeSize(p.out_shape);
  SmallVector<uint32_t, 8> masks;
  for (size_t d = 0; d < rank; ++d) {
    if (p.out_shape[d] == 1) continue;  // every input has extent 1 here: no effect
    uint32_t mask = 0;
    for (size_t k = 0; k < N; ++k) {
      if (in_dim(k, d) != 1) mask |= 1u << k;
    }
    if (!masks.empty() && masks.back() == mask) {
      p.dims.back() *= p.out_shape[d];
    } else {
      p.dims.push_back(p.out_shape[d]);
      masks.push_back(mask);
    }
  }
  if (p.dims.empty()) {  // a scalar or all-ones output: one element
    p.dims.push_back(1);
    masks.push_back((1u << N) - 1);
  }
  for (size_t k = 0; k < N; ++k) {
    p.strides[k].assign(p.dims.size(), 0);
    int64_t s = 1;
    for (size_t j = p.dims.size(); j-- > 0;) {
      if (masks[j] & (1u << k)) {
        p.strides[k][j] = s;
        s *= p.dims[j];
      }
    }
  }
  return p;
}

// Calls fn(out_offset, in_offsets, count) for contiguous runs of the output covering all of it;
// input k's elements for the run start at in_offsets[k] and advance by inner_stride(k). Work is
// split over threads by output element ranges (runs may be cut at chunk boundaries).
template <size_t N, class Fn>
void RunBroadcast(const BroadcastPlan<N>& p, int threads, Fn&& fn) {
  if (p.total == 0) return;
  const int64_t inner = p.inner();
  const size_t outer_rank = p.dims.size() - 1;
  ParallelFor(ThreadsFor(threads, p.total), p.total, kGrain, [&](int64_t begin, int64_t end) {
    PlanDims idx(outer_rank, 0);
    std::array<int64_t, N> offs{};
    int64_t rem = begin / inner;
    for (size_t d = outer_rank; d-- > 0;) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      for (size_t k = 0; k < N; ++k) offs[k] += idx[d] * p.strides[k][d];
    }
    int64_t in_run = begin % inner;
    int64_t pos = begin;
    while (pos < end) {
      int64_t n = std::min(inner - in_run, end - pos);
      std::array<int64_t, N> io;
      for (size_t k = 0; k < N; ++k) io[k] = offs[k] + in_run * p.strides[k][outer_rank];
      fn(pos, io.data(), n);
      pos += n;
      in_run = 0;
      if (pos >= end) break;
      for (size_t d = outer_rank; d-- > 0;) {
        if (++idx[d] < p.dims[d]) {
          for (size_t k = 0; k < N; ++k) offs[k] += p.strides[k][d];
          break;
        }
        for (size_t k = 0; k < N; ++k) offs[k] -= p.strides[k][d] * (p.dims[d] - 1);
        idx[d] = 0;
      }
    }
  });
}

// One run of a binary op: o[i] = op(a[i*sa], b[i*sb]) with sa, sb in {0, 1}. Each stride case
// is its own simple loop so that the compiler vectorises it.
template <class TA, class TB, class TO, class Op>
inline void BinaryRunDirect(const TA* a, int64_t sa, const TB* b, int64_t sb, TO* o, int64_t n,
                            const Op& op) {
  using CA = ComputeT<TA>;
  using CB = ComputeT<TB>;
  if (sa != 0 && sb != 0) {
    for (int64_t i = 0; i < n; ++i) o[i] = As<TO>(op(As<CA>(a[i]), As<CB>(b[i])));
  } else if (sb != 0) {
    const CA av = As<CA>(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = As<TO>(op(av, As<CB>(b[i])));
  } else if (sa != 0) {
    const CB bv = As<CB>(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = As<TO>(op(As<CA>(a[i]), bv));
  } else {
    const TO v = As<TO>(op(As<CA>(a[0]), As<CB>(b[0])));
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class TA, class TB, class TO, class Op>
inline void BinaryRun(const TA* a, int64_t sa, const TB* b, int64_t sb, TO* o, int64_t n,
                      const Op& op) {
  if constexpr (kIsHalfLike<TA> || kIsHalfLike<TB> || kIsHalfLike<TO>) {
    if (sa == 0 && sb == 0) return BinaryRunDirect(a, sa, b, sb, o, n, op);
    // Convert 16-bit operands block-wise, run the float loop, convert the results back.
    using CA = ComputeT<TA>;
    using CB = ComputeT<TB>;
    using R = decltype(op(CA{}, CB{}));
    alignas(32) CA abuf[kHalfBlock];
    alignas(32) CB bbuf[kHalfBlock];
    alignas(32) R rbuf[kHalfBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
      const int64_t m = std::min(kHalfBlock, n - i0);
      if (sa != 0 && sb != 0) {
        const CA* ab = ComputeBlock(a + i0, m, abuf);
        const CB* bb = ComputeBlock(b + i0, m, bbuf);
        for (int64_t i = 0; i < m; ++i) rbuf[i] = op(ab[i], bb[i]);
      } else if (sb != 0) {
        const CA av = As<CA>(a[0]);
        const CB* bb = ComputeBlock(b + i0, m, bbuf);
        for (int64_t i = 0; i < m; ++i) rbuf[i] = op(av, bb[i]);
      } else {
        const CA* ab = ComputeBlock(a + i0, m, abuf);
        const CB bv = As<CB>(b[0]);
        for (int64_t i = 0; i < m; ++i) rbuf[i] = op(ab[i], bv);
      }
      StoreBlock(rbuf, m, o + i0);
    }
  } else {
    BinaryRunDirect(a, sa, b, sb, o, n, op);
  }
}

// o = op(a, b) over a planned broadcast.
template <class TA, class TB, class TO, class Op>
void BinaryBroadcast(const BroadcastPlan<2>& p, int threads, const TA* a, const TB* b, TO* o,
                     const Op& op) {
  const int64_t sa = p.inner_stride(0), sb = p.inner_stride(1);
  RunBroadcast(p, threads, [&](int64_t oo, const int64_t* io, int64_t n) {
    BinaryRun(a + io[0], sa, b + io[1], sb, o + oo, n, op);
  });
}

// Opsets before 7 did not broadcast numpy-style: with broadcast = 1, B was matched against A
// starting at dimension `axis` (e.g. A [N,C,H,W] + B [C] with axis = 1 adds a per-channel bias).
// This maps B's shape to the equivalent numpy-broadcastable shape (trailing ones appended); it is
// the identity for newer opsets, for broadcast = 0 and when no axis is given (suffix matching).
class LegacyBroadcast {
 public:
  explicit LegacyBroadcast(const ep::NodeView& node) {
    if (node.opset() < 7 && node.attr_int("broadcast", 0) == 1 && node.has_attr("axis")) {
      enabled_ = true;
      axis_ = node.attr_int("axis");
    }
  }
  PlanDims BShape(std::span<const int64_t> a, std::span<const int64_t> b, const char* what) const {
    PlanDims out(b);
    if (!enabled_) return out;
    const int64_t r = static_cast<int64_t>(a.size());
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    const int64_t trailing = r - axis - static_cast<int64_t>(b.size());
    if (axis < 0 || trailing < 0) {
      ep::Fail(NX_INVALID_ARGUMENT, std::string(what) + ": B " + ShapeToString(b) +
                                        " does not fit into A " + ShapeToString(a) + " at axis " +
                                        std::to_string(axis_));
    }
    out.append(static_cast<size_t>(trailing), 1);
    return out;
  }

 private:
  bool enabled_ = false;
  int64_t axis_ = 0;
};

// Plans, allocates output 0 (element type `out_type`) and runs o = op(a, b).
template <class TA, class TB, class TO, class Op>
void ComputeBinary(ep::KernelContext& ctx, const char* what, NxElementType out_type, const Op& op,
                   const LegacyBroadcast* legacy = nullptr) {
  ep::ConstTensor a = ctx.input(0), b = ctx.input(1);
  const PlanDims b_shape =
      legacy ? legacy->BShape(a.shape(), b.shape(), what) : PlanDims(b.shape());
  auto plan = PlanBroadcast<2>({a.shape(), std::span<const int64_t>(b_shape)}, what);
  ep::Tensor y = ctx.output(0, plan.out_shape, out_type);
  if (plan.total == 0) return;
  BinaryBroadcast(plan, ctx.threads(), a.data<TA>(), b.data<TB>(), y.data<TO>(), op);
}

}  // namespace nxrt::cpu::elementwise
