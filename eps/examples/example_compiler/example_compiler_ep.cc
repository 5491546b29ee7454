// ExampleCompiler: a compile-based EP (plugin ABI version 6), written with the C++ SDK. It
// stands for an NPU whose toolchain compiles whole subgraphs instead of running one kernel per
// node, and shows the three things such an EP does:
//
//   - GetCapability claims groups (Capability_AddFusedGroup), not single nodes: here every
//     connected set of supported element-wise float nodes. The EP runs on one or more virtual
//     NPU "tiles" (one per virtual-device request) and spreads its groups over them, declaring
//     the tile of each group (NxFusionOptions::hardware_device) so the assignment report and
//     the profile say which tile runs what. The host rejects a group that is not convex (a
//     path leaves it and comes back); this example does not split such groups itself, a
//     production EP would.
//   - CompileGroup turns the group's graph view into a program: one pass over the elements
//     evaluating every node per block, instead of one pass (and one tensor) per node. The
//     compiler takes static shapes only; a group with a dynamic shape fails to compile, and the
//     host gives its nodes to the next EP ("compile_failed" in the report).
//   - Compiled-model contexts: a node "EPContext" (domain com.microsoft) whose `source` is
//     "ExampleCompiler" carries a compiled program in `ep_cache_context`; the EP claims it alone
//     and restores the program instead of compiling. ExampleCompiler_LastProgram (a test hook)
//     gives the text of the last program compiled.
//   - Ahead-of-time compilation (ABI version 9): ExportCompiledGroup hands the host the program
//     text and a compatibility string naming the tile's arch ("ExampleCompiler;version=1;
//     format=nxc1;arch=a1"); the host saves both (NxEnv_CompileModel). CheckCompatibility says
//     whether a saved program suits the tiles at hand (same arch: optimal; another arch: needs
//     recompilation; another format or major version: unsupported) and LoadCompiledGroup
//     rebuilds the kernel from the saved text without compiling. Virtual tiles take an "arch"
//     option (default "a1"). Test hooks count CompileGroup and LoadCompiledGroup calls.
//
// Supported ops (float32): Add, Sub, Mul, Div (same shapes, or one side a single element),
// Relu, Sigmoid, Tanh, Neg, Exp, Abs.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace example_compiler {
namespace {

using namespace nxrt::ep;

constexpr const char* kEpName = "ExampleCompiler";
constexpr const char* kVendor = "nxrt examples";
constexpr const char* kProgramMagic = "nxc1";

// ---- The program ---------------------------------------------------------------------------

enum class Op { kAdd, kSub, kMul, kDiv, kRelu, kSigmoid, kTanh, kNeg, kExp, kAbs };
struct OpName {
  const char* onnx;
  const char* text;
  Op op;
  int arity;
};
constexpr OpName kOps[] = {
    {"Add", "add", Op::kAdd, 2},    {"Sub", "sub", Op::kSub, 2},
    {"Mul", "mul", Op::kMul, 2},    {"Div", "div", Op::kDiv, 2},
    {"Relu", "relu", Op::kRelu, 1}, {"Sigmoid", "sigmoid", Op::kSigmoid, 1},
    {"Tanh", "tanh", Op::kTanh, 1}, {"Neg", "neg", Op::kNeg, 1},
    {"Exp", "exp", Op::kExp, 1},    {"Abs", "abs", Op::kAbs, 1},
};

const OpName* FindOnnxOp(const std::string& op_type) {
  for (const OpName& o : kOps)
    if (op_type == o.onnx) return &o;
  return nullptr;
}
const OpName* FindTextOp(const std::string& text) {
  for (const OpName& o : kOps)
    if (text == o.text) return &o;
  return nullptr;
}
const OpName& NameOf(Op op) {
  for (const OpName& o : kOps)
    if (o.op == op) return o;
  return kOps[0];
}

// Registers 0..inputs-1 hold the inputs; instruction i writes register inputs + i. A register
// is "scalar" (one element, broadcast) or holds `elements` values.
struct Instr {
  Op op;
  int a = -1, b = -1;
};
struct Program {
  std::vector<int64_t> shape;  // of every non-scalar value
  std::vector<char> input_scalar;
  std::vector<Instr> code;
  std::vector<int> outputs;  // registers
  std::vector<char> scalar;  // per register

