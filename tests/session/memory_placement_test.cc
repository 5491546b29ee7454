// Placement across memories with the SimDevice example EP (its own guarded memory): mixed
// graphs give the CPU-alone outputs, and the copies the runtime inserts equal the boundary
// crossings, counted here independently from which EP takes each op.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nxrt/nxrt_ep_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nxrt/nxrt.hpp>
#include <random>
#include <set>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

std::string SimLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so"; }

// Tensors SimDevice copied into, out of or within its memory (its test hook; the library stays
// loaded while an env has it registered).
size_t SimCopies() {
  void* h = dlopen(SimLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return 0;
  auto* fn = reinterpret_cast<size_t (*)()>(dlsym(h, "SimDevice_Copies"));
  dlclose(h);
  return fn ? fn() : 0;
}

const std::set<std::string> kSimOps = {"Add", "Sub", "Mul", "Relu", "MatMul", "Reshape"};

// Boundary crossings of a graph whose node i runs on SimDevice iff its op is in kSimOps (float
// only): a (value, memory) pair each time a value is read in a memory other than its own, once
// per pair; initializers do not count (uploaded once at set-up); graph inputs start on the host
// and graph outputs end there.
int ExpectedCopies(const onnx::GraphProto& g) {
  std::map<std::string, bool> on_device;  // value -> lives in device memory
  std::set<std::string> constants;
  for (const auto& t : g.initializer()) constants.insert(t.name());
  std::set<std::pair<std::string, bool>> crossings;
  for (const auto& n : g.node()) {
    const bool dev = kSimOps.count(n.op_type()) > 0;
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& v = n.input(i);
      if (v.empty() || constants.count(v)) continue;
      const bool need_dev = dev && !(n.op_type() == "Reshape" && i == 1);
      if (on_device[v] != need_dev) crossings.insert({v, need_dev});
    }
    for (const auto& o : n.output()) on_device[o] = dev;
  }
  int outputs = 0;
  for (const auto& o : g.output()) outputs += on_device[o.name()] ? 1 : 0;
  return static_cast<int>(crossings.size()) + outputs;
}

struct Result {
  std::vector<std::vector<float>> outputs;
  int64_t copies = 0;
  size_t sim_nodes = 0;
};

Result RunModel(nxrt::Env& env, const std::string& bytes, bool with_sim,
                const std::vector<float>& x, const std::vector<int64_t>& dims) {
  nxrt::SessionOptions opts;
  opts.SetIntraOpThreads(2);
  if (with_sim) opts.AppendEp("SimDevice");
  nxrt::Session s(env, bytes.data(), bytes.size(), &opts);
  std::vector<float> xin = x;
  auto in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, xin.data(), xin.size() * 4);
  Result r;
  for (auto& v : s.Run({"x"}, {&in}))
    r.outputs.emplace_back(v.data<float>(), v.data<float>() + v.size());
  r.copies = s.statistic("copies");
  for (size_t e = 0; e < s.ep_count(); ++e)
    if (s.ep_name(e) == "SimDevice") r.sim_nodes = s.ep_node_count(e);
  return r;
}

void ExpectSameOutputs(const Result& a, const Result& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    ASSERT_EQ(a.outputs[o].size(), b.outputs[o].size());
    for (size_t i = 0; i < a.outputs[o].size(); ++i)
      EXPECT_NEAR(a.outputs[o][i], b.outputs[o][i], 1e-5f) << o << "/" << i;
  }
}

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

class MemoryPlacement : public ::testing::Test {
 protected:
  void SetUp() override { env_.RegisterEpLibrary("sim", SimLib()); }
  nxrt::Env env_;
};

// x -> MatMul(w) -> Add(b) -> Relu -> Sigmoid (CPU) -> Mul(x) -> Reshape(shape) -> y
TEST_F(MemoryPlacement, MixedChainMatchesCpuWithCopiesAtEachBoundary) {
  onnx::ModelProto m = nxrt::test::MakeModel(
      {MakeNode("MatMul", {"x", "w"}, {"mm"}), MakeNode("Add", {"mm", "b"}, {"a"}),
       MakeNode("Relu", {"a"}, {"r"}), MakeNode("Sigmoid", {"r"}, {"s"}),
       MakeNode("Mul", {"s", "r"}, {"p"}), MakeNode("Reshape", {"p", "shape"}, {"y"})},
      {"x"}, {"y"}, {6, 4});
  auto* g = m.mutable_graph();
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {4, 4}, Random(16, 1));
  *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {4}, Random(4, 2));
  onnx::TensorProto shape;
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::INT64);
  shape.add_dims(2);
  shape.add_int64_data(3);
  shape.add_int64_data(8);
  *g->add_initializer() = shape;
  const std::string bytes = nxrt::test::Serialize(m);
  const auto x = Random(24, 3);
  Result cpu = RunModel(env_, bytes, false, x, {6, 4});
  Result mixed = RunModel(env_, bytes, true, x, {6, 4});
  ExpectSameOutputs(cpu, mixed);
  EXPECT_EQ(cpu.copies, 0);
  EXPECT_EQ(mixed.sim_nodes, 5u);
  // x up; r down (Sigmoid); s up (Mul); y down (graph output).
  EXPECT_EQ(ExpectedCopies(m.graph()), 4);
  EXPECT_EQ(mixed.copies, 4);
}

