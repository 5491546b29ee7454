// Rules the host enforces on what a plugin hands it, called the way a plugin would (through the
// NxHostApi table) on the host objects a session would pass: Capability_AddFusedGroup's errors,
// and the metadata keys only the host may set on devices.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nxrt/nxrt_ep_api.h"
#include "plugins/host_objects.h"

namespace {

// The status's code and message; releases it. ("", NX_OK) for NULL.
std::pair<NxStatusCode, std::string> Take(NxStatus* status) {
  const NxHostApi* host = nxrt::GetHostApi();
  if (status == nullptr) return {NX_OK, ""};
  std::pair<NxStatusCode, std::string> out{host->Status_GetCode(status),
                                           host->Status_GetMessage(status)};
  host->ReleaseStatus(status);
  return out;
}

void ExpectRefused(NxStatus* status, const std::string& fragment) {
  auto [code, message] = Take(status);
  EXPECT_EQ(code, NX_INVALID_ARGUMENT) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

class FusedGroupRules : public ::testing::Test {
 protected:
  void SetUp() override {
    g_.nodes.resize(4);
    for (int i = 0; i < 4; ++i) g_.nodes[static_cast<size_t>(i)].index = i;
    other_.nodes.resize(1);
    cap_.graph = &g_;
    cap_.can_compile = true;
    cap_.devices = {mine_};
  }
  const NxNode* Node(size_t i) { return reinterpret_cast<const NxNode*>(&g_.nodes[i]); }
  NxStatus* Group(std::vector<const NxNode*> nodes, const NxHardwareDevice* device = nullptr) {
    NxFusionOptions options{};
    options.version = NXRT_EP_API_VERSION;
    options.hardware_device = device;
    return host_->Capability_AddFusedGroup(&cap_, nodes.data(), nodes.size(), &options);
  }

  const NxHostApi* host_ = nxrt::GetHostApi();
  nxrt::Graph g_, other_;
  NxCapability cap_;
  int storage_[2] = {};  // two device identities: only the addresses are used
  const NxHardwareDevice* mine_ = reinterpret_cast<const NxHardwareDevice*>(&storage_[0]);
  const NxHardwareDevice* foreign_ = reinterpret_cast<const NxHardwareDevice*>(&storage_[1]);
};

TEST_F(FusedGroupRules, AGoodGroupKeepsItsDevice) {
  EXPECT_EQ(Take(Group({Node(0), Node(1)}, mine_)).first, NX_OK);
  ASSERT_EQ(cap_.groups.size(), 1u);
  EXPECT_EQ(cap_.groups[0].device, mine_);
  EXPECT_EQ(cap_.groups[0].nodes.size(), 2u);
}

TEST_F(FusedGroupRules, EachBrokenRuleIsRefusedAndClaimsNothing) {
  ExpectRefused(host_->Capability_AddFusedGroup(&cap_, nullptr, 0, nullptr), "empty group");
  ExpectRefused(Group({}), "empty group");
  ExpectRefused(Group({Node(0), nullptr}), "node 1 is null");
  ExpectRefused(Group({reinterpret_cast<const NxNode*>(&other_.nodes[0])}), "not in this graph");
  ExpectRefused(Group({Node(2), Node(2)}), "already claimed");
  ExpectRefused(Group({Node(3)}, foreign_), "not one of the EP's devices");
  EXPECT_TRUE(cap_.groups.empty());
  // A node claimed for a kernel cannot join a group, and a grouped node cannot be claimed alone.
  EXPECT_EQ(Take(host_->Capability_AddNode(&cap_, Node(0))).first, NX_OK);
  ExpectRefused(Group({Node(0), Node(1)}), "already claimed");
  EXPECT_EQ(Take(Group({Node(1)})).first, NX_OK);
  ExpectRefused(host_->Capability_AddNode(&cap_, Node(1)), "already claimed in a fused group");
  EXPECT_EQ(cap_.groups.size(), 1u);
  // An EP without CompileGroup may not form groups at all.
  cap_.can_compile = false;
  ExpectRefused(Group({Node(3)}), "no CompileGroup");
}

TEST(DeviceMetadataRules, KeysTheHostSetsAreRefusedFromPlugins) {
  const NxHostApi* host = nxrt::GetHostApi();
  NxVirtualDeviceList created;
  for (const char* reserved : {"is_virtual", "discovered_by"}) {
    const NxKeyValue kv{reserved, "1"};
    ExpectRefused(host->VirtualDeviceList_Add(&created, NX_DEVICE_NPU, "v", 0, 0, &kv, 1),
                  reserved);
  }
  const NxKeyValue arch{"arch", "a1"};
  EXPECT_EQ(Take(host->VirtualDeviceList_Add(&created, NX_DEVICE_NPU, "v", 0, 0, &arch, 1)).first,
            NX_OK);
  ASSERT_EQ(created.added.size(), 1u);

  int storage[2] = {};
  const auto* offered_device = reinterpret_cast<const NxHardwareDevice*>(&storage[0]);
  const auto* not_offered = reinterpret_cast<const NxHardwareDevice*>(&storage[1]);
  const std::vector<const NxHardwareDevice*> offered = {offered_device};
  NxEpDeviceList supported;
  supported.offered = &offered;
  for (const char* reserved : {"version", "library_path"}) {
    const NxKeyValue kv{reserved, "x"};
    ExpectRefused(host->EpDeviceList_Add(&supported, offered_device, &kv, 1, nullptr, 0), reserved);
  }
  ExpectRefused(host->EpDeviceList_Add(&supported, not_offered, nullptr, 0, nullptr, 0),
                "not one of those offered");
  EXPECT_EQ(Take(host->EpDeviceList_Add(&supported, offered_device, &arch, 1, nullptr, 0)).first,
            NX_OK);
  ExpectRefused(host->EpDeviceList_Add(&supported, offered_device, nullptr, 0, nullptr, 0),
                "added twice");
  EXPECT_EQ(supported.added.size(), 1u);
}

// Version 14: the same rules for the versioned pairs, plus the entries' own checks.
TEST(DeviceMetadataRules, TheVersionedPairsFollowTheSameRules) {
  const NxHostApi* host = nxrt::GetHostApi();
  NxVirtualDeviceList created;
  const NxKeyValue2 arch{NXRT_EP_API_VERSION, "arch", "a1"};
  const NxKeyValue2 reserved{NXRT_EP_API_VERSION, "discovered_by", "me"};
  const NxKeyValue2 unversioned{0, "tile", "0"};
  const NxKeyValue2* const with_reserved[] = {&arch, &reserved};
  const NxKeyValue2* const with_null[] = {&arch, nullptr};
  const NxKeyValue2* const with_unversioned[] = {&unversioned};
  const NxKeyValue2* const twice[] = {&arch, &arch};
  const NxKeyValue2* const good[] = {&arch};
  ExpectRefused(host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, with_reserved, 2),
                "'discovered_by' is set by the host");
  ExpectRefused(host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, with_null, 2),
                "entry 1 is null");
  ExpectRefused(
      host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, with_unversioned, 1),
      "entry 0 has a version below 14");
  ExpectRefused(host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, twice, 2),
                "given twice");
  ExpectRefused(host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, nullptr, 1),
                "pairs are null");
  EXPECT_TRUE(created.added.empty());
  EXPECT_EQ(Take(host->VirtualDeviceList_Add2(&created, NX_DEVICE_NPU, "v", 0, 0, good, 1)).first,
            NX_OK);
  ASSERT_EQ(created.added.size(), 1u);
  ASSERT_NE(created.added[0].Find("arch"), nullptr);
  EXPECT_EQ(*created.added[0].Find("arch"), "a1");

  int storage = 0;
  const auto* device = reinterpret_cast<const NxHardwareDevice*>(&storage);
  const std::vector<const NxHardwareDevice*> offered = {device};
  NxEpDeviceList supported;
  supported.offered = &offered;
  const NxKeyValue2 version{NXRT_EP_API_VERSION, "version", "9"};
  const NxKeyValue2* const with_version[] = {&version};
  ExpectRefused(host->EpDeviceList_Add2(&supported, device, with_version, 1, nullptr, 0),
                "EpDeviceList_Add2 metadata: 'version' is set by the host");
  ExpectRefused(host->EpDeviceList_Add2(&supported, device, good, 1, with_null, 2),
                "EpDeviceList_Add2 options: entry 1 is null");
  EXPECT_EQ(Take(host->EpDeviceList_Add2(&supported, device, good, 1, good, 1)).first, NX_OK);
  ASSERT_EQ(supported.added.size(), 1u);
  EXPECT_EQ(supported.added[0].metadata.size(), 1u);
  EXPECT_EQ(supported.added[0].options.size(), 1u);
  ExpectRefused(host->EpDeviceList_Add2(&supported, device, nullptr, 0, nullptr, 0), "added twice");
}

}  // namespace
