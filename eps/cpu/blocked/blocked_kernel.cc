// Runs a compiled blocked group (blocked_steps.h): finds the program for the inputs' shapes
// (the one compiled ahead for static shapes; otherwise compiled on the first run with these
// shapes and kept), takes the state of one run (bound primitive arguments) and an arena from the
// kernel's pool, then runs
// each step's slices (times the batch) in parallel on the session's pool, each a
// single-threaded oneDNN call sequence on this thread's stream. The oneDNN memory objects of a
// run state are made on its first run (and again when it gets another arena buffer) and only
// re-pointed at the kernel's inputs, outputs and this thread's scratchpad afterwards.
#include <algorithm>
#include <cstring>
#include <string>

#include "blocked/blocked_program.h"
#include "blocked/blocked_steps.h"
#include "common/broadcast.h"
#include "common/parallel.h"
#include "common/small_vector.h"
#include "kernels/linalg/dnnl_util.h"

namespace nxrt::cpu::blocked {
namespace {

using linalg::DnnlEngine;
using linalg::DnnlStream;

// One call's arguments for one image, as dnnl_primitive_execute takes them.
struct Bound {
  bool ready = false;
  std::vector<dnnl::memory> memories;  // one per argument (and the scratchpad last)
  std::vector<dnnl_exec_arg_t> args;
  std::vector<int> dynamic;  // arguments to re-point each run (kernel inputs and outputs)
  int scratch = -1;          // index of the scratchpad argument
};

// Arena memory shared by every program of one kernel (64-byte aligned buffers). A run takes a
// buffer at least as large as its program's arena and gives it back, so a kernel fed many shapes
// (an OCR model on lines and pages of every size: one program per shape) keeps writing the pages
// it has touched, one buffer per concurrent run, instead of each program's own arena: PP-OCR det
// on 30 image sizes faulted in 10K fresh pages (40 MB, about 20 ms) per new size, and held an
// arena per size.
class ArenaPool {
 public:
  struct Buffer {
    char* data = nullptr;
    size_t bytes = 0;
  };
  ArenaPool() = default;
  ~ArenaPool() {
    for (const Buffer& b : free_) std::free(b.data);
  }
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // The smallest free buffer of at least `bytes`; else a new one, in place of the largest free
  // one (too small) so that sequential runs keep a single buffer.
  Buffer Take(size_t bytes) {
    bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    Buffer too_small;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
      if (best != free_.end()) {
        Buffer b = *best;
        free_.erase(best);
        return b;
      }
      if (!free_.empty()) {
        auto largest =
            std::max_element(free_.begin(), free_.end(),
                             [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
        too_small = *largest;
        free_.erase(largest);
      }
    }
    std::free(too_small.data);
    Buffer b{static_cast<char*>(std::aligned_alloc(64, bytes)), bytes};
    if (b.data == nullptr) ep::Fail(NX_OUT_OF_MEMORY, "blocked group: no memory for its arena");
    return b;
  }
  void Give(Buffer b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }

 private:
  std::mutex mu_;
  std::vector<Buffer> free_;
};

// Everything one run needs of its own: the bindings of its calls to an arena (ArenaPool's), the
// kernel's inputs and outputs. Bindings are made for one arena address and remade when a run
// gets another buffer.
class RunState {
 public:
  RunState(size_t bindings, size_t inputs, size_t outputs)
      : bound(bindings), inputs(inputs, nullptr), outputs(outputs, nullptr) {}
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;
  char* arena() const { return arena_; }
  // Points this run at `arena`; bindings made for another address are dropped.
  void UseArena(char* arena) {
    if (arena == arena_) return;
    for (Bound& b : bound) b = Bound{};
    arena_ = arena;
  }

 private:
  char* arena_ = nullptr;

 public:
  std::vector<Bound> bound;  // per call and image
  std::vector<char*> inputs, outputs;
};

// One compiled program and the run states of its runs.
class ProgramRunner {
 public:
  ProgramRunner(Program program, std::shared_ptr<ArenaPool> arenas)
      : p_(std::move(program)), arenas_(std::move(arenas)) {}
  const Program& program() const { return p_; }

