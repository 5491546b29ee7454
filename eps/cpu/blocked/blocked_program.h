// A blocked-layout group compiled into a list of oneDNN primitives that pass their activations
// to each other in the channel-blocked layout (nChw8c on AVX2, nChw16c on AVX-512).
//
// Compiling a group (CompileBlockedGroup):
//  - Values read from outside are reordered into the blocked layout once, where first used; an
//    input of fewer channels than one block that only convolutions read stays plain (oneDNN's
//    direct kernels take a plain NCHW source for a first layer of 3 channels).
//  - Each Conv becomes one primitive with its weights reordered once into the layout the
//    primitive asks for. A following chain is folded into it as post-ops where the values in
//    between have no other reader: activations, x * Sigmoid(x) (Swish), and Add of a value
//    computed earlier (a "sum" post-op, written in place over that value when it has no later
//    reader).
//  - Other members become pooling, eltwise, binary and concat primitives on the blocked layout;
//    nearest Resizes gather whole pixels (a block of lanes each) by nxrt's own index tables.
//  - Values that leave the group are reordered back to plain NCHW into the kernel's outputs as
//    soon as they are computed.
//  - Every value inside lives in one per-run arena, placed by lifetime (values that are never
//    alive at the same time share bytes).
// With more than one thread, a primitive that is large enough is split into slices of whole
// channel blocks, one single-threaded primitive each, run in parallel on the session's pool
// (with N = 1 a slice of blocks is a contiguous part of a blocked tensor).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "blocked/blocked_group.h"
#include "blocked/blocked_steps.h"
#include "kernels/linalg/primitive_audit.h"

namespace nxrt::cpu::blocked {

// Convolution weights reordered for a group's programs. A group whose input shapes are known
// only at run time compiles one program per set of input shapes (blocked_kernel.cc); their
// primitives ask for the same weight layout whatever the spatial size, so the programs share
// one reordered copy instead of each keeping its own (ResNet-50's 100 MB per input size).
// Thread-safe.
class WeightCache {
 public:
  // The weights of node `node`, output channels [o0, o1), in layout `desc`: made by `make` the
  // first time.
  std::shared_ptr<dnnl::memory> Get(int node, int64_t o0, int64_t o1,
                                    const dnnl::memory::desc& desc,
                                    const std::function<std::shared_ptr<dnnl::memory>()>& make);

 private:
  struct Entry {
    int node;
    int64_t o0, o1;
    dnnl::memory::desc desc;
    std::shared_ptr<dnnl::memory> weights;
  };
  std::mutex mu_;
  std::vector<Entry> entries_;
};

struct BlockedOptions {
  int block = 8;         // channels per block: 8 (AVX2) or 16 (AVX-512)
  int threads = 1;       // the session's intra-op threads: how many slices a primitive is cut into
  bool winograd = true;  // 3x3 stride-1 convolutions by Winograd F(4x4, 3x3) (block 8 only)
  // Where the program records the oneDNN primitives it keeps (linalg/primitive_audit.h); the
  // program itself never keeps a reference implementation where nxrt has another formulation.
  std::shared_ptr<linalg::PrimitiveAudit> audit;
  std::string name;  // the fused node's name
  // Shared by the programs of one group (BlockedKernel makes it); null: each program its own.
  std::shared_ptr<WeightCache> weights;
};

// The kernel that runs `group` (a graph view from NxEp::CompileGroup whose nodes ClassifyNode
// accepts). A group of static shapes is compiled here, and this throws (an ep::Error) when a
// member cannot be compiled: the caller then lets the nodes run one by one. A group whose
// shapes are known only at run time (symbolic batch, height, width) is compiled for each new
// set of input shapes on its first run with them (blocked_kernel.cc).
std::unique_ptr<ep::Kernel> CompileBlockedGroup(const NxGraph* group,
                                                const BlockedOptions& options);

// The program of `group` for these shapes of the kernel's inputs (entries of constant inputs
// are ignored).
Program CompileProgram(const GroupDesc& group, const std::vector<std::vector<int64_t>>& input_dims,
                       const BlockedOptions& options);

}  // namespace nxrt::cpu::blocked
