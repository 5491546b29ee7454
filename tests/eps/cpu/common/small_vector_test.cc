// SmallVector (eps/cpu/common/small_vector.h): inline up to N elements, heap beyond, with the
// contents kept across the move to the heap and copies independent of their source.
#include "common/small_vector.h"

#include <gtest/gtest.h>

#include <span>
#include <vector>

namespace nxrt::cpu {
namespace {

TEST(SmallVector, GrowsPastItsInlineCapacityKeepingItsContents) {
  SmallVector<int64_t, 4> v;
  for (int64_t i = 0; i < 37; ++i) {
    v.push_back(i * 3);
    ASSERT_EQ(v.size(), static_cast<size_t>(i + 1));
    for (int64_t j = 0; j <= i; ++j) ASSERT_EQ(v[j], j * 3) << "after " << i + 1 << " pushes";
  }
  v.resize(40, -1);
  EXPECT_EQ(v[36], 108);
  EXPECT_EQ(v[37], -1);
  EXPECT_EQ(v.back(), -1);
  v.resize(2);
  EXPECT_EQ(v.to_vector(), (std::vector<int64_t>{0, 3}));
}

TEST(SmallVector, CopiesAreIndependentInlineAndOnTheHeap) {
  for (size_t n : {3u, 20u}) {
    Dims a(n, 7);
    Dims b = a;
    b[0] = 1;
    EXPECT_EQ(a[0], 7) << n;
    EXPECT_EQ(b[0], 1) << n;
    a = b;
    EXPECT_TRUE(a == b) << n;
    b.pop_back();
    EXPECT_FALSE(a == b) << n;
  }
}

TEST(SmallVector, ConvertsFromAndToTheStandardContainers) {
  const std::vector<int64_t> source = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  Dims from_vector = source;
  Dims from_span{std::span<const int64_t>(source)};
  Dims from_range(source.begin() + 2, source.begin() + 5);
  EXPECT_EQ(from_vector.to_vector(), source);
  EXPECT_EQ(std::vector<int64_t>(from_span), source);
  EXPECT_EQ(from_range.to_vector(), (std::vector<int64_t>{6, 7, 8}));
  std::span<const int64_t> view = from_range;
  EXPECT_EQ(view.size(), 3u);
  EXPECT_EQ(view[2], 8);
  // (count, value) is a fill, never an iterator range.
  Dims filled(size_t{3}, int64_t{2});
  EXPECT_EQ(filled.to_vector(), (std::vector<int64_t>{2, 2, 2}));
}

TEST(SmallVector, HoldsFlagsAndOrdersLexicographically) {
  SmallVector<bool, 2> flags(5, false);
  flags[3] = true;
  EXPECT_TRUE(flags[3]);
  EXPECT_FALSE(flags[4]);
  EXPECT_TRUE((Dims{1, 2} < Dims{1, 3}));
  EXPECT_TRUE((Dims{1, 2} < Dims{1, 2, 0}));
  EXPECT_FALSE((Dims{2} < Dims{1, 9}));
}

}  // namespace
}  // namespace nxrt::cpu
