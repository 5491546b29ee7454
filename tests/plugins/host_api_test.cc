// The host API a plugin calls: value getters given NULL (a plugin that did not check an optional
// input) read as an empty tensor instead of crashing the host.
#include <gtest/gtest.h>

#include "nxrt/nxrt_ep_api.h"
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
