// Entries in a REAPI store, read checked and written behind (see reapi_store.h).
#include "cache/reapi_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cache/reapi_action.h"

namespace kjit {

ReapiStore::ReapiStore(std::shared_ptr<ReapiConnection> connection, Options options)
    : connection_(std::move(connection)), options_(std::move(options)) {
  if (options_.write_behind) writes_ = std::make_unique<WriteBehindQueue>(options_.max_queued_bytes);
}

ReapiStore::~ReapiStore() {
  writes_.reset();  // the queued writes, while the connection and counters they use are here
}

std::string ReapiStore::instance_for(std::string_view key) const {
  return options_.instance_of ? options_.instance_of(key) : connection_->options().instance;
}

Result<ReapiDigest> ReapiStore::action_digest(std::string_view key, std::string_view instance, bool upload,
                                              const std::vector<std::pair<ReapiDigest, std::string_view>>& also) {
  const std::string command = reapi_entry_command(key);
  Result<ReapiDigest> command_digest = connection_->digest_of(command);
  if (!command_digest) return command_digest.error();
  Result<ReapiDigest> empty_root = connection_->digest_of("");
  if (!empty_root) return empty_root.error();
  const std::string action = reapi_entry_action(command_digest->hash, command_digest->size, empty_root->hash);
  Result<ReapiDigest> digest = connection_->digest_of(action);
  if (!digest) return digest.error();
  if (upload) {
    std::vector<std::pair<ReapiDigest, std::string_view>> blobs = also;
    blobs.emplace_back(*command_digest, command);
    blobs.emplace_back(*digest, action);
    Result<std::vector<std::pair<ReapiDigest, std::string_view>>> needed = not_stored(instance, std::move(blobs));
    if (!needed) return needed.error();
    if (Status written = connection_->write_blobs(instance, *needed); !written) return written.error();
    for (const auto& blob : *needed) bytes_written_ += blob.second.size();
  }
  return digest;
}

Result<std::vector<std::pair<ReapiDigest, std::string_view>>> ReapiStore::not_stored(
    std::string_view instance, std::vector<std::pair<ReapiDigest, std::string_view>> blobs) {
  uint64_t total = 0;
  for (const auto& blob : blobs) total += blob.second.size();
  // Below this, sending the bytes costs less than the round trip that asks.
  if (total < k_ask_before_uploading_bytes) return blobs;
  std::vector<ReapiDigest> digests;
  for (const auto& blob : blobs) digests.push_back(blob.first);
  Result<std::vector<ReapiDigest>> missing = connection_->missing_blobs(instance, digests);
  if (!missing) return missing.error();
  std::lock_guard lock(damaged_mutex_);
  std::erase_if(blobs, [&](const auto& blob) {
    // A digest whose bytes this store found damaged is sent again: the
    // server says it has it, and what it has is wrong.
    return std::find(missing->begin(), missing->end(), blob.first) == missing->end() &&
           !damaged_.contains(blob.first.hash);
  });
  return blobs;
}

Result<std::optional<CacheEntry>> ReapiStore::get(std::string_view key) {
  const std::string instance = instance_for(key);
  Result<ReapiDigest> action = action_digest(key, instance, false);
  if (!action) return action.error();
  Result<std::optional<ReapiConnection::Output>> output =
      connection_->get_output(instance, *action, k_reapi_entry_path);
  if (!output) return output.error();
  if (!output->has_value()) {
    ++counters_.misses;
    return std::optional<CacheEntry>();
  }
  std::string bytes;
  if ((*output)->contents) {
    bytes = std::move(*(*output)->contents);
  } else {
    Result<std::optional<std::string>> read = connection_->read_blob(instance, (*output)->digest);
    if (!read) return read.error();
    if (!read->has_value()) {
      // The ActionCache outlived the blob (the CAS evicted it): a miss, and
      // the next put writes both again.
      ++counters_.misses;
      return std::optional<CacheEntry>();
    }
    bytes = std::move(**read);
  }
  bytes_read_ += bytes.size();
  Result<ReapiDigest> actual = connection_->digest_of(bytes);
  if (!actual) return actual.error();
  if (*actual != (*output)->digest) {
    ++counters_.corruptions;
    ++counters_.misses;
    {
      std::lock_guard lock(damaged_mutex_);
      if (damaged_.size() >= k_damaged_digests_kept) damaged_.clear();
      damaged_.insert((*output)->digest.hash);
    }
    spdlog::warn("cache: REAPI tier sent {} bytes for an entry whose digest is {}/{}: refused as corrupt",
                 bytes.size(), (*output)->digest.hash, (*output)->digest.size);
    return std::optional<CacheEntry>();
  }
  Result<CacheEntry> entry = decode_entry(std::move(bytes), key);
  if (!entry) {
    ++counters_.corruptions;
    ++counters_.misses;
    spdlog::warn("cache: REAPI tier entry refused: {}", entry.error().message);
    return std::optional<CacheEntry>();
  }
  ++counters_.hits;
  return std::optional<CacheEntry>(std::move(entry).value());
}

Status ReapiStore::write_now(const std::string& key, const std::string& bytes) {
  const std::string instance = instance_for(key);
  Result<ReapiDigest> entry_digest = connection_->digest_of(bytes);
  if (!entry_digest) return entry_digest.error();
  // The entry's bytes first, with its Command and Action: the ActionCache
  // never names a blob the CAS was not given.
  Result<ReapiDigest> action = action_digest(key, instance, true, {{*entry_digest, bytes}});
  if (!action) return action.error();
  if (Status updated = connection_->update_output(instance, *action, k_reapi_entry_path, *entry_digest); !updated)
    return updated;
  ++counters_.puts;
  return Ok{};
}

Status ReapiStore::put(const CacheEntry& entry) {
  std::string bytes = encode_entry(entry);
  if (!writes_) return write_now(entry.key, bytes);
  const uint64_t size = bytes.size();
  // A full queue drops the write; the entry stays in the tiers above.
  if (!writes_->push(size, [this, key = entry.key, bytes = std::move(bytes)] { write_behind(key, bytes); }))
    ++counters_.skipped;
  return Ok{};
}

void ReapiStore::write_behind(const std::string& key, const std::string& bytes) {
  Status written = write_now(key, bytes);
  if (written) return;
  const uint64_t n = ++write_failures_;
  if ((n & (n - 1)) == 0)
    spdlog::warn("cache: REAPI tier write failed ({} so far), the entry stays in the tiers above: {}", n,
                 written.error().message);
}

void ReapiStore::flush() {
  if (writes_) writes_->flush();
}

Status ReapiStore::remove(std::string_view key) {
  const std::string instance = instance_for(key);
  Result<ReapiDigest> action = action_digest(key, instance, true);
  if (!action) return action.error();
  return connection_->update_output(instance, *action, k_reapi_entry_path, std::nullopt);
}

Result<bool> ReapiStore::contains(std::string_view key) {
  const std::string instance = instance_for(key);
  Result<ReapiDigest> action = action_digest(key, instance, false);
  if (!action) return action.error();
  Result<std::optional<ReapiConnection::Output>> output =
      connection_->get_output(instance, *action, k_reapi_entry_path);
  if (!output) return output.error();
  return output->has_value();
}

StoreStats ReapiStore::stats() const {
  StoreStats out = counters_.snapshot();
  // The connection counts the server's failures and the calls its breaker
  // refused, reads and writes alike.
  out.errors = connection_->errors();
  out.skipped += connection_->skipped();
  return out;
}

Result<std::vector<StoredKey>> ReapiStore::list() {
  return make_error(ErrorCode::unimplemented, "the REAPI tier cannot list its entries: REAPI has no listing");
}

ReapiTransferStats ReapiStore::transfer_stats() const {
  ReapiTransferStats out;
  out.bytes_read = bytes_read_;
  out.bytes_written = bytes_written_;
  out.write_failures = write_failures_;
  out.queued = writes_ ? writes_->length() : 0;
  return out;
}

}  // namespace kjit
