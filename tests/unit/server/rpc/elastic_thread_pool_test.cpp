// The daemon's pool for blocking request work: every task runs, a blocked
// task never holds up another, idle threads retire down to the kept ones.
#include "server/rpc/elastic_thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>

namespace kjit {
namespace {

using namespace std::chrono_literals;

TEST(ElasticThreadPool, RunsEveryTaskBeforeItIsDestroyed) {
  std::atomic<int> ran{0};
  {
    ElasticThreadPool pool(ElasticThreadPool::Options{});
    for (int i = 0; i < 1000; ++i) pool.submit([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 1000);
}

TEST(ElasticThreadPool, ABlockedTaskNeverDelaysAnother) {
  // One kept thread: a fixed pool of that size would run the second task
  // only after the first, which waits for the second.
  ElasticThreadPool pool(ElasticThreadPool::Options{1, 30'000ms});
  std::promise<void> second_ran;
  std::shared_future<void> second = second_ran.get_future().share();
  std::promise<bool> first_saw_second;
  pool.submit([&] { first_saw_second.set_value(second.wait_for(10s) == std::future_status::ready); });
  pool.submit([&] { second_ran.set_value(); });
  EXPECT_TRUE(first_saw_second.get_future().get());
}

TEST(ElasticThreadPool, StartsAThreadPerConcurrentTaskAndRetiresIdleOnes) {
  ElasticThreadPool pool(ElasticThreadPool::Options{1, 50ms});
  constexpr int k_tasks = 8;
  std::latch all_running(k_tasks);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  for (int i = 0; i < k_tasks; ++i)
    pool.submit([&] {
      all_running.count_down();
      open.wait();
    });
  all_running.wait();  // would never return if tasks waited for a thread
  EXPECT_EQ(pool.threads(), static_cast<size_t>(k_tasks));
  gate.set_value();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pool.threads() > 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(pool.threads(), 1u) << "idle threads above kept_threads should have retired";
  // A retired pool still serves.
  std::promise<void> later;
  pool.submit([&] { later.set_value(); });
  EXPECT_EQ(later.get_future().wait_for(10s), std::future_status::ready);
}

}  // namespace
}  // namespace kjit
