// The daemon's gRPC services driven in the process: a grpc::Server with no
// listening port, the services registered as the daemon registers them, and
// the generated stubs over server->InProcessChannel(). The pipeline is the
// fake one of serving_test_support.h (no toolchain); the cache is real.
//
// Compiler: a valid request answers with the artifact, its key and the cache
// field; every malformed field is refused with the code and message the edge
// gives it, before any compile; a compile error carries the pass's log; one
// compile serves concurrent identical calls; DescribePipeline. Cache: Stats,
// List, Explain, Remove, Verify and Gc on a key, malformed keys, a daemon
// without the cache or without its disk tier. Diagnostics: Echo, GetStatus.
// Launcher: PlanLaunch of a compiled PTX kernel, by request and by key;
// Launch without a driver.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "convert/wire_convert.h"  // k_message_trailer, k_log_trailer
#include "server/config/config_keys.h"
#include "server/rpc/cache_service.h"
#include "server/rpc/compiler_service.h"
#include "server/rpc/diagnostics_service.h"
#include "server/rpc/elastic_thread_pool.h"
#include "server/rpc/launch_service.h"
#include "unit/server/serving_test_support.h"

namespace kjit {
namespace {

using test::FakePasses;
using test::k_fake_ptx;
using test::stamped;

constexpr const char* k_confinement = "none: unit test, compiles in the process";

// The services of one daemon, served in the process only.
class InProcessDaemon {
 public:
  InProcessDaemon(DaemonConfig config, std::shared_ptr<const CompilePipeline> pipeline,
                  std::shared_ptr<DaemonCache> cache)
      : cached_compiler_(std::make_shared<const CachedCompiler>(config, std::move(pipeline), std::move(cache))),
        blocking_work_(std::make_shared<ElasticThreadPool>(ElasticThreadPool::Options{})),
        compiler_(cached_compiler_, blocking_work_),
        launcher_(cached_compiler_, nullptr),
        cache_(cached_compiler_),
        diagnostics_(DiagnosticsService::Facts{config, k_confinement}, nullptr) {
    grpc::ServerBuilder builder;  // no listening port: reachable in the process only
    builder.RegisterService(&compiler_);
    builder.RegisterService(&launcher_);
    builder.RegisterService(&cache_);
    builder.RegisterService(&diagnostics_);
    server_ = builder.BuildAndStart();
    if (!server_) {
      ADD_FAILURE() << "the in-process server did not start";
      return;
    }
    std::shared_ptr<grpc::Channel> channel = server_->InProcessChannel(grpc::ChannelArguments());
    compiler_stub_ = v1::Compiler::NewStub(channel);
    launcher_stub_ = v1::Launcher::NewStub(channel);
    cache_stub_ = v1::Cache::NewStub(channel);
    diagnostics_stub_ = v1::Diagnostics::NewStub(channel);
  }
  ~InProcessDaemon() {
    // As the daemon does: the server first, then the pool its calls use.
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }

  const CachedCompiler& cached_compiler() const { return *cached_compiler_; }
  v1::Compiler::Stub& compiler() { return *compiler_stub_; }
  v1::Launcher::Stub& launcher() { return *launcher_stub_; }
  v1::Cache::Stub& cache() { return *cache_stub_; }
  v1::Diagnostics::Stub& diagnostics() { return *diagnostics_stub_; }

