// In-process single flight: one computation for many concurrent callers.
#include "cache/single_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <stdexcept>
#include <thread>

namespace kjit {
namespace {

TEST(SingleFlight, ThirtyTwoCallersShareOneComputation) {
  SingleFlight<int> flights;
  std::atomic<int> computations{0}, shared{0}, wrong{0};
  std::latch start(32);
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      auto outcome = flights.run("key", [&] {
        ++computations;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return 42;
      });
      if (outcome.value != 42) ++wrong;
      if (outcome.shared) ++shared;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(computations.load(), 1);
  EXPECT_EQ(shared.load(), 31);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(flights.in_flight(), 0u);
}

TEST(SingleFlight, DifferentKeysRunSeparatelyAndLaterCallsRunAgain) {
  SingleFlight<int> flights;
  int runs = 0;
  EXPECT_EQ(flights.run("a", [&] { return ++runs; }).value, 1);
  EXPECT_EQ(flights.run("b", [&] { return ++runs; }).value, 2);
  EXPECT_EQ(flights.run("a", [&] { return ++runs; }).value, 3);  // nothing cached here
}

TEST(SingleFlight, WaitersSeeTheLeadersException) {
  SingleFlight<int> flights;
  std::latch leader_started(1);
  std::thread leader([&] {
    EXPECT_THROW(flights.run("k",
                             [&]() -> int {
                               leader_started.count_down();
                               std::this_thread::sleep_for(std::chrono::milliseconds(100));
                               throw std::runtime_error("boom");
                             }),
                 std::runtime_error);
  });
  leader_started.wait();
  EXPECT_THROW(flights.run("k", [] { return 1; }), std::runtime_error);
  leader.join();
  EXPECT_EQ(flights.in_flight(), 0u);
}

}  // namespace
}  // namespace kjit