  size_t registers() const { return input_scalar.size() + code.size(); }
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Fills `scalar` and checks every register reference; throws on a malformed program.
  void Check() {
    scalar.assign(input_scalar.begin(), input_scalar.end());
    for (size_t i = 0; i < code.size(); ++i) {
      const Instr& in = code[i];
      const int defined = static_cast<int>(input_scalar.size() + i);
      const int arity = NameOf(in.op).arity;
      if (in.a < 0 || in.a >= defined || (arity == 2 && (in.b < 0 || in.b >= defined)))
        Fail(NX_INVALID_MODEL, "ExampleCompiler program: instruction " + std::to_string(i) +
                                   " reads an undefined register");
      scalar.push_back(scalar[static_cast<size_t>(in.a)] &&
                       (arity == 1 || scalar[static_cast<size_t>(in.b)]));
    }
    if (outputs.empty()) Fail(NX_INVALID_MODEL, "ExampleCompiler program: no outputs");
    for (int r : outputs)
      if (r < 0 || static_cast<size_t>(r) >= registers())
        Fail(NX_INVALID_MODEL, "ExampleCompiler program: output register out of range");
    for (int64_t d : shape)
      if (d < 0 || d > (int64_t{1} << 31))
        Fail(NX_INVALID_MODEL, "ExampleCompiler program: bad dimension");
  }
};

// "nxc1;shape=2,3;in=0,1;code=add:0:1,relu:2;out=3" (in: 1 = scalar input).
std::string Serialize(const Program& p) {
  std::ostringstream s;
  auto list = [&](const auto& v) {
    for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << static_cast<int64_t>(v[i]);
  };
  s << kProgramMagic << ";shape=";
  list(p.shape);
  s << ";in=";
  list(p.input_scalar);
  s << ";code=";
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instr& in = p.code[i];
    s << (i ? "," : "") << NameOf(in.op).text << ":" << in.a;
    if (NameOf(in.op).arity == 2) s << ":" << in.b;
  }
  s << ";out=";
  list(p.outputs);
  return s.str();
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

int64_t ParseInt(const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    Fail(NX_INVALID_MODEL, "ExampleCompiler program: '" + text + "' is not a number");
  return v;
}

Program Parse(const std::string& text) {
  const std::vector<std::string> fields = Split(text, ';');
  if (fields.empty() || fields[0] != kProgramMagic)
    Fail(NX_INVALID_MODEL, "ExampleCompiler: the context is not an ExampleCompiler program");
  std::map<std::string, std::string> kv;
  for (size_t i = 1; i < fields.size(); ++i) {
    const size_t eq = fields[i].find('=');
    if (eq == std::string::npos)
      Fail(NX_INVALID_MODEL, "ExampleCompiler program: bad field '" + fields[i] + "'");
    kv[fields[i].substr(0, eq)] = fields[i].substr(eq + 1);
  }
  for (const char* key : {"shape", "in", "code", "out"})
    if (!kv.count(key))
      Fail(NX_INVALID_MODEL, std::string("ExampleCompiler program: missing '") + key + "'");
  Program p;
  for (const std::string& d : Split(kv["shape"], ',')) p.shape.push_back(ParseInt(d));
  for (const std::string& f : Split(kv["in"], ','))
    p.input_scalar.push_back(ParseInt(f) != 0 ? 1 : 0);
  for (const std::string& ins : Split(kv["code"], ',')) {
    const std::vector<std::string> parts = Split(ins, ':');
    const OpName* op = parts.empty() ? nullptr : FindTextOp(parts[0]);
    if (op == nullptr || parts.size() != static_cast<size_t>(1 + op->arity))
      Fail(NX_INVALID_MODEL, "ExampleCompiler program: bad instruction '" + ins + "'");
    Instr in{op->op};
    in.a = static_cast<int>(ParseInt(parts[1]));
    if (op->arity == 2) in.b = static_cast<int>(ParseInt(parts[2]));
    p.code.push_back(in);
  }
  for (const std::string& r : Split(kv["out"], ','))
    p.outputs.push_back(static_cast<int>(ParseInt(r)));
  p.Check();
  return p;
}

std::mutex g_last_mu;
std::string g_last_program;

// ---- The compiled kernel: one pass over the elements, block by block -----------------------

class ProgramKernel : public Kernel {
 public:
  ProgramKernel(Program program, std::string compatibility)
      : p_(std::move(program)), text_(Serialize(p_)), compatibility_(std::move(compatibility)) {}
  // What ExportCompiledGroup saves: the program's text and what it needs.
  const std::string& text() const { return text_; }
  const std::string& compatibility() const { return compatibility_; }

