// The ORT plugin host's tables are laid out exactly like onnxruntime's: every slot name at its
// index (an order hash, taken from onnxruntime's header when the slot lists were written, plus
// anchors by name), the sizes of the structs plugins fill (at API level 24), and what
// unimplemented slots do.
#include "ort_plugins/ort_abi.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "ort_plugins/ort_api_table.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {
namespace {

uint64_t NameOrderHash(int table) {
  std::string joined;
  for (size_t i = 0; i < SlotCount(table); ++i) {
    if (i) joined += ',';
    joined += SlotName(table, i);
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : joined) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

#define EXPECT_SLOT(type, name, index) \
  EXPECT_EQ(offsetof(type, name), size_t{index} * sizeof(OrtApiSlot)) << #name

TEST(OrtAbi, EverySlotOfOrtApiHasItsNameAndIndex) {
  ASSERT_EQ(SlotCount(0), 415u);  // onnxruntime 1.24's OrtApi
  EXPECT_EQ(sizeof(OrtApi), 415 * sizeof(OrtApiSlot));
  EXPECT_EQ(NameOrderHash(0), 0x494834e8a9bd1768ull);
  EXPECT_SLOT(OrtApi, CreateStatus, 0);
  EXPECT_SLOT(OrtApi, Run, 9);
  EXPECT_SLOT(OrtApi, CreateSessionOptions, 10);
  EXPECT_SLOT(OrtApi, CreateTensorAsOrtValue, 48);
  EXPECT_SLOT(OrtApi, GetTensorMutableData, 51);
  EXPECT_SLOT(OrtApi, KernelContext_GetInput, 90);
  EXPECT_SLOT(OrtApi, ReleaseEnv, 92);
  EXPECT_SLOT(OrtApi, GetSessionConfigEntry, 238);
  EXPECT_SLOT(OrtApi, GetModelEditorApi, 291);
  EXPECT_SLOT(OrtApi, GetCompileApi, 294);
  EXPECT_SLOT(OrtApi, CreateKeyValuePairs, 295);
  EXPECT_SLOT(OrtApi, RegisterExecutionProviderLibrary, 301);
  EXPECT_SLOT(OrtApi, SessionOptionsAppendExecutionProvider_V2, 304);
  EXPECT_SLOT(OrtApi, HardwareDevice_Type, 307);
  EXPECT_SLOT(OrtApi, GetEpApi, 317);
  EXPECT_SLOT(OrtApi, CreateMemoryInfo_V2, 320);
  EXPECT_SLOT(OrtApi, Graph_GetName, 333);
  EXPECT_SLOT(OrtApi, Node_GetOperatorType, 350);
  EXPECT_SLOT(OrtApi, EpDevice_MemoryInfo, 374);
  EXPECT_SLOT(OrtApi, CreateExternalInitializerInfo, 389);  // the last of level 23
  EXPECT_SLOT(OrtApi, TensorTypeAndShape_HasShape, 390);
  EXPECT_SLOT(OrtApi, GetInteropApi, 395);
  EXPECT_SLOT(OrtApi, CreateEnvWithOptions, 406);
  EXPECT_SLOT(OrtApi, GetTensorElementTypeAndShapeDataReference, 414);
}

TEST(OrtAbi, EverySlotOfOrtEpApiHasItsNameAndIndex) {
  ASSERT_EQ(SlotCount(1), 50u);
  EXPECT_EQ(sizeof(OrtEpApi), 50 * sizeof(OrtApiSlot));
  EXPECT_EQ(NameOrderHash(1), 0xc9752638b8ef0436ull);
  EXPECT_SLOT(OrtEpApi, CreateEpDevice, 0);
  EXPECT_SLOT(OrtEpApi, EpGraphSupportInfo_AddNodesToFuse, 2);
  EXPECT_SLOT(OrtEpApi, EpDevice_AddAllocatorInfo, 5);
  EXPECT_SLOT(OrtEpApi, GetSyncIdForLastWaitOnSyncStream, 15);  // the last of level 23
  EXPECT_SLOT(OrtEpApi, CreateHardwareDevice, 16);
  EXPECT_SLOT(OrtEpApi, KernelRegistry_AddKernel, 20);
  EXPECT_SLOT(OrtEpApi, CreateIfKernel, 45);
  EXPECT_SLOT(OrtEpApi, GetEnvConfigEntries, 49);
}

TEST(OrtAbi, EverySlotOfOrtModelEditorApiHasItsNameAndIndex) {
  ASSERT_EQ(SlotCount(2), 20u);
  EXPECT_EQ(sizeof(OrtModelEditorApi), 20 * sizeof(OrtApiSlot));
  EXPECT_EQ(NameOrderHash(2), 0x83415f76dbca205cull);
  EXPECT_SLOT(OrtModelEditorApi, CreateTensorTypeInfo, 0);
  EXPECT_SLOT(OrtModelEditorApi, CreateValueInfo, 5);
  EXPECT_SLOT(OrtModelEditorApi, CreateNode, 6);
  EXPECT_SLOT(OrtModelEditorApi, FinalizeModelEditorSession, 19);
}

TEST(OrtAbi, StructsPluginsFillHaveOnnxruntimesLayout) {
  constexpr size_t p = sizeof(void*);
  EXPECT_EQ(sizeof(OrtApiBase), 2 * p);
  EXPECT_EQ(sizeof(OrtEpFactory), p + 17 * p);  // version (padded) + 17 functions at level 24
  EXPECT_EQ(offsetof(OrtEpFactory, GetVendorId), 6 * p);
  EXPECT_EQ(offsetof(OrtEpFactory, CreateSyncStreamForDevice), 13 * p);
  EXPECT_EQ(offsetof(OrtEpFactory, GetCustomOpDomains), 17 * p);
  EXPECT_EQ(sizeof(OrtEp), p + 14 * p);
  EXPECT_EQ(offsetof(OrtEp, GetCapability), 2 * p);
  EXPECT_EQ(offsetof(OrtEp, GetCompiledModelCompatibilityInfo), 12 * p);
  EXPECT_EQ(offsetof(OrtEp, IsConcurrentRunSupported), 14 * p);
  EXPECT_EQ(sizeof(OrtNodeComputeInfo), 4 * p);
  EXPECT_EQ(sizeof(OrtDataTransferImpl), 4 * p);
  EXPECT_EQ(sizeof(OrtAllocator), 7 * p);
  EXPECT_EQ(offsetof(OrtNodeFusionOptions, drop_constant_initializers), 4u);
  // Kernel-based plugins (level 24): two 32-bit words, then four functions.
  EXPECT_EQ(offsetof(OrtKernelImpl, flags), 4u);
  EXPECT_EQ(offsetof(OrtKernelImpl, Compute), 8u);
  EXPECT_EQ(offsetof(OrtKernelImpl, SetSharedPrePackedWeight), 8 + 3 * p);
  EXPECT_EQ(sizeof(OrtKernelImpl), 8 + 4 * p);
  EXPECT_EQ(sizeof(OrtLoopKernelHelper), 3 * p);
  EXPECT_EQ(sizeof(OrtSyncStreamImpl), 6 * p);
  EXPECT_EQ(sizeof(OrtSyncNotificationImpl), 5 * p);
  EXPECT_EQ(sizeof(OrtScanKernelHelper), 3 * p);
}

TEST(OrtAbi, ImplementedSlotsAreTold) {
  size_t implemented[kOrtTableCount] = {0, 0, 0};
  for (int table = 0; table < kOrtTableCount; ++table)
    for (size_t i = 0; i < SlotCount(table); ++i) implemented[table] += IsImplemented(table, i);
  EXPECT_TRUE(IsImplemented(0, offsetof(OrtApi, GetEpApi) / sizeof(OrtApiSlot)));
  EXPECT_FALSE(IsImplemented(0, offsetof(OrtApi, CreateEnv) / sizeof(OrtApiSlot)));
  // docs/ort-plugins.md gives these counts.
  std::printf("implemented: OrtApi %zu of %zu, OrtEpApi %zu of %zu, OrtModelEditorApi %zu of %zu\n",
              implemented[0], SlotCount(0), implemented[1], SlotCount(1), implemented[2],
              SlotCount(2));
  EXPECT_TRUE(IsImplemented(2, offsetof(OrtModelEditorApi, CreateNode) / sizeof(OrtApiSlot)));
  EXPECT_GE(implemented[0], 100u);
  EXPECT_GE(implemented[1], 10u);
}

TEST(OrtAbi, LibrariesNegotiateTheHostsLevel) {
  const OrtApiBase* base = HostApiBase();
  EXPECT_STREQ(base->GetVersionString(), "1.24.4");
  EXPECT_EQ(base->GetApi(NXRT_ORT_API_LEVEL), HostApi());
  EXPECT_EQ(base->GetApi(1), HostApi());  // older levels are prefixes of ours
  EXPECT_EQ(base->GetApi(NXRT_ORT_API_LEVEL + 1), nullptr);
  EXPECT_EQ(base->GetApi(0), nullptr);
}

TEST(OrtAbi, UnimplementedSlotsAnswerAndAreCounted) {
  PluginLibraryState calls("test library", Logger(NX_LOG_ERROR, nullptr));
  {
    LibraryScope scope(&calls);
    // A status slot: ORT_NOT_IMPLEMENTED naming it.
    using CreateEnvFn = OrtStatus* (*)(OrtLoggingLevel, const char*, OrtEnv**);
    OrtEnv* env = nullptr;
    OrtStatus* s =
        reinterpret_cast<CreateEnvFn>(HostApi()->CreateEnv)(ORT_LOGGING_LEVEL_WARNING, "x", &env);
    ASSERT_NE(s, nullptr);
    using CodeFn = OrtErrorCode (*)(const OrtStatus*);
    using MessageFn = const char* (*)(const OrtStatus*);
    EXPECT_EQ(reinterpret_cast<CodeFn>(HostApi()->GetErrorCode)(s), ORT_NOT_IMPLEMENTED);
    EXPECT_STREQ(reinterpret_cast<MessageFn>(HostApi()->GetErrorMessage)(s),
                 "OrtApi::CreateEnv is not implemented by nxrt's ORT plugin host");
    reinterpret_cast<void (*)(OrtStatus*)>(HostApi()->ReleaseStatus)(s);
    // A value slot returns NULL; a void slot does nothing; both are counted.
    EXPECT_EQ(reinterpret_cast<const void* (*)()>(HostApi()->GetTrainingApi)(), nullptr);
    reinterpret_cast<void (*)(void*)>(HostApi()->ReleaseSession)(nullptr);
    reinterpret_cast<void (*)(void*)>(HostApi()->ReleaseSession)(nullptr);
    // An OrtEpApi slot nxrt does not implement yet.
    using SetDetailsFn =
        OrtStatus* (*)(OrtDeviceEpIncompatibilityDetails*, uint32_t, int32_t, const char*);
    OrtStatus* e = reinterpret_cast<SetDetailsFn>(
        HostEpApi()->DeviceEpIncompatibilityDetails_SetDetails)(nullptr, 0, 0, nullptr);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(std::string(e->message).find("OrtEpApi::DeviceEpIncompatibilityDetails_SetDetails"),
              std::string::npos);
    FreeOrtStatus(e);
  }
  auto counts = calls.Counts();
  EXPECT_EQ(counts["OrtApi::CreateEnv"], 1u);
  EXPECT_EQ(counts["OrtApi::GetTrainingApi"], 1u);
  EXPECT_EQ(counts["OrtApi::ReleaseSession"], 2u);
  EXPECT_EQ(counts["OrtEpApi::DeviceEpIncompatibilityDetails_SetDetails"], 1u);
  EXPECT_EQ(counts.count("OrtApi::CreateStatus"), 0u);  // implemented slots are not counted
}

TEST(OrtAbi, StatusesAndKeyValuePairsBehaveLikeOnnxruntimes) {
  const OrtApi* api = HostApi();
  using CreateStatusFn = OrtStatus* (*)(OrtErrorCode, const char*);
  using MessageFn = const char* (*)(const OrtStatus*);
  OrtStatus* s = reinterpret_cast<CreateStatusFn>(api->CreateStatus)(ORT_EP_FAIL, "boom");
  EXPECT_STREQ(reinterpret_cast<MessageFn>(api->GetErrorMessage)(s), "boom");
  OrtErrorCode code = ORT_OK;
  std::string message;
  ASSERT_TRUE(TakeOrtStatus(s, code, message));
  EXPECT_EQ(code, ORT_EP_FAIL);
  EXPECT_EQ(message, "boom");
  // A pointer the host never made is recognised, not read.
  char garbage[64] = {};
  EXPECT_FALSE(TakeOrtStatus(reinterpret_cast<OrtStatus*>(garbage), code, message));

  OrtKeyValuePairs* kv = nullptr;
  reinterpret_cast<void (*)(OrtKeyValuePairs**)>(api->CreateKeyValuePairs)(&kv);
  ASSERT_NE(kv, nullptr);
  auto add =
      reinterpret_cast<void (*)(OrtKeyValuePairs*, const char*, const char*)>(api->AddKeyValuePair);
  add(kv, "a", "1");
  add(kv, "b", "2");
  add(kv, "a", "3");  // replaces
  add(kv, "", "x");   // ignored: keys are not empty
  const char* const* keys = nullptr;
  const char* const* values = nullptr;
  size_t n = 0;
  reinterpret_cast<void (*)(const OrtKeyValuePairs*, const char* const**, const char* const**,
                            size_t*)>(api->GetKeyValuePairs)(kv, &keys, &values, &n);
  ASSERT_EQ(n, 2u);
  EXPECT_STREQ(keys[0], "a");
  EXPECT_STREQ(values[0], "3");
  EXPECT_STREQ(keys[1], "b");
  auto get =
      reinterpret_cast<const char* (*)(const OrtKeyValuePairs*, const char*)>(api->GetKeyValue);
  EXPECT_STREQ(get(kv, "b"), "2");
  EXPECT_EQ(get(kv, "c"), nullptr);
  reinterpret_cast<void (*)(OrtKeyValuePairs*, const char*)>(api->RemoveKeyValuePair)(kv, "a");
  EXPECT_EQ(get(kv, "a"), nullptr);
  reinterpret_cast<void (*)(OrtKeyValuePairs*)>(api->ReleaseKeyValuePairs)(kv);
}

TEST(OrtAbi, MemoryInfosMapToNxrtMemory) {
  using CreateV2 = OrtStatus* (*)(const char*, OrtMemoryInfoDeviceType, uint32_t, int32_t,
                                  OrtDeviceMemoryType, size_t, OrtAllocatorType, OrtMemoryInfo**);
  auto create = reinterpret_cast<CreateV2>(HostApi()->CreateMemoryInfo_V2);
  OrtMemoryInfo* gpu = nullptr;
  ASSERT_EQ(create("VendorGpu", OrtMemoryInfoDeviceType_GPU, 0x8086, 1, OrtDeviceMemoryType_DEFAULT,
                   256, OrtDeviceAllocator, &gpu),
            nullptr);
  NxMemoryInfo m = ToNxMemoryInfo(*gpu);
  EXPECT_EQ(m.device_type, NX_DEVICE_GPU);
  EXPECT_EQ(m.vendor_id, 0x8086u);
  EXPECT_EQ(m.device_id, 1);
  EXPECT_EQ(m.kind, NX_MEMORY_DEVICE);
  EXPECT_EQ(m.alignment, 256u);
  reinterpret_cast<void (*)(OrtMemoryInfo*)>(HostApi()->ReleaseMemoryInfo)(gpu);
  // A device type the interface does not have is an error, not a crash.
  OrtMemoryInfo* bad = nullptr;
  OrtStatus* s = create("x", static_cast<OrtMemoryInfoDeviceType>(42), 0, 0,
                        OrtDeviceMemoryType_DEFAULT, 0, OrtDeviceAllocator, &bad);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->code, ORT_INVALID_ARGUMENT);
  FreeOrtStatus(s);
  EXPECT_EQ(bad, nullptr);
}

}  // namespace
}  // namespace nxrt::ort