 private:
  std::shared_ptr<const CachedCompiler> cached_compiler_;
  std::shared_ptr<ElasticThreadPool> blocking_work_;
  CompilerService compiler_;
  LaunchService launcher_;
  CacheService cache_;
  DiagnosticsService diagnostics_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Compiler::Stub> compiler_stub_;
  std::unique_ptr<v1::Launcher::Stub> launcher_stub_;
  std::unique_ptr<v1::Cache::Stub> cache_stub_;
  std::unique_ptr<v1::Diagnostics::Stub> diagnostics_stub_;
};

// A client context that never waits forever on a broken service.
std::unique_ptr<grpc::ClientContext> context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  return ctx;
}

v1::CompileRequest fake_request(std::string input = k_fake_ptx) {
  v1::CompileRequest request;
  request.mutable_input()->set_kind(v1::INPUT_KIND_PTX);
  request.mutable_input()->set_data(std::move(input));
  request.mutable_input()->set_name("fake.ptx");
  request.set_target("cuda:90");
  request.set_artifact(v1::ARTIFACT_KIND_PTX);
  request.set_pipeline("fake");
  return request;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class GrpcServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pipeline_ = test::fake_pipeline();
    ASSERT_NE(pipeline_, nullptr);
  }
  std::unique_ptr<InProcessDaemon> daemon(std::shared_ptr<DaemonCache> cache, DaemonConfig config = test::test_config()) {
    return std::make_unique<InProcessDaemon>(std::move(config), pipeline_, std::move(cache));
  }
  std::unique_ptr<InProcessDaemon> daemon_with_memory_cache() {
    auto cache = open_daemon_cache(test::cache_config());
    EXPECT_NE(cache, nullptr);
    return daemon(std::move(cache));
  }

  grpc::Status compile(InProcessDaemon& d, const v1::CompileRequest& request, v1::CompileResponse& response) {
    auto ctx = context();
    return d.compiler().Compile(ctx.get(), request, &response);
  }

  std::shared_ptr<const CompilePipeline> pipeline_;
  FakePasses passes_;
};

// ---- Compiler ------------------------------------------------------------

TEST_F(GrpcServicesTest, CompileAnswersWithTheArtifactItsKeyAndTheCacheField) {
  auto d = daemon_with_memory_cache();
  const int before = passes_.calls();
  const v1::CompileRequest request = fake_request();

  v1::CompileResponse first;
  grpc::Status status = compile(*d, request, first);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_EQ(first.cache(), "compiled");
  EXPECT_EQ(first.artifact(), stamped(k_fake_ptx, before + 1));
  EXPECT_EQ(first.artifact_kind(), v1::ARTIFACT_KIND_PTX);
  EXPECT_EQ(first.target(), "cuda:90");
  EXPECT_EQ(first.pipeline(), "fake");
  EXPECT_TRUE(contains(first.log(), "fake-stamp ran")) << first.log();
  ASSERT_GT(first.timings_size(), 0);
  EXPECT_EQ(first.timings(0).stage(), "stamp");
  EXPECT_GE(first.server_ms(), 0.0);
  // The key is the one the pipeline derives for the job the edge makes.
  CompileJob job = test::fake_job();
  Result<CacheKey> key = pipeline_->key(job);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(first.key(), key->hex);
  ASSERT_EQ(static_cast<size_t>(first.key_components_size()), key->components.size());
  std::set<std::string> component_names;
  for (const v1::KeyComponent& c : first.key_components()) component_names.insert(c.name());
  EXPECT_TRUE(component_names.count("target"));
  EXPECT_TRUE(component_names.count("input.digest"));

  v1::CompileResponse second;
  status = compile(*d, request, second);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_EQ(second.cache(), "memory");
  EXPECT_EQ(second.key(), first.key());
  EXPECT_EQ(second.artifact(), first.artifact());
  ASSERT_EQ(second.timings_size(), 1);
  EXPECT_EQ(second.timings(0).stage(), "cache");
  EXPECT_EQ(passes_.calls(), before + 1);
}

