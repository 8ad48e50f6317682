#include "server/observe/metrics.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CivetServer.h>
#include <civetweb.h>
#include <openssl/crypto.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <cctype>
#include <cstring>
#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <shared_mutex>
#include <sstream>
#include <type_traits>
#include <vector>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pipeline/cache_key.h"
#include "server/observe/metrics_sources.h"

namespace kjit {
namespace {

// gRPC's names for its status codes, by number.
constexpr std::array<std::string_view, 17> k_grpc_code_names = {
    "OK",           "CANCELLED",          "UNKNOWN",           "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
    "NOT_FOUND",    "ALREADY_EXISTS",     "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",      "OUT_OF_RANGE",       "UNIMPLEMENTED",     "INTERNAL",         "UNAVAILABLE",
    "DATA_LOSS",    "UNAUTHENTICATED"};

std::string_view grpc_code_name(int code) {
  return code >= 0 && code < static_cast<int>(k_grpc_code_names.size()) ? k_grpc_code_names[code] : "UNKNOWN";
}

// A memory hit answers in microseconds, a compile in seconds: one set of
// buckets each for what it measures.
const prometheus::Histogram::BucketBoundaries k_request_buckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
const prometheus::Histogram::BucketBoundaries k_compile_buckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                                                   5,    10,    30,   60,  120,  300, 600};
const prometheus::Histogram::BucketBoundaries k_hit_buckets = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025,
                                                               0.0005,  0.001,    0.0025,  0.005,  0.01,
                                                               0.025,   0.05,     0.1,     0.25,   1};

// Looks up by string_view without making a string.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
};
template <typename T>
using SeriesCache = std::unordered_map<std::string, T*, KeyHash, std::equal_to<>>;

