#include "server/compile/fleet_builds.h"

#include <spdlog/spdlog.h>

#include "server/compile/recipe_book.h"

namespace kjit {
namespace {

uint64_t job_bytes(const CompileJob& job) {
  uint64_t bytes = job.input.size();
  for (const auto& [name, content] : job.headers) bytes += name.size() + content.size();
  return bytes;
}

}  // namespace

FleetBuilds::FleetBuilds(Options options, Build build, MayStart may_start)
    : options_(std::move(options)), build_(std::move(build)), may_start_(std::move(may_start)) {
  thread_ = std::thread([this] { serve(); });
}

FleetBuilds::~FleetBuilds() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  thread_.join();
}

size_t FleetBuilds::offer(const CompileJob& job, std::string_view ns) {
  std::vector<const Target*> others;
  for (const Target& target : options_.targets)
    // Inputs are vendor-specific (CUDA C++ and PTX for NVIDIA, HIP for AMD,
    // LLVM IR by its triple): another vendor's target would only fail.
    if (target.vendor == job.target.vendor && !(target == job.target)) others.push_back(&target);
  if (others.empty()) return 0;
  // The recipe's digest names the request without its target, as the
  // recipe book does.
  const std::string digest = recipe_digest(job);
  const uint64_t bytes = job_bytes(job);
  std::shared_ptr<const CompileJob> shared;
  size_t queued = 0;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return 0;
    for (const Target* target : others) {
      std::string id = digest + '\n' + std::string(ns) + '\n' + target->canonical();
      if (ids_.count(id)) continue;
      if (queue_.size() >= options_.max_queued || queued_bytes_ + bytes > options_.max_queued_bytes) {
        ++stats_.dropped;
        continue;
      }
      if (!shared) shared = std::make_shared<const CompileJob>(job);
      ids_.insert(id);
      queue_.push_back(Queued{shared, *target, std::string(ns), std::move(id), bytes});
      queued_bytes_ += bytes;
      ++queued;
    }
  }
  if (queued) changed_.notify_all();
  return queued;
}

FleetStats FleetBuilds::stats() const {
  std::lock_guard lock(mutex_);
  FleetStats stats = stats_;
  stats.queued = queue_.size();
  return stats;
}

void FleetBuilds::serve() {
  const std::function<bool()> stopping = [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  };
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    // Below every client: wait while any client's compile is queued or
    // running, or only one slot is free (a client arriving would find none).
    bool counted = false;
    while (!stopping_ && !queue_.empty()) {
      lock.unlock();
      const bool may = may_start_ ? may_start_() : true;
      lock.lock();
      if (may) break;
      if (!counted) ++stats_.yielded, counted = true;
      changed_.wait_for(lock, options_.yield_poll, [this] { return stopping_; });
    }
    if (stopping_) return;
    if (queue_.empty()) continue;
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= next.bytes;
    stats_.running = 1;
    lock.unlock();

    CompileJob job = *next.job;
    job.target = next.target;
    Result<Built> built = build_(job, next.ns, stopping);
    if (!built)
      spdlog::info("fleet build of {} for {} failed: {}", job.input_name, next.target.canonical(),
                   built.error().message);

    lock.lock();
    stats_.running = 0;
    ids_.erase(next.id);
    if (!built) {
      ++stats_.failed;
      stats_.last_failure = next.target.canonical() + ": " + built.error().message;
    } else if (*built == Built::compiled) {
      ++stats_.compiled;
    } else {
      ++stats_.cached;
    }
  }
}

}  // namespace kjit