  void Compute(KernelContext& ctx) override {
    const size_t inputs = p_.input_scalar.size();
    if (ctx.input_count() != inputs || ctx.output_count() != p_.outputs.size())
      Fail(NX_INVALID_ARGUMENT, "ExampleCompiler: the fused node does not match its program");
    const int64_t n = p_.elements();
    std::vector<const float*> in(inputs);
    for (size_t i = 0; i < inputs; ++i) {
      ConstTensor t = ctx.input(i);
      const int64_t want = p_.input_scalar[i] ? 1 : n;
      if (t.type() != NX_TYPE_FLOAT || static_cast<int64_t>(t.size()) != want)
        Fail(NX_INVALID_ARGUMENT, "ExampleCompiler: input " + std::to_string(i) +
                                      " does not have the shape the program was compiled for");
      in[i] = t.data<float>();
    }
    std::vector<float*> out(p_.outputs.size());
    for (size_t o = 0; o < out.size(); ++o) {
      const bool scalar = p_.scalar[static_cast<size_t>(p_.outputs[o])];
      std::vector<int64_t> dims = scalar ? std::vector<int64_t>{} : p_.shape;
      if (scalar && !p_.shape.empty()) dims.assign(p_.shape.size(), 1);
      out[o] = ctx.output(o, std::span<const int64_t>(dims), NX_TYPE_FLOAT).data<float>();
    }
    const uint64_t begin = ctx.IsProfiling() ? ProfilerNowNs() : 0;
    constexpr int64_t kBlock = 512;
    std::vector<float> regs(p_.registers() * kBlock);
    for (int64_t start = 0; start < n; start += kBlock) {
      const int64_t len = std::min(kBlock, n - start);
      auto reg = [&](size_t r) { return regs.data() + r * kBlock; };
      for (size_t i = 0; i < inputs; ++i) {
        if (p_.input_scalar[i])
          std::fill(reg(i), reg(i) + len, in[i][0]);
        else
          std::copy(in[i] + start, in[i] + start + len, reg(i));
      }
      for (size_t k = 0; k < p_.code.size(); ++k) Run(p_.code[k], reg(inputs + k), reg, len);
      for (size_t o = 0; o < out.size(); ++o) {
        const float* r = reg(static_cast<size_t>(p_.outputs[o]));
        if (p_.scalar[static_cast<size_t>(p_.outputs[o])]) {
          if (start == 0) out[o][0] = r[0];
        } else {
          std::copy(r, r + len, out[o] + start);
        }
      }
    }
    if (ctx.IsProfiling())
      ctx.AddProfileEvent(
          "ExampleCompiler program", begin, ProfilerNowNs(),
          {{"instructions", std::to_string(p_.code.size())}, {"elements", std::to_string(n)}});
  }

