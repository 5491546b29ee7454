// The intra-op thread pool: every index exactly once whatever the split, exceptions reach the
// caller, nested and concurrent calls run inline instead of deadlocking, and the spin time is
// a validated session setting.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nxrt/nxrt.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

// Runs ParallelFor and checks that [0, total) was covered exactly once.
void ExpectEachIndexOnce(nxrt::ThreadPool& pool, size_t total, size_t grain) {
  std::vector<std::atomic<int>> hits(total);
  pool.ParallelFor(total, grain, [&](size_t begin, size_t end) {
    ASSERT_LE(begin, end);
    ASSERT_LE(end, total);
    for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (size_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    for (int spin_us : {0, 200}) {
      nxrt::ThreadPool pool(threads, spin_us);
      for (size_t total : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{1000}}) {
        for (size_t grain : {size_t{0}, size_t{1}, size_t{3}, size_t{100}}) {
          SCOPED_TRACE("threads " + std::to_string(threads) + " total " + std::to_string(total) +
                       " grain " + std::to_string(grain));
          ExpectEachIndexOnce(pool, total, grain);
        }
      }
    }
  }
}

TEST(ThreadPool, ManyJobsBackToBackWithSleepingAndSpinningWorkers) {
  // Spin 0: every job wakes parked workers; spin 200 us: workers catch jobs while spinning.
  for (int spin_us : {0, 200}) {
    nxrt::ThreadPool pool(2, spin_us);
    std::atomic<size_t> sum{0};
    for (int job = 0; job < 2000; ++job) {
      pool.ParallelFor(16, 1, [&](size_t b, size_t e) { sum.fetch_add(e - b); });
      if (job % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(sum.load(), size_t{2000} * 16);
  }
}

TEST(ThreadPool, AnExceptionInAChunkReachesTheCallerAndThePoolStaysUsable) {
  nxrt::ThreadPool pool(2);
  EXPECT_THROW(pool.ParallelFor(100, 1,
                                [](size_t b, size_t) {
                                  if (b >= 50) throw std::runtime_error("chunk failed");
                                }),
               std::runtime_error);
  ExpectEachIndexOnce(pool, 100, 1);
}

TEST(ThreadPool, ANestedCallRunsInline) {
  nxrt::ThreadPool pool(2);
  std::atomic<size_t> inner{0};
  pool.ParallelFor(8, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      pool.ParallelFor(10, 1, [&](size_t ib, size_t ie) { inner.fetch_add(ie - ib); });
  });
  EXPECT_EQ(inner.load(), 80u);
}

TEST(ThreadPool, CallsFromSeveralThreadsAtOnceAllComplete) {
  nxrt::ThreadPool pool(2);
  std::atomic<size_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int job = 0; job < 300; ++job)
        pool.ParallelFor(32, 1, [&](size_t b, size_t e) { sum.fetch_add(e - b); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), size_t{4} * 300 * 32);
}

TEST(ThreadPool, SpinTimeIsASessionSettingAndBadValuesAreRejected) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = nxrt::test::Serialize(nxrt::test::MakeModel(
      {nxrt::test::MakeNode("Relu", {"x"}, {"y"}, "relu")}, {"x"}, {"y"}, {2, 3}));
  {
    nxrt::SessionOptions o;
    o.SetIntraOpThreads(2).SetConfig("session.intra_op_spin_us", "0");
    nxrt::Session s(env, bytes.data(), bytes.size(), &o);  // accepted
  }
  for (const char* bad : {"-1", "abc", "", "2000000", "10us"}) {
    nxrt::SessionOptions o;
    o.SetConfig("session.intra_op_spin_us", bad);
    try {
      nxrt::Session s(env, bytes.data(), bytes.size(), &o);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const nxrt::Exception& e) {
      EXPECT_NE(std::string(e.what()).find("session.intra_op_spin_us"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
