#include "server/compile/plan_memo.h"

#include <xxhash.h>

#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kjit {
namespace {

constexpr size_t k_shards = 16;
// The job's strings besides input and headers, the plan, map and list
// nodes: a rough figure so that many tiny jobs still respect the bound.
constexpr uint64_t k_entry_overhead_bytes = 2048;

uint64_t footprint(const CompileJob& job) {
  uint64_t bytes = k_entry_overhead_bytes + job.input.size();
  for (const auto& [name, content] : job.headers) bytes += name.size() + content.size();
  return bytes;
}

class Fingerprint {
 public:
  Fingerprint() { XXH3_64bits_reset(state_); }
  ~Fingerprint() { XXH3_freeState(state_); }
  // Length-prefixed, so that no two different jobs feed the same bytes.
  void add(std::string_view bytes) {
    const uint64_t size = bytes.size();
    XXH3_64bits_update(state_, &size, sizeof(size));
    XXH3_64bits_update(state_, bytes.data(), bytes.size());
  }
  void add(const Target& target) { add(target.canonical()); }
  void add(InputKind kind) { add(to_string(kind)); }
  void add(ArtifactKind kind) { add(to_string(kind)); }
  void add(bool flag) { add(std::string_view(flag ? "1" : "0")); }
  void add(const std::vector<std::string>& list) {
    add(std::to_string(list.size()));
    for (const std::string& item : list) add(item);
  }
  void add(const std::map<std::string, std::string>& map) {
    add(std::to_string(map.size()));
    for (const auto& [key, value] : map) {
      add(key);
      add(value);
    }
  }
  void add(const std::vector<TritonEdit>& edits) {
    add(std::to_string(edits.size()));
    for (const TritonEdit& edit : edits) {
      add(edit.op);
      add(edit.anchor);
      add(edit.pass);
      add(edit.stage);
      add(edit.passes);
    }
  }
  uint64_t digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_ = XXH3_createState();
};

}  // namespace

struct PlanMemo::Shard {
  struct Entry {
    uint64_t fingerprint;
    CompileJob job;
    PlanPtr plan;
    uint64_t bytes;
  };
  mutable std::mutex mutex;
  mutable std::list<Entry> lru;  // most recent first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index;
  uint64_t bytes = 0;
};

PlanMemo::PlanMemo(uint64_t max_bytes) : shard_max_bytes_(max_bytes / k_shards) {
  for (size_t i = 0; i < k_shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

PlanMemo::~PlanMemo() = default;

PlanMemo::Shard& PlanMemo::shard_for(uint64_t fingerprint) const { return *shards_[fingerprint % k_shards]; }

uint64_t PlanMemo::fingerprint(const CompileJob& job) {
  Fingerprint f;
  for_each_field(job, [&f](std::string_view, const auto& field) { f.add(field); });
  return f.digest();
}

PlanMemo::PlanPtr PlanMemo::find(const CompileJob& job, uint64_t fingerprint) const {
  Shard& shard = shard_for(fingerprint);
  std::lock_guard lock(shard.mutex);
  auto it = shard.index.find(fingerprint);
  if (it == shard.index.end() || !(it->second->job == job)) return nullptr;
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
  return it->second->plan;
}

void PlanMemo::remember(const CompileJob& job, uint64_t fingerprint, PlanPtr plan) {
  const uint64_t bytes = footprint(job);
  if (bytes > shard_max_bytes_) return;  // would evict the whole shard
  Shard& shard = shard_for(fingerprint);
  std::list<Shard::Entry> dropped;  // freed after the lock
  std::lock_guard lock(shard.mutex);
  if (auto it = shard.index.find(fingerprint); it != shard.index.end()) {
    shard.bytes -= it->second->bytes;
    dropped.splice(dropped.end(), shard.lru, it->second);
    shard.index.erase(it);
  }
  shard.lru.push_front(Shard::Entry{fingerprint, job, std::move(plan), bytes});
  shard.index.emplace(fingerprint, shard.lru.begin());
  shard.bytes += bytes;
  while (shard.bytes > shard_max_bytes_) {
    auto last = std::prev(shard.lru.end());
    shard.bytes -= last->bytes;
    shard.index.erase(last->fingerprint);
    dropped.splice(dropped.end(), shard.lru, last);
  }
}

}  // namespace kjit