 private:
  template <class Reg>
  static void Run(const Instr& in, float* dst, Reg reg, int64_t len) {
    const float* a = reg(static_cast<size_t>(in.a));
    const float* b = in.b >= 0 ? reg(static_cast<size_t>(in.b)) : nullptr;
    for (int64_t i = 0; i < len; ++i) {
      const float x = a[i];
      switch (in.op) {
        case Op::kAdd:
          dst[i] = x + b[i];
          break;
        case Op::kSub:
          dst[i] = x - b[i];
          break;
        case Op::kMul:
          dst[i] = x * b[i];
          break;
        case Op::kDiv:
          dst[i] = x / b[i];
          break;
        case Op::kRelu:
          dst[i] = x > 0 ? x : 0;
          break;
        case Op::kSigmoid:
          dst[i] = 1.0f / (1.0f + std::exp(-x));
          break;
        case Op::kTanh:
          dst[i] = std::tanh(x);
          break;
        case Op::kNeg:
          dst[i] = -x;
          break;
        case Op::kExp:
          dst[i] = std::exp(x);
          break;
        case Op::kAbs:
          dst[i] = std::fabs(x);
          break;
      }
    }
  }

  Program p_;
  std::string text_, compatibility_;
};

// ---- Compiling a group's graph view ----------------------------------------------------------

int64_t ElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string ShapeText(const std::optional<std::vector<int64_t>>& shape) {
  if (!shape) return "unknown";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i)
    s += (i ? "," : "") + ((*shape)[i] < 0 ? std::string("?") : std::to_string((*shape)[i]));
  return s + "]";
}

// The static shape of a graph value, or a compile error.
std::vector<int64_t> StaticShape(const ValueInfoView& v) {
  const auto shape = v.shape();
  const bool known =
      shape && std::none_of(shape->begin(), shape->end(), [](int64_t d) { return d < 0; });
  if (!known)
    Fail(NX_NOT_IMPLEMENTED, std::string("ExampleCompiler compiles static shapes only; '") +
                                 v.name() + "' has shape " + ShapeText(shape));
  return *shape;
}

Program CompileView(const NxGraph* graph) {
  Program p;
  std::map<std::string, int> reg;  // value name -> register
  bool have_shape = false;
  auto note_shape = [&](const std::vector<int64_t>& dims, const char* name) {
    if (ElementCount(dims) == 1) return true;  // scalar, broadcast
    if (!have_shape) {
      p.shape = dims;
      have_shape = true;
    } else if (dims != p.shape) {
      Fail(NX_NOT_IMPLEMENTED, std::string("ExampleCompiler: '") + name +
                                   "' has a different shape than the rest of the group");
    }
    return false;
  };
  for (size_t i = 0, n = Host().Graph_GetInputCount(graph); i < n; ++i) {
    ValueInfoView v(Host().Graph_GetInput(graph, i));
    if (v.type() != NX_TYPE_FLOAT) Fail(NX_NOT_IMPLEMENTED, "ExampleCompiler: float32 only");
    p.input_scalar.push_back(note_shape(StaticShape(v), v.name()) ? 1 : 0);
    reg[v.name()] = static_cast<int>(i);
  }
  const size_t inputs = p.input_scalar.size();
  for (size_t i = 0, n = Host().Graph_GetNodeCount(graph); i < n; ++i) {
    NodeView node(Host().Graph_GetNode(graph, i));
    const OpName* op = FindOnnxOp(node.op_type());
    if (op == nullptr || !node.domain().empty() ||
        node.input_count() != static_cast<size_t>(op->arity) || node.output_count() != 1)
      Fail(NX_NOT_IMPLEMENTED, "ExampleCompiler cannot compile " + node.describe());
    Instr in{op->op};
    auto operand = [&](size_t k) {
      auto it = reg.find(node.input(k).name());
      if (it == reg.end()) Fail(NX_INVALID_MODEL, "ExampleCompiler: unknown value in the group");
      return it->second;
    };
    in.a = operand(0);
    if (op->arity == 2) in.b = operand(1);
    reg[node.output(0).name()] = static_cast<int>(inputs + p.code.size());
    p.code.push_back(in);
  }
  // Outputs take the shape of the inputs (every op is element-wise); a declared shape must agree.
  auto declared = [](const ValueInfoView& v) {
    const auto shape = v.shape();
    if (shape && std::none_of(shape->begin(), shape->end(), [](int64_t d) { return d < 0; }))
      return shape;
    return std::optional<std::vector<int64_t>>();
  };
  for (size_t i = 0, n = Host().Graph_GetOutputCount(graph); i < n; ++i) {
    ValueInfoView v(Host().Graph_GetOutput(graph, i));
    if (const auto shape = declared(v)) note_shape(*shape, v.name());
    p.outputs.push_back(reg.at(v.name()));
  }
  p.Check();
  for (size_t i = 0, n = Host().Graph_GetOutputCount(graph); i < n; ++i) {
    ValueInfoView v(Host().Graph_GetOutput(graph, i));
    const auto shape = declared(v);
    if (!shape) continue;
    const bool scalar_value = ElementCount(*shape) == 1;
    if (scalar_value != static_cast<bool>(p.scalar[static_cast<size_t>(p.outputs[i])]) &&
        ElementCount(p.shape) != 1)
      Fail(NX_NOT_IMPLEMENTED, std::string("ExampleCompiler: output '") + v.name() +
                                   "' broadcasts in a way the program cannot express");
  }
  return p;
}

