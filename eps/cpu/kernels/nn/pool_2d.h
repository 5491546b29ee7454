// Float MaxPool (without Indices) and AveragePool over 2-D planes, in one pass over each output
// row: a hand-written body per ISA (pool_2d_avx2.cc, pool_2d_avx512.cc), chosen at run time
// (common/cpu_features.h). pool.cc takes this path for 2-D float pooling without dilation and
// keeps its generic separable code for everything else.
//
// Each output row is walked one vector of output columns at a time (8 with AVX2, 16 with
// AVX-512), several vectors at once for independent dependency chains. Two forms:
//  - Direct (small windows): every tap of the window is loaded straight from the input rows
//    inside the plane (rows outside it are skipped), for two output rows at a time (the input
//    rows their windows share are loaded once). Columns whose windows leave the input, and
//    the last partial vector of a row, load under lane masks (masked-off lanes read nothing
//    and do not take part); the others use plain unaligned loads.
//  - Row buffer (large windows, where the direct form loads kernel_h x kernel_w vectors per
//    output vector): the window's input rows are first reduced column by column into a row
//    buffer whose padding holds the reduction's identity (-inf, 0), then the taps along the row
//    are read from that buffer with plain loads.
// Along the row, stride 1 reads each tap with one load. Stride 2 reduces raw vector pairs and
// de-interleaves once per output vector (not once per tap): for kernels 2 to 5 wide, tap 2m
// is the even lanes of the pair at offset 2m and tap 2m + 1 its odd lanes, so a pair serves
// two taps; wider kernels load a pair per tap. Strides 3 and 4 reduce S raw vectors per tap
// and pick every S-th lane at the end.
//
// MaxPool has the generic code's semantics: the result is the largest non-NaN tap (every fold
// starts from -inf with acc = v > acc ? v : acc, so a NaN is never kept), -inf for a window
// without a valid tap or with NaN taps only. (Which of +0 and -0 a window of zeros gives may
// differ from the generic code: the taps are folded in another order.) AveragePool divides
// the sum of the valid taps by the window's count (the valid taps or, with count_include_pad,
// the taps inside the explicitly padded input), and gives 0 when that count is 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace nxrt::cpu::nn {

enum class Pool2dOp { kMax, kAverage };

struct Pool2dPlane {
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;  // AveragePool only
  bool row_buffer = false;         // the row-buffer form (Pool2dRowBufferPays)
};

// Limits of the bodies (an edge block keeps a lane mask per tap column and raw vector).
constexpr int64_t kPool2dMaxKernel = 16;
constexpr int64_t kPool2dMaxStrideW = 4;

// The helpers below are for pool.cc only: the bodies must not call an inline function that is
// not a template on their traits class (its AVX-512 copy could be the one the linker keeps).
inline bool Pool2dSupported(const Pool2dPlane& p) {
  return p.kernel_h >= 1 && p.kernel_h <= kPool2dMaxKernel && p.kernel_w >= 1 &&
         p.kernel_w <= kPool2dMaxKernel && p.stride_h >= 1 && p.stride_w >= 1 &&
         p.stride_w <= kPool2dMaxStrideW && p.pad_top >= 0 && p.pad_left >= 0 &&
         p.pad_bottom >= 0 && p.pad_right >= 0;
}

// Whether the row-buffer form is the cheaper one, by vector loads per output vector: the
// direct form loads `taps` per input row of the window; the row buffer loads S per row (the
// raw columns the output vector spans), stores S and loads `taps` once, plus a fixed cost
// (measured: the direct form wins on 3x3 and 2x2, the row buffer on 5x5 and up).
inline bool Pool2dRowBufferPays(const Pool2dPlane& p) {
  const int64_t s = p.stride_w, kw = p.kernel_w;
  const bool pairs = s == 2 && kw >= 2 && kw <= 5;  // a raw pair per two taps (see Blocks)
  const int64_t taps = pairs ? 2 * ((kw + 1) / 2) : s * kw;
  const int64_t direct = p.kernel_h * taps;
  const int64_t buffered = p.kernel_h * s + s + taps + 8;
  return buffered < direct;
}