  void Run(ep::KernelContext& ctx) {
    std::unique_ptr<RunState> state = TakeState();
    ArenaPool::Buffer arena = arenas_->Take(p_.arena_bytes);
    state->UseArena(arena.data);
    // Gives the arena and the state back however the run ends.
    struct Return {
      ProgramRunner* runner;
      std::unique_ptr<RunState>& state;
      ArenaPool::Buffer arena;
      ~Return() {
        runner->arenas_->Give(arena);
        runner->GiveState(std::move(state));
      }
    } give_back{this, state, arena};
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      if (!p_.inputs[i].used) continue;
      ep::ConstTensor x = ctx.input(i);
      const std::vector<int64_t>& want = p_.inputs[i].dims;
      if (x.type() != NX_TYPE_FLOAT ||
          !std::equal(want.begin(), want.end(), x.shape().begin(), x.shape().end())) {
        ep::Fail(NX_INVALID_ARGUMENT, "blocked group: input " + std::to_string(i) +
                                          " must be float" + ShapeToString(want) + ", got " +
                                          ep::ElementTypeName(x.type()) + ShapeToString(x.shape()));
      }
      state->inputs[i] = const_cast<char*>(static_cast<const char*>(x.raw()));
    }
    for (size_t i = 0; i < p_.output_dims.size(); ++i) {
      state->outputs[i] =
          static_cast<char*>(ctx.output(i, p_.output_dims[i], NX_TYPE_FLOAT).mutable_raw());
    }
    const bool profiling = ctx.IsProfiling();
    SingleOmpThread one;
    for (const Step& step : p_.steps) {
      const uint64_t begin = profiling ? ep::ProfilerNowNs() : 0;
      RunStep(step, *state);
      if (profiling)
        ctx.AddProfileEvent(step.name, begin, ep::ProfilerNowNs(),
                            {{"op", step.op}, {"slices", std::to_string(step.parts.size())}});
    }
  }

 private:
  char* Address(const Location& at, int64_t image, const RunState& state) const {
    char* base = nullptr;
    switch (at.where) {
      case Where::kArena:
        base = state.arena() + p_.buffer_offsets[static_cast<size_t>(at.index)];
        break;
      case Where::kInput:
        base = state.inputs[static_cast<size_t>(at.index)];
        break;
      case Where::kOutput:
        base = state.outputs[static_cast<size_t>(at.index)];
        break;
      case Where::kFixed:
        return static_cast<char*>(at.fixed->get_data_handle());
    }
    return base + at.offset + static_cast<size_t>(image) * at.image_stride;
  }

  void Bind(const Call& call, int64_t image, const RunState& state, Bound& b) const {
    auto& eng = DnnlEngine();
    for (const Arg& a : call.args) {
      if (a.at.where == Where::kFixed) {
        b.memories.push_back(*a.at.fixed);
      } else {
        b.memories.emplace_back(a.md, eng, Address(a.at, image, state));
        if (a.at.where != Where::kArena) b.dynamic.push_back(static_cast<int>(b.args.size()));
      }
      b.args.push_back({a.key, b.memories.back().get()});
    }
    if (call.scratch_bytes > 0) {
      dnnl::memory::desc md({static_cast<int64_t>(call.scratch_bytes)}, dnnl::memory::data_type::u8,
                            dnnl::memory::format_tag::a);
      b.scratch = static_cast<int>(b.args.size());
      b.memories.emplace_back(md, eng,
                              linalg::ThreadScratch(linalg::kScratchPad, call.scratch_bytes));
      b.args.push_back({DNNL_ARG_SCRATCHPAD, b.memories.back().get()});
    }
    b.ready = true;
  }

