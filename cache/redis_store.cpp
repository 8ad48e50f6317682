// hiredis behind the Store interface, with a connection pool, a circuit
// breaker and leases (see redis_store.h).
#include "redis_store.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <cerrno>
#include <chrono>

namespace kjit {
namespace {

// Deletes the lease only while it still names the caller; GET and DEL in
// one script so no other daemon can take the lease in between.
constexpr const char* k_release_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
// Extends the lease only while it still names the caller, for the same
// reason; returns 1 when extended, 0 when the lease is gone or not ours.
constexpr const char* k_extend_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";
constexpr const char* k_list_batch = "1000";

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000), static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// hiredis writes with write(2): a peer that has gone away would raise
// SIGPIPE and kill the daemon, so the signal is ignored unless the program
// installed a handler of its own.
void ignore_sigpipe_once() {
  static const bool done = [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

// Redis glob MATCH patterns treat these specially; a prefix is matched literally.
std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// A reply copied out of hiredis's structure, so no hiredis type or manual
// free leaks into the rest of the file.
struct RedisStore::Reply {
  int type = REDIS_REPLY_NIL;
  std::string str;
  long long integer = 0;
  std::vector<Reply> elements;

  static Reply from(const redisReply* r) {
    Reply out;
    out.type = r->type;
    if (r->str) out.str.assign(r->str, r->len);
    out.integer = r->integer;
    for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(from(r->element[i]));
    return out;
  }
  bool is_error() const { return type == REDIS_REPLY_ERROR; }
};

void RedisStore::ContextDeleter::operator()(redisContext* context) const {
  redisFree(context);
}

RedisStore::RedisStore(Options options) : options_(std::move(options)), breaker_(options_.breaker) {
  ignore_sigpipe_once();
}

RedisStore::~RedisStore() = default;

std::string RedisStore::address() const {
  return options_.host.starts_with('/') ? options_.host : options_.host + ":" + std::to_string(options_.port);
}

std::string RedisStore::namespace_prefix() const {
  return options_.key_prefix + "v" + std::to_string(k_entry_format_version) + ":";
}

std::string RedisStore::entry_key(std::string_view key) const {
  return namespace_prefix() + "entry:" + std::string(key);
}

std::string RedisStore::lease_key(std::string_view key) const {
  return namespace_prefix() + "lease:" + std::string(key);
}

Result<RedisStore::ContextPtr> RedisStore::connect() {
  const timeval connect_tv = to_timeval(options_.connect_timeout);
  redisContext* raw = options_.host.starts_with('/')
                          ? redisConnectUnixWithTimeout(options_.host.c_str(), connect_tv)
                          : redisConnectWithTimeout(options_.host.c_str(), options_.port, connect_tv);
  if (!raw) return make_error(ErrorCode::unavailable, "redis " + address() + ": out of memory");
  ContextPtr context(raw);
  if (context->err) return make_error(ErrorCode::unavailable, "redis " + address() + ": " + context->errstr);
  // The operation timeout bounds every read and write, so a hung server
  // costs at most this per request instead of blocking a worker.
  if (redisSetTimeout(raw, to_timeval(options_.operation_timeout)) != REDIS_OK)
    return make_error(ErrorCode::unavailable, "redis " + address() + ": cannot set timeout: " + context->errstr);
  (void)redisEnableKeepAlive(raw);
  return context;
}

void RedisStore::return_connection(ContextPtr context) {
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(context));
}

void RedisStore::drop_idle_connections() {
  std::vector<ContextPtr> dropped;
  {
    std::lock_guard lock(pool_mutex_);
    dropped.swap(idle_);
  }
}

Result<std::vector<RedisStore::Reply>> RedisStore::run_on(redisContext* context,
                                                          const std::vector<std::vector<std::string>>& commands,
                                                          bool& peer_closed) {
  // Appended first and read after, so a batch costs one round trip.
  for (const auto& command : commands) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK)
      return make_error(ErrorCode::unavailable, "redis " + address() + ": " + context->errstr);
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context, &raw) != REDIS_OK || !raw) {
      const int saved = errno;
      const bool timed_out = context->err == REDIS_ERR_IO && (saved == EAGAIN || saved == EWOULDBLOCK);
      peer_closed =
          context->err == REDIS_ERR_EOF || (context->err == REDIS_ERR_IO && (saved == ECONNRESET || saved == EPIPE));
      return make_error(timed_out ? ErrorCode::deadline_exceeded : ErrorCode::unavailable,
                        "redis " + address() + ": " + (timed_out ? "operation timed out" : context->errstr));
    }
    replies.push_back(Reply::from(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return replies;
}

Result<std::vector<RedisStore::Reply>> RedisStore::run(const std::vector<std::vector<std::string>>& commands) {
  if (!breaker_.allow()) {
    ++skipped_;
    return make_error(ErrorCode::unavailable, "redis " + address() + " is failing; skipped until its backoff passes");
  }
  for (int attempt = 0;; ++attempt) {
    ContextPtr context;
    {
      std::lock_guard lock(pool_mutex_);
      if (!idle_.empty()) {
        context = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    const bool reused = context != nullptr;
    if (!context) {
      Result<ContextPtr> connected = connect();
      if (!connected) {
        breaker_.record_failure();
        ++errors_;
        return connected.error();
      }
      context = std::move(connected).value();
    }
    bool peer_closed = false;
    Result<std::vector<Reply>> replies = run_on(context.get(), commands, peer_closed);
    if (replies) {
      return_connection(std::move(context));
      breaker_.record_success();
      return replies;
    }
    // A failed context is unusable, and the idle ones most likely point at
    // the same dead server.
    drop_idle_connections();
    // An idle connection closed by a server that has restarted since: one
    // retry on a fresh connection, so a restart costs no failed request.
    if (reused && attempt == 0 && peer_closed) continue;
    breaker_.record_failure();
    ++errors_;
    return replies.error();
  }
}

Result<std::optional<CacheEntry>> RedisStore::get(std::string_view key) {
  // EXPIRE rides in the same pipeline as GET, so refreshing a hit costs no
  // round trip; on a miss it is a no-op and creates nothing. (GETEX would do
  // both in one command but needs Redis 6.2.) Its reply is not checked: a
  // refresh that fails (say, on a read-only replica) only leaves the entry
  // expiring when it would have anyway, and must not turn a hit into an error.
  const std::string stored_key = entry_key(key);
  Result<std::vector<Reply>> replies =
      run({{"GET", stored_key}, {"EXPIRE", stored_key, std::to_string(options_.ttl.count())}});
  if (!replies) return replies.error();
  Reply& reply = replies->front();
  if (reply.type == REDIS_REPLY_NIL) {
    ++misses_;
    return std::optional<CacheEntry>();
  }
  if (reply.type != REDIS_REPLY_STRING) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis GET: " + (reply.is_error() ? reply.str : "unexpected reply"));
  }
  Result<CacheEntry> entry = decode_entry(std::move(reply.str), key);
  if (!entry) {
    ++corruptions_;
    ++misses_;
    (void)run({{"DEL", stored_key}});
    return std::optional<CacheEntry>();
  }
  ++hits_;
  return std::optional<CacheEntry>(std::move(entry).value());
}

Status RedisStore::put(const CacheEntry& entry) {
  Result<std::vector<Reply>> replies =
      run({{"SET", entry_key(entry.key), encode_entry(entry), "EX", std::to_string(options_.ttl.count())}});
  if (!replies) return replies.error();
  if (replies->front().is_error()) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis SET: " + replies->front().str);
  }
  ++puts_;
  return Ok{};
}

Status RedisStore::remove(std::string_view key) {
  Result<std::vector<Reply>> replies = run({{"DEL", entry_key(key)}});
  if (!replies) return replies.error();
  if (replies->front().is_error()) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis DEL: " + replies->front().str);
  }
  return Ok{};
}