TEST_F(MemoryPlacement, RandomGraphsCopyExactlyAtBoundaries) {
  const std::vector<std::string> ops = {"Add",     "Mul",  "Sub", "Relu",
                                        "Sigmoid", "Tanh", "Neg", "Abs"};
  const std::set<std::string> binary = {"Add", "Mul", "Sub"};
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 25; ++trial) {
    std::vector<onnx::NodeProto> nodes;
    std::vector<std::string> values = {"x", "c"};
    const int count = 3 + static_cast<int>(rng() % 8);
    for (int i = 0; i < count; ++i) {
      const std::string& op = ops[rng() % ops.size()];
      std::string out = "v" + std::to_string(i);
      std::vector<std::string> in = {values[rng() % values.size()]};
      if (binary.count(op)) in.push_back(values[rng() % values.size()]);
      if (in[0] == "c" && (in.size() == 1 || in[1] == "c")) in[0] = "x";  // keep x in the picture
      nodes.push_back(MakeNode(op, in, {out}));
      values.push_back(out);
    }
    std::vector<std::string> outputs = {values.back()};
    if (values.size() > 4 && rng() % 2) outputs.push_back(values[2 + rng() % (values.size() - 3)]);
    onnx::ModelProto m = nxrt::test::MakeModel(nodes, {"x"}, outputs, {3, 5});
    *m.mutable_graph()->add_initializer() =
        nxrt::test::MakeFloatTensor("c", {3, 5}, Random(15, trial + 100));
    const std::string bytes = nxrt::test::Serialize(m);
    const auto x = Random(15, trial);
    Result cpu = RunModel(env_, bytes, false, x, {3, 5});
    Result mixed = RunModel(env_, bytes, true, x, {3, 5});
    SCOPED_TRACE("trial " + std::to_string(trial));
    ExpectSameOutputs(cpu, mixed);
    EXPECT_EQ(mixed.copies, ExpectedCopies(m.graph()));
  }
}

onnx::ModelProto AddReluModel() {
  onnx::ModelProto m = nxrt::test::MakeModel(
      {MakeNode("Add", {"x", "c"}, {"a"}), MakeNode("Relu", {"a"}, {"y"})}, {"x"}, {"y"}, {2, 8});
  *m.mutable_graph()->add_initializer() = nxrt::test::MakeFloatTensor("c", {2, 8}, Random(16, 9));
  return m;
}