namespace pool2d_body {
template <class V>
int64_t BufferFloats(const Pool2dPlane& p);
}  // namespace pool2d_body

// Floats of scratch the bodies need (the row buffer, for either ISA; 0 for the direct form).
inline int64_t Pool2dScratchFloats(const Pool2dPlane& p) {
  return p.row_buffer ? pool2d_body::BufferFloats<void>(p) : 0;
}

// Pools `planes` consecutive planes: x holds planes x in_h x in_w floats, y planes x out_h x
// out_w. Needs Pool2dSupported(p) and Pool2dScratchFloats(p) floats at `scratch`; the AVX-512
// body only on a CPU that has it.
void Pool2dPlanesAvx2(Pool2dOp op, const Pool2dPlane& p, const float* x, float* y, int64_t planes,
                      float* scratch);
void Pool2dPlanesAvx512(Pool2dOp op, const Pool2dPlane& p, const float* x, float* y, int64_t planes,
                        float* scratch);

// ---- The bodies, written once over a vector traits class V ---------------------------------
//
// Instantiated by pool_2d_avx2.cc and pool_2d_avx512.cc, each compiled for its ISA, with a V
// local to that file: every function below is a template on V, so the two ISAs' copies never
// merge at link time. V provides kLanes, Vec, Mask, Lanes(lo, hi) (the mask of lanes [lo, hi),
// any integers), Load, LoadMasked (masked-off lanes read as 0), Store, StoreFirst(p, v, n,
// mask of lanes [0, n)) (stores the first n lanes), Set1, Add, Mul, Div, Max(a, b) (= a > b ?
// a : b, so a NaN in a is dropped), MaskedMax(acc, m, v) (Max(v, acc) in the lanes of m, acc
// elsewhere), Even(a, b) (the even lanes of the 2 * kLanes floats a:b), and EvenInLanes,
// OddInLanes and InLaneOrder: even / odd lanes of a:b in a lane order of the ISA's choosing,
// which InLaneOrder turns into Even's order.
namespace pool2d_body {

// The reduction of one operator: Step folds one tap into the accumulator.
template <class V, Pool2dOp Op>
struct Reduce;

template <class V>
struct Reduce<V, Pool2dOp::kMax> {
  using Vec = typename V::Vec;
  static Vec Init() { return V::Set1(-std::numeric_limits<float>::infinity()); }
  static Vec Combine(Vec acc, Vec v) { return V::Max(v, acc); }
  // v loaded under m: the other lanes keep acc.
  static Vec CombineMasked(Vec acc, Vec v, typename V::Mask m) { return V::MaskedMax(acc, m, v); }
  static Vec Step(Vec acc, const float* at) { return V::Max(V::Load(at), acc); }
  static Vec StepMasked(Vec acc, const float* at, typename V::Mask m) {
    return V::MaskedMax(acc, m, V::LoadMasked(at, m));
  }
};

template <class V>
struct Reduce<V, Pool2dOp::kAverage> {
  using Vec = typename V::Vec;
  static Vec Init() { return V::Set1(0.0f); }
  static Vec Combine(Vec acc, Vec v) { return V::Add(acc, v); }
  // v loaded under m: the other lanes are 0.
  static Vec CombineMasked(Vec acc, Vec v, typename V::Mask) { return V::Add(acc, v); }
  static Vec Step(Vec acc, const float* at) { return V::Add(acc, V::Load(at)); }
  static Vec StepMasked(Vec acc, const float* at, typename V::Mask m) {
    return V::Add(acc, V::LoadMasked(at, m));  // masked-off lanes add 0
  }
};

// The row buffer's length: input columns [-pad_left, in_w) rounded up to whole vectors, and
// every column the taps of the last output vector read (up to 16 lanes, S raw vectors each).
template <class V>
int64_t RowBufferFloats(const Pool2dPlane& p) {
  constexpr int64_t kMaxLanes = 16;
  const int64_t reduced = p.pad_left + p.in_w + kMaxLanes;
  const int64_t read = (p.out_w + kMaxLanes) * p.stride_w + p.kernel_w;
  return ((reduced > read ? reduced : read) + 2 * kMaxLanes) / kMaxLanes * kMaxLanes;
}

// The scratch of the row-buffer form: up to 15 floats to align the buffers, two row buffers,
// then the window count of every output column (AveragePool), whole vectors.
template <class V>
int64_t BufferFloats(const Pool2dPlane& p) {
  return 15 + 2 * RowBufferFloats<V>(p) + p.out_w + 16;
}

// A block of output columns whose windows leave the input, or that ends the row short of a
// whole vector: its lane masks per (tap column, raw vector) and its per-lane column counts.
template <class V>
struct EdgeBlock {
  int64_t c0 = 0, lanes_out = 0;
  typename V::Mask out_mask;
  typename V::Mask m[kPool2dMaxKernel * kPool2dMaxStrideW];  // [kw * S + q]
  alignas(64) float count[16];  // taps per lane along the row (AveragePool), at least 1

