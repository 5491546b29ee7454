// Permuted copy of a whole tensor (Transpose, and the reshape-transpose-reshape of
// DepthToSpace / SpaceToDepth), any element type including strings.
#pragma once

#include <vector>

#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {

// Writes `in`, viewed with shape `in_dims`, permuted by `perm` (output axis i = input axis
// perm[i]) into `out`, whose element count must match.
inline void PermuteCopy(const ep::ConstTensor& in, const ep::Tensor& out,
                        std::span<const int64_t> in_dims, std::span<const int64_t> perm,
                        int threads) {
  Dims in_strides = StridesOf(in_dims);
  Dims dims(perm.size()), ss(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = in_dims[perm[i]];
    ss[i] = in_strides[perm[i]];
  }
  Dims ds = StridesOf(dims);
  DispatchMove(in.type(), [&]<class T>() {
    InView<T> src(in);
    OutView<T> dst(out);
    StridedCopy<T>(src.data(), dst.data(), dims, ss, ds, threads);
    dst.Commit();
  });
}

}  // namespace nxrt::cpu::tensor
