// The reduction loops: runs an accumulator policy (reduce_ops.h) over a ReducePlan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "common/parallel.h"
#include "kernels/reduction/reduce_plan.h"

namespace nxrt::cpu::reduction {

// Work (input elements) below which a task is not worth a thread.
inline constexpr int64_t kMinWorkPerTask = 16384;

// A heap array (not std::vector, which packs bool accumulators into bits).
template <class T>
std::unique_ptr<T[]> MakeFilled(int64_t n, const T& v) {
  std::unique_ptr<T[]> a(new T[n]);
  std::fill(a.get(), a.get() + n, v);
  return a;
}

// Folds x[0, n) into acc. Long runs use independent lanes so the loop has no serial dependency
// on one accumulator and vectorises (lane results are merged at the end).
template <class Op>
inline void FoldRun(typename Op::Acc& acc, const typename Op::In* x, int64_t n) {
  if constexpr (requires { Op::FoldFloats(acc, x, n); }) {
    Op::FoldFloats(acc, x, n);  // a vector body of the policy's own (max, min of floats)
    return;
  }
  using Acc = typename Op::Acc;
  constexpr int kLanes = 16;
  int64_t i = 0;
  if (n >= 2 * kLanes) {
    Acc lanes[kLanes];
    for (int k = 0; k < kLanes; ++k) lanes[k] = Op::Init();
    for (; i + kLanes <= n; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) Op::Add(lanes[k], x[i + k]);
    }
    for (int k = 0; k < kLanes; ++k) Op::Merge(acc, lanes[k]);
  }
  for (; i < n; ++i) Op::Add(acc, x[i]);
}

// Folds elements [lo, hi) of the flattened (offsets x run) sequence starting at `base`.
template <class Op>
inline void FoldRange(typename Op::Acc& acc, const typename Op::In* base, const ReducePlan& p,
                      int64_t lo, int64_t hi) {
  int64_t m = lo / p.run, j = lo % p.run;
  while (lo < hi) {
    int64_t len = std::min(p.run - j, hi - lo);
    FoldRun<Op>(acc, base + p.offsets[m] + j, len);
    lo += len;
    ++m;
    j = 0;
  }
}

template <class Op>
void ReduceSegments(const ReducePlan& p, const typename Op::In* x, typename Op::Out* y,
                    int threads) {
  using Acc = typename Op::Acc;
  const int64_t n = p.reduce_count;
  if (p.out_count == 1 && threads > 1 && n >= 2 * kMinWorkPerTask) {
    // One output (a full reduction): split its elements between threads, then merge in order.
    int64_t tasks = std::min<int64_t>(threads, n / kMinWorkPerTask);
    auto part = MakeFilled<Acc>(tasks, Op::Init());
    ParallelFor(threads, tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        FoldRange<Op>(part[t], x, p, n * t / tasks, n * (t + 1) / tasks);
      }
    });
    Acc acc = Op::Init();
    for (int64_t t = 0; t < tasks; ++t) Op::Merge(acc, part[t]);
    y[0] = Op::Final(acc, n);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kMinWorkPerTask / std::max<int64_t>(n, 1));
  ParallelFor(threads, p.out_count, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      Acc acc = Op::Init();
      const typename Op::In* base = x + p.Base(o);
      for (int64_t off : p.offsets) FoldRun<Op>(acc, base + off, p.run);
      y[o] = Op::Final(acc, n);
    }
  });
}