bool IsOwnContext(const NodeView& node) {
  return node.op_type() == "EPContext" && node.domain() == "com.microsoft" &&
         node.attr_string("source", "") == kEpName;
}

// ---- EP ------------------------------------------------------------------------------------

struct CompilerEp {
  NxEp base;                                     // first member: the host sees an NxEp*
  std::vector<const NxHardwareDevice*> devices;  // the tiles this session runs on
  std::string compatibility;                     // what its programs need (the first tile's arch)
};

constexpr int kMajorVersion = 1;

// "ExampleCompiler;version=1;format=nxc1;arch=a1"
std::string CompatibilityFor(const std::string& arch) {
  return std::string(kEpName) + ";version=" + std::to_string(kMajorVersion) +
         ";format=" + kProgramMagic + ";arch=" + arch;
}

std::atomic<size_t> g_compile_calls{0}, g_load_calls{0};

const char* EpGetName(const NxEp*) { return kEpName; }

// Whether the compiler can take `node`: a supported op on float32 whose operands have the same
// static shape or a single element (shapes may still be unknown; CompileGroup decides then).
bool Supported(const NodeView& node) {
  const OpName* op = FindOnnxOp(node.op_type());
  if (op == nullptr || !node.domain().empty() || node.output_count() != 1 ||
      node.input_count() != static_cast<size_t>(op->arity))
    return false;
  for (size_t i = 0; i < node.input_count(); ++i)
    if (!node.has_input(i) || node.input_type(i) != NX_TYPE_FLOAT ||
        node.input(i).kind() != NX_VALUE_TENSOR)
      return false;
  if (op->arity == 2) {
    const auto a = node.input(0).shape(), b = node.input(1).shape();
    const auto fixed = [](const auto& s) {
      return s && std::none_of(s->begin(), s->end(), [](int64_t d) { return d < 0; });
    };
    if (fixed(a) && fixed(b) && *a != *b && ElementCount(*a) != 1 && ElementCount(*b) != 1)
      return false;  // real broadcasting: not for this compiler
  }
  return true;
}

NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  auto* ep = reinterpret_cast<CompilerEp*>(self);
  return Guard([&] {
    const size_t count = Host().Graph_GetNodeCount(graph);
    size_t next_tile = 0;  // groups go to the tiles in turn
    auto tile = [&] { return ep->devices[next_tile++ % ep->devices.size()]; };
    std::vector<NodeView> nodes;
    for (size_t i = 0; i < count; ++i) nodes.emplace_back(Host().Graph_GetNode(graph, i));
    // Compiled contexts first: each is a group of its own.
    std::vector<int> component(count, -1);
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < count; ++i) {
      if (IsOwnContext(nodes[i])) {
        const NxNode* one[] = {nodes[i].handle()};
        AddFusedGroup(capability, one, tile());
        continue;
      }
      if (!Supported(nodes[i])) continue;
      component[i] = static_cast<int>(i);
      for (size_t o = 0; o < nodes[i].output_count(); ++o) producer[nodes[i].output(o).name()] = i;
    }
    // Connected sets of supported nodes (union-find over the values between them).
    auto find = [&](int x) {
      while (component[static_cast<size_t>(x)] != x) x = component[static_cast<size_t>(x)];
      return x;
    };
    for (size_t i = 0; i < count; ++i) {
      if (component[i] < 0) continue;
      for (size_t k = 0; k < nodes[i].input_count(); ++k) {
        auto it = producer.find(nodes[i].input(k).name());
        if (it == producer.end() || component[it->second] < 0) continue;
        component[static_cast<size_t>(find(static_cast<int>(it->second)))] =
            find(static_cast<int>(i));
      }
    }
    std::map<int, std::vector<const NxNode*>> groups;
    std::vector<int> order;
    for (size_t i = 0; i < count; ++i) {
      if (component[i] < 0) continue;
      const int root = find(static_cast<int>(i));
      if (!groups.count(root)) order.push_back(root);
      groups[root].push_back(nodes[i].handle());
    }
    for (int root : order) AddFusedGroup(capability, groups[root], tile());
  });
}

// A saved program for the EPContext node `node`: parsed, and its inputs and outputs counted
// against the node's.
Program RestoreProgram(const NodeView& node, const std::string& text) {
  Program program = Parse(text);
  if (program.input_scalar.size() != node.input_count() ||
      program.outputs.size() != node.output_count())
    Fail(NX_INVALID_MODEL, "ExampleCompiler: the saved program has " +
                               std::to_string(program.input_scalar.size()) + " inputs and " +
                               std::to_string(program.outputs.size()) + " outputs, " +
                               node.describe() + " has " + std::to_string(node.input_count()) +
                               " and " + std::to_string(node.output_count()));
  return program;
}

// The kernel of a program (remembered for the test hook ExampleCompiler_LastProgram).
NxKernel* ProgramKernelOf(Program program, const CompilerEp& ep) {
  {
    std::lock_guard<std::mutex> lock(g_last_mu);
    g_last_program = Serialize(program);
  }
  return BoxKernel(std::make_unique<ProgramKernel>(std::move(program), ep.compatibility));
}

NxStatus* EpCompileGroup(NxEp* self, const NxGraph* group, const char*, NxKernel** kernel) {
  auto* ep = reinterpret_cast<CompilerEp*>(self);
  return Guard([&] {
    g_compile_calls.fetch_add(1);
    // A context claimed by a host older than ABI 9 (which has no LoadCompiledGroup) comes here.
    if (Host().Graph_GetNodeCount(group) == 1 &&
        IsOwnContext(NodeView(Host().Graph_GetNode(group, 0)))) {
      NodeView node(Host().Graph_GetNode(group, 0));
      *kernel =
          ProgramKernelOf(RestoreProgram(node, node.attr_string("ep_cache_context", "")), *ep);
    } else {
      *kernel = ProgramKernelOf(CompileView(group), *ep);
    }
  });
}