  void RunPart(const Part& part, int64_t image, RunState& state) const {
    dnnl::stream& stream = DnnlStream();
    for (const Call& call : part) {
      for (const Copy& c : call.copies)
        std::memcpy(Address(c.to, image, state), Address(c.from, image, state), c.bytes);
      for (const LaneCopy& c : call.lane_copies)
        RunLaneCopy(c, reinterpret_cast<const float*>(Address(c.from, image, state)),
                    reinterpret_cast<float*>(Address(c.to, image, state)));
      for (const PadCopy& c : call.pad_copies)
        RunPadCopy(c, reinterpret_cast<const float*>(Address(c.from, image, state)),
                   reinterpret_cast<float*>(Address(c.to, image, state)));
      for (const MeanCall& m : call.means)
        RunMean(m, reinterpret_cast<const float*>(Address(m.from, image, state)),
                reinterpret_cast<float*>(Address(m.to, image, state)));
      for (const NearestResize& r : call.resizes)
        RunNearestResize(r, reinterpret_cast<const float*>(Address(r.from, image, state)),
                         reinterpret_cast<float*>(Address(r.to, image, state)));
      if (call.winograd) {
        call.winograd->Run(reinterpret_cast<const float*>(Address(call.winograd_src, image, state)),
                           reinterpret_cast<float*>(Address(call.winograd_dst, image, state)),
                           call.winograd_has_sum ? reinterpret_cast<const float*>(
                                                       Address(call.winograd_sum, image, state))
                                                 : nullptr,
                           call.tile_begin, call.tile_end, call.panel_begin, call.panel_end);
        continue;
      }
      if (!call.has_primitive) continue;
      Bound& b = state.bound[static_cast<size_t>(call.id * p_.images + image)];
      if (!b.ready) Bind(call, image, state, b);
      for (int i : b.dynamic) {
        b.memories[static_cast<size_t>(i)].set_data_handle(
            Address(call.args[static_cast<size_t>(i)].at, image, state));
      }
      if (b.scratch >= 0) {
        b.memories[static_cast<size_t>(b.scratch)].set_data_handle(
            linalg::ThreadScratch(linalg::kScratchPad, call.scratch_bytes));
      }
      linalg::CheckDnnl(dnnl_primitive_execute(call.primitive.get(), stream.get(),
                                               static_cast<int>(b.args.size()), b.args.data()),
                        "blocked group primitive");
    }
    stream.wait();
    for (const Call& call : part) {
      if (call.after.empty() && !call.after_sum) continue;
      RunAfter(call, Address(call.after_at, image, state),
               call.after_sum ? Address(call.after_sum_at, image, state) : nullptr);
    }
  }

  // Per block, each lane's pixels are summed in float over runs of 64 pixels (short enough to
  // stay exact to a few ulps; the lanes vectorize) and the runs' sums are added in double.
  static void RunMean(const MeanCall& m, const float* from, float* to) {
    constexpr int kMaxBlock = 16;
    constexpr int64_t kRun = 64;
    const int64_t b = m.block;
    for (int64_t blk = 0; blk < m.blocks; ++blk) {
      const float* src = from + blk * m.pixels * b;
      double total[kMaxBlock] = {};
      for (int64_t p0 = 0; p0 < m.pixels; p0 += kRun) {
        float run[kMaxBlock] = {};
        const int64_t p1 = std::min(m.pixels, p0 + kRun);
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t l = 0; l < b; ++l) run[l] += src[p * b + l];
        for (int64_t l = 0; l < b; ++l) total[l] += run[l];
      }
      for (int64_t l = 0; l < b; ++l)
        to[blk * b + l] = static_cast<float>(total[l] / static_cast<double>(m.pixels));
    }
  }