  void Fill(const Pool2dPlane& p, int64_t block_c0) {
    const int64_t s = p.stride_w, lanes = V::kLanes;
    c0 = block_c0;
    lanes_out = std::min<int64_t>(lanes, p.out_w - c0);
    out_mask = V::Lanes(0, lanes_out);
    const int64_t col0 = c0 * s - p.pad_left;  // input column of lane 0 at tap kw = 0
    // Raw lane r of vector q at tap kw reads column col0 + kw + q * lanes + r; the outputs use
    // lanes r + q * lanes < lanes_out * s (the odd ones of stride 2 serve tap kw + 1).
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const int64_t col = col0 + kw;
      const int64_t lo = -col, hi = std::min(lanes_out * s, p.in_w - col);
      for (int64_t q = 0; q < s; ++q) m[kw * s + q] = V::Lanes(lo - q * lanes, hi - q * lanes);
    }
    for (int64_t j = 0; j < lanes; ++j) {
      const int64_t start = col0 + j * s;
      const int64_t n = p.count_include_pad
                            ? std::min(p.kernel_w, p.in_w + p.pad_right - start)
                            : std::min(start + p.kernel_w, p.in_w) - std::max<int64_t>(start, 0);
      count[j] = static_cast<float>(n > 0 ? n : 1);  // no tap: the sum is 0, and so the result
    }
  }
};

// Blocks of a row: [0, inner_begin) and [inner_end, blocks) are edge blocks, the first kCached
// of them precomputed once per call (for every row of every plane).
template <class V>
struct ColumnPlan {
  static constexpr int kCached = 8;
  int64_t blocks = 0, inner_begin = 0, inner_end = 0;
  EdgeBlock<V> edge[kCached];
  int cached = 0;

  explicit ColumnPlan(const Pool2dPlane& p) {
    const int64_t lanes = V::kLanes, s = p.stride_w;
    blocks = (p.out_w + lanes - 1) / lanes;
    // Plain loads read raw columns [col0, col0 + reach] of every row.
    const int64_t reach = p.kernel_w - 1 + s * lanes - 1;
    auto inside = [&](int64_t b) {
      const int64_t c0 = b * lanes, col0 = c0 * s - p.pad_left;
      return c0 + lanes <= p.out_w && col0 >= 0 && col0 + reach < p.in_w;
    };
    inner_begin = 0;
    while (inner_begin < blocks && !inside(inner_begin)) ++inner_begin;
    inner_end = inner_begin;
    while (inner_end < blocks && inside(inner_end)) ++inner_end;
    for (int64_t b = 0; b < blocks && cached < kCached; ++b) {
      if (b >= inner_begin && b < inner_end) continue;
      edge[cached++].Fill(p, b * lanes);
    }
  }
};

// The input rows a pass over one output row, or two at once, reduces: row[i] feeds output row
// o (of NR) when bit o of use[i] is set. Two output rows at once load the input rows their
// windows share once (3x3 windows at stride 2: 5 rows for 2 output rows instead of 6; at
// stride 1: 4 instead of 6) and give twice the independent chains.
// (No default member initialisers: an implicit constructor would be an inline function
// shared by both ISAs' files.)
template <int NR>
struct RowSet {
  const float* row[2 * kPool2dMaxKernel];
  unsigned use[2 * kPool2dMaxKernel];
  int64_t n;
  float* y[NR];          // the output rows
  float count[NR];       // AveragePool: window rows each output row counts (at least 1)
  const float* columns;  // AveragePool, row-buffer form: window columns per output column
};

