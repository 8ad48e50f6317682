// Keeps a held lease from expiring while the work it stands for runs: a
// thread extends it every interval until this object is destroyed, which
// wakes the thread at once and joins it, so renewal ends with the work, not
// an interval later. Compiles (CompileCoalescer) and claims (KeyClaims) hold
// their leases through one of these.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "cache/lease_store.h"

namespace kjit {

// "<host>:<pid>:<random>": a lease owner prefix no other process shares.
std::string default_lease_owner();

class LeaseRenewal {
 public:
  // `what` names the work in the log line of a lost lease ("compile", "claim").
  LeaseRenewal(LeaseStore& leases, std::string key, std::string owner, std::chrono::milliseconds ttl,
               std::chrono::milliseconds interval, std::string what = "compile");
  ~LeaseRenewal();

  LeaseRenewal(const LeaseRenewal&) = delete;
  LeaseRenewal& operator=(const LeaseRenewal&) = delete;

 private:
  void renew_until_stopped();

  LeaseStore& leases_;
  const std::string key_;
  const std::string owner_;
  const std::chrono::milliseconds ttl_;
  const std::chrono::milliseconds interval_;
  const std::string what_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopped_ = false;
  std::thread thread_;  // last: it starts once every member it reads exists
};

}  // namespace kjit
