// Shape analysis shared by the Reduce* kernels: which axes are reduced, the output shape, and a
// collapsed description of the input that the reduction loops walk contiguously.
//
// After dropping size-1 dimensions and merging neighbouring dimensions that are either all kept or
// all reduced, every reduction is one of two layouts:
//  - the last block is reduced ("segments"): each output reads `offsets.size()` contiguous runs of
//    `run` elements; e.g. a last-axis (LayerNorm-like) or spatial reduction.
//  - the last block is kept ("rows"): each output row of `run` elements accumulates whole input
//    rows at `offsets`; e.g. reducing the channel axis of NCHW. Accumulating rows keeps the loads
//    contiguous instead of walking the input with a large stride per element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/small_vector.h"

namespace nxrt::cpu::reduction {

// Normalises axes against `rank` (negative counts from the back); fails on out-of-range or repeated
// axes. Returns one flag per input dimension.
inline SmallVector<bool, 8> ReducedAxisFlags(std::span<const int64_t> axes, size_t rank,
                                             const std::string& op) {
  SmallVector<bool, 8> flags(rank, false);
  const int64_t r = static_cast<int64_t>(rank);
  for (int64_t a : axes) {
    NXRT_EP_ENFORCE(
        (a >= -r && a < r) || (r == 0 && (a == 0 || a == -1)),
        op + ": axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    if (r == 0) continue;  // a scalar behaves as a single element whichever axis is named
    int64_t k = a < 0 ? a + r : a;
    NXRT_EP_ENFORCE(!flags[k], op + ": axis " + std::to_string(a) + " is repeated");
    flags[k] = true;
  }
  return flags;
}

struct ReducePlan {
  Dims out_shape;
  int64_t out_count = 1;            // elements in the output
  int64_t reduce_count = 1;         // input elements per output
  int64_t in_count = 1;             // elements in the input
  bool rows = false;                // layout: false = segments, true = rows (see the file comment)
  int64_t run = 1;                  // contiguous length: a segment (segments) or a row (rows)
  SmallVector<int64_t, 8> offsets;  // input offsets of the runs that feed one output (row)
  // Kept dimensions outside `run` (sizes and input strides), outermost first, to locate the
  // input base offset of output (row) o.
  Dims kept_sizes, kept_strides;

  int64_t row_count() const { return rows ? out_count / run : out_count; }
  // Input offset of output o (segments) or output row o (rows).
  int64_t Base(int64_t o) const {
    // One kept block (the usual case after collapsing) needs no division.
    if (kept_sizes.size() == 1) return o * kept_strides[0];
    int64_t base = 0;
    for (size_t k = kept_sizes.size(); k-- > 0;) {
      base += (o % kept_sizes[k]) * kept_strides[k];
      o /= kept_sizes[k];
    }
    return base;
  }
};

inline ReducePlan MakeReducePlan(std::span<const int64_t> in_shape,
                                 const SmallVector<bool, 8>& flags, bool keepdims) {
  ReducePlan p;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    int64_t d = in_shape[i];
    p.in_count *= d;
    if (flags[i]) {
      p.reduce_count *= d;
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_count *= d;
      p.out_shape.push_back(d);
    }
  }
  if (p.in_count == 0) return p;  // callers fill constants (or nothing); no walk is needed

  // Collapse: drop size-1 dims, merge neighbours with the same flag.
  Dims sizes;
  SmallVector<bool, 8> reduced;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (in_shape[i] == 1) continue;
    if (!sizes.empty() && reduced.back() == flags[i]) {
      sizes.back() *= in_shape[i];
    } else {
      sizes.push_back(in_shape[i]);
      reduced.push_back(flags[i]);
    }
  }
  if (sizes.empty()) {  // a single element
    p.offsets = {0};
    return p;
  }
  Dims strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i];
  }
  const size_t last = sizes.size() - 1;
  p.rows = !reduced[last];
  p.run = sizes[last];
  Dims red_sizes, red_strides;
  for (size_t i = 0; i < last; ++i) {
    if (reduced[i]) {
      red_sizes.push_back(sizes[i]);
      red_strides.push_back(strides[i]);
    } else {
      p.kept_sizes.push_back(sizes[i]);
      p.kept_strides.push_back(strides[i]);
    }
  }
  // Enumerate the reduced offsets (row-major, so runs are visited in input order).
  int64_t n = 1;
  for (int64_t d : red_sizes) n *= d;
  p.offsets.resize(n);
  Dims idx(red_sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t j = 0; j < idx.size(); ++j) off += idx[j] * red_strides[j];
    p.offsets[k] = off;
    for (size_t j = idx.size(); j-- > 0;) {
      if (++idx[j] < red_sizes[j]) break;
      idx[j] = 0;
    }
  }
  return p;
}

}  // namespace nxrt::cpu::reduction
