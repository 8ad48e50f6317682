// Fleet builds: after a request is compiled for one target, the same request
// is built in the background for the fleet's other targets (`[fleet]
// targets`), so a node of another GPU type finds it cached. The work runs
// below every client's compile: one build at a time, started only while the
// compile queue is empty and a slot is left to spare, from a queue
// bounded in entries and bytes and de-duplicated by recipe digest, namespace
// and target.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/compile_job.h"
#include "kjit/status.h"

namespace kjit {

// The queue's label in the compile queue (its fair share and bound), and in
// the logs: no tenant can be named so.
inline constexpr std::string_view k_fleet_label = "(fleet)";

struct FleetStats {
  uint64_t queued = 0;      // builds waiting now
  uint64_t running = 0;     // 1 while a build runs
  uint64_t compiled = 0;    // builds that compiled (or joined a compile in flight)
  uint64_t cached = 0;      // builds a tier already answered: a lookup only
  uint64_t failed = 0;      // builds that failed (reason: last_failure)
  uint64_t dropped = 0;     // builds not queued: the queue was full
  uint64_t yielded = 0;     // times a build waited for clients' compiles before it started
  std::string last_failure; // "<target>: <reason>" of the last failure; empty: none
};

class FleetBuilds {
 public:
  struct Options {
    std::vector<Target> targets;
    size_t max_queued = 1024;                  // builds waiting
    uint64_t max_queued_bytes = 256ull << 20;  // their jobs' inputs and headers, counted per build
    // How often a build that yields looks again whether it may start.
    std::chrono::milliseconds yield_poll{20};
  };
  // What a build's compile gave: compiled, or a tier's hit.
  enum class Built { compiled, cached };
  // Runs one build (an ordinary compile of `job` in namespace `ns`);
  // `stopping` says true once the queue is being destroyed.
  using Build = std::function<Result<Built>(const CompileJob& job, const std::string& ns,
                                            const std::function<bool()>& stopping)>;
  // Whether a build may start now: the compile queue empty, a slot to spare.
  using MayStart = std::function<bool()>;

  FleetBuilds(Options options, Build build, MayStart may_start);
  // Drops what waits and waits for the build in flight (told to stop).
  ~FleetBuilds();
  FleetBuilds(const FleetBuilds&) = delete;
  FleetBuilds& operator=(const FleetBuilds&) = delete;

  // Queues `job` (just compiled for job.target) for every fleet target of
  // the same vendor but its own; one already queued or running is not
  // queued again. Returns how many builds were queued.
  size_t offer(const CompileJob& job, std::string_view ns);

  FleetStats stats() const;
  const std::vector<Target>& targets() const { return options_.targets; }

 private:
  struct Queued {
    std::shared_ptr<const CompileJob> job;  // shared by the targets of one offer
    Target target;
    std::string ns;
    std::string id;  // recipe digest, namespace and target: the de-duplication key
    uint64_t bytes = 0;
  };
  void serve();

  Options options_;
  Build build_;
  MayStart may_start_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  std::unordered_set<std::string> ids_;  // queued and running
  uint64_t queued_bytes_ = 0;
  bool stopping_ = false;
  FleetStats stats_;
  std::thread thread_;
};

}  // namespace kjit
