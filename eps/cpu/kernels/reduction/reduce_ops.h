// The Reduce* operators as accumulator policies for reduce_engine.h.
//
// Each policy Op<T> provides, all static and inlinable:
//   using In, Acc, Out;            element type read, accumulator, element type written
//   Acc Init();                    the identity (also the result of reducing nothing)
//   void Add(Acc&, In);            fold one input element
//   void Merge(Acc&, const Acc&);  fold another partial accumulator (lanes, threads)
//   Out Final(const Acc&, n);      the output for `n` folded elements
// Float16/bfloat16 accumulate in float; integers sum and multiply in 64-bit unsigned arithmetic so
// overflow wraps exactly like the narrow type would (no undefined behaviour) before the final cast.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/half.h"
#include "kernels/reduction/reduce_minmax_avx2.h"

namespace nxrt::cpu::reduction {

template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Type an element is computed in: float for the 16-bit floats, else itself.
template <class T>
using ComputeT = std::conditional_t<kIsHalfLike<T>, float, T>;
// Accumulator of sums and products.
template <class T>
using SumT = std::conditional_t<kIsInt<T>, uint64_t, ComputeT<T>>;
// Type transcendental finals (sqrt, log) are computed in for integer inputs.
template <class T>
using RealT = std::conditional_t<kIsInt<T>, double, ComputeT<T>>;

// Converts a computed value to the output element type; float -> integer saturates (NaN -> 0)
// instead of invoking undefined behaviour.
template <class T, class V>
inline T ToOut(V v) {
  if constexpr (kIsHalfLike<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (kIsInt<T> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<V>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<V>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// An integer sum (accumulated wrapping in uint64) as a signed value when T is signed; float sums
// pass through.
template <class T, class A>
inline auto SignedSum(A a) {
  if constexpr (kIsInt<T> && std::is_signed_v<T>) {
    return static_cast<int64_t>(a);
  } else {
    return a;
  }
}

template <class T>
inline SumT<T> Load(T x) {
  return static_cast<SumT<T>>(static_cast<ComputeT<T>>(x));
}

template <class T>
struct SumBase {
  using In = T;
  using Acc = SumT<T>;
  using Out = T;
  static Acc Init() { return Acc(0); }
  static void Merge(Acc& a, const Acc& b) { a += b; }
};

template <class T>
struct SumOp : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) { a += Load(x); }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

template <class T>
struct MeanOp : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) { a += Load(x); }
  static T Final(const Acc& a, int64_t n) {
    if constexpr (kIsInt<T>) {
      if (n == 0) return T(0);
      return static_cast<T>(SignedSum<T>(a) / static_cast<decltype(SignedSum<T>(a))>(n));
    } else {
      return ToOut<T>(a / static_cast<Acc>(n));  // 0/0 = NaN for an empty reduction, as specified
    }
  }
};

template <class T>
struct SumSquareOp : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) {
    Acc v = Load(x);
    a += v * v;
  }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

template <class T>
struct L1Op : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) {
    if constexpr (kIsInt<T>) {
      Acc v = Load(x);
      a += x < 0 ? Acc(0) - v : v;  // |INT_MIN| wraps instead of overflowing
    } else {
      a += std::abs(Load(x));
    }
  }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

template <class T>
struct L2Op : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) {
    Acc v = Load(x);
    a += v * v;
  }
  static T Final(const Acc& a, int64_t) {
    return ToOut<T>(std::sqrt(static_cast<RealT<T>>(SignedSum<T>(a))));
  }
};

template <class T>
struct LogSumOp : SumBase<T> {
  using Acc = SumT<T>;
  static void Add(Acc& a, T x) { a += Load(x); }
  static T Final(const Acc& a, int64_t) {
    return ToOut<T>(std::log(static_cast<RealT<T>>(SignedSum<T>(a))));
  }
};

template <class T>
struct ProdOp {
  using In = T;
  using Acc = SumT<T>;
  using Out = T;
  static Acc Init() { return Acc(1); }
  static void Add(Acc& a, T x) { a *= Load(x); }
  static void Merge(Acc& a, const Acc& b) { a *= b; }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

// Max/Min propagate NaN (like numpy's maximum.reduce, the reference).
template <class T>
struct MaxOp {
  using In = T;
  using Acc = ComputeT<T>;
  using Out = T;
  static Acc Init() {
    if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::lowest();  // false for bool
  }
  static void Add(Acc& a, T x) { Merge(a, static_cast<Acc>(x)); }
  // A contiguous run of floats in vector registers (FoldRun uses it when present).
  static void FoldFloats(Acc& a, const float* x, int64_t n) requires std::is_same_v<T, float> {
    FoldMinMaxAvx2<true>(a, x, n);
  }
  static void Merge(Acc& a, const Acc& v) {
    if constexpr (std::is_floating_point_v<Acc>) {
      a = (v > a || std::isnan(v)) ? v : a;
    } else {
      a = v > a ? v : a;
    }
  }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

template <class T>
struct MinOp {
  using In = T;
  using Acc = ComputeT<T>;
  using Out = T;
  static Acc Init() {
    if constexpr (std::is_floating_point_v<Acc>) return std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::max();  // true for bool
  }
  static void Add(Acc& a, T x) { Merge(a, static_cast<Acc>(x)); }
  static void FoldFloats(Acc& a, const float* x, int64_t n) requires std::is_same_v<T, float> {
    FoldMinMaxAvx2<false>(a, x, n);
  }
  static void Merge(Acc& a, const Acc& v) {
    if constexpr (std::is_floating_point_v<Acc>) {
      a = (v < a || std::isnan(v)) ? v : a;
    } else {
      a = v < a ? v : a;
    }
  }
  static T Final(const Acc& a, int64_t) { return ToOut<T>(a); }
};

// log(sum(exp(x))) with a running maximum so no exp overflows: (m, s) stands for s * exp(m).
template <class T>
struct LogSumExpOp {
  using R = RealT<T>;
  struct Acc {
    R m, s;
  };
  using In = T;
  using Out = T;
  static Acc Init() { return {-std::numeric_limits<R>::infinity(), R(0)}; }
  static void Add(Acc& a, T x) { Merge(a, Acc{static_cast<R>(static_cast<ComputeT<T>>(x)), R(1)}); }
  static void Merge(Acc& a, const Acc& b) {
    if (b.s == R(0)) return;                   // b is empty
    if (std::isnan(b.m) || std::isnan(a.m)) {  // NaN poisons both parts, so no merge drops it
      a.m = a.s = std::numeric_limits<R>::quiet_NaN();
      return;
    }
    if (b.m > a.m) {
      a.s = a.s * std::exp(a.m - b.m) + b.s;  // exp(-inf) = 0 when a is empty
      a.m = b.m;
    } else if (b.m == a.m) {  // also covers +-inf on both sides, avoiding inf - inf
      a.s += b.s;
    } else {
      a.s += b.s * std::exp(b.m - a.m);
    }
  }
  static T Final(const Acc& a, int64_t) {
    if (a.s == R(0)) return ToOut<T>(-std::numeric_limits<R>::infinity());
    return ToOut<T>(a.m + std::log(a.s));
  }
};

}  // namespace nxrt::cpu::reduction
