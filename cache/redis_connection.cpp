// hiredis behind RedisConnection: the pool, the breaker, one retry after a
// server restart (see redis_connection.h).
#include "cache/redis_connection.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "cache/cache_entry.h"

namespace kjit {
namespace {

using Reply = RedisConnection::Reply;

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

Reply::Kind kind_of(int type) {
  static constexpr std::pair<int, Reply::Kind> k_kinds[] = {
      {REDIS_REPLY_NIL, Reply::Kind::nil},       {REDIS_REPLY_STRING, Reply::Kind::string},
      {REDIS_REPLY_STATUS, Reply::Kind::status}, {REDIS_REPLY_INTEGER, Reply::Kind::integer},
      {REDIS_REPLY_ARRAY, Reply::Kind::array},   {REDIS_REPLY_ERROR, Reply::Kind::error},
  };
  for (const auto& [hiredis_type, kind] : k_kinds)
    if (hiredis_type == type) return kind;
  return Reply::Kind::other;
}

Reply copy_reply(const redisReply* r) {
  Reply out;
  out.kind = kind_of(r->type);
  if (r->str) out.str.assign(r->str, r->len);
  out.integer = r->integer;
  for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy_reply(r->element[i]));
  return out;
}

}  // namespace

void RedisConnection::ContextDeleter::operator()(redisContext* context) const {
  redisFree(context);
}

RedisConnection::RedisConnection(Options options) : options_(std::move(options)), breaker_(options_.breaker) {
  ignore_sigpipe_once();
}

RedisConnection::~RedisConnection() = default;

std::string RedisConnection::address() const {
  return options_.host.starts_with('/') ? options_.host : options_.host + ":" + std::to_string(options_.port);
}

std::string RedisConnection::key(std::string_view kind, std::string_view key) const {
  std::string out = options_.key_prefix + "v" + std::to_string(k_entry_format_version) + ":";
  out += kind;
  out += ':';
  out += key;
  return out;
}

Result<RedisConnection::ContextPtr> RedisConnection::connect() {
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

void RedisConnection::return_connection(ContextPtr context) {
  std::lock_guard lock(pool_mutex_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(context));
}

void RedisConnection::drop_idle_connections() {
  std::vector<ContextPtr> dropped;
  {
    std::lock_guard lock(pool_mutex_);
    dropped.swap(idle_);
  }
}

Result<std::vector<Reply>> RedisConnection::run_on(redisContext* context, const std::vector<Command>& commands,
                                                   bool& peer_closed) {
  // Appended first and read after, so a batch costs one round trip.
  for (const Command& command : commands) {
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
    replies.push_back(copy_reply(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return replies;
}

Result<std::vector<Reply>> RedisConnection::run(const std::vector<Command>& commands) {
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

Result<Reply> RedisConnection::run_one(const Command& command, std::initializer_list<Reply::Kind> expected) {
  Result<std::vector<Reply>> replies = run({command});
  if (!replies) return replies.error();
  Reply& reply = replies->front();
  if (std::find(expected.begin(), expected.end(), reply.kind) == expected.end())
    return unexpected_reply(command.front(), reply);
  return std::move(reply);
}

Error RedisConnection::unexpected_reply(std::string_view command, const Reply& reply) {
  ++errors_;
  return make_error(ErrorCode::internal, "redis " + std::string(command) + ": " +
                                             (reply.kind == Reply::Kind::error ? reply.str : "unexpected reply"));
}

}  // namespace kjit