  // Pixel by pixel (one block of lanes each); an output row that repeats the row before it (an
  // upscale) is a copy of that row.
  static void RunNearestResize(const NearestResize& r, const float* from, float* to) {
    const int64_t b = r.block, out_row = r.out_width * b;
    const std::vector<int64_t>& rows = *r.rows;
    const std::vector<int64_t>& cols = *r.cols;
    for (int64_t blk = 0; blk < r.blocks; ++blk) {
      const float* src = from + blk * r.in_height * r.in_width * b;
      float* dst = to + blk * r.out_height * out_row;
      for (int64_t oh = 0; oh < r.out_height; ++oh) {
        float* d = dst + oh * out_row;
        if (oh > 0 && rows[static_cast<size_t>(oh)] == rows[static_cast<size_t>(oh - 1)]) {
          std::memcpy(d, d - out_row, static_cast<size_t>(out_row) * sizeof(float));
          continue;
        }
        const float* s = src + rows[static_cast<size_t>(oh)] * r.in_width * b;
        if (b == 16) {
          for (int64_t ow = 0; ow < r.out_width; ++ow)
            std::memcpy(d + ow * 16, s + cols[static_cast<size_t>(ow)] * 16, 16 * sizeof(float));
        } else {
          for (int64_t ow = 0; ow < r.out_width; ++ow)
            std::memcpy(d + ow * b, s + cols[static_cast<size_t>(ow)] * b,
                        static_cast<size_t>(b) * sizeof(float));
        }
      }
    }
  }

  // In chunks of lanes that stay inside one source block and one destination block (at most
  // two per block when the offsets differ), each chunk pixel by pixel.
  static void RunLaneCopy(const LaneCopy& c, const float* from, float* to) {
    const int64_t b = c.block, plane = c.pixels * b;
    for (int64_t ch = 0; ch < c.channels;) {
      const int64_t s = c.from_channel + ch, d = c.to_channel + ch;
      const int64_t n = std::min({b - s % b, b - d % b, c.channels - ch});
      const float* src = from + (s / b) * plane + s % b;
      float* dst = to + (d / b) * plane + d % b;
      for (int64_t p = 0; p < c.pixels; ++p)
        std::memcpy(dst + p * b, src + p * b, static_cast<size_t>(n) * sizeof(float));
      ch += n;
    }
    const int64_t end = c.to_channel + c.channels;
    if (!c.zero_tail || end % b == 0) return;
    float* last = to + (end / b) * plane;
    for (int64_t p = 0; p < c.pixels; ++p)
      for (int64_t l = end % b; l < b; ++l) last[p * b + l] = 0.0f;
  }

  static void RunPadCopy(const PadCopy& c, const float* from, float* to) {
    const int64_t row = c.width * c.lanes, padded_row = c.padded_width * c.lanes;
    const int64_t left = c.left * c.lanes, right = padded_row - left - row;
    for (int64_t p = 0; p < c.planes; ++p) {
      const float* src = from + p * c.height * row;
      float* dst = to + p * c.padded_height * padded_row;
      std::fill(dst, dst + c.top * padded_row, 0.0f);
      for (int64_t r = 0; r < c.height; ++r) {
        float* out = dst + (c.top + r) * padded_row;
        std::fill(out, out + left, 0.0f);
        std::memcpy(out + left, src + r * row, static_cast<size_t>(row) * sizeof(float));
        std::fill(out + left + row, out + left + row + right, 0.0f);
      }
      const int64_t below = c.padded_height - c.top - c.height;
      float* bottom = dst + (c.top + c.height) * padded_row;
      std::fill(bottom, bottom + below * padded_row, 0.0f);
    }
  }

  static void RunAfter(const Call& call, char* at, const char* addend) {
    float* p = reinterpret_cast<float*>(at);
    const int64_t n = call.after_blocks * call.after_pixels * call.block;
    if (addend != nullptr) {
      linalg::ApplyEltwiseRange(call.before_sum, p, n);
      const float* z = reinterpret_cast<const float*>(addend);
      for (int64_t i = 0; i < n; ++i) p[i] += z[i];
    }
    linalg::ApplyEltwiseRange(call.after, p, n);
    if (call.real_lanes == 0) return;
    float* last = p + (call.after_blocks - 1) * call.after_pixels * call.block;
    for (int64_t i = 0; i < call.after_pixels; ++i)
      for (int l = call.real_lanes; l < call.block; ++l) last[i * call.block + l] = 0.0f;
  }

