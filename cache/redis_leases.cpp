// Leases as Redis keys with an expiry (see redis_leases.h).
#include "cache/redis_leases.h"

namespace kjit {
namespace {

using Kind = RedisConnection::Reply::Kind;

// Deletes the lease only while it still names the caller; GET and DEL in
// one script so no other daemon can take the lease in between.
constexpr const char* k_release_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
// Extends the lease only while it still names the caller, for the same
// reason; returns 1 when extended, 0 when the lease is gone or not ours.
constexpr const char* k_renew_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";

}  // namespace

RedisLeases::RedisLeases(std::shared_ptr<RedisConnection> redis) : redis_(std::move(redis)) {}

std::string RedisLeases::lease_key(std::string_view key) const {
  return redis_->key("lease", key);
}

LeaseOutcome RedisLeases::try_acquire(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) {
  Result<RedisConnection::Reply> reply = redis_->run_one(
      {"SET", lease_key(key), std::string(owner), "NX", "PX", std::to_string(ttl.count())}, {Kind::nil, Kind::status});
  if (!reply) return LeaseOutcome::unavailable;
  if (reply->kind == Kind::nil) return LeaseOutcome::held_by_other;
  if (reply->str == "OK") return LeaseOutcome::acquired;
  (void)redis_->unexpected_reply("SET", *reply);
  return LeaseOutcome::unavailable;
}

Status RedisLeases::release(std::string_view key, std::string_view owner) {
  Result<RedisConnection::Reply> reply =
      redis_->run_one({"EVAL", k_release_script, "1", lease_key(key), std::string(owner)}, {Kind::integer});
  if (!reply) return reply.error();
  return Ok{};
}

Status RedisLeases::renew(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) {
  Result<RedisConnection::Reply> reply = redis_->run_one(
      {"EVAL", k_renew_script, "1", lease_key(key), std::string(owner), std::to_string(ttl.count())}, {Kind::integer});
  if (!reply) return reply.error();
  if (reply->integer == 0)
    return make_error(ErrorCode::not_found,
                      "lease on " + std::string(key) + " is no longer held by " + std::string(owner));
  return Ok{};
}

Result<std::optional<std::string>> RedisLeases::holder(std::string_view key) {
  Result<RedisConnection::Reply> reply = redis_->run_one({"GET", lease_key(key)}, {Kind::nil, Kind::string});
  if (!reply) return reply.error();
  if (reply->kind == Kind::nil) return std::optional<std::string>();
  return std::optional<std::string>(std::move(reply->str));
}

}  // namespace kjit
