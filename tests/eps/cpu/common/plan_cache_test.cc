// PlanCache (eps/cpu/common/plan_cache.h): bounded, the least recently used plan dropped first,
// a lookup counts as a use, a dropped plan stays alive while someone holds it.
#include "common/plan_cache.h"

#include <gtest/gtest.h>

#include <memory>

namespace {

using nxrt::cpu::PlanCache;

TEST(PlanCache, DropsTheLeastRecentlyUsedPlanWhenFull) {
  PlanCache<int, int> cache(3);
  for (int k = 0; k < 3; ++k) cache.Insert(k, std::make_shared<int>(10 * k));
  ASSERT_NE(cache.Find(0), nullptr);  // 0 is now the most recently used; 1 the least
  std::shared_ptr<int> held = cache.Find(2);
  ASSERT_NE(cache.Find(0), nullptr);  // order of use: 2, 0 (1 untouched since its insert)
  cache.Insert(3, std::make_shared<int>(30));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Find(1), nullptr);
  ASSERT_NE(cache.Find(0), nullptr);
  EXPECT_EQ(*cache.Find(3), 30);
  // 2 is now the least recently used: dropped, but the holder's copy lives on.
  cache.Insert(4, std::make_shared<int>(40));
  EXPECT_EQ(cache.Find(2), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(*held, 20);
}

TEST(PlanCache, ReplacingAKeyDropsNothingElse) {
  PlanCache<int, int> cache(2);
  cache.Insert(1, std::make_shared<int>(1));
  cache.Insert(2, std::make_shared<int>(2));
  cache.Insert(2, std::make_shared<int>(22));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.Find(1), 1);
  EXPECT_EQ(*cache.Find(2), 22);
}

}  // namespace
