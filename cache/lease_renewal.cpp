// Lease renewal on a thread of its own (see lease_renewal.h).
#include "cache/lease_renewal.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>

namespace kjit {

std::string default_lease_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device random;
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(random());
}

LeaseRenewal::LeaseRenewal(LeaseStore& leases, std::string key, std::string owner, std::chrono::milliseconds ttl,
                           std::chrono::milliseconds interval, std::string what)
    : leases_(leases),
      key_(std::move(key)),
      owner_(std::move(owner)),
      ttl_(ttl),
      interval_(interval),
      what_(std::move(what)),
      thread_([this] { renew_until_stopped(); }) {}

LeaseRenewal::~LeaseRenewal() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void LeaseRenewal::renew_until_stopped() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopped_; })) {
    // Unlocked during the round trip so the destructor never waits on the
    // mutex, only on this one call (bounded by the operation timeout).
    lock.unlock();
    Status renewed = leases_.renew(key_, owner_, ttl_);
    lock.lock();
    if (renewed) continue;
    if (renewed.error().code == ErrorCode::not_found) {
      // Expired or taken over: renewing can no longer keep others out.
      spdlog::info("cache: lost the lease on {} during its {}; another daemon may do the same work", key_, what_);
      return;
    }
    // The store failing: the lease may still have time left, so keep trying.
    spdlog::debug("cache: lease on {} not renewed ({}); retrying", key_, renewed.error().message);
  }
}

}  // namespace kjit
