// Recipes in the cache's tiers (see recipe_book.h).
#include "server/compile/recipe_book.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include "pipeline/cache_key.h"
#include "server/compile/blob_store.h"
#include "server/edge/compile_translation.h"

namespace kjit {
namespace {

// Jobs waiting to be recorded: past either bound a compile's job is dropped
// (counted), so a burst of misses never holds much memory here.
constexpr size_t k_max_queued = 256;
constexpr uint64_t k_max_queued_bytes = 64ull << 20;
// Last-asked times moved by hits reach the tiers this often at most.
constexpr std::chrono::seconds k_flush_interval{10};
// Keys remembered for touch(); past it the memory starts over (hits of
// forgotten keys then move no time until the key's next compile).
constexpr size_t k_max_known = 1u << 18;

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

uint64_t job_bytes(const CompileJob& job) {
  uint64_t bytes = job.input.size();
  for (const auto& [name, content] : job.headers) bytes += name.size() + content.size();
  return bytes;
}

std::string serialized(const google::protobuf::MessageLite& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  // Maps (headers, pass_args) in key order: the same recipe, the same bytes.
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::string recipe_key(std::string_view ns, std::string_view digest) {
  return blob_cache_key(k_recipe_kind, ns, digest, "recipe");
}

std::string index_key(std::string_view ns) { return blob_cache_key(k_recipe_index_kind, ns, "index", "index"); }

CacheEntry entry_of(std::string_view kind, std::string_view ns, std::string_view key, std::string key_hex,
                    std::string bytes) {
  CacheEntry entry;
  entry.blob = BlobIdentity{std::string(kind), std::string(ns), std::string(key), kind == k_recipe_kind ? "recipe" : "index"};
  entry.key = std::move(key_hex);
  entry.created_unix = now_unix();
  entry.artifact.bytes = std::move(bytes);
  return entry;
}

// The stored entry of identity, or none (another kind under the key is not ours).
std::optional<std::string> read_entry(const NamespacedCache& view, const std::string& key, const BlobIdentity& identity) {
  std::optional<CacheHit> hit = view.get(key);
  if (!hit || !hit->entry->blob || *hit->entry->blob != identity) return std::nullopt;
  return hit->entry->artifact.bytes;
}

void keep_newer(v1::RecipeSummary& into, const v1::RecipeSummary& other) {
  if (other.last_asked_unix() > into.last_asked_unix()) {
    into.set_last_asked_unix(other.last_asked_unix());
    into.set_last_target(other.last_target());
  }
  if (into.created_unix() == 0 || (other.created_unix() != 0 && other.created_unix() < into.created_unix()))
    into.set_created_unix(other.created_unix());
}

}  // namespace

v1::CompileRequest recipe_of(const CompileJob& job) {
  v1::CompileRequest recipe;
  to_compile_request(job, recipe);
  recipe.clear_target();
  recipe.clear_targets();
  // The target's own binary is what an unnamed artifact means (the client
  // sends it so): left unnamed, the recipe builds for either vendor.
  if (job.wanted == (job.target.is_amd() ? ArtifactKind::hsaco : ArtifactKind::cubin)) recipe.clear_artifact();
  return recipe;
}

std::string recipe_digest(const v1::CompileRequest& recipe) {
  return sha256_hex(std::string("kjit recipe v1") + '\0' + serialized(recipe));
}

RecipeBook::RecipeBook(std::shared_ptr<DaemonCache> cache, RecipeLimits limits)
    : cache_(std::move(cache)), limits_(limits), thread_([this] { run(); }) {}

RecipeBook::~RecipeBook() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  idle_.notify_all();
  thread_.join();
}

bool is_portable_recipe(const CompileJob& job) {
  return job.input_kind != InputKind::triton || job.input.find("ttg.target") == std::string::npos;
}

void RecipeBook::record(const CompileJob& job, std::string_view ns, std::string_view key) {
  if (limits_.max_count == 0) return;
  if (touch(ns, key)) return;
  const uint64_t bytes = job_bytes(job);
  // Copied before the lock, so recorders never wait on another's copy.
  Queued queued{job, std::string(ns), std::string(key), now_unix()};
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= k_max_queued || queued_bytes_ + bytes > k_max_queued_bytes || stop_) {
      ++dropped_;
      return;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(queued));
  }
  wake_.notify_one();
}

bool RecipeBook::touch(std::string_view ns, std::string_view key) {
  std::shared_lock lock(known_mutex_);
  if (known_.empty()) return false;
  auto it = known_.find(key);
  if (it == known_.end()) return false;
  for (const std::shared_ptr<Known>& known : it->second) {
    if (known->ns != ns) continue;
    known->asked_unix.store(now_unix(), std::memory_order_relaxed);
    known->touched.store(true, std::memory_order_release);
    return true;
  }
  return false;
}