NxStatus* EpExportCompiledGroup(NxEp*, const NxKernel* kernel, NxCompiledGroupExport* out) {
  return Guard([&] {
    const auto* program = dynamic_cast<const ProgramKernel*>(UnboxKernel(kernel));
    if (program == nullptr) Fail(NX_INVALID_ARGUMENT, "ExampleCompiler: not one of its kernels");
    out->payload = program->text().data();
    out->payload_size = program->text().size();
    out->compatibility = program->compatibility().c_str();
  });
}

NxStatus* EpLoadCompiledGroup(NxEp* self, const NxGraph* context, const void* payload,
                              size_t payload_size, NxKernel** kernel) {
  auto* ep = reinterpret_cast<CompilerEp*>(self);
  return Guard([&] {
    g_load_calls.fetch_add(1);
    if (Host().Graph_GetNodeCount(context) != 1)
      Fail(NX_INVALID_ARGUMENT, "ExampleCompiler: a saved group is one EPContext node");
    NodeView node(Host().Graph_GetNode(context, 0));
    const std::string text(static_cast<const char*>(payload), payload_size);
    *kernel = ProgramKernelOf(RestoreProgram(node, text), *ep);
  });
}

// ---- Factory -------------------------------------------------------------------------------

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return kVendor; }
const char* FactoryGetVersion(const NxEpFactory*) { return "1.0.0"; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return 0; }

// The factory, with the number of tiles it created (each gets its own device id).
struct CompilerFactory {
  NxEpFactory base;  // first member: the host sees an NxEpFactory*
  uint32_t tiles = 0;
};

// One virtual NPU tile per request ({"tile": name}, optional), device ids 0x100, 0x101, ...
NxStatus* FactoryCreateVirtualDevices2(NxEpFactory* self, NxDeviceType type,
                                       const NxKeyValue2* const* options, size_t num_options,
                                       NxVirtualDeviceList* created) {
  auto* factory = reinterpret_cast<CompilerFactory*>(self);
  return Guard([&] {
    if (type != NX_DEVICE_NPU) return;
    for (size_t i = 0; i < num_options; ++i) {
      const std::string key = options[i]->key ? options[i]->key : "";
      if (key != "tile" && key != "arch")
        Fail(NX_INVALID_ARGUMENT, std::string(kEpName) + ": unknown virtual NPU option '" + key +
                                      "' (known: tile, arch)");
    }
    const std::string tile = FindKeyValue(options, num_options, "tile").value_or("0");
    const std::string arch = FindKeyValue(options, num_options, "arch").value_or("a1");
    if (arch.empty() || arch.find_first_of(";=") != std::string::npos)
      Fail(NX_INVALID_ARGUMENT, std::string(kEpName) + ": arch '" + arch + "' is not a name");
    AddVirtualDevice(created, NX_DEVICE_NPU, kVendor, 0, 0x100 + factory->tiles,
                     {{"tile", tile}, {"arch", arch}});
    ++factory->tiles;
  });
}

NxStatus* FactoryGetSupportedDevices(NxEpFactory*, const NxHardwareDevice* const* devices,
                                     size_t num_devices, NxEpDeviceList* supported) {
  return Guard([&] {
    for (size_t i = 0; i < num_devices; ++i) {
      HardwareDeviceView device(devices[i]);
      if (device.type() != NX_DEVICE_NPU || !device.is_virtual_from(kEpName)) continue;
      AddEpDevice(supported, device.handle(),
                  {{"tile", device.metadata_or("tile", "0")},
                   {"arch", device.metadata_or("arch", "a1")},
                   {"performance_hint", "40"},
                   {"power_hint", "2"}});
    }
  });
}