// Divides an average by its window counts and stores one output vector: edge blocks have
// counts per lane and may end the row; inner ones have row_count x the column counts at
// `columns` (the row-buffer form) or x kw_count (the direct form: whole windows).
template <class V, Pool2dOp Op, bool kEdge>
[[gnu::always_inline]] inline void Finish(typename V::Vec out, const EdgeBlock<V>* edge,
                                          float row_count, float kw_count, const float* columns,
                                          float* y) {
  if constexpr (Op == Pool2dOp::kAverage) {
    if (kEdge) {
      out = V::Div(out, V::Mul(V::Set1(row_count), V::Load(edge->count)));
    } else if (columns != nullptr) {
      out = V::Div(out, V::Mul(V::Set1(row_count), V::Load(columns)));
    } else {
      out = V::Div(out, V::Set1(row_count * kw_count));
    }
  }
  if constexpr (kEdge) {
    V::StoreFirst(y, out, edge->lanes_out, edge->out_mask);
  } else {
    V::Store(y, out);
  }
}

// Loads one raw vector (under the mask) and folds it into the accumulators of the output rows
// in kUse.
template <class V, Pool2dOp Op, bool kMaskedLoads, unsigned kUse, int NR>
[[gnu::always_inline]] inline void FoldTap(typename V::Vec* acc, int64_t stride, const float* at,
                                           typename V::Mask m) {
  using Red = Reduce<V, Op>;
  const typename V::Vec v = kMaskedLoads ? V::LoadMasked(at, m) : V::Load(at);
#pragma GCC unroll 2
  for (int o = 0; o < NR; ++o) {
    if ((kUse >> o) & 1u) {
      typename V::Vec& a = acc[o * stride];
      a = kMaskedLoads ? Red::CombineMasked(a, v, m) : Red::Combine(a, v);
    }
  }
}

// One input row's taps for NB consecutive output vectors from column c0 (row already offset
// to the window start of lane 0 of c0). Lane j of raw vector q at tap kw reduces column kw +
// q * kLanes + j; output lane j is raw lane j * S. acc is [NR][NB][S].
template <class V, Pool2dOp Op, int S, int KW, bool kMaskedLoads, int NB, int NR, unsigned kUse>
[[gnu::always_inline]] inline void RowTaps(const Pool2dPlane& p, const float* row,
                                           const EdgeBlock<V>* edge, typename V::Vec* acc) {
  constexpr int L = V::kLanes;
  const int64_t kw_n = KW > 0 ? KW : p.kernel_w;
#pragma GCC unroll 16
  for (int64_t kw = 0; kw < kw_n; ++kw) {
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
#pragma GCC unroll 4
      for (int q = 0; q < S; ++q) {
        typename V::Mask m{};
        if constexpr (kMaskedLoads) m = edge->m[kw * S + q];
        FoldTap<V, Op, kMaskedLoads, kUse, NR>(acc + b * S + q, NB * S, row + kw + (b * S + q) * L,
                                               m);
      }
    }
  }
}

// As RowTaps, for stride 2 with a kernel KW wide (KW >= 2): only raw vector pairs at even
// offsets 2m are reduced over the rows; the taps along the row come after, from the pairs
// (tap 2m is the even lanes of pair m, tap 2m + 1 its odd lanes). That loads (KW + 1) / 2
// pairs per row instead of KW, the loads being what bounds the per-tap form. acc is
// [NR][NB][P][2].
template <class V, Pool2dOp Op, int KW, bool kMaskedLoads, int NB, int NR, unsigned kUse>
[[gnu::always_inline]] inline void RowPairs(const float* row, const EdgeBlock<V>* edge,
                                            typename V::Vec* acc) {
  constexpr int L = V::kLanes, P = (KW + 1) / 2;
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
#pragma GCC unroll 8
    for (int m = 0; m < P; ++m) {
#pragma GCC unroll 2
      for (int q = 0; q < 2; ++q) {
        typename V::Mask mask{};
        if constexpr (kMaskedLoads) mask = edge->m[2 * m * 2 + q];
        FoldTap<V, Op, kMaskedLoads, kUse, NR>(acc + (b * P + m) * 2 + q, NB * P * 2,
                                               row + 2 * m + (2 * b + q) * L, mask);
      }
    }
  }
}

