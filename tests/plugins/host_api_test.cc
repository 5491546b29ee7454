// The host API a plugin calls: value getters given NULL (a plugin that did not check an optional
// input) read as an empty tensor instead of crashing the host.
#include <gtest/gtest.h>

#include <string>

#include "nxrt/nxrt_ep_api.h"
#include "plugins/control_flow_slots.h"
#include "plugins/host_objects.h"

namespace {

TEST(HostApi, ValueGettersOnNullReadAsAnEmptyTensor) {
  const NxHostApi* host = nxrt::GetHostApi();
  EXPECT_EQ(host->Value_GetKind(nullptr), NX_VALUE_TENSOR);
  EXPECT_EQ(host->Value_GetElementType(nullptr), NX_TYPE_UNDEFINED);
  const int64_t* dims = reinterpret_cast<const int64_t*>(&host);
  size_t rank = 7;
  host->Value_GetShape(nullptr, &dims, &rank);
  EXPECT_EQ(dims, nullptr);
  EXPECT_EQ(rank, 0u);
  EXPECT_EQ(host->Value_GetElementCount(nullptr), 0u);
  EXPECT_EQ(host->Value_GetData(nullptr), nullptr);
  size_t size = 7;
  EXPECT_EQ(host->Value_GetString(nullptr, 0, &size), nullptr);
  EXPECT_EQ(size, 0u);
  NxStatus* st = host->Value_SetString(nullptr, 0, "a", 1);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(host->Status_GetCode(st), NX_INVALID_ARGUMENT);
  host->ReleaseStatus(st);
}

}  // namespace

namespace {

// Capability_AddNodeWithOptions (ABI 12): a node claimed on one of the EP's devices keeps that
// device; a device the EP was not given is refused, and nothing is claimed.
TEST(HostApi, AddNodeWithOptionsTakesOnlyTheEpsDevices) {
  const NxHostApi* host = nxrt::GetHostApi();
  nxrt::Graph g;
  g.nodes.resize(3);
  for (int i = 0; i < 3; ++i) g.nodes[static_cast<size_t>(i)].index = i;
  int mine_storage = 0, foreign_storage = 0;  // only their addresses are used
  const auto* mine = reinterpret_cast<const NxHardwareDevice*>(&mine_storage);
  const auto* foreign = reinterpret_cast<const NxHardwareDevice*>(&foreign_storage);
  NxCapability cap;
  cap.graph = &g;
  cap.devices = {mine};
  auto node = [&](size_t i) { return reinterpret_cast<const NxNode*>(&g.nodes[i]); };
  NxNodeOptions options{};
  options.version = NXRT_EP_API_VERSION;
  options.hardware_device = mine;
  EXPECT_EQ(host->Capability_AddNodeWithOptions(&cap, node(0), &options), nullptr);
  EXPECT_EQ(host->Capability_AddNodeWithOptions(&cap, node(1), nullptr), nullptr);
  options.hardware_device = foreign;
  NxStatus* st = host->Capability_AddNodeWithOptions(&cap, node(2), &options);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(host->Status_GetCode(st), NX_INVALID_ARGUMENT);
  EXPECT_NE(std::string(host->Status_GetMessage(st)).find("not one of the EP's devices"),
            std::string::npos);
  host->ReleaseStatus(st);
  ASSERT_EQ(cap.claimed.size(), 2u);
  ASSERT_EQ(cap.claimed_device.size(), 1u);
  EXPECT_EQ(cap.claimed_device.at(&g.nodes[0]), mine);
  EXPECT_EQ(host->KernelInfo_GetHardwareDevice(nullptr), nullptr);
}

}  // namespace

namespace {

// The control-flow entries forward to the slots controlflow/ fills (api/c_api.cc registers them
// when the program loads); with the slots empty each answers NX_NOT_IMPLEMENTED, naming itself.
TEST(HostApi, ControlFlowKernelsComeFromTheirSlots) {
  const NxHostApi* host = nxrt::GetHostApi();
  const nxrt::ControlFlowSlots* registered = nxrt::GetControlFlowSlots();
  ASSERT_NE(registered, nullptr);
  auto expect = [&](NxStatus* st, NxStatusCode code, const std::string& name) {
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(host->Status_GetCode(st), code);
    EXPECT_NE(std::string(host->Status_GetMessage(st)).find(name), std::string::npos)
        << host->Status_GetMessage(st);
    host->ReleaseStatus(st);
  };
  NxKernel* kernel = nullptr;
  // Filled: the runtime's kernels answer (here: refusing a null kernel info).
  expect(host->CreateIfKernel(nullptr, &kernel), NX_INVALID_ARGUMENT, "CreateIfKernel");
  nxrt::SetControlFlowSlots(nullptr);
  expect(host->CreateIfKernel(nullptr, &kernel), NX_NOT_IMPLEMENTED, "CreateIfKernel");
  expect(host->CreateLoopKernel(nullptr, nullptr, &kernel), NX_NOT_IMPLEMENTED, "CreateLoopKernel");
  expect(host->CreateScanKernel(nullptr, nullptr, &kernel), NX_NOT_IMPLEMENTED, "CreateScanKernel");
  expect(host->CreateSequenceMapKernel(nullptr, &kernel), NX_NOT_IMPLEMENTED,
         "CreateSequenceMapKernel");
  nxrt::SetControlFlowSlots(registered);
  EXPECT_EQ(kernel, nullptr);
  expect(host->CreateLoopKernel(nullptr, nullptr, &kernel), NX_INVALID_ARGUMENT,
         "CreateLoopKernel");
}

}  // namespace