void RecipeBook::run() {
  std::unique_lock lock(mutex_);
  auto last_flush = std::chrono::steady_clock::now();
  while (true) {
    wake_.wait_for(lock, k_flush_interval,
                   [&] { return stop_ || !queue_.empty() || flush_asked_ != flush_done_; });
    if (stop_) return;
    const uint64_t asked = flush_asked_;
    while (!queue_.empty()) {
      Queued next = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= job_bytes(next.job);
      lock.unlock();
      store(std::move(next));
      lock.lock();
    }
    const auto now = std::chrono::steady_clock::now();
    if (asked != flush_done_ || now - last_flush >= k_flush_interval || !pending_.empty()) {
      lock.unlock();
      write_indexes();
      lock.lock();
      last_flush = now;
    }
    flush_done_ = asked;
    idle_.notify_all();
  }
}

void RecipeBook::store(Queued queued) {
  const v1::CompileRequest recipe = recipe_of(queued.job);
  const std::string bytes = serialized(recipe);
  const std::string digest = recipe_digest(recipe);
  if (bytes.size() > limits_.max_bytes) {
    ++dropped_;
    return;
  }
  const NamespacedCache view = cache_->recipes_in(queued.ns);
  const std::string key = recipe_key(queued.ns, digest);
  // Content-addressed: a recipe already stored (by this daemon or one
  // sharing Redis) is not written again.
  if (!read_entry(view, key, BlobIdentity{std::string(k_recipe_kind), queued.ns, digest, "recipe"})) {
    view.put(entry_of(k_recipe_kind, queued.ns, digest, key, bytes));
    ++recorded_;
  }
  v1::RecipeSummary summary;
  summary.set_digest(digest);
  summary.set_input_kind(recipe.input().kind());
  summary.set_input_name(recipe.input().name());
  summary.set_artifact(recipe.artifact());
  summary.set_bytes(bytes.size());
  summary.set_created_unix(queued.asked_unix);
  summary.set_last_asked_unix(queued.asked_unix);
  summary.set_last_target(queued.job.target.canonical());
  {
    std::lock_guard lock(mutex_);
    auto [at, added] = pending_[queued.ns].updates.try_emplace(digest, summary);
    if (!added) keep_newer(at->second, summary);
  }
  auto known = std::make_shared<Known>();
  known->ns = queued.ns;
  known->digest = digest;
  known->target = queued.job.target.canonical();
  known->asked_unix = queued.asked_unix;
  std::unique_lock lock(known_mutex_);
  if (known_count_ >= k_max_known) {
    known_.clear();
    known_count_ = 0;
  }
  std::vector<std::shared_ptr<Known>>& of_key = known_[queued.key];
  known_count_ -= std::erase_if(of_key, [&](const std::shared_ptr<Known>& other) { return other->ns == known->ns; });
  of_key.push_back(std::move(known));
  ++known_count_;
}

v1::ListRecipesResponse RecipeBook::read_index(const NamespacedCache& view) const {
  v1::ListRecipesResponse index;
  const std::string ns = view.ns();
  std::optional<std::string> bytes =
      read_entry(view, index_key(ns), BlobIdentity{std::string(k_recipe_index_kind), ns, "index", "index"});
  // A damaged index (it was verified as an entry, so written by another
  // kjit) is read as empty: recipes are rebuilt by the next compiles.
  if (bytes && !index.ParseFromString(*bytes)) index.Clear();
  return index;
}

void RecipeBook::write_index(const NamespacedCache& view, v1::ListRecipesResponse index) const {
  const std::string ns = view.ns();
  view.put(entry_of(k_recipe_index_kind, ns, "index", index_key(ns), serialized(index)));
}

void RecipeBook::apply_bounds(const NamespacedCache& view, v1::ListRecipesResponse& index) {
  auto* recipes = index.mutable_recipes();
  // Stable: within one second, what was asked last (first in the index,
  // write_indexes puts it there) stays.
  std::stable_sort(recipes->begin(), recipes->end(), [](const v1::RecipeSummary& a, const v1::RecipeSummary& b) {
    return a.last_asked_unix() > b.last_asked_unix();
  });
  uint64_t count = 0, bytes = 0;
  int keep = 0;
  for (; keep < recipes->size(); ++keep) {
    const uint64_t size = recipes->Get(keep).bytes();
    if (count + 1 > limits_.max_count || bytes + size > limits_.max_bytes) break;
    ++count;
    bytes += size;
  }
  if (keep == recipes->size()) return;
  std::set<std::string> evicted;
  for (int i = keep; i < recipes->size(); ++i) {
    view.remove(recipe_key(view.ns(), recipes->Get(i).digest()));
    evicted.insert(recipes->Get(i).digest());
    ++evicted_;
  }
  recipes->DeleteSubrange(keep, recipes->size() - keep);
  // Forgotten here too, so the next compile of one records it again.
  forget(view.ns(), evicted);
}

void RecipeBook::forget(std::string_view ns, const std::set<std::string>& digests) {
  std::unique_lock lock(known_mutex_);
  for (auto& [key, of_key] : known_)
    known_count_ -= std::erase_if(of_key, [&](const std::shared_ptr<Known>& known) {
      return known->ns == ns && digests.count(known->digest) > 0;
    });
}