// NB consecutive output vectors from column c0 of NR output rows. kMaskedLoads: load under
// the edge block's masks; kEdge: per-lane counts and a partial store. The NR * NB
// accumulators (times the raw vectors of each) are independent dependency chains: one alone
// waits on the latency of each max.
template <class V, Pool2dOp Op, int S, int KW, bool kMaskedLoads, bool kEdge, int NB, int NR>
[[gnu::always_inline]] inline void Blocks(const Pool2dPlane& p, const RowSet<NR>& rs, int64_t c0,
                                          const EdgeBlock<V>* edge) {
  static_assert(!kEdge || NB == 1);
  using Vec = typename V::Vec;
  constexpr int L = V::kLanes;
  constexpr bool kPairs = S == 2 && KW >= 2;
  constexpr int kRaw = kPairs ? (KW + 1) / 2 * 2 : S;  // raw vectors per output vector
  Vec acc[NR * NB * kRaw];
#pragma GCC unroll 32
  for (int i = 0; i < NR * NB * kRaw; ++i) acc[i] = Reduce<V, Op>::Init();
  const int64_t offset = c0 * S - p.pad_left;
  for (int64_t i = 0; i < rs.n; ++i) {
    const float* row = rs.row[i] + offset;
    // One base register, every tap at a constant displacement: left alone, GCC kept each
    // tap's offset + c0 in a register of its own and spilled them (measured 2x slower).
    asm("" : "+r"(row));
    auto taps = [&]<unsigned kUse>() {
      if constexpr (kPairs) {
        RowPairs<V, Op, KW, kMaskedLoads, NB, NR, kUse>(row, edge, acc);
      } else {
        RowTaps<V, Op, S, KW, kMaskedLoads, NB, NR, kUse>(p, row, edge, acc);
      }
    };
    if constexpr (NR == 1) {
      taps.template operator()<1u>();
    } else if (rs.use[i] == 1u) {
      taps.template operator()<1u>();
    } else if (rs.use[i] == 2u) {
      taps.template operator()<2u>();
    } else {
      taps.template operator()<3u>();
    }
  }
  const float kw_count = static_cast<float>(KW > 0 ? KW : p.kernel_w);
  const float* columns = Op == Pool2dOp::kAverage ? rs.columns : nullptr;
#pragma GCC unroll 2
  for (int o = 0; o < NR; ++o) {
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const Vec* a = acc + (o * NB + b) * kRaw;
      float* yb = rs.y[o] + c0 + b * L;
      const float* cb = columns != nullptr ? columns + c0 + b * L : nullptr;
      if constexpr (kPairs) {
        // The de-interleave stays inside 128-bit lanes; one permute restores the order.
        Vec out = V::EvenInLanes(a[0], a[1]);
#pragma GCC unroll 16
        for (int kw = 1; kw < KW; ++kw) {
          const Vec* pair = a + kw / 2 * 2;
          out = Reduce<V, Op>::Combine(out, kw % 2 == 0 ? V::EvenInLanes(pair[0], pair[1])
                                                        : V::OddInLanes(pair[0], pair[1]));
        }
        Finish<V, Op, kEdge>(V::InLaneOrder(out), edge, rs.count[o], kw_count, cb, yb);
      } else if constexpr (S == 1) {
        Finish<V, Op, kEdge>(a[0], edge, rs.count[o], kw_count, cb, yb);
      } else if constexpr (S == 2) {
        Finish<V, Op, kEdge>(V::Even(a[0], a[1]), edge, rs.count[o], kw_count, cb, yb);
      } else {
        // Strides 3 and 4: keep every S-th raw lane.
        alignas(64) float raw[S * L];
#pragma GCC unroll 4
        for (int q = 0; q < S; ++q) V::Store(raw + q * L, a[q]);
        const int64_t lanes_out = kEdge ? edge->lanes_out : L;
        for (int64_t j = 0; j < lanes_out; ++j) {
          float v = raw[j * S];
          if constexpr (Op == Pool2dOp::kAverage) {
            v /= rs.count[o] * (kEdge ? edge->count[j] : cb != nullptr ? cb[j] : kw_count);
          }
          yb[j] = v;
        }
      }
    }
  }
}

