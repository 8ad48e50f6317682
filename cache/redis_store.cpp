// Entries as Redis strings with an expiry (see redis_store.h).
#include "cache/redis_store.h"

#include <chrono>

#include "core/clock.h"

namespace kjit {
namespace {

using Kind = RedisConnection::Reply::Kind;
using Reply = RedisConnection::Reply;

constexpr const char* k_list_batch = "1000";

// Redis glob MATCH patterns treat these specially; a prefix is matched literally.
std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}


}  // namespace

RedisStore::RedisStore(std::shared_ptr<RedisConnection> redis, Options options)
    : redis_(std::move(redis)), options_(options) {}

std::string RedisStore::entry_key(std::string_view key) const {
  return redis_->key("entry", key);
}

Result<std::optional<CacheEntry>> RedisStore::get(std::string_view key) {
  // EXPIRE rides in the same pipeline as GET, so refreshing a hit costs no
  // round trip; on a miss it is a no-op and creates nothing. (GETEX would do
  // both in one command but needs Redis 6.2.) Its reply is not checked: a
  // refresh that fails (say, on a read-only replica) only leaves the entry
  // expiring when it would have anyway, and must not turn a hit into an error.
  const std::string stored_key = entry_key(key);
  Result<std::vector<Reply>> replies =
      redis_->run({{"GET", stored_key}, {"EXPIRE", stored_key, std::to_string(options_.ttl.count())}});
  if (!replies) return replies.error();
  Reply& reply = replies->front();
  if (reply.kind == Kind::nil) {
    ++counters_.misses;
    return std::optional<CacheEntry>();
  }
  if (reply.kind != Kind::string) return redis_->unexpected_reply("GET", reply);
  Result<CacheEntry> entry = decode_entry(std::move(reply.str), key);
  if (!entry) {
    ++counters_.corruptions;
    ++counters_.misses;
    (void)redis_->run({{"DEL", stored_key}});
    return std::optional<CacheEntry>();
  }
  ++counters_.hits;
  return std::optional<CacheEntry>(std::move(entry).value());
}

Status RedisStore::put(const CacheEntry& entry) {
  Result<Reply> reply = redis_->run_one(
      {"SET", entry_key(entry.key), encode_entry(entry), "EX", std::to_string(options_.ttl.count())}, {Kind::status});
  if (!reply) return reply.error();
  ++counters_.puts;
  return Ok{};
}

Status RedisStore::remove(std::string_view key) {
  Result<Reply> reply = redis_->run_one({"DEL", entry_key(key)}, {Kind::integer});
  if (!reply) return reply.error();
  return Ok{};
}

Result<bool> RedisStore::contains(std::string_view key) {
  Result<Reply> reply = redis_->run_one({"EXISTS", entry_key(key)}, {Kind::integer});
  if (!reply) return reply.error();
  return reply->integer > 0;
}

StoreStats RedisStore::stats() const {
  StoreStats out = counters_.snapshot();
  out.errors += redis_->errors();
  out.skipped += redis_->skipped();
  return out;
}

Result<std::vector<StoredKey>> RedisStore::list() {
  const std::string prefix = entry_key("");
  const std::string pattern = glob_escape(prefix) + "*";
  const int64_t now = unix_seconds_now();
  std::vector<StoredKey> out;
  std::string cursor = "0";
  do {
    Result<Reply> page = redis_->run_one({"SCAN", cursor, "MATCH", pattern, "COUNT", k_list_batch}, {Kind::array});
    if (!page) return page.error();
    if (page->elements.size() != 2) return redis_->unexpected_reply("SCAN", *page);
    cursor = page->elements[0].str;
    const std::vector<Reply>& keys = page->elements[1].elements;
    if (keys.empty()) continue;
    std::vector<RedisConnection::Command> details;
    for (const Reply& k : keys) {
      details.push_back({"STRLEN", k.str});
      details.push_back({"OBJECT", "IDLETIME", k.str});
    }
    Result<std::vector<Reply>> answers = redis_->run(details);
    if (!answers) return answers.error();
    for (size_t i = 0; i < keys.size(); ++i) {
      const Reply& size = (*answers)[2 * i];
      const Reply& idle = (*answers)[2 * i + 1];
      if (size.kind != Kind::integer || size.integer == 0) continue;  // expired meanwhile
      out.push_back(StoredKey{keys[i].str.substr(prefix.size()), static_cast<uint64_t>(size.integer),
                              idle.kind == Kind::integer ? now - idle.integer : 0});
    }
  } while (cursor != "0");
  return out;
}

}  // namespace kjit
