// A device per kernel node and a memory per device (ABI 12), on SimDevice registered with two
// virtual NPUs, each computing in a memory of its own. With the EP option spread=alternate its
// kernel nodes alternate between the devices: the assignment report and the profile name each
// node's device, every value crossing between the two memories is a planned copy (counted and
// listed with both memories), and the outputs equal the CPU EP's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nxrt/nxrt.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

std::string SimLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_ep_sim_device.so"; }

size_t SimCopies() {
  void* h = dlopen(SimLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return 0;
  auto* fn = reinterpret_cast<size_t (*)()>(dlsym(h, "SimDevice_Copies"));
  dlclose(h);
  return fn ? fn() : 0;
}

// y = ((((x + a) * b) relu) - c) + a over float[6]: five SimDevice nodes in a chain.
std::string ChainModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  *g->add_node() = MakeNode("Add", {"x", "a"}, {"t0"}, "n0");
  *g->add_node() = MakeNode("Mul", {"t0", "b"}, {"t1"}, "n1");
  *g->add_node() = MakeNode("Relu", {"t1"}, {"t2"}, "n2");
  *g->add_node() = MakeNode("Sub", {"t2", "c"}, {"t3"}, "n3");
  *g->add_node() = MakeNode("Add", {"t3", "a"}, {"y"}, "n4");
  *g->add_initializer() = nxrt::test::MakeFloatTensor("a", {6}, {1, -2, 3, -4, 5, -6});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("b", {6}, {2, 2, 0.5f, 0.5f, -1, 3});
  *g->add_initializer() = nxrt::test::MakeFloatTensor("c", {1}, {0.25f});
  for (const char* name : {"x", "y"}) {
    auto* v = std::string(name) == "x" ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(6);
  }
  return nxrt::test::Serialize(m);
}

std::vector<float> RunChain(nxrt::Session& s) {
  auto x = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{6});
  const float in[6] = {0.5f, 1, -1, 2, -3, 4};
  std::copy(in, in + 6, x.data<float>());
  auto out = s.Run({"x"}, {&x});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + 6);
}

class DevicePerNode : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.RegisterEpLibrary("sim", SimLib(), {{NX_DEVICE_NPU, {}}, {NX_DEVICE_NPU, {}}});
  }
  nxrt::Env env_{NX_LOG_ERROR};
  const std::string model_ = ChainModel();
};

TEST_F(DevicePerNode, SimDeviceListsTwoEpDevicesWithAMemoryEach) {
  std::vector<nxrt::EpDevice> sim;
  for (const auto& d : env_.ep_devices())
    if (d.ep_name() == "SimDevice") sim.push_back(d);
  ASSERT_EQ(sim.size(), 2u);
  EXPECT_EQ(sim[0].hardware().device_id(), 0u);
  EXPECT_EQ(sim[1].hardware().device_id(), 1u);
  // Each EP device names its own memory (NxEpFactory::GetDeviceMemoryInfo).
  ASSERT_NE(sim[0].memory(), nullptr);
  ASSERT_NE(sim[1].memory(), nullptr);
  EXPECT_EQ(std::string(sim[0].memory()->name), "SimDevice");
  EXPECT_EQ(sim[0].memory()->device_id, 0);
  EXPECT_EQ(sim[1].memory()->device_id, 1);
  EXPECT_EQ(sim[1].memory()->kind, NX_MEMORY_DEVICE);
}