// The row-buffer form's first step: out[c] = reduction of rows[0, nrows)[c] for c in [0, w),
// whole vectors (lanes from w on hold the identity).
template <class V, Pool2dOp Op>
void ReduceRows(const float* const* rows, int64_t nrows, int64_t w, float* out) {
  using Vec = typename V::Vec;
  using Red = Reduce<V, Op>;
  constexpr int L = V::kLanes, kGroup = 4;
  int64_t c = 0;
  for (; c + kGroup * L <= w; c += kGroup * L) {
    Vec acc[kGroup];
#pragma GCC unroll 4
    for (int b = 0; b < kGroup; ++b) acc[b] = Red::Init();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* row = rows[r] + c;
      asm("" : "+r"(row));  // one base register (see Blocks)
#pragma GCC unroll 4
      for (int b = 0; b < kGroup; ++b) acc[b] = Red::Step(acc[b], row + b * L);
    }
#pragma GCC unroll 4
    for (int b = 0; b < kGroup; ++b) V::Store(out + c + b * L, acc[b]);
  }
  for (; c < w; c += L) {
    const typename V::Mask m = V::Lanes(0, w - c);
    Vec acc = Red::Init();
    if (c + L <= w) {
      for (int64_t r = 0; r < nrows; ++r) acc = Red::Step(acc, rows[r] + c);
    } else {
      for (int64_t r = 0; r < nrows; ++r) acc = Red::StepMasked(acc, rows[r] + c, m);
    }
    V::Store(out + c, acc);
  }
}

// Input rows [lo, hi) of output row oh's window that lie inside the plane (the others are
// skipped), and its window row count for AveragePool.
struct WindowRows {
  int64_t lo, hi;
  float count;
};
template <class V, Pool2dOp Op>
[[gnu::always_inline]] inline WindowRows RowsOf(const Pool2dPlane& p, int64_t oh) {
  const int64_t ih0 = oh * p.stride_h - p.pad_top;
  WindowRows w;
  w.lo = std::max<int64_t>(0, ih0);
  w.hi = std::max(w.lo, std::min(ih0 + p.kernel_h, p.in_h));
  int64_t n = w.hi - w.lo;
  if (Op == Pool2dOp::kAverage && p.count_include_pad) {
    n = std::min(p.kernel_h, p.in_h + p.pad_bottom - ih0);
  }
  w.count = static_cast<float>(n > 0 ? n : 1);  // no row: the sum is 0, and so the result
  return w;
}

