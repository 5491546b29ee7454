// Registration functions of the sequence / optional kernel files; RegisterSequenceKernels
// (register_sequence.cc) calls them all. Each comment names the file and the ops it registers.
#pragma once

#include <nxrt/nxrt_ep.hpp>

namespace nxrt::cpu::sequence {

// sequence_ops.cc: SequenceEmpty SequenceConstruct SequenceInsert SequenceAt SequenceErase
// SequenceLength
void RegisterSequenceOps(NxKernelRegistry* r);
// concat_split_sequence.cc: ConcatFromSequence SplitToSequence
void RegisterConcatSplitSequence(NxKernelRegistry* r);
// optional_ops.cc: Optional OptionalHasElement OptionalGetElement
void RegisterOptionalOps(NxKernelRegistry* r);

}  // namespace nxrt::cpu::sequence
