// In-process single flight: one computation for many concurrent callers.
#include "cache/single_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <stdexcept>
#include <thread>

#include "support/eventually.h"

namespace kjit {
namespace {

// How long a computation goes on after every caller has come to run(): the
// time a caller takes from its count to the flight's lock. SingleFlight has
// no hook to say a caller waits on it, so this is a margin, not a proof.
constexpr auto k_grace = std::chrono::milliseconds(200);

TEST(SingleFlight, ThirtyTwoCallersShareOneComputation) {
  SingleFlight<int> flights;
  std::atomic<int> computations{0}, shared{0}, wrong{0}, calling{0};
  std::latch start(32);
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      ++calling;
      auto outcome = flights.run("key", [&] {
        ++computations;
        // Until every caller is at run() (bounded), however slowly the 32
        // threads get going on a loaded machine.
        EXPECT_TRUE(test::eventually([&] { return calling.load() == 32; }));
        std::this_thread::sleep_for(k_grace);
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
  std::atomic<bool> waiter_calling{false};
  std::thread leader([&] {
    EXPECT_THROW(flights.run("k",
                             [&]() -> int {
                               leader_started.count_down();
                               // Until the waiter is at run() (bounded), and then some.
                               EXPECT_TRUE(test::eventually([&] { return waiter_calling.load(); }));
                               std::this_thread::sleep_for(k_grace);
                               throw std::runtime_error("boom");
                             }),
                 std::runtime_error);
  });
  leader_started.wait();
  waiter_calling = true;
  EXPECT_THROW(flights.run("k", [] { return 1; }), std::runtime_error);
  leader.join();
  EXPECT_EQ(flights.in_flight(), 0u);
}

}  // namespace
}  // namespace kjit
