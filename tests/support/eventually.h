// Waiting in a test for what another thread or process does: the condition
// is polled at short intervals until it holds or a deadline passes. CI may
// run on a loaded two-core machine where a daemon, a thread or a signal
// takes many times its usual time, so the default deadline is generous; a
// condition that holds returns at its first poll that sees it.
#pragma once

#include <chrono>
#include <thread>

namespace kjit::test {

inline constexpr std::chrono::seconds k_eventually_deadline{30};

// True once condition() holds, false if it still does not after `deadline`
// (asked one last time then). Never waits forever.
template <typename Condition>
bool eventually(Condition&& condition, std::chrono::steady_clock::duration deadline = k_eventually_deadline,
                std::chrono::steady_clock::duration interval = std::chrono::milliseconds(10)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= end) return condition();
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace kjit::test