TEST_F(MemoryPlacement, InputsAndOutputsCanLiveOnTheDevice) {
  const std::string bytes = nxrt::test::Serialize(AddReluModel());
  const auto x = Random(16, 5);
  const std::vector<int64_t> dims = {2, 8};
  Result cpu = RunModel(env_, bytes, false, x, dims);

  nxrt::SessionOptions opts;
  opts.AppendEp("SimDevice");
  nxrt::Session s(env_, bytes.data(), bytes.size(), &opts);
  EXPECT_EQ(s.statistic("copies"), 2);  // x up, y down (when both are on the host)
  const NxMemoryInfo* dev = env_.ep_memory("SimDevice");
  ASSERT_EQ(dev->kind, NX_MEMORY_DEVICE);
  std::vector<float> xin = x;
  auto host_x = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, xin.data(), xin.size() * 4);
  auto dev_x = nxrt::Value::InMemory(env_, dev, NX_TYPE_FLOAT, dims);
  host_x.CopyTo(env_, dev_x);
  EXPECT_EQ(dev_x.memory()->kind, NX_MEMORY_DEVICE);
  {
    std::vector<float> check(16);
    auto host_check = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, check.data(), check.size() * 4);
    dev_x.CopyTo(env_, host_check);
    for (size_t i = 0; i < 16; ++i) ASSERT_EQ(check[i], x[i]) << "round trip through device memory";
  }

  // Device input, output bound in device memory: no round trip through the host.
  std::vector<nxrt::Value> outs;
  outs.push_back(nxrt::Value::InMemory(env_, dev, NX_TYPE_FLOAT, dims));
  for (int run = 0; run < 2; ++run) s.RunInto({"x"}, {&dev_x}, {"y"}, outs);
  std::vector<float> back(16);
  auto host_y = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, back.data(), back.size() * 4);
  outs[0].CopyTo(env_, host_y);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(back[i], cpu.outputs[0][i], 1e-6f);

  // Device input, output unbound: comes back in host memory.
  auto plain = s.Run({"x"}, {&dev_x});
  EXPECT_EQ(plain[0].memory()->device_type, NX_DEVICE_CPU);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(plain[0].data<float>()[i], cpu.outputs[0][i], 1e-6f);

  // Host output bound by the caller: filled in place.
  std::vector<float> mine(16, -1.0f);
  std::vector<nxrt::Value> bound;
  bound.push_back(nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, mine.data(), mine.size() * 4));
  s.RunInto({"x"}, {&host_x}, {"y"}, bound);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(mine[i], cpu.outputs[0][i], 1e-6f);

  // A device input read by a CPU-only graph is brought to the host.
  onnx::ModelProto cpu_only =
      nxrt::test::MakeModel({MakeNode("Sigmoid", {"x"}, {"y"})}, {"x"}, {"y"}, {2, 8});
  const std::string cpu_bytes = nxrt::test::Serialize(cpu_only);
  nxrt::Session c(env_, cpu_bytes.data(), cpu_bytes.size(), &opts);
  auto sig = c.Run({"x"}, {&dev_x});
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(sig[0].data<float>()[i], 1.0f / (1.0f + std::exp(-x[i])), 1e-6f);
}

// Outputs requested in a memory without knowing their shape (NxSession_RunWithOutputMemories):
// a device output stays on the device and chains into the next run without a host round trip;
// a host-produced output is copied to the device; null asks for host memory.
TEST_F(MemoryPlacement, OutputsRequestedInAMemoryStayWhereProducedOrAreCopiedThere) {
  const std::string bytes = nxrt::test::Serialize(AddReluModel());
  const auto x = Random(16, 5);
  const std::vector<int64_t> dims = {2, 8};
  Result cpu = RunModel(env_, bytes, false, x, dims);
  const NxMemoryInfo* dev = env_.ep_memory("SimDevice");
  std::vector<float> xin = x;
  auto host_x = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, xin.data(), xin.size() * 4);

  nxrt::SessionOptions opts;
  opts.AppendEp("SimDevice");
  nxrt::Session s(env_, bytes.data(), bytes.size(), &opts);
  const size_t copies_at_start = SimCopies();
  auto dev_y = s.RunToMemories(nullptr, {"x"}, {&host_x}, {"y"}, {dev});
  EXPECT_EQ(SimCopies(), copies_at_start + 1);  // x up; y stays on the device
  ASSERT_EQ(dev_y.size(), 1u);
  EXPECT_EQ(dev_y[0].memory()->kind, NX_MEMORY_DEVICE);
  EXPECT_EQ(dev_y[0].shape(), dims);
  // Its own copy of y through the host, to compare.
  std::vector<float> back(16);
  auto host_back = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, back.data(), back.size() * 4);
  dev_y[0].CopyTo(env_, host_back);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(back[i], cpu.outputs[0][i], 1e-6f);

  // Chained: the device output feeds the next run, whose output again stays on the device; the
  // runtime copies nothing (x is already there, y is wanted there).
  const size_t copies_before = SimCopies();
  auto chained = s.RunToMemories(nullptr, {"x"}, {&dev_y[0]}, {"y"}, {dev});
  EXPECT_EQ(SimCopies(), copies_before);
  EXPECT_EQ(chained[0].memory()->kind, NX_MEMORY_DEVICE);
  chained[0].CopyTo(env_, host_back);
  const auto c = Random(16, 9);  // AddReluModel's constant
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(back[i], std::max(0.0f, cpu.outputs[0][i] + c[i]), 1e-5f);

  // Null = host memory, as a plain run.
  auto on_host = s.RunToMemories(nullptr, {"x"}, {&host_x}, {"y"}, {nullptr});
  EXPECT_EQ(on_host[0].memory()->device_type, NX_DEVICE_CPU);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(on_host[0].data<float>()[i], cpu.outputs[0][i], 1e-6f);

  // A CPU-only model's output asked for in device memory is copied there.
  onnx::ModelProto cpu_only =
      nxrt::test::MakeModel({MakeNode("Sigmoid", {"x"}, {"y"})}, {"x"}, {"y"}, {2, 8});
  const std::string cpu_bytes = nxrt::test::Serialize(cpu_only);
  nxrt::Session cpu_session(env_, cpu_bytes.data(), cpu_bytes.size());
  auto sig = cpu_session.RunToMemories(nullptr, {"x"}, {&host_x}, {"y"}, {dev});
  EXPECT_EQ(sig[0].memory()->kind, NX_MEMORY_DEVICE);
  sig[0].CopyTo(env_, host_back);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(back[i], 1.0f / (1.0f + std::exp(-x[i])), 1e-6f);

  // One memory per output, and a memory the runtime knows, or a clear error.
  EXPECT_THROW(s.RunToMemories(nullptr, {"x"}, {&host_x}, {"y"}, {}), nxrt::Exception);
  // A device type no enumerator names, stored as a C caller would (bytes, not a C++ enum value).
  NxMemoryInfo bogus{1, "Bogus", NX_DEVICE_OTHER, 0, 0, NX_MEMORY_DEVICE, 0};
  const int unknown_type = 99;
  std::memcpy(&bogus.device_type, &unknown_type, sizeof unknown_type);
  try {
    s.RunToMemories(nullptr, {"x"}, {&host_x}, {"y"}, {&bogus});
    FAIL() << "a memory of an unknown device type must be refused";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_INVALID_ARGUMENT) << e.what();
  }
}

