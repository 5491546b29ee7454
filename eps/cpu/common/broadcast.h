// ONNX multidirectional (numpy-style) broadcasting helpers.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/small_vector.h"

namespace nxrt::cpu {

inline std::string ShapeToString(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

// The broadcast shape of a and b; throws with both shapes on mismatch.
inline Dims BroadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      ep::Fail(NX_INVALID_ARGUMENT,
               "shapes " + ShapeToString(a) + " and " + ShapeToString(b) + " cannot be broadcast");
  }
  return out;
}

// Element strides of `in` when read as a tensor of shape `out` (0 along broadcast dimensions).
inline Dims BroadcastStrides(std::span<const int64_t> in, std::span<const int64_t> out) {
  Dims strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t i = in.size() - 1 - k;
    size_t o = out.size() - 1 - k;
    strides[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

inline int64_t ShapeSize(std::span<const int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Visits every output index of `out_shape` in row-major order, calling fn(out_index, offsets...)
// where offsets[k] is the element offset in input k given its broadcast strides. The innermost
// dimension is handed over as a run: fn(out_offset, in_offsets[], inner_count, inner_strides[]).
template <size_t N, class Fn>
void ForEachBroadcastRun(std::span<const int64_t> out_shape,
                         const std::vector<int64_t> (&strides)[N], Fn&& fn) {
  size_t rank = out_shape.size();
  int64_t total = ShapeSize(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    int64_t offs[N] = {};
    int64_t inner[N] = {};
    fn(int64_t{0}, offs, int64_t{1}, inner);
    return;
  }
  int64_t inner_count = out_shape[rank - 1];
  int64_t inner_strides[N];
  for (size_t k = 0; k < N; ++k) inner_strides[k] = strides[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offs[N] = {};
  for (int64_t out = 0; out < total; out += inner_count) {
    fn(out, offs, inner_count, inner_strides);
    // advance the outer index (dimensions 0 .. rank-2)
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < out_shape[d]) {
        for (size_t k = 0; k < N; ++k) offs[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) offs[k] -= strides[k][d] * (out_shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace nxrt::cpu
