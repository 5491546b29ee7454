// Portable GEMM for the element types oneDNN does not cover (double, integers, int32 accumulation
// of quantized ops). Float32 goes through Sgemm (dnnl_util.h) instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/parallel.h"

namespace nxrt::cpu::linalg {

// Signed integer products wrap (two's complement) instead of being undefined behaviour.
template <class T, bool = std::is_integral_v<T>&& std::is_signed_v<T>>
struct WrapArithOf {
  using type = T;
};
template <class T>
struct WrapArithOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using WrapArith = typename WrapArithOf<T>::type;

// Strided operand view: element (r, c) lives at data[r * row_stride + c * col_stride].
template <class T>
struct MatView {
  const T* data;
  int64_t row_stride;
  int64_t col_stride;
};

// C[M,N] (row-major, ldc) = A[M,K] * B[K,N], or += when `accumulate`. The loop order i-k-j keeps
// the innermost loop contiguous over C and B when B's columns are contiguous, so the compiler
// vectorises it. Rows of C are split across `threads`.
template <class T>
void GemmRef(int64_t m, int64_t n, int64_t k, MatView<T> a, MatView<T> b, T* c, int64_t ldc,
             bool accumulate, int threads) {
  using A = WrapArith<T>;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, n * k));
  ParallelFor(threads, m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      A* crow = reinterpret_cast<A*>(c + i * ldc);
      if (!accumulate) std::fill(crow, crow + n, A(0));
      for (int64_t p = 0; p < k; ++p) {
        const A av = static_cast<A>(a.data[i * a.row_stride + p * a.col_stride]);
        const T* brow = b.data + p * b.row_stride;
        if (b.col_stride == 1) {
          const A* bp = reinterpret_cast<const A*>(brow);
          for (int64_t j = 0; j < n; ++j) crow[j] = A(crow[j] + av * bp[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) {
            crow[j] = A(crow[j] + av * static_cast<A>(brow[j * b.col_stride]));
          }
        }
      }
    }
  });
}

}  // namespace nxrt::cpu::linalg