TEST_F(DevicePerNode, AlternatingNodesCopyBetweenTheTwoMemories) {
  nxrt::SessionOptions cpu_only;
  nxrt::Session cpu(env_, model_.data(), model_.size(), &cpu_only);
  const std::vector<float> want = RunChain(cpu);

  const std::string profile = ::testing::TempDir() + "/device_per_node_profile.json";
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice", {{"spread", "alternate"}});
  o.SetFallback(NX_FALLBACK_FORBID);
  o.SetProfileFile(profile);
  nxrt::Session s(env_, model_.data(), model_.size(), &o);

  // Report: one subgraph per node (the device changes at every edge), devices 0 1 0 1 0.
  const nxrt::AssignmentReport report = s.assignment_report();
  ASSERT_EQ(report.subgraphs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const auto& sg = report.subgraphs[i];
    EXPECT_EQ(sg.ep_name, "SimDevice");
    ASSERT_EQ(sg.devices.size(), 1u) << "subgraph " << i;
    EXPECT_EQ(sg.devices[0].device_id(), i % 2) << "subgraph " << i;
    ASSERT_EQ(sg.nodes.size(), 1u);
    EXPECT_EQ(sg.nodes[0].name, "n" + std::to_string(i));
  }
  // Copies: x in, y out, and t0..t3 each from one device's memory into the other's.
  size_t between = 0;
  for (const auto& c : report.copies) {
    if (c.from_ep == "SimDevice" && c.to_ep == "SimDevice") {
      ++between;
      EXPECT_NE(c.from_memory, c.to_memory) << c.value;
      EXPECT_NE(c.from_memory.find("SimDevice"), std::string::npos);
    }
  }
  EXPECT_EQ(between, 4u);
  EXPECT_EQ(s.statistic("copies"), 6);

  const size_t before = SimCopies();
  EXPECT_EQ(RunChain(s), want);
  EXPECT_EQ(SimCopies() - before, 6u);

  // The profile names each node's device: the second simulated NPU for n1 and n3.
  s.EndProfiling();
  std::ifstream in(profile);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  // Each node event: {"name":"n1","cat":"node",...,"args":{...,"device":"..."}}.
  auto device_of = [&](const std::string& node) {
    const size_t at = json.find("{\"name\":\"" + node + "\",\"cat\":\"node\"");
    if (at == std::string::npos) return std::string("(no event)");
    const std::string event = json.substr(at, json.find("}}", at) - at);
    const size_t d = event.find("\"device\":\"");
    if (d == std::string::npos) return std::string("(no device)");
    const size_t begin = d + 10;
    return event.substr(begin, event.find('"', begin) - begin);
  };
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(device_of("n" + std::to_string(i)),
              "virtual npu " + std::to_string(i % 2) + " (nxrt examples)")
        << "n" << i;
  }
  std::remove(profile.c_str());
}

// With streams (ABI 13, SimDevice async=1) each device has its own kernels stream: a value
// crossing devices is copied on the receiving device's to-device stream once that stream waited
// for the producer's event (tests/session/streams_test.cc has the rest of streams).
TEST_F(DevicePerNode, WithStreamsTheDevicesWaitForEachOthersEvents) {
  nxrt::SessionOptions cpu_only;
  nxrt::Session cpu(env_, model_.data(), model_.size(), &cpu_only);
  const std::vector<float> want = RunChain(cpu);
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice", {{"spread", "alternate"}, {"async", "1"}});
  o.SetFallback(NX_FALLBACK_FORBID);
  nxrt::Session s(env_, model_.data(), model_.size(), &o);
  // Kernels on both devices, copies to both, copies back from device 0 (y).
  EXPECT_GE(s.statistic("streams"), 4);
  for (int r = 0; r < 10; ++r) EXPECT_EQ(RunChain(s), want) << "run " << r;
}

TEST_F(DevicePerNode, WithoutSpreadEveryNodeStaysOnTheFirstDevice) {
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice");
  nxrt::Session s(env_, model_.data(), model_.size(), &o);
  const nxrt::AssignmentReport report = s.assignment_report();
  ASSERT_EQ(report.subgraphs.size(), 1u);
  ASSERT_EQ(report.subgraphs[0].devices.size(), 1u);
  EXPECT_EQ(report.subgraphs[0].devices[0].device_id(), 0u);
  EXPECT_EQ(s.statistic("copies"), 2);  // x in, y out
}

TEST_F(DevicePerNode, AnUnknownSpreadIsAClearError) {
  nxrt::SessionOptions o;
  o.AppendEp("SimDevice", {{"spread", "sideways"}});
  try {
    nxrt::Session s(env_, model_.data(), model_.size(), &o);
    FAIL() << "the session was created";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("spread is 'sideways'"), std::string::npos) << e.what();
  }
}

}  // namespace