StoreStats RedisStore::stats() const {
  StoreStats out;
  out.hits = hits_;
  out.misses = misses_;
  out.puts = puts_;
  out.corruptions = corruptions_;
  out.errors = errors_;
  out.skipped = skipped_;
  return out;
}

Result<std::vector<StoredKey>> RedisStore::list() {
  const std::string prefix = entry_key("");
  const std::string pattern = glob_escape(prefix) + "*";
  const int64_t now = now_unix();
  std::vector<StoredKey> out;
  std::string cursor = "0";
  do {
    Result<std::vector<Reply>> scanned = run({{"SCAN", cursor, "MATCH", pattern, "COUNT", k_list_batch}});
    if (!scanned) return scanned.error();
    const Reply& page = scanned->front();
    if (page.type != REDIS_REPLY_ARRAY || page.elements.size() != 2)
      return make_error(ErrorCode::internal, "redis SCAN: unexpected reply");
    cursor = page.elements[0].str;
    const std::vector<Reply>& keys = page.elements[1].elements;
    if (keys.empty()) continue;
    std::vector<std::vector<std::string>> details;
    for (const Reply& k : keys) {
      details.push_back({"STRLEN", k.str});
      details.push_back({"OBJECT", "IDLETIME", k.str});
    }
    Result<std::vector<Reply>> answers = run(details);
    if (!answers) return answers.error();
    for (size_t i = 0; i < keys.size(); ++i) {
      const Reply& size = (*answers)[2 * i];
      const Reply& idle = (*answers)[2 * i + 1];
      if (size.type != REDIS_REPLY_INTEGER || size.integer == 0) continue;  // expired meanwhile
      out.push_back(StoredKey{keys[i].str.substr(prefix.size()), static_cast<uint64_t>(size.integer),
                              idle.type == REDIS_REPLY_INTEGER ? now - idle.integer : 0});
    }
  } while (cursor != "0");
  return out;
}

