#include "graph/op_since_version.h"

#include <gtest/gtest.h>

namespace nxrt {
namespace {

TEST(OpSinceVersion, PicksTheNewestDefinitionAtOrBeforeTheImport) {
  EXPECT_EQ(OpSinceVersion("", "Add", 12), 7);
  EXPECT_EQ(OpSinceVersion("", "Add", 13), 13);
  EXPECT_EQ(OpSinceVersion("", "Add", 17), 14);
  EXPECT_EQ(OpSinceVersion("", "Relu", 5), 1);
  EXPECT_EQ(OpSinceVersion("", "Gelu", 17), -1);  // Gelu appeared in opset 20
  EXPECT_EQ(OpSinceVersion("com.example", "Add", 17), -1);
  EXPECT_EQ(OpSinceVersion("ai.onnx.ml", "LabelEncoder", 4), 4);
}

}  // namespace
}  // namespace nxrt
