// Registration functions of the tensor / data-movement kernel files; RegisterTensorKernels
// (register_tensor.cc) calls them all.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::tensor {

void RegisterReshapeLike(
    NxKernelRegistry* r);  // reshape_like.cc: Identity Reshape Flatten Squeeze Unsqueeze
void RegisterShapeSize(NxKernelRegistry* r);    // shape_size.cc: Shape Size
void RegisterTranspose(NxKernelRegistry* r);    // transpose.cc: Transpose
void RegisterDepthSpace(NxKernelRegistry* r);   // depth_space.cc: DepthToSpace SpaceToDepth
void RegisterConcatSplit(NxKernelRegistry* r);  // concat_split.cc: Concat Split
void RegisterSlice(NxKernelRegistry* r);        // slice.cc: Slice
void RegisterGather(NxKernelRegistry* r);       // gather.cc: Gather GatherElements GatherND
void RegisterScatter(NxKernelRegistry* r);      // scatter.cc: Scatter ScatterElements ScatterND
void RegisterExpandTile(NxKernelRegistry* r);   // expand_tile.cc: Expand Tile
void RegisterPad(NxKernelRegistry* r);          // pad.cc: Pad CenterCropPad
void RegisterConstants(
    NxKernelRegistry* r);                  // constants.cc: Constant ConstantOfShape EyeLike Range
void RegisterTrilu(NxKernelRegistry* r);   // trilu.cc: Trilu
void RegisterOneHot(NxKernelRegistry* r);  // one_hot.cc: OneHot
void RegisterSelection(NxKernelRegistry* r);        // selection.cc: NonZero Compress
void RegisterTopK(NxKernelRegistry* r);             // top_k.cc: TopK
void RegisterReverseSequence(NxKernelRegistry* r);  // reverse_sequence.cc: ReverseSequence
void RegisterUnique(NxKernelRegistry* r);           // unique.cc: Unique
void RegisterCumulative(NxKernelRegistry* r);       // cumulative.cc: CumSum CumProd
void RegisterCol2Im(NxKernelRegistry* r);           // col2im.cc: Col2Im
void RegisterDet(NxKernelRegistry* r);              // det.cc: Det
void RegisterBitCast(NxKernelRegistry* r);          // bitcast.cc: BitCast

}  // namespace nxrt::cpu::tensor