NxStatus* FactoryCreateEp(NxEpFactory*, const NxEpCreateArgs* args, NxEp** out) {
  return Guard([&] {
    RequireHostVersion(6, "ExampleCompiler");
    std::vector<EpDeviceView> devices = EpDevicesOf(args);
    if (devices.empty())
      Fail(NX_INVALID_ARGUMENT, std::string(kEpName) +
                                    " runs only on virtual NPU tiles: register the library with "
                                    "a virtual NPU request per tile");
    auto ep = std::make_unique<CompilerEp>();  // value-initialised: unset members are NULL
    for (const EpDeviceView& d : devices) ep->devices.push_back(d.hardware().handle());
    ep->compatibility = CompatibilityFor(devices[0].hardware().metadata_or("arch", "a1"));
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.CompileGroup = &EpCompileGroup;
    ep->base.ExportCompiledGroup = &EpExportCompiledGroup;
    ep->base.LoadCompiledGroup = &EpLoadCompiledGroup;
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<CompilerEp*>(ep); }

// "key=value" fields of a compatibility string after the EP's name.
std::map<std::string, std::string> Fields(const std::string& text) {
  std::map<std::string, std::string> out;
  const std::vector<std::string> parts = Split(text, ';');
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq != std::string::npos) out[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
  }
  return out;
}

NxStatus* FactoryCheckCompatibility(NxEpFactory*, const NxHardwareDevice* const* devices,
                                    size_t num_devices, const char* compatibility,
                                    NxCompatibility* result) {
  return Guard([&] {
    const std::string text = compatibility ? compatibility : "";
    const std::vector<std::string> parts = Split(text, ';');
    std::map<std::string, std::string> f = Fields(text);
    if (parts.empty() || parts[0] != kEpName || f["version"] != std::to_string(kMajorVersion) ||
        f["format"] != kProgramMagic || f["arch"].empty()) {
      *result = NX_COMPATIBILITY_UNSUPPORTED;
      return;
    }
    *result = NX_COMPATIBILITY_OPTIMAL;
    for (size_t i = 0; i < num_devices; ++i) {
      if (HardwareDeviceView(devices[i]).metadata_or("arch", "a1") != f["arch"])
        *result = NX_COMPATIBILITY_NEEDS_RECOMPILATION;  // another NPU generation
    }
  });
}

}  // namespace
}  // namespace example_compiler

// ---- Entry points ----------------------------------------------------------------------------

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  using namespace example_compiler;
  if (host == nullptr) return nullptr;
  if (host->version < 6)
    return host->CreateStatus(NX_INVALID_PLUGIN, "ExampleCompiler needs plugin ABI 6");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  auto* compiler = new CompilerFactory{};
  NxEpFactory* f = &compiler->base;
  f->version = NXRT_EP_API_VERSION;
  f->GetName = &FactoryGetName;
  f->GetVendor = &FactoryGetVendor;
  f->GetVersion = &FactoryGetVersion;
  f->GetVendorId = &FactoryGetVendorId;
  f->CreateEp = &FactoryCreateEp;
  f->ReleaseEp = &FactoryReleaseEp;
  f->CreateVirtualDevices2 = &FactoryCreateVirtualDevices2;
  f->GetSupportedDevices = &FactoryGetSupportedDevices;
  f->CheckCompatibility = &FactoryCheckCompatibility;
  factories[0] = f;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  delete reinterpret_cast<example_compiler::CompilerFactory*>(factory);
}

// Test hooks (not part of the EP ABI; found with dlsym): CompileGroup and LoadCompiledGroup calls
// in this process.
extern "C" NXRT_EXPORT size_t ExampleCompiler_CompileCalls() {
  return example_compiler::g_compile_calls.load();
}
extern "C" NXRT_EXPORT size_t ExampleCompiler_LoadCalls() {
  return example_compiler::g_load_calls.load();
}

// Test hook (not part of the EP ABI; found with dlsym): the text of the last program compiled
// or restored in this process ("" before the first), e.g. to write an EPContext node with.
extern "C" NXRT_EXPORT const char* ExampleCompiler_LastProgram() {
  std::lock_guard<std::mutex> lock(example_compiler::g_last_mu);
  return example_compiler::g_last_program.c_str();
}