TEST_F(MemoryPlacement, WrongBoundOutputAndLiveDeviceTensorsGiveClearErrors) {
  const std::string bytes = nxrt::test::Serialize(AddReluModel());
  nxrt::SessionOptions opts;
  opts.AppendEp("SimDevice");
  std::vector<float> xin(16, 1.0f);
  const int64_t dims[] = {2, 8};
  const int64_t wrong[] = {4, 4};
  auto x = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, xin.data(), 64);
  {
    nxrt::Session s(env_, bytes.data(), bytes.size(), &opts);
    std::vector<nxrt::Value> outs;
    outs.push_back(nxrt::Value::InMemory(env_, env_.ep_memory("SimDevice"), NX_TYPE_FLOAT, wrong));
    try {
      s.RunInto({"x"}, {&x}, {"y"}, outs);
      FAIL() << "a bound output of the wrong shape must be refused";
    } catch (const nxrt::Exception& e) {
      EXPECT_NE(std::string(e.what()).find("float[2,8]"), std::string::npos) << e.what();
    }
    // The session stays usable.
    auto ok = s.Run({"x"}, {&x});
    EXPECT_EQ(ok[0].size(), 16u);
  }
  auto live = nxrt::Value::InMemory(env_, env_.ep_memory("SimDevice"), NX_TYPE_FLOAT, dims);
  try {
    env_.UnregisterEpLibrary("sim");
    FAIL() << "unregistering while a device tensor is alive must fail";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("live tensor"), std::string::npos) << e.what();
  }
  live = nxrt::Value();
  env_.UnregisterEpLibrary("sim");
  env_.RegisterEpLibrary("sim", SimLib());  // for TearDown symmetry
}

}  // namespace

// The env's per-EP counters that `nxrt certify` reads: the factory's plugin ABI version, and the
// blocks of its device memory still held by live tensors.
TEST_F(MemoryPlacement, PerEpStatisticsCountLiveDeviceBlocks) {
  EXPECT_EQ(env_.statistic("ep.SimDevice.abi_version"), NXRT_EP_API_VERSION);
  const int64_t before = env_.statistic("ep.SimDevice.device_blocks_alive");
  const NxMemoryInfo* sim = env_.ep_memory("SimDevice");
  {
    auto a = nxrt::Value::InMemory(env_, sim, NX_TYPE_FLOAT, std::vector<int64_t>{1024});
    auto b = nxrt::Value::InMemory(env_, sim, NX_TYPE_FLOAT, std::vector<int64_t>{16});
    EXPECT_EQ(env_.statistic("ep.SimDevice.device_blocks_alive"), before + 2);
  }
  EXPECT_EQ(env_.statistic("ep.SimDevice.device_blocks_alive"), before);
  EXPECT_EQ(env_.statistic("ep.CPU.abi_version"), NXRT_EP_API_VERSION);
  for (const char* bad : {"ep.NoSuchEp.abi_version", "ep.SimDevice.no_such_counter", "ep.x"}) {
    try {
      env_.statistic(bad);
      ADD_FAILURE() << bad << " should be unknown";
    } catch (const nxrt::Exception& e) {
      EXPECT_EQ(e.code(), NX_NOT_FOUND) << bad;
    }
  }
}