Result<bool> RedisStore::contains(std::string_view key) {
  Result<std::vector<Reply>> replies = run({{"EXISTS", entry_key(key)}});
  if (!replies) return replies.error();
  if (replies->front().type != REDIS_REPLY_INTEGER) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis EXISTS: unexpected reply");
  }
  return replies->front().integer > 0;
}

LeaseOutcome RedisStore::try_acquire_lease(std::string_view key, std::string_view owner,
                                           std::chrono::milliseconds ttl) {
  Result<std::vector<Reply>> replies =
      run({{"SET", lease_key(key), std::string(owner), "NX", "PX", std::to_string(ttl.count())}});
  if (!replies) return LeaseOutcome::unavailable;
  const Reply& reply = replies->front();
  if (reply.type == REDIS_REPLY_NIL) return LeaseOutcome::held_by_other;
  if (reply.type == REDIS_REPLY_STATUS && reply.str == "OK") return LeaseOutcome::acquired;
  ++errors_;
  return LeaseOutcome::unavailable;
}

Status RedisStore::release_lease(std::string_view key, std::string_view owner) {
  Result<std::vector<Reply>> replies = run({{"EVAL", k_release_script, "1", lease_key(key), std::string(owner)}});
  if (!replies) return replies.error();
  if (replies->front().is_error()) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis EVAL: " + replies->front().str);
  }
  return Ok{};
}

Status RedisStore::extend_lease(std::string_view key, std::string_view owner, std::chrono::milliseconds ttl) {
  Result<std::vector<Reply>> replies =
      run({{"EVAL", k_extend_script, "1", lease_key(key), std::string(owner), std::to_string(ttl.count())}});
  if (!replies) return replies.error();
  const Reply& reply = replies->front();
  if (reply.type != REDIS_REPLY_INTEGER) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis EVAL: " + (reply.is_error() ? reply.str : "unexpected reply"));
  }
  if (reply.integer == 0)
    return make_error(ErrorCode::not_found,
                      "lease on " + std::string(key) + " is no longer held by " + std::string(owner));
  return Ok{};
}

Result<std::optional<std::string>> RedisStore::lease_holder(std::string_view key) {
  Result<std::vector<Reply>> replies = run({{"GET", lease_key(key)}});
  if (!replies) return replies.error();
  const Reply& reply = replies->front();
  if (reply.type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if (reply.type != REDIS_REPLY_STRING) {
    ++errors_;
    return make_error(ErrorCode::internal, "redis GET: " + (reply.is_error() ? reply.str : "unexpected reply"));
  }
  return std::optional<std::string>(reply.str);
}

}  // namespace kjit
