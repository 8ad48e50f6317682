#include "server/compile/compile_admission.h"

#include <algorithm>
#include <utility>

namespace kjit {

// One request in line for a slot; it lives on its waiting thread's stack and
// the queues point at it. granted is set under mutex_ by whoever frees a slot.
struct CompileAdmission::Waiter {
  bool granted = false;
};

struct CompileAdmission::State {
  uint64_t pending = 0;
  uint64_t waiting = 0;
  uint64_t running = 0;
  uint64_t refused = 0;
  std::map<std::string, uint64_t> pending_by_tenant;  // > 0 only
  // Each tenant's waiters, first come first served; a tenant is here only
  // while it has some.
  std::map<std::string, std::deque<Waiter*>> queues;
  // The tenants with waiters, next to be served at the front: served ones go
  // to the back, new ones join at the back. That is the round-robin cursor.
  std::deque<std::string> turn;

  // Hands free slots to waiters in turn. With mutex_ held.
  bool grant(uint32_t slots) {
    bool any = false;
    while (running < slots && !turn.empty()) {
      std::string tenant = std::move(turn.front());
      turn.pop_front();
      auto queue = queues.find(tenant);
      Waiter* next = queue->second.front();
      queue->second.pop_front();
      if (queue->second.empty()) {
        queues.erase(queue);
      } else {
        turn.push_back(std::move(tenant));
      }
      next->granted = true;
      --waiting;
      ++running;
      any = true;
    }
    return any;
  }

  // Takes a waiter that gave up out of line, keeping its tenant's place in
  // turn while others of that tenant still wait. With mutex_ held.
  void leave(const std::string& tenant, Waiter* waiter) {
    auto queue = queues.find(tenant);
    std::deque<Waiter*>& line = queue->second;
    line.erase(std::find(line.begin(), line.end(), waiter));
    --waiting;
    if (line.empty()) {
      queues.erase(queue);
      turn.erase(std::find(turn.begin(), turn.end(), tenant));
    }
  }
};

CompileAdmission::Ticket::Ticket(Ticket&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), tenant_(std::move(other.tenant_)) {}

CompileAdmission::Ticket& CompileAdmission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->release_ticket(tenant_);
    owner_ = std::exchange(other.owner_, nullptr);
    tenant_ = std::move(other.tenant_);
  }
  return *this;
}

CompileAdmission::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->release_ticket(tenant_);
}

CompileAdmission::Slot::Slot(Slot&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}

CompileAdmission::Slot& CompileAdmission::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->release_slot();
    owner_ = std::exchange(other.owner_, nullptr);
  }
  return *this;
}

CompileAdmission::Slot::~Slot() {
  if (owner_ != nullptr) owner_->release_slot();
}

CompileAdmission::CompileAdmission(Options options) : options_(options), state_(std::make_unique<State>()) {
  // With no slot every waiter would wait until abandoned.
  options_.slots = std::max<uint32_t>(options_.slots, 1);
}

CompileAdmission::~CompileAdmission() = default;

Result<CompileAdmission::Ticket> CompileAdmission::admit(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  State& s = *state_;
  const std::string retry = "; retry in " + std::to_string(options_.retry_after.count()) + " ms";
  if (s.pending >= options_.max_pending) {
    ++s.refused;
    return make_error(ErrorCode::resource_exhausted,
                      "compile queue full: " + std::to_string(s.pending) +
                          " compiles pending on this daemon (max_pending_compiles = " +
                          std::to_string(options_.max_pending) + ")" + retry);
  }
  auto count = s.pending_by_tenant.find(tenant);
  const uint64_t mine = count == s.pending_by_tenant.end() ? 0 : count->second;
  if (mine >= options_.max_pending_per_tenant) {
    ++s.refused;
    return make_error(ErrorCode::resource_exhausted,
                      "compile queue full: " + std::to_string(mine) + " compiles of tenant '" + tenant +
                          "' pending (max_pending_per_tenant = " +
                          std::to_string(options_.max_pending_per_tenant) + ")" + retry);
  }
  ++s.pending;
  ++s.pending_by_tenant[tenant];
  return Ticket(this, tenant);
}

Result<CompileAdmission::Slot> CompileAdmission::wait_for_slot(const std::string& tenant,
                                                                const std::function<bool()>& abandoned) {
  std::unique_lock lock(mutex_);
  State& s = *state_;
  // A free slot with nobody in line is taken at once; a newcomer never goes
  // ahead of those already waiting.
  if (s.running < options_.slots && s.turn.empty()) {
    ++s.running;
    return Slot(this);
  }
  Waiter me;
  std::deque<Waiter*>& line = s.queues[tenant];
  if (line.empty()) s.turn.push_back(tenant);
  line.push_back(&me);
  ++s.waiting;
  while (true) {
    if (changed_.wait_for(lock, options_.poll_interval, [&] { return me.granted; })) return Slot(this);
    if (!abandoned) continue;
    // The callback is the caller's code: never run it under our lock.
    lock.unlock();
    const bool gone = abandoned();
    lock.lock();
    if (!gone) continue;
    if (me.granted) {
      // Granted while we asked: the slot goes on to the next in turn.
      --s.running;
      if (s.grant(options_.slots)) changed_.notify_all();
    } else {
      s.leave(tenant, &me);
    }
    return make_error(ErrorCode::cancelled, "gave up waiting for a compile slot: the request went away");
  }
}

AdmissionSnapshot CompileAdmission::snapshot() const {
  std::lock_guard lock(mutex_);
  const State& s = *state_;
  AdmissionSnapshot snap;
  snap.pending = s.pending;
  snap.waiting = s.waiting;
  snap.running = s.running;
  snap.refused = s.refused;
  snap.pending_by_tenant = s.pending_by_tenant;
  return snap;
}

void CompileAdmission::release_ticket(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  State& s = *state_;
  --s.pending;
  auto count = s.pending_by_tenant.find(tenant);
  if (--count->second == 0) s.pending_by_tenant.erase(count);
}

void CompileAdmission::release_slot() {
  std::lock_guard lock(mutex_);
  --state_->running;
  // Every waiter shares one condition and checks its own grant. Notified
  // under the lock: once unlocked, the granted waiter may finish and its
  // owner destroy us before a late notify.
  if (state_->grant(options_.slots)) changed_.notify_all();
}

}  // namespace kjit