void RecipeBook::write_indexes() {
  // Hits' last-asked times, as updates of their namespaces.
  std::vector<std::shared_ptr<Known>> touched;
  {
    std::shared_lock lock(known_mutex_);
    for (const auto& [key, of_key] : known_)
      for (const std::shared_ptr<Known>& known : of_key)
        if (known->touched.exchange(false, std::memory_order_acq_rel)) touched.push_back(known);
  }
  std::map<std::string, Pending> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(pending_);
  }
  for (const std::shared_ptr<Known>& known : touched) {
    v1::RecipeSummary& update = pending[known->ns].updates[known->digest];
    update.set_digest(known->digest);
    const int64_t asked = known->asked_unix.load(std::memory_order_relaxed);
    if (asked > update.last_asked_unix()) {
      update.set_last_asked_unix(asked);
      update.set_last_target(known->target);
    }
  }
  std::lock_guard index_lock(index_mutex_);
  for (auto& [ns, updates] : pending) {
    const NamespacedCache view = cache_->recipes_in(ns);
    v1::ListRecipesResponse stored = read_index(view);
    // What this daemon saw asked first, then the rest as stored.
    v1::ListRecipesResponse index;
    for (v1::RecipeSummary& line : *stored.mutable_recipes()) {
      auto update = updates.updates.find(line.digest());
      if (update == updates.updates.end()) continue;
      keep_newer(line, update->second);
      *index.add_recipes() = std::move(line);
      line.clear_digest();
      updates.updates.erase(update);
    }
    // New to the index: a touch alone (its summary has no bytes) of a
    // recipe removed meanwhile stays out.
    for (auto& [digest, summary] : updates.updates)
      if (summary.bytes() > 0) *index.add_recipes() = std::move(summary);
    for (v1::RecipeSummary& line : *stored.mutable_recipes())
      if (!line.digest().empty()) *index.add_recipes() = std::move(line);
    apply_bounds(view, index);
    write_index(view, std::move(index));
  }
}

Result<std::vector<v1::RecipeSummary>> RecipeBook::list(std::string_view ns, int64_t since_unix) const {
  v1::ListRecipesResponse index = read_index(cache_->recipes_in(std::string(ns)));
  std::vector<v1::RecipeSummary> out;
  for (v1::RecipeSummary& summary : *index.mutable_recipes())
    if (summary.last_asked_unix() >= since_unix) out.push_back(std::move(summary));
  std::sort(out.begin(), out.end(), [](const v1::RecipeSummary& a, const v1::RecipeSummary& b) {
    return a.last_asked_unix() > b.last_asked_unix();
  });
  return out;
}

Result<std::pair<v1::RecipeSummary, v1::CompileRequest>> RecipeBook::get(std::string_view ns,
                                                                            std::string_view digest) const {
  v1::ListRecipesResponse index = read_index(cache_->recipes_in(std::string(ns)));
  for (v1::RecipeSummary& summary : *index.mutable_recipes()) {
    if (summary.digest() != digest) continue;
    Result<v1::CompileRequest> recipe = request(ns, digest);
    if (!recipe) return recipe.error();
    return std::pair{std::move(summary), std::move(*recipe)};
  }
  return make_error(ErrorCode::not_found, "no recipe " + std::string(digest) + " in this namespace");
}

Result<v1::CompileRequest> RecipeBook::request(std::string_view ns, std::string_view digest) const {
  const NamespacedCache view = cache_->recipes_in(std::string(ns));
  std::optional<std::string> bytes = read_entry(
      view, recipe_key(ns, digest), BlobIdentity{std::string(k_recipe_kind), std::string(ns), std::string(digest), "recipe"});
  v1::CompileRequest recipe;
  // What is read back is checked against its name, so a recipe is never
  // some other request.
  if (!bytes || !recipe.ParseFromString(*bytes) || recipe_digest(recipe) != digest)
    return make_error(ErrorCode::not_found,
                      "recipe " + std::string(digest) + " is listed but its entry has left the cache tiers");
  return recipe;
}

Result<bool> RecipeBook::remove(std::string_view ns, std::string_view digest) {
  flush();  // what is queued or pending would otherwise bring it back
  const NamespacedCache view = cache_->recipes_in(std::string(ns));
  std::lock_guard lock(index_mutex_);  // no index write of the book's thread in between
  v1::ListRecipesResponse index = read_index(view);
  auto* recipes = index.mutable_recipes();
  auto it = std::find_if(recipes->begin(), recipes->end(),
                         [&](const v1::RecipeSummary& summary) { return summary.digest() == digest; });
  if (it == recipes->end()) return false;
  recipes->erase(it);
  write_index(view, std::move(index));
  view.remove(recipe_key(ns, digest));
  forget(ns, {std::string(digest)});
  return true;
}

void RecipeBook::flush() {
  std::unique_lock lock(mutex_);
  const uint64_t ticket = ++flush_asked_;
  wake_.notify_all();
  idle_.wait(lock, [&] { return stop_ || flush_done_ >= ticket; });
}

RecipeCounters RecipeBook::counters() const {
  return RecipeCounters{recorded_.load(), dropped_.load(), evicted_.load()};
}

}  // namespace kjit
