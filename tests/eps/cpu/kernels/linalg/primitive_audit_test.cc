// PrimitiveAudit (eps/cpu/kernels/linalg/primitive_audit.h): oneDNN's reference implementations
// are recognised by name, counted per session, and reported once per node; so are the portable
// loops a kernel falls back to (RecordSlowLoop).
#include "kernels/linalg/primitive_audit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using dnnl::memory;
using nxrt::cpu::linalg::IsReference;
using nxrt::cpu::linalg::IsReferenceName;
using nxrt::cpu::linalg::PrimitiveAudit;

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A max pooling over a blocked tensor: oneDNN 2.6 has only its reference implementation when
// the window is dilated, and a jit one otherwise.
dnnl::pooling_v2_forward::primitive_desc Pooling(int64_t dilation) {
  const memory::desc x({1, 8, 20, 20}, memory::data_type::f32, memory::format_tag::nChw8c);
  const int64_t pad = dilation;
  const memory::desc y({1, 8, 20, 20}, memory::data_type::f32, memory::format_tag::nChw8c);
  return dnnl::pooling_v2_forward::primitive_desc(
      dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::pooling_max, x, y, {1, 1}, {3, 3},
                                     {dilation - 1, dilation - 1}, {pad, pad}, {pad, pad}),
      Engine());
}

TEST(PrimitiveAudit, RecognisesReferenceImplementationsByName) {
  EXPECT_TRUE(IsReferenceName("ref:any"));
  EXPECT_TRUE(IsReferenceName("ref_fused:any"));
  EXPECT_TRUE(IsReferenceName("x64:ref"));
  EXPECT_FALSE(IsReferenceName("jit:avx2"));
  EXPECT_FALSE(IsReferenceName("brgconv:avx512_core"));
  EXPECT_FALSE(IsReferenceName("gemm:jit"));
  EXPECT_FALSE(IsReferenceName("simple:any"));
  EXPECT_TRUE(IsReference(Pooling(2)));
  EXPECT_FALSE(IsReference(Pooling(1)));
}

TEST(PrimitiveAudit, CountsReferencePrimitivesAndWarnsOncePerNode) {
  std::vector<std::string> warnings;
  PrimitiveAudit audit([&](const std::string& m) { warnings.push_back(m); });
  audit.Record(Pooling(1), "fast_pool", "pooling");
  EXPECT_EQ(audit.primitives(), 1);
  EXPECT_EQ(audit.reference_primitives(), 0);
  EXPECT_TRUE(warnings.empty());
  audit.Record(Pooling(2), "slow_pool", "pooling");
  audit.Record(Pooling(2), "slow_pool", "pooling");  // a second slice of the same node
  audit.Record(Pooling(2), "other_slow_pool", "pooling");
  EXPECT_EQ(audit.primitives(), 4);
  EXPECT_EQ(audit.reference_primitives(), 3);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("'slow_pool'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("ref:any"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("'other_slow_pool'"), std::string::npos) << warnings[1];
}

TEST(PrimitiveAudit, CountsSlowLoopsWithReferencePrimitivesAndWarnsOncePerNode) {
  std::vector<std::string> warnings;
  PrimitiveAudit audit([&](const std::string& m) { warnings.push_back(m); });
  audit.RecordSlowLoop("qmm", "8-bit matrix product with a per-row A zero point");
  audit.RecordSlowLoop("qmm", "8-bit matrix product with a per-row A zero point");
  audit.Record(Pooling(2), "qmm", "pooling");  // the node was already reported
  EXPECT_EQ(audit.reference_primitives(), 3);
  EXPECT_EQ(audit.primitives(), 1);  // slow loops are not oneDNN primitives
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'qmm'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("per-row A zero point"), std::string::npos) << warnings[0];
}

}  // namespace
