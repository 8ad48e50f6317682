// Admission of compiles: refusals past the bounds carry the bound and a
// retry hint, tickets and slots release on destruction, slots go round-robin
// among waiting tenants and first come first served within one, and a waiter
// that gives up leaves no slot behind.
#include "server/compile/compile_admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;

CompileAdmission::Options options(uint32_t max_pending, uint32_t per_tenant, uint32_t slots) {
  CompileAdmission::Options o;
  o.max_pending = max_pending;
  o.max_pending_per_tenant = per_tenant;
  o.slots = slots;
  o.poll_interval = 1ms;
  return o;
}

// The queue has no hook for "this thread is in line now"; the snapshot is
// the only witness, so tests look at it until it agrees (bounded).
bool waiting_is(const CompileAdmission& admission, uint64_t n) {
  return test::eventually([&] { return admission.snapshot().waiting == n; }, test::k_eventually_deadline, 100us);
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Records the order in which queued requests got the (single) slot: each
// holds it while it writes its name, so the record order is the grant order.
class GrantLog {
 public:
  void add(std::string name) {
    std::lock_guard lock(mutex_);
    order_.push_back(std::move(name));
  }
  std::vector<std::string> order() const {
    std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> order_;
};

// Queues one waiter per name, in that order (each is in line before the next
// starts), while the caller holds the only slot.
std::vector<std::thread> queue_in_order(CompileAdmission& admission, GrantLog& log,
                                        const std::vector<std::pair<std::string, std::string>>& tenant_and_name) {
  std::vector<std::thread> threads;
  const uint64_t before = admission.snapshot().waiting;
  for (const auto& entry : tenant_and_name) {
    threads.emplace_back([&admission, &log, tenant = entry.first, name = entry.second] {
      Result<CompileAdmission::Slot> slot = admission.wait_for_slot(tenant);
      ASSERT_TRUE(slot.ok()) << slot.error().message;
      log.add(name);
    });
    EXPECT_TRUE(waiting_is(admission, before + threads.size()));
  }
  return threads;
}

TEST(CompileAdmission, RefusesPastTheTenantBoundNamingItAndFreesThePlaceOnRelease) {
  CompileAdmission admission(options(100, 2, 1));
  Result<CompileAdmission::Ticket> first = admission.admit("alpha");
  Result<CompileAdmission::Ticket> second = admission.admit("alpha");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());

  Result<CompileAdmission::Ticket> third = admission.admit("alpha");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::resource_exhausted);
  const std::string& message = third.error().message;
  EXPECT_NE(message.find("2 compiles of tenant 'alpha' pending"), std::string::npos) << message;
  EXPECT_NE(message.find("max_pending_per_tenant = 2"), std::string::npos) << message;
  EXPECT_TRUE(ends_with(message, "retry in 1000 ms")) << message;
  EXPECT_EQ(admission.snapshot().refused, 1u);

  // Another tenant is not held back by alpha's bound.
  EXPECT_TRUE(admission.admit("beta").ok());

  first = CompileAdmission::Ticket();  // releases one of alpha's places
  EXPECT_TRUE(admission.admit("alpha").ok());
  EXPECT_EQ(admission.snapshot().refused, 1u);
}

TEST(CompileAdmission, RefusesPastTheGlobalBoundNamingIt) {
  CompileAdmission::Options o = options(3, 64, 1);
  o.retry_after = 250ms;
  CompileAdmission admission(o);
  std::vector<CompileAdmission::Ticket> held;
  for (const char* tenant : {"a", "b", "c"}) {
    Result<CompileAdmission::Ticket> ticket = admission.admit(tenant);
    ASSERT_TRUE(ticket.ok());
    held.push_back(std::move(ticket).value());
  }
  for (int i = 0; i < 2; ++i) {
    Result<CompileAdmission::Ticket> refused = admission.admit("d");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::resource_exhausted);
    const std::string& message = refused.error().message;
    EXPECT_NE(message.find("3 compiles pending on this daemon"), std::string::npos) << message;
    EXPECT_NE(message.find("max_pending_compiles = 3"), std::string::npos) << message;
    EXPECT_TRUE(ends_with(message, "retry in 250 ms")) << message;
  }
  EXPECT_EQ(admission.snapshot().refused, 2u);
  EXPECT_EQ(admission.retry_after(), 250ms);

  held.pop_back();
  EXPECT_TRUE(admission.admit("d").ok());
}