template <class Op>
void ReduceRows(const ReducePlan& p, const typename Op::In* x, typename Op::Out* y, int threads) {
  using Acc = typename Op::Acc;
  const int64_t n = p.reduce_count;
  const int64_t rows = p.row_count(), width = p.run;
  const int64_t m = static_cast<int64_t>(p.offsets.size());
  // Column blocks keep the accumulator row in L1 while the input rows stream past; long enough
  // that each input row piece is a prefetchable stream.
  constexpr int64_t kBlock = std::max<int64_t>(16, 16384 / sizeof(Acc));
  constexpr int64_t kNarrow = 64;
  const int64_t col_blocks = (width + kBlock - 1) / kBlock;
  const int64_t items = rows * col_blocks;

  if (items < threads && threads > 1 && p.in_count >= 2 * kMinWorkPerTask) {
    // Few, long outputs (e.g. [huge, 4] reduced over axis 0): split the reduced rows between
    // threads, each with its own partial accumulators, and merge them in order.
    int64_t tasks =
        std::min<int64_t>({static_cast<int64_t>(threads), m, p.in_count / kMinWorkPerTask});
    const int64_t outs = p.out_count;
    auto part = MakeFilled<Acc>(tasks * outs, Op::Init());
    ParallelFor(threads, tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        Acc* acc = part.get() + t * outs;
        for (int64_t r = 0; r < rows; ++r) {
          const typename Op::In* base = x + p.Base(r);
          Acc* acc_row = acc + r * width;
          for (int64_t k = m * t / tasks; k < m * (t + 1) / tasks; ++k) {
            const typename Op::In* xr = base + p.offsets[k];
            for (int64_t j = 0; j < width; ++j) Op::Add(acc_row[j], xr[j]);
          }
        }
      }
    });
    for (int64_t t = 1; t < tasks; ++t) {
      for (int64_t i = 0; i < outs; ++i) Op::Merge(part[i], part[t * outs + i]);
    }
    for (int64_t i = 0; i < outs; ++i) y[i] = Op::Final(part[i], n);
    return;
  }

  const int64_t grain =
      std::max<int64_t>(1, kMinWorkPerTask / std::max<int64_t>(m * std::min(width, kBlock), 1));
  // Narrow rows stored back to back (e.g. [N, 4] over axis 0): fold `group` rows at a time as one
  // contiguous run into a wider accumulator, so the inner loop is long enough to vectorise.
  const bool dense = width < kNarrow && p.offsets.size() > 1 && p.offsets[1] == width &&
                     p.offsets.back() == (m - 1) * width;
  const int64_t group = dense ? (kNarrow + width - 1) / width : 1;
  ParallelFor(threads, items, grain, [&](int64_t b, int64_t e) {
    auto acc = MakeFilled<Acc>(std::max(std::min(width, kBlock), group * width), Op::Init());
    for (int64_t item = b; item < e; ++item) {
      const int64_t r = item / col_blocks;
      const int64_t j0 = (item % col_blocks) * kBlock;
      const int64_t len = std::min(kBlock, width - j0);
      const typename Op::In* base = x + p.Base(r) + j0;
      Acc* a = acc.get();
      int64_t k = 0;
      if (dense && m >= 2 * group) {
        const int64_t wide = group * width;
        std::fill(a, a + wide, Op::Init());
        for (; k + group <= m; k += group) {
          const typename Op::In* xr = base + k * width;
          for (int64_t j = 0; j < wide; ++j) Op::Add(a[j], xr[j]);
        }
        for (int64_t g = 1; g < group; ++g) {
          for (int64_t j = 0; j < width; ++j) Op::Merge(a[j], a[g * width + j]);
        }
      } else {
        std::fill(a, a + len, Op::Init());
      }
      // Four input rows per pass over the accumulators: one load/store of a[j] per four adds.
      for (; k + 4 <= m; k += 4) {
        const typename Op::In* x0 = base + p.offsets[k];
        const typename Op::In* x1 = base + p.offsets[k + 1];
        const typename Op::In* x2 = base + p.offsets[k + 2];
        const typename Op::In* x3 = base + p.offsets[k + 3];
        for (int64_t j = 0; j < len; ++j) {
          Acc v = a[j];
          Op::Add(v, x0[j]);
          Op::Add(v, x1[j]);
          Op::Add(v, x2[j]);
          Op::Add(v, x3[j]);
          a[j] = v;
        }
      }
      for (; k < m; ++k) {
        const typename Op::In* xr = base + p.offsets[k];
        for (int64_t j = 0; j < len; ++j) Op::Add(a[j], xr[j]);
      }
      typename Op::Out* yr = y + r * width + j0;
      for (int64_t j = 0; j < len; ++j) yr[j] = Op::Final(a[j], n);
    }
  });
}

// Runs Op over the whole plan. x may be null when the input is empty.
template <class Op>
void RunReduce(const ReducePlan& p, const typename Op::In* x, typename Op::Out* y, int threads) {
  if (p.out_count == 0) return;
  if (p.in_count == 0) {  // every output reduces nothing: the op's identity
    const typename Op::Out v = Op::Final(Op::Init(), 0);
    std::fill(y, y + p.out_count, v);
    return;
  }
  if (p.rows) {
    ReduceRows<Op>(p, x, y, threads);
  } else {
    ReduceSegments<Op>(p, x, y, threads);
  }
}

}  // namespace nxrt::cpu::reduction