TEST_F(GrpcServicesTest, MalformedRequestsAreRefusedAtTheEdgeWithTheirReason) {
  auto d = daemon_with_memory_cache();
  struct Case {
    const char* what;
    std::function<void(v1::CompileRequest&)> change;
    grpc::StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no input kind", [](v1::CompileRequest& r) { r.mutable_input()->set_kind(v1::INPUT_KIND_UNSPECIFIED); },
       grpc::StatusCode::INVALID_ARGUMENT, "input.kind is required"},
      {"empty input", [](v1::CompileRequest& r) { r.mutable_input()->clear_data(); },
       grpc::StatusCode::INVALID_ARGUMENT, "the input is empty"},
      {"NUL in PTX", [](v1::CompileRequest& r) { r.mutable_input()->mutable_data()->push_back('\0'); },
       grpc::StatusCode::INVALID_ARGUMENT, "the input contains a NUL byte; ptx input must be text"},
      {"bad target", [](v1::CompileRequest& r) { r.set_target("cuda:abc"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "target 'cuda:abc' is malformed"},
      {"unknown target", [](v1::CompileRequest& r) { r.set_target("cuda:1"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "unknown target 'cuda:1'"},
      {"-I", [](v1::CompileRequest& r) { r.add_options("-I/etc"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "option '-I/etc' is not allowed: it would make the daemon read its own files"},
      {"not allowlisted", [](v1::CompileRequest& r) { r.add_options("--no-such-option"); },
       grpc::StatusCode::INVALID_ARGUMENT, "option '--no-such-option' is not allowed"},
      {"headers on PTX", [](v1::CompileRequest& r) { (*r.mutable_headers())["h.h"] = "x"; },
       grpc::StatusCode::INVALID_ARGUMENT, "headers apply to CUDA C++ and HIP source only"},
      {"input too large", [](v1::CompileRequest& r) { r.mutable_input()->set_data(std::string(4097, 'x')); },
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "the input is 4097 bytes; the daemon's limit is 4096 (limits.max_input_bytes)"},
      {"unknown pipeline", [](v1::CompileRequest& r) { r.set_pipeline("nope"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "no pipeline named 'nope'"},
      {"unknown pass argument", [](v1::CompileRequest& r) { (*r.mutable_pass_args())["fake-stamp.colour"] = "red"; },
       grpc::StatusCode::INVALID_ARGUMENT, "pass 'fake-stamp' takes no argument 'colour'"},
  };
  const int before = passes_.calls();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::CompileRequest request = fake_request();
    c.change(request);
    v1::CompileResponse response;
    auto ctx = context();
    grpc::Status status = d->compiler().Compile(ctx.get(), request, &response);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_TRUE(contains(status.error_message(), c.message)) << status.error_message();
    // The message also travels alone in its trailer.
    auto trailers = ctx->GetServerTrailingMetadata();
    auto trailer = trailers.find(k_message_trailer);
    ASSERT_NE(trailer, trailers.end());
    EXPECT_TRUE(contains(std::string(trailer->second.data(), trailer->second.size()), c.message));
    EXPECT_TRUE(response.artifact().empty());
  }
  EXPECT_EQ(passes_.calls(), before) << "a refused request reached the pipeline";
}

TEST_F(GrpcServicesTest, ACompileErrorIsInvalidArgumentWithThePassLogAndIsNotCached) {
  auto d = daemon_with_memory_cache();
  const int before = passes_.calls();
  const v1::CompileRequest request = fake_request(std::string(k_fake_ptx) + "// FAIL-ME\n");
  for (int i = 1; i <= 2; ++i) {
    v1::CompileResponse response;
    auto ctx = context();
    grpc::Status status = d->compiler().Compile(ctx.get(), request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(contains(status.error_message(), "stamp/fake-stamp: pass 'fake-stamp' of plugin fake-passes failed (code 3)"))
        << status.error_message();
    EXPECT_TRUE(contains(status.error_message(), "refusing this module on purpose")) << status.error_message();
    auto trailers = ctx->GetServerTrailingMetadata();
    auto log = trailers.find(k_log_trailer);
    ASSERT_NE(log, trailers.end());
    EXPECT_TRUE(contains(std::string(log->second.data(), log->second.size()), "refusing this module on purpose"));
    EXPECT_EQ(passes_.calls(), before + i) << "a failed compile was cached";
  }
}

TEST_F(GrpcServicesTest, ConcurrentIdenticalCompileCallsShareOneCompile) {
  auto d = daemon_with_memory_cache();
  const v1::CompileRequest request = fake_request(std::string(k_fake_ptx) + "// concurrent rpc\n");
  const int before = passes_.calls();
  constexpr int k_calls = 6;
  passes_.hold();
  std::atomic<int> entered{0};
  std::vector<v1::CompileResponse> responses(k_calls);
  std::vector<grpc::Status> statuses(k_calls);
  std::vector<std::thread> clients;
  for (int i = 0; i < k_calls; ++i) {
    clients.emplace_back([&, i] {
      ++entered;
      auto ctx = context();
      statuses[i] = d->compiler().Compile(ctx.get(), request, &responses[i]);
    });
  }
  EXPECT_TRUE(passes_.wait_blocked(1));
  EXPECT_TRUE(test::eventually([&] { return entered.load() == k_calls; }, test::k_eventually_deadline,
                               std::chrono::milliseconds(1)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(passes_.blocked(), 1) << "more than one compile of the same key ran at once";
  passes_.release();
  for (std::thread& client : clients) client.join();

  int compiled = 0;
  for (int i = 0; i < k_calls; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    const std::string& cache = responses[i].cache();
    EXPECT_TRUE(cache == "compiled" || cache == "joined" || cache == "memory") << cache;
    compiled += cache == "compiled";
    EXPECT_EQ(responses[i].artifact(), stamped(request.input().data(), before + 1));
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(passes_.calls(), before + 1);
}

TEST_F(GrpcServicesTest, DescribePipelineShowsAKnownPipelineAndRefusesAnUnknownOne) {
  auto d = daemon_with_memory_cache();
  {
    v1::DescribePipelineRequest request;
    request.set_input_kind(v1::INPUT_KIND_PTX);
    request.set_pipeline("fake");
    v1::DescribePipelineResponse response;
    auto ctx = context();
    grpc::Status status = d->compiler().DescribePipeline(ctx.get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.name(), "fake");
    EXPECT_TRUE(contains(response.toml(), "fake-stamp")) << response.toml();
    std::set<std::string> known(response.known_pipelines().begin(), response.known_pipelines().end());
    EXPECT_TRUE(known.count("fake"));
    EXPECT_TRUE(known.count("ptx-nvidia"));
    EXPECT_TRUE(known.count("cuda-nvidia"));
    ASSERT_EQ(response.active_plugins_size(), 1);
    EXPECT_EQ(response.active_plugins(0), "fake-passes 1.0");
  }
  {
    v1::DescribePipelineRequest request;  // no name: the input's default
    request.set_input_kind(v1::INPUT_KIND_PTX);
    request.set_target("cuda:90");
    v1::DescribePipelineResponse response;
    auto ctx = context();
    grpc::Status status = d->compiler().DescribePipeline(ctx.get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.name(), "ptx-nvidia");
    EXPECT_TRUE(contains(response.toml(), "nvjitlink-link")) << response.toml();
  }
  struct Refused {
    v1::InputKind input;
    const char* pipeline;
    const char* target;
    const char* message;
  };
  for (const Refused& r : std::vector<Refused>{
           {v1::INPUT_KIND_PTX, "nope", "", "no pipeline named 'nope'; known: "},
           {v1::INPUT_KIND_CUDA_SOURCE, "fake", "", "pipeline 'fake' does not take cuda-source input"},
           {v1::INPUT_KIND_UNSPECIFIED, "fake", "", "input_kind is required"},
           {v1::INPUT_KIND_PTX, "fake", "cuda:abc", "target 'cuda:abc' is malformed"},
       }) {
    SCOPED_TRACE(r.message);
    v1::DescribePipelineRequest request;
    request.set_input_kind(r.input);
    request.set_pipeline(r.pipeline);
    request.set_target(r.target);
    v1::DescribePipelineResponse response;
    auto ctx = context();
    grpc::Status status = d->compiler().DescribePipeline(ctx.get(), request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_TRUE(contains(status.error_message(), r.message)) << status.error_message();
  }
}

TEST_F(GrpcServicesTest, WithoutACacheEveryCompileCallCompiles) {
  auto d = daemon(nullptr);
  const int before = passes_.calls();
  for (int i = 1; i <= 2; ++i) {
    v1::CompileResponse response;
    grpc::Status status = compile(*d, fake_request(), response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.cache(), "compiled");
    EXPECT_EQ(response.artifact(), stamped(k_fake_ptx, before + i));
  }
  auto ctx = context();
  v1::StatsResponse stats;
  grpc::Status status = d->cache().Stats(ctx.get(), v1::StatsRequest(), &stats);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(contains(status.error_message(), "the compile cache is off on this daemon")) << status.error_message();
}

// ---- Cache -----------------------------------------------------------------

class CacheServiceTest : public GrpcServicesTest {
 protected:
  void SetUp() override {
    GrpcServicesTest::SetUp();
    auto cache = open_daemon_cache(test::cache_config(dir_.path()));
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->has_disk());
    d_ = daemon(std::move(cache));
  }
  std::string compile_key(const v1::CompileRequest& request, const char* expected_cache) {
    v1::CompileResponse response;
    grpc::Status status = compile(*d_, request, response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.cache(), expected_cache);
    return response.key();
  }
  std::vector<std::string> listed_keys() {
    v1::ListResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().List(ctx.get(), v1::ListRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> keys;
    for (const v1::CacheListing& entry : response.entries()) {
      EXPECT_GT(entry.bytes(), 0u);
      EXPECT_GT(entry.last_access_unix(), 0);
      keys.push_back(entry.key());
    }
    return keys;
  }

  test::TempDir dir_;
  std::unique_ptr<InProcessDaemon> d_;
};

TEST_F(CacheServiceTest, StatsCountTheCompileTheMissAndTheHit) {
  compile_key(fake_request(), "compiled");
  compile_key(fake_request(), "memory");
  v1::StatsResponse stats;
  auto ctx = context();
  grpc::Status status = d_->cache().Stats(ctx.get(), v1::StatsRequest(), &stats);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(stats.compiles(), 1u);
  EXPECT_EQ(stats.joined(), 0u);
  EXPECT_EQ(stats.misses(), 1u);
  EXPECT_EQ(stats.lookups(), 2u);
  EXPECT_EQ(stats.fleet_waits(), 0u);
  ASSERT_EQ(stats.tiers_size(), 2);
  EXPECT_EQ(stats.tiers(0).tier(), "memory");
  EXPECT_EQ(stats.tiers(0).entries(), 1u);
  EXPECT_EQ(stats.tiers(0).puts(), 1u);
  EXPECT_EQ(stats.tiers(0).answered(), 1u);
  EXPECT_GT(stats.tiers(0).bytes(), 0u);
  EXPECT_EQ(stats.tiers(1).tier(), "disk");
  EXPECT_EQ(stats.tiers(1).entries(), 1u);
  EXPECT_EQ(stats.tiers(1).puts(), 1u);
  EXPECT_EQ(stats.tiers(1).answered(), 0u);
  EXPECT_EQ(stats.tiers(1).errors(), 0u);
}

TEST_F(CacheServiceTest, ListExplainAndRemoveAKey) {
  const v1::CompileRequest request = fake_request();
  const std::string key = compile_key(request, "compiled");
  ASSERT_EQ(listed_keys(), std::vector<std::string>{key});

  {  // The stored key against the request that made it: no difference.
    v1::ExplainRequest explain;
    explain.mutable_left()->set_key(key);
    *explain.mutable_right()->mutable_request() = request;
    v1::ExplainResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Explain(ctx.get(), explain, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.left_key(), key);
    EXPECT_EQ(response.right_key(), key);
    EXPECT_GT(response.left_components_size(), 0);
    EXPECT_EQ(response.left_components_size(), response.right_components_size());
    EXPECT_EQ(response.differences_size(), 0);
  }
  {  // Another target: the difference is named.
    v1::ExplainRequest explain;
    explain.mutable_left()->set_key(key);
    v1::CompileRequest other = request;
    other.set_target("cuda:80");
    *explain.mutable_right()->mutable_request() = other;
    v1::ExplainResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Explain(ctx.get(), explain, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_NE(response.right_key(), key);
    ASSERT_EQ(response.differences_size(), 1);
    EXPECT_EQ(response.differences(0).name(), "target");
    EXPECT_EQ(response.differences(0).left(), "cuda:90");
    EXPECT_EQ(response.differences(0).right(), "cuda:80");
  }
  {
    v1::RemoveRequest remove;
    remove.set_key(key);
    v1::RemoveResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Remove(ctx.get(), remove, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(listed_keys().empty());
  {  // Gone from every tier: Explain finds no entry, and the next request compiles.
    v1::ExplainRequest explain;
    explain.mutable_left()->set_key(key);
    *explain.mutable_right()->mutable_request() = request;
    v1::ExplainResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Explain(ctx.get(), explain, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_TRUE(contains(status.error_message(), "no cache entry for key " + key)) << status.error_message();
  }
  const int before = passes_.calls();
  EXPECT_EQ(compile_key(request, "compiled"), key);
  EXPECT_EQ(passes_.calls(), before + 1);
}

TEST_F(CacheServiceTest, VerifyAndGcWorkOnTheDiskTier) {
  const std::string key = compile_key(fake_request(), "compiled");
  {
    v1::VerifyResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Verify(ctx.get(), v1::VerifyRequest(), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.checked(), 1u);
    EXPECT_EQ(response.removed(), 0u);
  }
  {
    v1::GcRequest gc;
    gc.set_max_bytes(0);
    v1::GcResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Gc(ctx.get(), gc, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.removed_entries(), 1u);
    EXPECT_GT(response.removed_bytes(), 0u);
    EXPECT_EQ(response.entries_after(), 0u);
  }
  EXPECT_TRUE(listed_keys().empty());
}

TEST_F(CacheServiceTest, MalformedKeysAreRefused) {
  const std::string key = compile_key(fake_request(), "compiled");
  for (const std::string& bad : {std::string("not-a-key"), std::string(), std::string(64, 'g'), std::string(63, 'a'),
                                 std::string(64, 'A'), key + "0"}) {
    SCOPED_TRACE("'" + bad + "'");
    {
      v1::RemoveRequest remove;
      remove.set_key(bad);
      v1::RemoveResponse response;
      auto ctx = context();
      grpc::Status status = d_->cache().Remove(ctx.get(), remove, &response);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_TRUE(contains(status.error_message(), "'" + bad + "' is not a cache key (64 lowercase hex digits)"))
          << status.error_message();
    }
    {
      v1::ExplainRequest explain;
      explain.mutable_left()->set_key(key);
      explain.mutable_right()->set_key(bad);
      v1::ExplainResponse response;
      auto ctx = context();
      grpc::Status status = d_->cache().Explain(ctx.get(), explain, &response);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_TRUE(contains(status.error_message(), "is not a cache key")) << status.error_message();
    }
  }
  {  // A request side is checked as Compile checks it.
    v1::ExplainRequest explain;
    explain.mutable_left()->set_key(key);
    v1::CompileRequest empty = fake_request();
    empty.mutable_input()->clear_data();
    *explain.mutable_right()->mutable_request() = empty;
    v1::ExplainResponse response;
    auto ctx = context();
    grpc::Status status = d_->cache().Explain(ctx.get(), explain, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(contains(status.error_message(), "the input is empty")) << status.error_message();
  }
  EXPECT_EQ(listed_keys(), std::vector<std::string>{key}) << "a refused call changed the cache";
}

TEST_F(GrpcServicesTest, ListGcAndVerifyNeedTheDiskTier) {
  auto d = daemon_with_memory_cache();
  auto check = [](grpc::Status status) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(contains(status.error_message(), "the disk cache tier is off on this daemon")) << status.error_message();
  };
  {
    v1::ListResponse response;
    auto ctx = context();
    check(d->cache().List(ctx.get(), v1::ListRequest(), &response));
  }
  {
    v1::GcResponse response;
    auto ctx = context();
    check(d->cache().Gc(ctx.get(), v1::GcRequest(), &response));
  }
  {
    v1::VerifyResponse response;
    auto ctx = context();
    check(d->cache().Verify(ctx.get(), v1::VerifyRequest(), &response));
  }
  v1::StatsResponse stats;
  auto ctx = context();
  ASSERT_TRUE(d->cache().Stats(ctx.get(), v1::StatsRequest(), &stats).ok());
  ASSERT_EQ(stats.tiers_size(), 1);
  EXPECT_EQ(stats.tiers(0).tier(), "memory");
}

// ---- Diagnostics -------------------------------------------------------------

TEST_F(GrpcServicesTest, EchoReturnsItsPayloadByteForByte) {
  auto d = daemon_with_memory_cache();
  v1::EchoRequest request;
  const std::string payload("ping\0\xff pong", 11);
  request.set_payload(payload);
  v1::EchoResponse response;
  auto ctx = context();
  grpc::Status status = d->diagnostics().Echo(ctx.get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.payload(), payload);
}

TEST_F(GrpcServicesTest, GetStatusReportsTheDaemonsBoundsAndConfinement) {
  DaemonConfig config = test::test_config();
  config.compile_bounds.memory_bytes = 123ull << 20;
  config.compile_bounds.cpu_seconds = 17;
  config.compile_bounds.open_files = 99;
  config.compile_bounds.output_bytes = 5ull << 20;
  config.compile_timeout_s = 42;
  auto d = daemon(open_daemon_cache(test::cache_config()), config);
  v1::GetStatusResponse response;
  auto ctx = context();
  grpc::Status status = d->diagnostics().GetStatus(ctx.get(), v1::GetStatusRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.version().empty());
  EXPECT_EQ(response.confinement().mode(), "in-process");
  EXPECT_EQ(response.confinement().description(), k_confinement);
  EXPECT_TRUE(response.confinement().worker_confinement().empty());
  EXPECT_EQ(response.bounds().memory_bytes(), 123ull << 20);
  EXPECT_EQ(response.bounds().cpu_seconds(), 17u);
  EXPECT_EQ(response.bounds().open_files(), 99u);
  EXPECT_EQ(response.bounds().output_bytes(), 5ull << 20);
  EXPECT_EQ(response.bounds().timeout_seconds(), 42u);
  EXPECT_EQ(response.workers().max_workers(), 0u);
  EXPECT_EQ(response.workers().live_workers(), 0u);
  // The local operator is shown the configuration, every key of its table
  // in order, as the daemon serves with it.
  ASSERT_EQ(static_cast<size_t>(response.settings_size()), config_keys().size());
  for (int i = 0; i < response.settings_size(); ++i) {
    const ConfigKey& key = config_keys()[static_cast<size_t>(i)];
    EXPECT_EQ(response.settings(i).key(), key.path);
    EXPECT_EQ(response.settings(i).flag(), key.flag);
  }
  auto setting = [&](std::string_view key) {
    for (const v1::ConfigSetting& s : response.settings())
      if (s.key() == key) return s.value();
    return std::string("(missing)");
  };
  EXPECT_EQ(setting("limits.compile_timeout_s"), "42");
  EXPECT_EQ(setting("limits.compile_cpu_seconds"), "17");
  EXPECT_EQ(setting("cache.disk"), config.cache.disk ? "true" : "false");
}

// ---- Launcher ------------------------------------------------------------------

TEST_F(GrpcServicesTest, PlanLaunchPlansAKernelOfACompiledPtxByRequestAndByKey) {
  auto d = daemon_with_memory_cache();
  v1::PlanLaunchRequest request;
  *request.mutable_source()->mutable_compile() = fake_request();
  request.mutable_source()->set_kernel("bounded");
  request.mutable_config()->mutable_grid()->set_x(4);
  request.mutable_config()->mutable_block()->set_x(128);
  v1::PlanLaunchResponse planned;
  {
    auto ctx = context();
    grpc::Status status = d->launcher().PlanLaunch(ctx.get(), request, &planned);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_EQ(planned.plan().kernel(), "bounded");
  EXPECT_EQ(planned.plan().block().x(), 128u);
  EXPECT_TRUE(planned.plan().rests_on_ptx());
  EXPECT_FALSE(planned.plan().limits_from_device());
  EXPECT_EQ(planned.kernel().max_threads_per_block(), 256u);
  EXPECT_EQ(planned.key().size(), 64u);

  {  // The same kernel by the key the compile left in the cache.
    v1::PlanLaunchRequest by_key = request;
    by_key.mutable_source()->set_key(planned.key());
    v1::PlanLaunchResponse response;
    auto ctx = context();
    grpc::Status status = d->launcher().PlanLaunch(ctx.get(), by_key, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.key(), planned.key());
    EXPECT_EQ(response.plan().kernel(), "bounded");
  }
  struct Refused {
    const char* what;
    std::function<void(v1::PlanLaunchRequest&)> change;
    grpc::StatusCode code;
    const char* message;
  };
  for (const Refused& r : std::vector<Refused>{
           {"over .maxntid", [](v1::PlanLaunchRequest& q) { q.mutable_config()->mutable_block()->set_x(512); },
            grpc::StatusCode::INVALID_ARGUMENT, "has 512 threads, more than the 256"},
           {"no such kernel", [](v1::PlanLaunchRequest& q) { q.mutable_source()->set_kernel("missing"); },
            grpc::StatusCode::NOT_FOUND, "no kernel 'missing' in the PTX"},
           {"no kernel named", [](v1::PlanLaunchRequest& q) { q.mutable_source()->clear_kernel(); },
            grpc::StatusCode::INVALID_ARGUMENT, "the kernel to launch is not named"},
           {"unknown key", [](v1::PlanLaunchRequest& q) { q.mutable_source()->set_key(std::string(64, '0')); },
            grpc::StatusCode::NOT_FOUND, "no cache entry for key"},
           // A malformed key is the request's mistake, not a miss, and never
           // reaches a tier (where it would count as the tier failing).
           {"malformed key", [](v1::PlanLaunchRequest& q) { q.mutable_source()->set_key("../../etc/passwd"); },
            grpc::StatusCode::INVALID_ARGUMENT, "'../../etc/passwd' is not a cache key"},
           {"bad compile request", [](v1::PlanLaunchRequest& q) { q.mutable_source()->mutable_compile()->set_target("cuda:abc"); },
            grpc::StatusCode::INVALID_ARGUMENT, "target 'cuda:abc' is malformed"},
       }) {
    SCOPED_TRACE(r.what);
    v1::PlanLaunchRequest changed = request;
    r.change(changed);
    v1::PlanLaunchResponse response;
    auto ctx = context();
    grpc::Status status = d->launcher().PlanLaunch(ctx.get(), changed, &response);
    EXPECT_EQ(status.error_code(), r.code) << status.error_message();
    EXPECT_TRUE(contains(status.error_message(), r.message)) << status.error_message();
  }
}

TEST_F(GrpcServicesTest, LaunchWithoutADriverIsAFailedPrecondition) {
  auto d = daemon_with_memory_cache();
  v1::LaunchRequest request;
  *request.mutable_source()->mutable_compile() = fake_request();
  request.mutable_source()->set_kernel("bounded");
  v1::LaunchResponse response;
  auto ctx = context();
  grpc::Status status = d->launcher().Launch(ctx.get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(contains(status.error_message(), "no CUDA driver on this host")) << status.error_message();
}

}  // namespace
}  // namespace kjit
