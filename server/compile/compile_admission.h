// Admission of compiles: a bounded number may be pending (waiting or
// running), globally and per tenant, and the compile slots (one per worker)
// go round-robin among the tenants that wait, so one tenant's flood never
// starves another's requests. Past a bound a request is refused at once with
// RESOURCE_EXHAUSTED and a retry hint, rather than queued without end.
#pragma once

#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kjit/status.h"

namespace kjit {

// What the queue holds now, for metrics and the status RPC.
struct AdmissionSnapshot {
  uint64_t pending = 0;   // admitted and not finished: waiting for a slot, running, or joined to another's compile
  uint64_t waiting = 0;   // waiting for a compile slot
  uint64_t running = 0;   // holding a compile slot
  uint64_t refused = 0;   // refused since start, over a bound
  std::map<std::string, uint64_t> pending_by_tenant;  // tenants with pending compiles only
};

class CompileAdmission {
 public:
  struct Options {
    uint32_t max_pending = 256;             // all tenants together
    uint32_t max_pending_per_tenant = 64;   // one tenant
    uint32_t slots = 2;                     // compiles running at once (the workers)
    std::chrono::milliseconds retry_after{1000};  // the hint a refusal carries
    // How often a waiter re-checks whether it was abandoned (its callers
    // went away or their deadline passed).
    std::chrono::milliseconds poll_interval{50};
  };

  // A pending compile; releases its count when destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    const std::string& tenant() const { return tenant_; }

   private:
    friend class CompileAdmission;
    Ticket(CompileAdmission* owner, std::string tenant) : owner_(owner), tenant_(std::move(tenant)) {}
    CompileAdmission* owner_ = nullptr;
    std::string tenant_;
  };

  // A compile slot; frees it (to the next tenant in turn) when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    ~Slot();

   private:
    friend class CompileAdmission;
    explicit Slot(CompileAdmission* owner) : owner_(owner) {}
    CompileAdmission* owner_ = nullptr;
  };

  explicit CompileAdmission(Options options);
  ~CompileAdmission();
  CompileAdmission(const CompileAdmission&) = delete;
  CompileAdmission& operator=(const CompileAdmission&) = delete;

  // A pending place for `tenant`, or RESOURCE_EXHAUSTED naming the bound
  // ("... 64 compiles of tenant 'alpha' pending; retry in 1000 ms").
  Result<Ticket> admit(const std::string& tenant);

  // Waits for a compile slot, served round-robin across the tenants that
  // wait (first come first served within a tenant). `abandoned` is polled
  // while waiting: when it says true the wait ends with ErrorCode::cancelled
  // and the place in line is given up.
  Result<Slot> wait_for_slot(const std::string& tenant, const std::function<bool()>& abandoned = {});

  AdmissionSnapshot snapshot() const;
  std::chrono::milliseconds retry_after() const { return options_.retry_after; }
  uint32_t slots() const { return options_.slots; }

 private:
  void release_ticket(const std::string& tenant);
  void release_slot();

  Options options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // Implementation state (owned by compile_admission.cpp).
  struct Waiter;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kjit