TEST(CompileAdmission, SnapshotCountsPendingPerTenantAndDropsTenantsWithNone) {
  CompileAdmission admission(options(10, 10, 1));
  Result<CompileAdmission::Ticket> a1 = admission.admit("a");
  Result<CompileAdmission::Ticket> a2 = admission.admit("a");
  Result<CompileAdmission::Ticket> b = admission.admit("b");
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.pending, 3u);
  EXPECT_EQ(snap.pending_by_tenant, (std::map<std::string, uint64_t>{{"a", 2}, {"b", 1}}));

  b = CompileAdmission::Ticket();
  snap = admission.snapshot();
  EXPECT_EQ(snap.pending, 2u);
  EXPECT_EQ(snap.pending_by_tenant, (std::map<std::string, uint64_t>{{"a", 2}}));
}

TEST(CompileAdmission, TicketsMoveTheirCountAndReleaseItOnce) {
  CompileAdmission admission(options(10, 10, 1));
  {
    Result<CompileAdmission::Ticket> admitted = admission.admit("a");
    ASSERT_TRUE(admitted.ok());
    CompileAdmission::Ticket moved(std::move(admitted).value());
    EXPECT_EQ(moved.tenant(), "a");
    EXPECT_EQ(admission.snapshot().pending, 1u);

    CompileAdmission::Ticket other = std::move(admission.admit("b").value());
    EXPECT_EQ(admission.snapshot().pending, 2u);
    other = std::move(moved);  // b's place is released, a's moves over
    EXPECT_EQ(other.tenant(), "a");
    AdmissionSnapshot snap = admission.snapshot();
    EXPECT_EQ(snap.pending, 1u);
    EXPECT_EQ(snap.pending_by_tenant, (std::map<std::string, uint64_t>{{"a", 1}}));

    other = std::move(other);  // self-move keeps the place
    EXPECT_EQ(admission.snapshot().pending, 1u);
  }  // moved-from tickets release nothing
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.pending, 0u);
  EXPECT_TRUE(snap.pending_by_tenant.empty());
}

TEST(CompileAdmission, SlotsMoveAndAFreeSlotIsTakenAtOnce) {
  CompileAdmission admission(options(10, 10, 2));
  {
    Result<CompileAdmission::Slot> first = admission.wait_for_slot("a");
    ASSERT_TRUE(first.ok());
    CompileAdmission::Slot moved(std::move(first).value());
    Result<CompileAdmission::Slot> second = admission.wait_for_slot("b");
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(admission.snapshot().running, 2u);

    CompileAdmission::Slot target = std::move(second).value();
    target = std::move(moved);  // b's slot is freed, a's moves over
    EXPECT_EQ(admission.snapshot().running, 1u);
    target = std::move(target);
    EXPECT_EQ(admission.snapshot().running, 1u);
  }
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.running, 0u);
  EXPECT_EQ(snap.waiting, 0u);
}

TEST(CompileAdmission, ATenantWithOneRequestIsServedWithinTwoGrantsOfAFlood) {
  CompileAdmission admission(options(256, 64, 1));
  GrantLog log;
  std::optional<CompileAdmission::Slot> held(std::move(admission.wait_for_slot("holder").value()));

  std::vector<std::pair<std::string, std::string>> queued;
  for (int i = 0; i < 20; ++i) queued.emplace_back("A", "A" + std::to_string(i));
  queued.emplace_back("B", "B0");
  std::vector<std::thread> threads = queue_in_order(admission, log, queued);
  EXPECT_EQ(admission.snapshot().running, 1u);

  held.reset();
  for (std::thread& t : threads) t.join();

  const std::vector<std::string> order = log.order();
  ASSERT_EQ(order.size(), 21u);
  const auto b = std::find(order.begin(), order.end(), "B0");
  EXPECT_LT(b - order.begin(), 2) << "B's one request waited behind " << (b - order.begin()) << " of A's";
  // A's own requests keep their order.
  std::vector<std::string> a_order;
  for (const std::string& name : order)
    if (name != "B0") a_order.push_back(name);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a_order[i], "A" + std::to_string(i));
}

TEST(CompileAdmission, GrantsRotateOverTenantsInTheOrderTheyStartedWaiting) {
  CompileAdmission admission(options(256, 64, 1));
  GrantLog log;
  std::optional<CompileAdmission::Slot> held(std::move(admission.wait_for_slot("holder").value()));
  std::vector<std::thread> threads =
      queue_in_order(admission, log, {{"A", "A0"}, {"A", "A1"}, {"A", "A2"}, {"B", "B0"}, {"B", "B1"}, {"C", "C0"}});
  held.reset();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(log.order(), (std::vector<std::string>{"A0", "B0", "C0", "A1", "B1", "A2"}));
}