// One pass over NR output rows: the edge blocks under masks (or, from the row buffer, with
// plain loads), the inner blocks in groups.
template <class V, Pool2dOp Op, int S, int KW, int NR>
[[gnu::always_inline]] inline void Pass(const Pool2dPlane& p, const ColumnPlan<V>& plan,
                                        EdgeBlock<V>& spare, const RowSet<NR>& rs) {
  constexpr int L = V::kLanes;
  // Inner vectors reduced together: the accumulators must fit the registers (16 with AVX2).
  constexpr int kRaw = S == 2 && KW >= 2 ? (KW + 1) / 2 * 2 : S;
  constexpr int kGroup = std::max(1, (L == 8 ? 8 : 16) / (kRaw * NR));
  int cached = 0;
  auto edge_block = [&](int64_t b) {
    const EdgeBlock<V>* e = &plan.edge[cached];
    if (cached < plan.kCached) {
      ++cached;
    } else {
      spare.Fill(p, b * L);
      e = &spare;
    }
    Blocks<V, Op, S, KW, true, true, 1, NR>(p, rs, b * L, e);
  };
  int64_t b = 0, inner_end = plan.inner_end;
  if (p.row_buffer) {
    // Every load is inside the buffer and the counts come from the column table: only the
    // last vector of the row, if partial, is an edge block (the plan's last one).
    inner_end = p.out_w / L;
  } else {
    for (; b < plan.inner_begin; ++b) edge_block(b);
  }
  for (; b + kGroup <= inner_end; b += kGroup)
    Blocks<V, Op, S, KW, false, false, kGroup, NR>(p, rs, b * L, nullptr);
  // The rest in halving groups (with 16 lanes, rows have few vectors: 3 inner of 55).
  if constexpr (kGroup >= 4) {
    if (b + kGroup / 2 <= inner_end) {
      Blocks<V, Op, S, KW, false, false, kGroup / 2, NR>(p, rs, b * L, nullptr);
      b += kGroup / 2;
    }
  }
  if constexpr (kGroup >= 8) {
    if (b + 2 <= inner_end) {
      Blocks<V, Op, S, KW, false, false, 2, NR>(p, rs, b * L, nullptr);
      b += 2;
    }
  }
  for (; b < inner_end; ++b) Blocks<V, Op, S, KW, false, false, 1, NR>(p, rs, b * L, nullptr);
  if (p.row_buffer) {
    if (b < plan.blocks) {
      const EdgeBlock<V>* e = plan.cached > 0 ? &plan.edge[plan.cached - 1] : nullptr;
      if (e == nullptr || e->c0 != b * L) {
        spare.Fill(p, b * L);
        e = &spare;
      }
      Blocks<V, Op, S, KW, false, true, 1, NR>(p, rs, b * L, e);
    }
  } else {
    for (b = plan.inner_end; b < plan.blocks; ++b) edge_block(b);
  }
}

template <class V, Pool2dOp Op, int S, int KW>
void Planes(const Pool2dPlane& p, const float* x, float* y, int64_t planes, float* scratch) {
  constexpr int L = V::kLanes;
  const ColumnPlan<V> plan(p);
  EdgeBlock<V> spare;  // an edge block beyond the cached ones, filled when needed
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  // The row buffer: input column c at buffer[pad_left + c], the identity elsewhere (written
  // once here; the row reductions only write [pad_left, pad_left + in_w rounded up), whose
  // lanes from in_w on they set to the identity again).
  // (Not std::fill: its instantiation would be shared with the other ISA's and other files'.)
  float* buffer = nullptr;  // two row buffers of n floats
  const float* columns = nullptr;
  const int64_t n = RowBufferFloats<V>(p);  // a multiple of 16
  if (p.row_buffer) {
    // Column 0 of the buffers on a 64-byte boundary: the row reductions store whole aligned
    // vectors (an AVX-512 vector off it spans two cache lines: measured 1.5x slower).
    const auto misalign = reinterpret_cast<uintptr_t>(scratch + p.pad_left) % 64;
    buffer = scratch + (64 - misalign) % 64 / sizeof(float);
    for (int64_t i = 0; i < 2 * n; i += L) V::Store(buffer + i, Reduce<V, Op>::Init());
    if constexpr (Op == Pool2dOp::kAverage) {
      // The window columns of every output column (at least 1: no tap, the sum is 0).
      float* c = buffer + 2 * n;
      for (int64_t ow = 0; ow < p.out_w + L; ++ow) {
        const int64_t start = ow * p.stride_w - p.pad_left;
        const int64_t taps =
            p.count_include_pad
                ? std::min(p.kernel_w, p.in_w + p.pad_right - start)
                : std::min(start + p.kernel_w, p.in_w) - std::max<int64_t>(start, 0);
        c[ow] = static_cast<float>(taps > 0 ? taps : 1);
      }
      columns = c;
    }
  }
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* xp = x + plane * in_plane;
    float* yp = y + plane * out_plane;
    int64_t oh = 0;
    if (!p.row_buffer) {
      // Output rows two at a time: the union of their windows' rows, each tagged with the
      // output rows it feeds.
      for (; oh + 2 <= p.out_h; oh += 2) {
        const WindowRows top = RowsOf<V, Op>(p, oh), bottom = RowsOf<V, Op>(p, oh + 1);
        RowSet<2> rs;
        rs.n = 0;
        for (int64_t ih = top.lo; ih < bottom.hi; ++ih) {
          const unsigned use = (ih < top.hi ? 1u : 0u) | (ih >= bottom.lo ? 2u : 0u);
          if (use == 0) continue;  // between the windows (stride above the kernel)
          rs.row[rs.n] = xp + ih * p.in_w;
          rs.use[rs.n++] = use;
        }
        rs.y[0] = yp + oh * p.out_w;
        rs.y[1] = rs.y[0] + p.out_w;
        rs.count[0] = top.count;
        rs.count[1] = bottom.count;
        rs.columns = nullptr;
        Pass<V, Op, S, KW, 2>(p, plan, spare, rs);
      }
    }
    auto one_row = [&](int64_t oh, RowSet<1>& rs) {
      const WindowRows w = RowsOf<V, Op>(p, oh);
      rs.n = 0;
      for (int64_t ih = w.lo; ih < w.hi; ++ih) rs.row[rs.n++] = xp + ih * p.in_w;
      rs.y[0] = yp + oh * p.out_w;
      rs.count[0] = w.count;
      rs.columns = columns;
    };
    auto reduce_into = [&](RowSet<1>& rs, float* row_buffer) {
      ReduceRows<V, Op>(rs.row, rs.n, p.in_w, row_buffer + p.pad_left);
      rs.row[0] = row_buffer + p.pad_left;
      rs.n = 1;
    };
    if (p.row_buffer) {
      // Two rows' reductions, then their taps along the row: a row's taps read its buffer
      // at other offsets than the reduction stored it, which waits for those stores to
      // reach the cache; the second reduction runs meanwhile.
      for (; oh + 2 <= p.out_h; oh += 2) {
        RowSet<1> first, second;
        one_row(oh, first);
        one_row(oh + 1, second);
        reduce_into(first, buffer);
        reduce_into(second, buffer + n);
        Pass<V, Op, S, KW, 1>(p, plan, spare, first);
        Pass<V, Op, S, KW, 1>(p, plan, spare, second);
      }
    }
    for (; oh < p.out_h; ++oh) {
      RowSet<1> rs;
      one_row(oh, rs);
      if (p.row_buffer) reduce_into(rs, buffer);
      Pass<V, Op, S, KW, 1>(p, plan, spare, rs);
    }
  }
}

