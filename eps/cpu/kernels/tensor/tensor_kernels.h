// Registration functions of the tensor / data-movement kernel files; RegisterTensorKernels
// (register_tensor.cc) calls them all. Each comment names the file and the ops it registers.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::tensor {

// reshape_like.cc: Identity Reshape Flatten Squeeze Unsqueeze
void RegisterReshapeLike(NxKernelRegistry* r);
// shape_size.cc: Shape Size
void RegisterShapeSize(NxKernelRegistry* r);
// transpose.cc: Transpose
void RegisterTranspose(NxKernelRegistry* r);
// depth_space.cc: DepthToSpace SpaceToDepth
void RegisterDepthSpace(NxKernelRegistry* r);
// concat_split.cc: Concat Split
void RegisterConcatSplit(NxKernelRegistry* r);
// slice.cc: Slice
void RegisterSlice(NxKernelRegistry* r);
// gather.cc: Gather GatherElements GatherND
void RegisterGather(NxKernelRegistry* r);
// scatter.cc: Scatter ScatterElements ScatterND
void RegisterScatter(NxKernelRegistry* r);
// tensor_scatter.cc: TensorScatter
void RegisterTensorScatter(NxKernelRegistry* r);
// expand_tile.cc: Expand Tile
void RegisterExpandTile(NxKernelRegistry* r);
// pad.cc: Pad CenterCropPad
void RegisterPad(NxKernelRegistry* r);
// constants.cc: Constant ConstantOfShape EyeLike Range
void RegisterConstants(NxKernelRegistry* r);
// trilu.cc: Trilu
void RegisterTrilu(NxKernelRegistry* r);
// one_hot.cc: OneHot
void RegisterOneHot(NxKernelRegistry* r);
// selection.cc: NonZero Compress
void RegisterSelection(NxKernelRegistry* r);
// top_k.cc: TopK
void RegisterTopK(NxKernelRegistry* r);
// reverse_sequence.cc: ReverseSequence
void RegisterReverseSequence(NxKernelRegistry* r);
// unique.cc: Unique
void RegisterUnique(NxKernelRegistry* r);
// cumulative.cc: CumSum CumProd
void RegisterCumulative(NxKernelRegistry* r);
// col2im.cc: Col2Im
void RegisterCol2Im(NxKernelRegistry* r);
// det.cc: Det
void RegisterDet(NxKernelRegistry* r);
// bitcast.cc: BitCast
void RegisterBitCast(NxKernelRegistry* r);

}  // namespace nxrt::cpu::tensor