TEST(CompileAdmission, AnAbandonedWaiterLeavesTheLineAndTakesNoSlot) {
  CompileAdmission admission(options(256, 64, 1));
  std::optional<CompileAdmission::Slot> held(std::move(admission.wait_for_slot("holder").value()));

  std::atomic<bool> gone{false};
  std::optional<Error> abandoned_error;
  std::thread quitter([&] {
    Result<CompileAdmission::Slot> slot = admission.wait_for_slot("A", [&] { return gone.load(); });
    if (!slot.ok()) abandoned_error = slot.error();
  });
  ASSERT_TRUE(waiting_is(admission, 1));
  bool stayer_served = false;
  std::thread stayer([&] { stayer_served = admission.wait_for_slot("B").ok(); });
  ASSERT_TRUE(waiting_is(admission, 2));

  gone = true;
  quitter.join();
  ASSERT_TRUE(abandoned_error.has_value()) << "the abandoned waiter got a slot";
  EXPECT_EQ(abandoned_error->code, ErrorCode::cancelled);
  EXPECT_EQ(abandoned_error->message, "gave up waiting for a compile slot: the request went away");
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.waiting, 1u);
  EXPECT_EQ(snap.running, 1u);

  held.reset();
  stayer.join();
  EXPECT_TRUE(stayer_served);
  snap = admission.snapshot();
  EXPECT_EQ(snap.running, 0u);
  EXPECT_EQ(snap.waiting, 0u);
  // Nobody is left in line, so a free slot is taken at once (a tenant left
  // in the rotation would make this wait forever).
  Result<CompileAdmission::Slot> again = admission.wait_for_slot("A", [] { return true; });
  EXPECT_TRUE(again.ok());
}

TEST(CompileAdmission, AWaiterGrantedAsItGivesUpPassesTheSlotOn) {
  CompileAdmission admission(options(256, 64, 1));
  std::optional<CompileAdmission::Slot> held(std::move(admission.wait_for_slot("holder").value()));

  // The quitter's first look at its request blocks until the slot has been
  // granted to it, then says the request went away.
  std::latch asking(1);
  std::latch granted(1);
  std::atomic<bool> first_ask{true};
  bool quitter_cancelled = false;
  std::thread quitter([&] {
    Result<CompileAdmission::Slot> slot = admission.wait_for_slot("A", [&] {
      if (first_ask.exchange(false)) {
        asking.count_down();
        granted.wait();
        return true;
      }
      return false;
    });
    quitter_cancelled = !slot.ok() && slot.error().code == ErrorCode::cancelled;
  });
  ASSERT_TRUE(waiting_is(admission, 1));
  bool stayer_served = false;
  std::thread stayer([&] { stayer_served = admission.wait_for_slot("B").ok(); });
  ASSERT_TRUE(waiting_is(admission, 2));

  asking.wait();
  held.reset();  // A is first in turn: the slot goes to the quitter
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.waiting, 1u);
  EXPECT_EQ(snap.running, 1u);
  granted.count_down();

  quitter.join();
  stayer.join();
  EXPECT_TRUE(quitter_cancelled);
  EXPECT_TRUE(stayer_served);
  snap = admission.snapshot();
  EXPECT_EQ(snap.running, 0u);
  EXPECT_EQ(snap.waiting, 0u);
}

TEST(CompileAdmission, ManyThreadsNeverRunMoreThanTheSlotsAndLeaveNothingBehind) {
  constexpr int k_threads = 8;
  constexpr int k_cycles = 200;
  constexpr uint32_t k_slots = 2;
  CompileAdmission admission(options(256, 64, k_slots));
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> failures{0};
  std::latch start(k_threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      const std::string tenant = "t" + std::to_string(t % 3);
      start.arrive_and_wait();
      for (int i = 0; i < k_cycles; ++i) {
        Result<CompileAdmission::Ticket> ticket = admission.admit(tenant);
        if (!ticket.ok()) {
          ++failures;
          continue;
        }
        // Every seventh request gives up at its first look, if it has to wait.
        const bool quits = (t + i) % 7 == 0;
        Result<CompileAdmission::Slot> slot = admission.wait_for_slot(tenant, [quits] { return quits; });
        if (!slot.ok()) {
          if (slot.error().code == ErrorCode::cancelled && quits) {
            ++cancelled;
          } else {
            ++failures;
          }
          continue;
        }
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        if (admission.snapshot().running > k_slots) ++failures;
        std::this_thread::yield();
        --running;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(most.load(), static_cast<int>(k_slots));
  AdmissionSnapshot snap = admission.snapshot();
  EXPECT_EQ(snap.pending, 0u);
  EXPECT_EQ(snap.waiting, 0u);
  EXPECT_EQ(snap.running, 0u);
  EXPECT_EQ(snap.refused, 0u);
  EXPECT_TRUE(snap.pending_by_tenant.empty());
  // Nothing leaked: both slots are free and taken at once.
  Result<CompileAdmission::Slot> one = admission.wait_for_slot("x", [] { return true; });
  Result<CompileAdmission::Slot> two = admission.wait_for_slot("y", [] { return true; });
  EXPECT_TRUE(one.ok());
  EXPECT_TRUE(two.ok());
}

}  // namespace
}  // namespace kjit