// civetweb spells an IPv6 address in brackets.
std::string listening_spec(const std::string& address, uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos && address.front() != '[';
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// civetweb's listener sits in poll() for up to 2 s before it notices a stop;
// connecting to it meanwhile wakes it, so that stopping takes milliseconds.
void wake_listener_until(const std::string& address, uint16_t port, const std::atomic<bool>& stopped) {
  std::string host = address.starts_with('[') ? address.substr(1, address.size() - 2) : address;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  while (!stopped) {
    const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    if (fd >= 0) {
      ::connect(fd, found->ai_addr, found->ai_addrlen);
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::freeaddrinfo(found);
}

// The token each civetweb port asks for: civetweb's callbacks carry no
// pointer of kjit's (prometheus-cpp gives civetweb its own), so a request
// finds its port's by the port it came to. A port not (yet) here is
// answered 503, never served unchecked.
using TokenDigest = std::atomic<std::shared_ptr<const std::string>>;
struct TokenGuards {
  std::shared_mutex mutex;
  std::map<int, std::shared_ptr<TokenDigest>> by_port;
};
TokenGuards& token_guards() {
  static TokenGuards guards;
  return guards;
}

void answer(mg_connection* connection, int code, const char* status, const char* extra, const char* body) {
  mg_printf(connection,
            "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n%s",
            code, status, extra, std::strlen(body), body);
}

bool token_matches(std::string_view authorization, const std::string& digest) {
  constexpr std::string_view k_bearer = "Bearer ";
  if (!authorization.starts_with(k_bearer)) return false;
  const std::string presented = sha256_hex(authorization.substr(k_bearer.size()));
  // Digests of the same length: the time taken says nothing of how much matched.
  return presented.size() == digest.size() && CRYPTO_memcmp(presented.data(), digest.data(), digest.size()) == 0;
}

// civetweb's begin_request: 0 lets the request through to /metrics; a
// status code means it was answered here.
int check_token(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  std::shared_ptr<const std::string> digest;
  {
    TokenGuards& guards = token_guards();
    std::shared_lock lock(guards.mutex);
    auto found = guards.by_port.find(request->server_port);
    if (found == guards.by_port.end()) {
      answer(connection, 503, "Service Unavailable", "", "kjitd's metrics are starting\n");
      return 503;
    }
    digest = found->second->load();
  }
  if (!digest || digest->empty()) return 0;
  const char* authorization = mg_get_header(connection, "Authorization");
  if (authorization && token_matches(authorization, *digest)) return 0;
  // Never the token in any log line: only that one was refused.
  answer(connection, 401, "Unauthorized", "WWW-Authenticate: Bearer realm=\"kjitd metrics\"\r\n",
         "kjitd's metrics need a token: authorization: Bearer <token>\n");
  return 401;
}

std::shared_ptr<const std::string> lowercase_digest(std::string digest) {
  for (char& c : digest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::make_shared<const std::string>(std::move(digest));
}

}  // namespace

struct Metrics::State {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("kjit_requests_total")
          .Help("RPCs answered, by method, gRPC status code and tenant.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& request_duration =
      prometheus::BuildHistogram()
          .Name("kjit_request_duration_seconds")
          .Help("Time to answer an RPC, by method.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& compile_duration =
      prometheus::BuildHistogram()
          .Name("kjit_compile_duration_seconds")
          .Help("Compiles that ran in this daemon, by result (ok, error).")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& hit_duration =
      prometheus::BuildHistogram()
          .Name("kjit_cache_hit_duration_seconds")
          .Help("Time to answer a request from a cache tier, by tier.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& reloads =
      prometheus::BuildCounter()
          .Name("kjit_config_reloads_total")
          .Help("Reloads of the configuration (SIGHUP, kjit admin reload), by result: ok (in force) or failed "
                "(refused; the configuration before stays in force).")
          .Register(*registry);
  prometheus::Counter& reloads_ok = reloads.Add({{"result", "ok"}});
  prometheus::Counter& reloads_failed = reloads.Add({{"result", "failed"}});
  prometheus::Histogram& compile_ok = compile_duration.Add({{"result", "ok"}}, k_compile_buckets);
  prometheus::Histogram& compile_error = compile_duration.Add({{"result", "error"}}, k_compile_buckets);
  std::shared_ptr<MetricsSourcesCollector> sources = std::make_shared<MetricsSourcesCollector>();

  // A request's series: its count and its method's duration, found with
  // one lookup.
  struct RequestSeries {
    prometheus::Counter& count;
    prometheus::Histogram& duration;
  };

  // The series already used, so that the hot path neither builds Labels nor
  // takes a Family's lock. Keys: method \0 code \0 tenant; tier.
  std::shared_mutex series_mutex;
  SeriesCache<RequestSeries> requests_seen;
  SeriesCache<prometheus::Histogram> hit_durations;
  std::vector<std::unique_ptr<RequestSeries>> request_series;  // what requests_seen points to

  std::unique_ptr<prometheus::Exposer> exposer;
  std::string address;  // civetweb's
  uint16_t civet_port = 0;
  std::atomic<uint16_t> port{0};  // the port scrapes come to: civetweb's, or the TLS front's
  std::shared_ptr<TokenDigest> token = std::make_shared<TokenDigest>();
  std::unique_ptr<MetricsTlsFront> tls_front;  // metrics_tls: in front of civetweb

  // The cached series for `key`, made with `make` (under the exclusive lock)
  // on its first use.
  template <typename T, typename Make>
  T& series(SeriesCache<T>& cache, std::string_view key, Make&& make) {
    static_assert(std::is_reference_v<decltype(make())>);
    {
      std::shared_lock lock(series_mutex);
      if (auto it = cache.find(key); it != cache.end()) return *it->second;
    }
    std::unique_lock lock(series_mutex);
    if (auto it = cache.find(key); it != cache.end()) return *it->second;  // another thread made it meanwhile
    T& made = make();
    cache.emplace(std::string(key), &made);
    return made;
  }
};

Metrics::Metrics() : state_(std::make_unique<State>()) {}

Metrics::~Metrics() {
  state_->tls_front.reset();  // it passes connections to civetweb
  if (!state_->exposer) return;
  std::atomic<bool> stopped{false};
  std::thread waker([&] { wake_listener_until(state_->address, state_->civet_port, stopped); });
  state_->exposer.reset();  // no scrape runs past here
  stopped = true;
  waker.join();
  TokenGuards& guards = token_guards();
  std::unique_lock lock(guards.mutex);
  guards.by_port.erase(state_->civet_port);
}

Status Metrics::serve(const std::string& address, uint16_t port, MetricsAccess access) {
  set_token_digest(access.token_sha256);
  // Behind TLS, civetweb listens on loopback alone, on a port of its own.
  const std::string civet_address = access.tls ? "127.0.0.1" : address;
  const uint16_t civet_port = access.tls ? 0 : port;
  try {
    CivetCallbacks callbacks;
    callbacks.begin_request = check_token;
    auto exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listening_spec(civet_address, civet_port), "num_threads", "2"},
        &callbacks);
    exposer->RegisterCollectable(state_->registry);
    exposer->RegisterCollectable(state_->sources);
    const std::vector<int> ports = exposer->GetListeningPorts();
    if (ports.empty())
      return make_error(ErrorCode::internal, "metrics: listening on " + listening_spec(civet_address, civet_port) +
                                                 " failed");
    state_->civet_port = static_cast<uint16_t>(ports.front());
    state_->address = civet_address;
    state_->exposer = std::move(exposer);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::failed_precondition,
                      "metrics: cannot listen on " + listening_spec(civet_address, civet_port) + ": " + e.what());
  }
  {
    TokenGuards& guards = token_guards();
    std::unique_lock lock(guards.mutex);
    guards.by_port[state_->civet_port] = state_->token;
  }
  state_->port = state_->civet_port;
  if (access.tls) {
    Result<std::unique_ptr<MetricsTlsFront>> front =
        MetricsTlsFront::start(address, port, state_->civet_port, std::move(access.tls));
    if (!front) return front.error();
    state_->tls_front = std::move(front.value());
    state_->port = state_->tls_front->port();
  }
  return Ok{};
}

uint16_t Metrics::port() const { return state_->port; }

void Metrics::set_token_digest(const std::string& sha256_hex) { state_->token->store(lowercase_digest(sha256_hex)); }

void Metrics::record_reload(bool ok) { (ok ? state_->reloads_ok : state_->reloads_failed).Increment(); }

void Metrics::set_sources(MetricsSources sources) { state_->sources->set(std::move(sources)); }

void Metrics::record_request(std::string_view method, int grpc_code, std::string_view tenant, double seconds) {
  const std::string_view code = grpc_code_name(grpc_code);
  // Reused by each thread, so a known series costs no allocation.
  thread_local std::string key;
  key.assign(method).push_back('\0');
  key.append(code).push_back('\0');
  key.append(tenant);
  State& s = *state_;
  State::RequestSeries& series = s.series(s.requests_seen, key, [&]() -> State::RequestSeries& {
    prometheus::Counter& count =
        s.requests.Add({{"method", std::string(method)}, {"code", std::string(code)}, {"tenant", std::string(tenant)}});
    prometheus::Histogram& duration = s.request_duration.Add({{"method", std::string(method)}}, k_request_buckets);
    return *s.request_series.emplace_back(std::make_unique<State::RequestSeries>(count, duration));
  });
  series.count.Increment();
  series.duration.Observe(seconds);
}

void Metrics::record_compile(double seconds, bool ok) {
  (ok ? state_->compile_ok : state_->compile_error).Observe(seconds);
}

void Metrics::record_hit(std::string_view tier, double seconds) {
  State& s = *state_;
  s.series(s.hit_durations, tier, [&]() -> prometheus::Histogram& {
     return s.hit_duration.Add({{"tier", std::string(tier)}}, k_hit_buckets);
   }).Observe(seconds);
}

std::string Metrics::text() const {
  std::vector<prometheus::MetricFamily> families = state_->registry->Collect();
  std::vector<prometheus::MetricFamily> from_sources = state_->sources->Collect();
  families.insert(families.end(), std::make_move_iterator(from_sources.begin()),
                  std::make_move_iterator(from_sources.end()));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace kjit