// Picks the stride and (for the common sizes) the kernel width at compile time.
template <class V, Pool2dOp Op>
void Run(const Pool2dPlane& p, const float* x, float* y, int64_t planes, float* scratch) {
  switch (p.stride_w) {
    case 1:
      switch (p.kernel_w) {
        case 1:
          return Planes<V, Op, 1, 1>(p, x, y, planes, scratch);
        case 2:
          return Planes<V, Op, 1, 2>(p, x, y, planes, scratch);
        case 3:
          return Planes<V, Op, 1, 3>(p, x, y, planes, scratch);
        default:
          return Planes<V, Op, 1, 0>(p, x, y, planes, scratch);
      }
    case 2:
      switch (p.kernel_w) {  // 2 to 5: the raw pairs serve two taps each (RowPairs)
        case 2:
          return Planes<V, Op, 2, 2>(p, x, y, planes, scratch);
        case 3:
          return Planes<V, Op, 2, 3>(p, x, y, planes, scratch);
        case 4:
          return Planes<V, Op, 2, 4>(p, x, y, planes, scratch);
        case 5:
          return Planes<V, Op, 2, 5>(p, x, y, planes, scratch);
        default:
          return Planes<V, Op, 2, 0>(p, x, y, planes, scratch);
      }
    case 3:
      return Planes<V, Op, 3, 0>(p, x, y, planes, scratch);
    default:
      return Planes<V, Op, 4, 0>(p, x, y, planes, scratch);
  }
}

template <class V>
void Run(Pool2dOp op, const Pool2dPlane& p, const float* x, float* y, int64_t planes,
         float* scratch) {
  if (op == Pool2dOp::kMax) {
    Run<V, Pool2dOp::kMax>(p, x, y, planes, scratch);
  } else {
    Run<V, Pool2dOp::kAverage>(p, x, y, planes, scratch);
  }
}

}  // namespace pool2d_body
}  // namespace nxrt::cpu::nn
