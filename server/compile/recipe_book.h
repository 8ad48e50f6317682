// Recipes: the requests this daemon compiled, each kept without its target,
// so the same kernels can be built again for another target (kjit warm).
//
// A recipe is the validated request as the wire spells it
// (v1::CompileRequest, to_compile_request) with its target cleared: only
// what the client sent, headers included, never a path of this host. Its
// digest is the SHA-256 of that message's deterministic serialization, so
// one request asked for many targets, or by many clients, is one recipe.
//
// Storage: in the cache's most shared tier (Redis, else a disk store of
// their own beside the disk tier, else memory), through the namespace's recipe view (DaemonCache::recipes_in), so every
// daemon reads the one index there rather than a copy of its own; as entries with a blob identity of their own
// kind, under blob-spelled keys (blob_store.h): the recipe under
// (k_recipe_kind, ns, digest), and the namespace's index (a
// v1::ListRecipesResponse: summaries with created and last-asked times)
// under (k_recipe_index_kind, ns). Daemons sharing Redis read each other's
// recipes and index; an index write reads, merges and writes, so two
// daemons writing at the same instant may lose one's new lines until its
// next write.
//
// Off the hot path: a compile queues a copy of its job (bounded; past the
// bound it is dropped and counted) and a thread of this book digests,
// stores and indexes it. A hit of a key whose recipe this daemon knows
// moves its last-asked time in memory (a shared-lock lookup), written with
// the index at the next flush.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/compile_job.h"
#include "kjit/status.h"
#include "kjit/v1/cache.pb.h"
#include "server/compile/daemon_cache.h"

namespace kjit {

inline constexpr std::string_view k_recipe_kind = "kjit-recipe";
inline constexpr std::string_view k_recipe_index_kind = "kjit-recipe-index";

struct RecipeLimits {
  uint64_t max_count = 10000;          // per namespace; 0: none recorded
  uint64_t max_bytes = 256ull << 20;   // per namespace, the recipes' stored bytes
};

// The recipe of a job (its target cleared) as the wire spells it, and its digest.
v1::CompileRequest recipe_of(const CompileJob& job);
std::string recipe_digest(const v1::CompileRequest& recipe);
inline std::string recipe_digest(const CompileJob& job) { return recipe_digest(recipe_of(job)); }

struct RecipeCounters {
  uint64_t recorded = 0;  // new recipes stored
  uint64_t dropped = 0;   // jobs not recorded: the queue was full, or one recipe was over the byte bound
  uint64_t evicted = 0;   // recipes dropped for the count or byte bound
};

// Whether a compile's request is a recipe for other targets: not Triton IR
// that names the target it was lowered for (uTLX's front end leaves
// TritonGPU IR carrying `ttg.target` on NVIDIA), which no other target
// takes. Such a request is neither recorded nor offered to fleet builds.
bool is_portable_recipe(const CompileJob& job);

class RecipeBook {
 public:
  RecipeBook(std::shared_ptr<DaemonCache> cache, RecipeLimits limits);
  ~RecipeBook();
  RecipeBook(const RecipeBook&) = delete;
  RecipeBook& operator=(const RecipeBook&) = delete;

  // A compile of job (or a lower tier's hit) in namespace ns, whose entry
  // is stored under key: queued, never blocks on the tiers.
  void record(const CompileJob& job, std::string_view ns, std::string_view key);
  // A memory hit: whether the recipe of key is known here, its last-asked
  // time moved. Never blocks on I/O.
  bool touch(std::string_view ns, std::string_view key);

  // Namespace ns's recipes, most recently asked first, asked at or after since_unix.
  Result<std::vector<v1::RecipeSummary>> list(std::string_view ns, int64_t since_unix) const;
  // NOT_FOUND when ns has no such recipe, or its entry has gone from the tiers.
  Result<std::pair<v1::RecipeSummary, v1::CompileRequest>> get(std::string_view ns, std::string_view digest) const;
  // The request of a recipe list() just returned, read from the tiers without
  // the index again (an export reads every recipe: one index read, not one
  // each). NOT_FOUND when its entry has gone from the tiers.
  Result<v1::CompileRequest> request(std::string_view ns, std::string_view digest) const;
  // Whether there was one.
  Result<bool> remove(std::string_view ns, std::string_view digest);

  // Waits until every job queued so far is stored and every index written.
  void flush();
  RecipeCounters counters() const;

 private:
  struct Queued {
    CompileJob job;
    std::string ns;
    std::string key;
    int64_t asked_unix;
  };
  // What this daemon learned of a namespace since its index was last written.
  struct Pending {
    std::map<std::string, v1::RecipeSummary> updates;  // by digest
  };
  struct Known {
    std::string ns;
    std::string digest;
    std::string target;
    std::atomic<int64_t> asked_unix{0};
    std::atomic<bool> touched{false};
  };

  void run();
  void store(Queued queued);
  void write_indexes();
  v1::ListRecipesResponse read_index(const NamespacedCache& view) const;
  void write_index(const NamespacedCache& view, v1::ListRecipesResponse index) const;
  // The bounds on index, least recently asked out; what went out leaves the tiers too.
  void apply_bounds(const NamespacedCache& view, v1::ListRecipesResponse& index);
  // Hits of these recipes' keys no longer move anything; their next compile records them anew.
  void forget(std::string_view ns, const std::set<std::string>& digests);

  std::shared_ptr<DaemonCache> cache_;
  RecipeLimits limits_;

  mutable std::mutex mutex_;
  // Held while an index is read, merged and written (the book's thread, remove()).
  std::mutex index_mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Queued> queue_;
  uint64_t queued_bytes_ = 0;
  bool stop_ = false;
  uint64_t flush_asked_ = 0, flush_done_ = 0;
  std::map<std::string, Pending> pending_;  // by namespace

  // Keys whose recipes are known here, for touch(), each with its
  // namespaces' recipes: looked up by the plan's key as it is, no copy.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  mutable std::shared_mutex known_mutex_;
  std::unordered_map<std::string, std::vector<std::shared_ptr<Known>>, KeyHash, std::equal_to<>> known_;
  size_t known_count_ = 0;

  std::atomic<uint64_t> recorded_{0}, dropped_{0}, evicted_{0};
  std::thread thread_;  // last: started once everything above is built
};

}  // namespace kjit
