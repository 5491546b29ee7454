// The per-column int16 dot product that ConvInteger and QLinearConv (linalg/quantized_conv.cc)
// run on: 8-bit operands widened to int16 columns with their zero points removed, and an exact
// int32 product. The matrix products (MatMulInteger, MatMulIntegerToFloat, DynamicQuantizeMatMul,
// DynamicQuantizeLSTM, QGemm) use the blocked kernels of int8_gemm_core.h instead.
//
// Products are exact in int32 whichever way they are summed, so results match onnxruntime's
// up to the float rounding of the final scale multiply. The int16 dot loop vectorizes to
// multiply-add-pairs (vpmaddwd) instructions; |a - zp|, |b - zp| <= 255 so pairs cannot overflow.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

namespace nxrt::cpu::quantized {

// B [K, N] of int8/uint8 stored as columns: col[n * K + k] = B[k, n] - zp[n].
struct PackedInt8Columns {
  int64_t k = 0, n = 0;
  std::vector<int16_t> cols;
  std::vector<float> scale;  // one per column (a per-tensor scale is repeated)
};

// Packs `b` (int8 or uint8, row-major [k, n], or [n, k] when `transposed`); zp and scale have 1
// or n entries.
inline PackedInt8Columns PackInt8Columns(const void* b, NxElementType type, int64_t k, int64_t n,
                                         const std::vector<int32_t>& zp,
                                         const std::vector<float>& scale, bool transposed = false) {
  // Element (i, j) of the [k, n] matrix.
  const int64_t row_stride = transposed ? 1 : n, col_stride = transposed ? k : 1;
  PackedInt8Columns p;
  p.k = k;
  p.n = n;
  p.cols.resize(static_cast<size_t>(k * n));
  p.scale.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int32_t z = zp.size() == 1 ? zp[0] : zp[j];
    p.scale[j] = scale.size() == 1 ? scale[0] : scale[j];
    int16_t* col = p.cols.data() + j * k;
    if (type == NX_TYPE_INT8) {
      const int8_t* src = static_cast<const int8_t*>(b);
      for (int64_t i = 0; i < k; ++i) {
        col[i] = static_cast<int16_t>(src[i * row_stride + j * col_stride] - z);
      }
    } else {
      const uint8_t* src = static_cast<const uint8_t*>(b);
      for (int64_t i = 0; i < k; ++i) {
        col[i] = static_cast<int16_t>(src[i * row_stride + j * col_stride] - z);
      }
    }
  }
  return p;
}

// Widens an int8/uint8 activation to int16 with its zero point removed.
inline void WidenCentered(const void* a, NxElementType type, int64_t count, int32_t zp,
                          int16_t* out) {
  if (type == NX_TYPE_INT8) {
    const int8_t* s = static_cast<const int8_t*>(a);
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int16_t>(s[i] - zp);
  } else {
    const uint8_t* s = static_cast<const uint8_t*>(a);
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int16_t>(s[i] - zp);
  }
}

inline int32_t DotS16(const int16_t* a, const int16_t* b, int64_t k) {
  int32_t sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += int32_t(a[i]) * int32_t(b[i]);
  return sum;
}

// y[m, j] = sum_k a[m, k] * w[k, j] in int32 (w.scale unused), for m < rows.
inline void IntegerGemm(ep::KernelContext& ctx, int64_t rows, const int16_t* a,
                        const PackedInt8Columns& w, int32_t* y) {
  const int64_t k = w.k, n = w.n;
  constexpr int64_t kColBlock = 16;
  const int64_t blocks = (n + kColBlock - 1) / kColBlock;
  const int64_t block_work = std::max<int64_t>(1, rows * k * kColBlock);
  const size_t grain = static_cast<size_t>(std::max<int64_t>(1, 32768 / block_work));
  ctx.parallel_for(static_cast<size_t>(blocks), grain, [&](size_t b0, size_t b1) {
    const int64_t j0 = static_cast<int64_t>(b0) * kColBlock;
    const int64_t j1 = std::min(n, static_cast<int64_t>(b1) * kColBlock);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t j = j0; j < j1; ++j) y[m * n + j] = DotS16(a + m * k, w.cols.data() + j * k, k);
    }
  });
}

}  // namespace nxrt::cpu::quantized
