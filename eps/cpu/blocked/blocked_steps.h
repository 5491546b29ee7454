// What a compiled blocked group is made of (blocked_program.h builds it, blocked_kernel.cc runs
// it): steps of oneDNN primitives whose arguments point into the run's arena, the kernel's
// inputs and outputs, or constant memory (packed weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/linalg/conv_dnnl.h"
#include "kernels/linalg/winograd_conv.h"

namespace nxrt::cpu::blocked {

enum class Where { kArena, kInput, kOutput, kFixed };

// Where one argument's data lives for image n: base(where, index) + offset + n * image_stride.
struct Location {
  Where where = Where::kArena;
  int index = 0;                        // arena buffer, kernel input or kernel output
  size_t offset = 0;                    // bytes from the start of the image
  size_t image_stride = 0;              // bytes from one image to the next
  std::shared_ptr<dnnl::memory> fixed;  // kFixed: constant memory owned by the program
};

struct Arg {
  int key = 0;  // DNNL_ARG_*
  dnnl::memory::desc md;
  Location at;
};

struct Copy {
  Location from, to;
  size_t bytes = 0;
};

// Channels [from_channel, from_channel + channels) of a blocked value (at `from`, its first
// block) into a blocked value from its channel `to_channel` on (at `to`, its first block), where
// either channel is not at a block boundary: a Concat of inputs whose channel counts are not
// multiples of the block (oneDNN's concat has only its reference implementation for those), or
// the outputs of a Split. Both have `pixels` per channel plane.
struct LaneCopy {
  Location from, to;
  int64_t channels = 0, to_channel = 0, pixels = 0;
  int64_t from_channel = 0;
  int block = 8;
  bool zero_tail = false;  // the destination's last block ends here: zero its padding lanes
};

// `planes` planes of `height` x `width` pixels of `lanes` floats each (a blocked value's channel
// blocks, or a plain value's channels with one lane) copied into planes of `padded_height` x
// `padded_width` pixels at row `top` and column `left`, the border set to zero: the input of a
// convolution whose padding oneDNN's jit kernels do not take.
struct PadCopy {
  Location from, to;
  int64_t planes = 0, lanes = 1, height = 0, width = 0;
  int64_t top = 0, left = 0, padded_height = 0, padded_width = 0;
};

// The mean of each channel of `blocks` channel blocks (`block` lanes) over all `pixels` pixels,
// at `from`, into one pixel per block at `to`: a global average pool summed in double. oneDNN's
// pooling adds a large plane's pixels one after another in float: PP-OCRv6 det's ReduceMean
// over 160 x 160 was 2e-4 off in relative terms, its output 9e-4 off onnxruntime's.
struct MeanCall {
  Location from, to;
  int64_t blocks = 0, pixels = 0;
  int block = 8;
};

// A nearest Resize of `blocks` channel blocks (`block` lanes) from planes of `in_height` x
// `in_width` pixels at `from` to planes of `out_height` x `out_width` at `to`: output pixel (r, c)
// is input pixel (rows[r], cols[c]).
struct NearestResize {
  Location from, to;
  int64_t blocks = 0, in_height = 0, in_width = 0, out_height = 0, out_width = 0;
  int block = 8;
  std::shared_ptr<const std::vector<int64_t>> rows, cols;
};

// Byte copies, then one primitive call (either may be absent). Copies put the addend of a fused
// Add (sum post-op) under the destination, or place the inputs of a Concat.
struct Call {
  int id = 0;  // index among all calls of the program (per-run bindings)
  std::vector<Copy> copies;
  std::vector<LaneCopy> lane_copies;   // after the byte copies
  std::vector<PadCopy> pad_copies;     // after the lane copies
  std::vector<MeanCall> means;         // after the pad copies
  std::vector<NearestResize> resizes;  // after the means
  bool has_primitive = false;
  dnnl::primitive primitive;
  std::optional<dnnl::primitive_desc_base> pending;  // while compiling: what `primitive` becomes
  std::vector<Arg> args;
  size_t scratch_bytes = 0;
  // Activations run by nxrt after the primitive, in place over `after_blocks` blocks of
  // `after_pixels` pixels at `after_at`: those from the first Clip on (oneDNN's clip turns NaN
  // into a bound, ONNX's Clip keeps it), and any part of a fused chain that would have made
  // oneDNN take a reference implementation. With `after_sum`, `before_sum` runs first, then the
  // addend of a fused Add (the same blocks at `after_sum_at`) is added, then `after`. When the
  // last block is partly padding, its padding lanes (from `real_lanes` on) are zeroed again.
  std::vector<linalg::ConvFusion::Eltwise> before_sum, after;
  bool after_sum = false;
  Location after_sum_at;
  // Instead of a primitive, nxrt's Winograd convolution (its fused chain included): output
  // tiles [tile_begin, tile_end) and output panels [panel_begin, panel_end) of one image from
  // `winograd_src` into `winograd_dst`, reading the addend of a fused sum at `winograd_sum` when
  // `winograd_has_sum`.
  std::shared_ptr<const linalg::WinogradConv3x3> winograd;
  Location winograd_src, winograd_dst, winograd_sum;
  bool winograd_has_sum = false;
  int64_t tile_begin = 0, tile_end = 0, panel_begin = 0, panel_end = 0;
  Location after_at;
  int64_t after_blocks = 0, after_pixels = 0;
  int block = 8, real_lanes = 0;  // real_lanes 0: the last block is full
};

// One slice of a step: calls run in order on one thread for one image.
using Part = std::vector<Call>;

struct Step {
  std::string name;         // the node names it runs (profiles, errors)
  std::string op;           // e.g. "Conv+Relu", "Reorder"
  std::vector<Part> parts;  // slices run in parallel
  int64_t images = 1;       // the batch: parts run once per image
  // Above 1: the step is one part that oneDNN threads itself, on an OpenMP team of this size
  // started from the calling thread (large convolutions, where its split beats our slices).
  int omp_threads = 1;
  // Reading and writing values ends here (arena planning).
  std::vector<int> reads, writes;  // arena buffers
};

struct KernelInput {
  std::vector<int64_t> dims;  // expected shape (a non-constant input of the group)
  bool used = false;
};

// The compiled group. Runs may overlap (different runs of a session from several threads):
// each run takes an arena of its own.
struct Program {
  std::vector<Step> steps;
  std::vector<size_t> buffer_offsets;  // per arena buffer
  size_t arena_bytes = 0;
  std::vector<KernelInput> inputs;                // per kernel input
  std::vector<std::vector<int64_t>> output_dims;  // per kernel output
  int threads = 1;
  int calls = 0;       // Call::id runs from 0 to calls - 1
  int64_t images = 1;  // the largest batch of a step
};

struct GroupDesc;
struct BlockedOptions;
// The kernel of a group: `program` when it was compiled ahead (static shapes), else compiled per
// input shapes at run time.
std::unique_ptr<ep::Kernel> MakeBlockedKernel(GroupDesc desc, const BlockedOptions& options,
                                              std::optional<Program> program);

}  // namespace nxrt::cpu::blocked
