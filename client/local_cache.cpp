// LocalCache: the disk tier's DiskStore, opened read-only in spirit (no scan,
// no puts), and the mapping of its entries to the public CompileResult.
#include "kjit/local_cache.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "cache/disk_store.h"
#include "pipeline/blob_key.h"

namespace kjit {

struct LocalCache::Impl {
  // DiskStore::get is not const (counters, the recency touch) but is
  // thread-safe, so a const LocalCache may call it from any thread.
  std::unique_ptr<DiskStore> store;
};

namespace {

constexpr const char* k_source_name = "local-disk";

CompileResult to_compile_result(CacheEntry&& entry, double lookup_ms) {
  Artifact& artifact = entry.artifact;
  CompileResult out;
  out.artifact_kind = artifact.kind;
  out.artifact = std::move(artifact.bytes);
  out.target = std::move(artifact.target);
  // Like a daemon's hit: what ran for this request was a lookup, not the
  // stages of the compile that filled the cache.
  out.timings = {{"cache", lookup_ms, {{std::string("lookup-") + k_source_name, lookup_ms}}}};
  out.log = std::move(artifact.log);
  out.kernels = std::move(artifact.kernels);
  out.lowered_names = std::move(artifact.lowered_names);
  // The key in the entry's header, which get() checked against the one asked for.
  out.key = std::move(entry.key);
  out.key_components = std::move(artifact.key_components);
  out.pipeline = std::move(artifact.pipeline);
  out.notes = std::move(artifact.notes);
  out.cache = k_source_name;
  return out;
}

// The blob stored under identity, or nullopt: absent, or another identity
// under the same key (which a daemon would not serve either).
Result<std::optional<std::string>> read_blob(DiskStore& store, std::string_view kind, std::string_view ns,
                                             std::string_view key, std::string_view name) {
  Result<std::optional<CacheEntry>> found = store.get(blob_cache_key(kind, ns, key, name));
  if (!found) return found.error();
  if (!found->has_value()) return std::optional<std::string>();
  CacheEntry& entry = **found;
  if (!entry.blob || *entry.blob != BlobIdentity{std::string(kind), std::string(ns), std::string(key),
                                                   std::string(name)})
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(entry.artifact.bytes));
}

}  // namespace

LocalCache::LocalCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalCache::~LocalCache() = default;
LocalCache::LocalCache(LocalCache&&) noexcept = default;
LocalCache& LocalCache::operator=(LocalCache&&) noexcept = default;

Result<LocalCache> LocalCache::open(const std::string& directory) {
  DiskStore::Options options;
  options.directory = directory;
  // A reader must not pay for a walk of 100k entries before its first get,
  // and never puts, so the scan's byte count would go unused.
  options.scan_on_open = false;
  Result<std::unique_ptr<DiskStore>> store = DiskStore::open(std::move(options));
  if (!store) return store.error();
  auto impl = std::make_unique<Impl>();
  impl->store = std::move(store.value());
  return LocalCache(std::move(impl));
}

Result<std::optional<CompileResult>> LocalCache::get(const std::string& key) const {
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<CacheEntry>> found = impl_->store->get(key);
  if (!found) return found.error();
  if (!found->has_value()) return std::optional<CompileResult>();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::optional<CompileResult>(to_compile_result(std::move(**found), ms));
}

Result<std::optional<BlobGroup>> LocalCache::get_blob_group(const std::string& ns, const std::string& key,
                                                            const std::string& group) const {
  Result<std::optional<std::string>> names = read_blob(*impl_->store, k_blob_group_kind, ns, key, group);
  if (!names) return names.error();
  if (!names->has_value()) return std::optional<BlobGroup>();
  BlobGroup out;
  for (const std::string& name : decode_blob_group_names(**names)) {
    Result<std::optional<std::string>> data = read_blob(*impl_->store, k_blob_kind, ns, key, name);
    if (!data) return data.error();
    if (!data->has_value()) return std::optional<BlobGroup>();
    out.members.push_back(Blob{name, std::move(**data)});
  }
  return std::optional<BlobGroup>(std::move(out));
}

Result<BlobClaim> LocalCache::claim_blob_group(const Client& client, const std::string& ns, const std::string& key,
                                               const std::string& group, std::chrono::milliseconds wait) const {
  // A read that fails is no answer: the daemon has the group, or the claim.
  Result<std::optional<BlobGroup>> local = get_blob_group(ns, key, group);
  if (local && local->has_value()) return BlobClaim::found(std::move(**local));
  return client.claim_blob_group(ns, key, group, wait);
}

}  // namespace kjit
