// Helpers shared by the row-wise normalisation kernels (LayerNormalization, RMSNormalization):
// a per-(row, column) view of a Scale/Bias input that is unidirectionally broadcast to X.
#pragma once

#include <cstdint>
#include <vector>

#include "common/broadcast.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {

// A Scale or Bias tensor seen as a [rows, cols] matrix aligned with X reshaped to [rows, cols]
// (rows = product of the axes before `axis`). The common case, one value per column shared by
// all rows, is stored as a dense vector of `cols` values.
template <class A>
struct RowParam {
  bool present = false;
  bool per_row = false;             // values differ between rows
  std::vector<A> values;            // the parameter's elements, converted
  std::vector<int64_t> col_offset;  // element offset of each column (when not dense)
  std::vector<int64_t> outer_strides, outer_dims;
  bool dense = false;  // values[col] directly

  const A* row(int64_t r, std::vector<A>& scratch) const {
    if (dense) return values.data();
    int64_t base = 0;
    if (per_row) {
      int64_t rest = r;
      for (size_t d = outer_dims.size(); d-- > 0;) {
        base += (rest % outer_dims[d]) * outer_strides[d];
        rest /= outer_dims[d];
      }
    }
    for (size_t c = 0; c < col_offset.size(); ++c) scratch[c] = values[base + col_offset[c]];
    return scratch.data();
  }
};

template <class A>
RowParam<A> MakeRowParam(const ep::ConstTensor& p, std::span<const int64_t> x_shape, size_t axis,
                         const char* op, const char* name) {
  RowParam<A> rp;
  rp.present = true;
  auto ps = p.shape();
  NXRT_EP_ENFORCE(ps.size() <= x_shape.size(),
                  std::string(op) + ": " + name + " of shape " + DimsToString(ps) +
                      " cannot be broadcast to X of shape " + DimsToString(x_shape));
  size_t off = x_shape.size() - ps.size();
  for (size_t i = 0; i < ps.size(); ++i) {
    NXRT_EP_ENFORCE(ps[i] == 1 || ps[i] == x_shape[off + i],
                    std::string(op) + ": " + name + " of shape " + DimsToString(ps) +
                        " cannot be broadcast to X of shape " + DimsToString(x_shape));
  }
  std::vector<double> raw = ReadDoubles(p, name);
  rp.values.assign(raw.begin(), raw.end());
  std::vector<int64_t> strides = BroadcastStrides(ps, x_shape);
  int64_t cols = 1;
  for (size_t d = axis; d < x_shape.size(); ++d) cols *= x_shape[d];
  for (size_t d = 0; d < axis; ++d) {
    rp.outer_dims.push_back(x_shape[d]);
    rp.outer_strides.push_back(strides[d]);
    if (strides[d] != 0 && x_shape[d] != 1) rp.per_row = true;
  }
  // Column offsets, row-major over the normalised axes.
  rp.col_offset.assign(cols, 0);
  bool identity = true;
  std::vector<int64_t> idx(x_shape.size() - axis, 0);
  for (int64_t c = 0; c < cols; ++c) {
    int64_t o = 0;
    for (size_t k = 0; k < idx.size(); ++k) o += idx[k] * strides[axis + k];
    rp.col_offset[c] = o;
    identity &= o == c;
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < x_shape[axis + k]) break;
      idx[k] = 0;
    }
  }
  if (!rp.per_row && identity && static_cast<int64_t>(rp.values.size()) == cols) {
    rp.dense = true;
  } else if (!rp.per_row) {
    // Same values for every row: expand once into a dense vector.
    std::vector<A> dense(cols);
    for (int64_t c = 0; c < cols; ++c) dense[c] = rp.values[rp.col_offset[c]];
    rp.values = std::move(dense);
    rp.dense = true;
  }
  return rp;
}

}  // namespace nxrt::cpu::nn