  void RunStep(const Step& step, RunState& state) const {
    if (step.omp_threads > 1) {  // oneDNN's own team, started from this thread
      linalg::OmpThreadScope team(step.omp_threads);
      for (int64_t image = 0; image < step.images; ++image) RunPart(step.parts[0], image, state);
      return;
    }
    const int64_t parts = static_cast<int64_t>(step.parts.size());
    const int64_t jobs = parts * step.images;
    if (jobs == 1) {
      RunPart(step.parts[0], 0, state);
      return;
    }
    ParallelFor(p_.threads, jobs, 1, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j)
        RunPart(step.parts[static_cast<size_t>(j % parts)], j / parts, state);
    });
  }

  std::unique_ptr<RunState> TakeState() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<RunState> s = std::move(free_.back());
        free_.pop_back();
        return s;
      }
    }
    return std::make_unique<RunState>(static_cast<size_t>(p_.calls * p_.images), p_.inputs.size(),
                                      p_.output_dims.size());
  }
  void GiveState(std::unique_ptr<RunState> state) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(state));
  }

  Program p_;
  std::shared_ptr<ArenaPool> arenas_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RunState>> free_;
};

class BlockedKernel : public ep::Kernel {
 public:
  BlockedKernel(GroupDesc desc, const BlockedOptions& options, std::optional<Program> program)
      : desc_(std::move(desc)), options_(options) {
    if (program) fixed_ = std::make_shared<ProgramRunner>(std::move(*program), arenas_);
    if (!options_.weights) options_.weights = std::make_shared<WeightCache>();
  }

  void Compute(ep::KernelContext& ctx) override {
    if (fixed_) {
      fixed_->Run(ctx);
      return;
    }
    Runner(ctx)->Run(ctx);
  }

 private:
  // Shapes known only at run time: the program for these input shapes, compiled on first use
  // (its oneDNN primitives are made for these shapes: about 1 ms per convolution). The programs
  // are kept, least recently used dropped first, up to kMaxPrograms (a run still using a dropped
  // one keeps it alive); their runs share the kernel's arenas (ArenaPool). An OCR recognizer fed
  // text lines of 40 widths recompiled on every run with 16 kept, 2.7x its run time.
  std::shared_ptr<ProgramRunner> Runner(ep::KernelContext& ctx) {
    static constexpr size_t kMaxPrograms = 128;
    SmallVector<int64_t, 32> key;
    for (const GroupValue& v : desc_.values) {
      if (v.input < 0 || v.constant) continue;
      ep::ConstTensor x = ctx.input(static_cast<size_t>(v.input));
      NXRT_EP_ENFORCE(x.type() == NX_TYPE_FLOAT && x.rank() == 4,
                      "blocked group: input '" + v.name + "' must be a 4-D float tensor");
      key.push_back(v.input);
      for (int64_t d : x.shape()) key.push_back(d);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = programs_.begin(); it != programs_.end(); ++it) {
      if (!std::equal(it->first.begin(), it->first.end(), key.begin(), key.end())) continue;
      std::shared_ptr<ProgramRunner> runner = it->second;
      std::rotate(it, it + 1, programs_.end());  // now the most recently used
      return runner;
    }
    std::vector<std::vector<int64_t>> dims(desc_.num_inputs);
    for (size_t i = 0; i < key.size(); i += 5)
      dims[static_cast<size_t>(key[i])] = {key[i + 1], key[i + 2], key[i + 3], key[i + 4]};
    auto runner = std::make_shared<ProgramRunner>(CompileProgram(desc_, dims, options_), arenas_);
    programs_.emplace_back(key.to_vector(), runner);
    while (programs_.size() > kMaxPrograms) programs_.erase(programs_.begin());
    return runner;
  }

  GroupDesc desc_;
  BlockedOptions options_;
  std::shared_ptr<ArenaPool> arenas_ = std::make_shared<ArenaPool>();
  std::shared_ptr<ProgramRunner> fixed_;
  std::mutex mu_;
  std::vector<std::pair<std::vector<int64_t>, std::shared_ptr<ProgramRunner>>> programs_;
};

}  // namespace

std::unique_ptr<ep::Kernel> MakeBlockedKernel(GroupDesc desc, const BlockedOptions& options,
                                              std::optional<Program> program) {
  return std::make_unique<BlockedKernel>(std::move(desc), options, std::move(program));
}

}  // namespace nxrt::cpu::blocked
