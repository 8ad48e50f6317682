// Tenants through a real daemon: tokens at the edge, each tenant's entries in
// its own namespace in every tier (memory, disk, Redis) and in cache
// ls/rm/gc/explain and client blobs, namespaces shared on purpose, request
// ids in answers and logs.
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "kjit/v1/cache.grpc.pb.h"
#include "kjit/v1/diagnostics.grpc.pb.h"
#include "kjit/v1/compiler.grpc.pb.h"
#include "pipeline/cache_key.h"
#include "redis_server.h"
#include "support/buildgrid_server.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

// alpha and gamma share the namespace "team-a" on purpose; beta has its own;
// small has a share of the bounded tiers; ops is an operator with a token.
constexpr uint64_t k_small_share = 1 << 20;
std::string tenants_file_text() {
  return "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + sha256_hex("alpha-secret-token") +
         "\"\nnamespace = \"team-a\"\n"
         "[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" + sha256_hex("beta-secret-token") + "\"\n"
         "[[tenants]]\nname = \"gamma\"\ntoken_sha256 = \"" + sha256_hex("gamma-secret-token") +
         "\"\nnamespace = \"team-a\"\n"
         "[[tenants]]\nname = \"small\"\ntoken_sha256 = \"" + sha256_hex("small-secret-token") +
         "\"\nmax_bytes = " + std::to_string(k_small_share) + "\n"
         "[[tenants]]\nname = \"ops\"\ntoken_sha256 = \"" + sha256_hex("ops-secret-token") +
         "\"\noperator = true\n";
}

// A kernel no other test compiles, so the first compile is a miss.
std::string kernel_source(const std::string& tag) {
  return std::string(k_vector_add) + "\n// tenant test " + tag + "\n";
}

class TenantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tenants_path_ = temp_.path() + "/tenants.toml";
    std::ofstream(tenants_path_) << tenants_file_text();
  }

  std::vector<std::string> args(const std::string& cache_dir, std::vector<std::string> more = {}) {
    std::vector<std::string> out = {"--tenants", tenants_path_, "--cache-dir", cache_dir};
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }

  struct Stubs {
    std::unique_ptr<v1::Compiler::Stub> compiler;
    std::unique_ptr<v1::Cache::Stub> cache;
  };
  static Stubs stubs(const DaemonProcess& daemon) {
    auto channel = grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials());
    return {v1::Compiler::NewStub(channel), v1::Cache::NewStub(channel)};
  }

  static void authorize(grpc::ClientContext& context, const std::string& token) {
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  }

  struct Compiled {
    grpc::Status status;
    v1::CompileResponse response;
    std::string request_id_metadata;
  };
  static Compiled compile(v1::Compiler::Stub& compiler, const std::string& token, const std::string& source) {
    v1::CompileRequest request;
    request.mutable_input()->set_kind(v1::INPUT_KIND_CUDA_SOURCE);
    request.mutable_input()->set_name("tenant.cu");
    request.mutable_input()->set_data(source);
    request.set_target("cuda:90");
    grpc::ClientContext context;
    authorize(context, token);
    Compiled out;
    out.status = compiler.Compile(&context, request, &out.response);
    auto id = context.GetServerInitialMetadata().find("kjit-request-id");
    if (id != context.GetServerInitialMetadata().end()) out.request_id_metadata = std::string(id->second.data(), id->second.size());
    return out;
  }

  static v1::StatsResponse stats(v1::Cache::Stub& cache, const std::string& token) {
    v1::StatsResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    const grpc::Status status = cache.Stats(&context, v1::StatsRequest{}, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  static const v1::NamespaceStats* find_namespace(const v1::StatsResponse& response, const std::string& ns) {
    for (const v1::NamespaceStats& n : response.namespaces())
      if (n.namespace_() == ns) return &n;
    return nullptr;
  }

  static grpc::Status put_blob(v1::Cache::Stub& cache, const std::string& token, const std::string& key,
                               const std::string& data) {
    v1::PutBlobRequest request;
    request.set_namespace_("quota");
    request.set_key(key);
    request.set_name("kernel.cubin");
    request.set_data(data);
    v1::PutBlobResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    return cache.PutBlob(&context, request, &response);
  }

  static bool blob_found(v1::Cache::Stub& cache, const std::string& token, const std::string& key) {
    v1::GetBlobRequest request;
    request.set_namespace_("quota");
    request.set_key(key);
    request.set_name("kernel.cubin");
    v1::GetBlobResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    EXPECT_TRUE(cache.GetBlob(&context, request, &response).ok());
    return response.found();
  }

  static std::set<std::string> listed(v1::Cache::Stub& cache, const std::string& token) {
    v1::ListResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    EXPECT_TRUE(cache.List(&context, v1::ListRequest{}, &response).ok());
    std::set<std::string> keys;
    for (const v1::CacheListing& entry : response.entries()) keys.insert(entry.key());
    return keys;
  }

  TempDir temp_;
  std::string tenants_path_;
};

TEST_F(TenantTest, EachTenantHasItsOwnEntriesUnlessItSharesANamespace) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(args(temp_.path() + "/cache"));
  Stubs s = stubs(daemon);
  const std::string source = kernel_source("isolation");

  Compiled alpha = compile(*s.compiler, "alpha-secret-token", source);
  ASSERT_TRUE(alpha.status.ok()) << alpha.status.error_message();
  EXPECT_EQ(alpha.response.cache(), "compiled");
  Compiled beta = compile(*s.compiler, "beta-secret-token", source);
  ASSERT_TRUE(beta.status.ok()) << beta.status.error_message();
  EXPECT_EQ(beta.response.cache(), "compiled") << "beta was served alpha's entry";
  // The key is the same (it names what was compiled); the entries are not.
  EXPECT_EQ(alpha.response.key(), beta.response.key());
  Compiled gamma = compile(*s.compiler, "gamma-secret-token", source);
  ASSERT_TRUE(gamma.status.ok()) << gamma.status.error_message();
  EXPECT_EQ(gamma.response.cache(), "memory") << "gamma shares team-a with alpha";
  Compiled local = compile(*s.compiler, "", source);  // the socket's operator, default namespace
  ASSERT_TRUE(local.status.ok()) << local.status.error_message();
  EXPECT_EQ(local.response.cache(), "compiled");
  EXPECT_EQ(compile(*s.compiler, "alpha-secret-token", source).response.cache(), "memory");

  // Listings: each sees its own namespace, under the bare key.
  EXPECT_EQ(listed(*s.cache, "alpha-secret-token"), std::set<std::string>{alpha.response.key()});
  EXPECT_EQ(listed(*s.cache, "gamma-secret-token"), std::set<std::string>{alpha.response.key()});
  EXPECT_EQ(listed(*s.cache, "beta-secret-token"), std::set<std::string>{beta.response.key()});
  EXPECT_EQ(listed(*s.cache, ""), std::set<std::string>{local.response.key()});
}

// Stats tells a tenant of its own namespace alone: another tenant's
// compiles, hits and blobs change nothing in its answer, byte for byte.
// The operator (the socket without a token, or a tenant marked operator)
// sees every namespace.
TEST_F(TenantTest, StatsAnswerATenantWithItsOwnNamespaceAlone) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(args(temp_.path() + "/cache"));
  Stubs s = stubs(daemon);
  const std::string source = kernel_source("stats");
  const v1::StatsResponse alpha_before = stats(*s.cache, "alpha-secret-token");
  EXPECT_TRUE(alpha_before.namespace_only());
  ASSERT_EQ(alpha_before.namespaces_size(), 1);
  EXPECT_EQ(alpha_before.namespaces(0).namespace_(), "team-a");

  Compiled first = compile(*s.compiler, "beta-secret-token", source);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  EXPECT_EQ(compile(*s.compiler, "beta-secret-token", source).response.cache(), "memory");
  ASSERT_TRUE(put_blob(*s.cache, "beta-secret-token", "K", "beta's bytes").ok());

  const v1::StatsResponse alpha_after = stats(*s.cache, "alpha-secret-token");
  EXPECT_EQ(alpha_after.SerializeAsString(), alpha_before.SerializeAsString())
      << "alpha learned of beta's activity:\n" << alpha_after.DebugString();
  EXPECT_EQ(alpha_after.DebugString().find(first.response.key()), std::string::npos);

  // beta's own answer counts what beta did, and names no one else.
  const v1::StatsResponse beta = stats(*s.cache, "beta-secret-token");
  EXPECT_TRUE(beta.namespace_only());
  ASSERT_EQ(beta.namespaces_size(), 1);
  EXPECT_EQ(beta.namespaces(0).namespace_(), "beta");
  EXPECT_EQ(beta.lookups(), 2u);
  EXPECT_EQ(beta.compiles(), 1u);
  EXPECT_EQ(beta.namespaces(0).memory_hits(), 1u);
  EXPECT_GT(beta.namespaces(0).memory_bytes(), 0u);

  // The operator, on the socket and by an operator's token: every namespace.
  for (const std::string& token : {std::string(), std::string("ops-secret-token")}) {
    const v1::StatsResponse all = stats(*s.cache, token);
    EXPECT_FALSE(all.namespace_only()) << token;
    const v1::NamespaceStats* of_beta = find_namespace(all, "beta");
    ASSERT_NE(of_beta, nullptr) << token;
    EXPECT_EQ(of_beta->compiles(), 1u);
    EXPECT_EQ(of_beta->memory_hits(), 1u);
    const v1::NamespaceStats* of_small = find_namespace(all, "small");
    ASSERT_NE(of_small, nullptr) << "a namespace with a share is listed before it stores anything";
    EXPECT_EQ(of_small->max_bytes(), k_small_share);
    EXPECT_GE(all.compiles(), 1u);
  }
}

// A tenant writing ten times its share stays within it in the memory and
// disk tiers, from its own entries: another tenant's entries all stay.
TEST_F(TenantTest, ATenantOverItsShareEvictsOnlyItsOwnEntries) {
  TestDaemon daemon(args(temp_.path() + "/cache"));
  Stubs s = stubs(daemon);
  const std::string blob(32 << 10, 'b');
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(put_blob(*s.cache, "beta-secret-token", "B" + std::to_string(i), blob).ok());
  const int floods = static_cast<int>(10 * k_small_share / blob.size());
  for (int i = 0; i < floods; ++i) {
    grpc::Status put = put_blob(*s.cache, "small-secret-token", "S" + std::to_string(i), blob);
    ASSERT_TRUE(put.ok()) << put.error_message();
  }
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(blob_found(*s.cache, "beta-secret-token", "B" + std::to_string(i))) << "beta's blob " << i;
  EXPECT_TRUE(blob_found(*s.cache, "small-secret-token", "S" + std::to_string(floods - 1)));
  const v1::StatsResponse small = stats(*s.cache, "small-secret-token");
  ASSERT_EQ(small.namespaces_size(), 1);
  const v1::NamespaceStats& own = small.namespaces(0);
  EXPECT_EQ(own.max_bytes(), k_small_share);
  EXPECT_LE(own.memory_bytes(), k_small_share);
  EXPECT_LE(own.disk_bytes(), k_small_share);
  EXPECT_GT(own.memory_evictions(), 0u);
  EXPECT_GT(own.disk_evictions(), 0u);
  const v1::StatsResponse everyone = stats(*s.cache, "");  // find_namespace points into it
  const v1::NamespaceStats* beta = find_namespace(everyone, "beta");
  ASSERT_NE(beta, nullptr);
  EXPECT_EQ(beta->memory_evictions(), 0u);
  EXPECT_EQ(beta->disk_evictions(), 0u);
}

TEST_F(TenantTest, NamespacesHoldOnDiskAndInRedis) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  if (!RedisServer::installed()) GTEST_SKIP() << "redis-server is not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  const std::string redis_address = "127.0.0.1:" + std::to_string(redis.port());
  const std::string source = kernel_source("tiers");
  std::string key;
  {
    TestDaemon first(args(temp_.path() + "/cache-1", {"--redis", redis_address}));
    Stubs s = stubs(first);
    Compiled alpha = compile(*s.compiler, "alpha-secret-token", source);
    ASSERT_TRUE(alpha.status.ok()) << alpha.status.error_message();
    key = alpha.response.key();
  }
  {
    // The same disk directory, an empty memory tier.
    TestDaemon again(args(temp_.path() + "/cache-1", {"--redis", redis_address}));
    Stubs s = stubs(again);
    EXPECT_EQ(compile(*s.compiler, "beta-secret-token", source).response.cache(), "compiled");
    EXPECT_EQ(compile(*s.compiler, "gamma-secret-token", source).response.cache(), "disk");
  }
  {
    // Another machine's daemon: nothing on its disk, the fleet's Redis.
    TestDaemon other(args(temp_.path() + "/cache-2", {"--redis", redis_address}));
    Stubs s = stubs(other);
    EXPECT_EQ(compile(*s.compiler, "", source).response.cache(), "compiled") << "the operator got team-a's entry";
    EXPECT_EQ(compile(*s.compiler, "alpha-secret-token", source).response.cache(), "redis");
    Compiled beta = compile(*s.compiler, "beta-secret-token", source);
    EXPECT_EQ(beta.response.cache(), "redis") << "beta compiled it on the second daemon, which put it in Redis";
    EXPECT_EQ(beta.response.key(), key);
  }
}

TEST_F(TenantTest, NamespacesHoldInTheReapiStore) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  if (std::optional<std::string> why = BuildGridServer::unavailable()) {
    if (std::getenv("CI")) FAIL() << "CI must run the REAPI tests: " << *why;
    GTEST_SKIP() << *why;
  }
  BuildGridServer reapi;
  ASSERT_TRUE(reapi.start()) << read_file(reapi.log_path());
  const std::string source = kernel_source("reapi tiers");
  std::string key;
  {
    TestDaemon first(args(temp_.path() + "/reapi-1", {"--reapi", reapi.endpoint()}));
    Stubs s = stubs(first);
    Compiled alpha = compile(*s.compiler, "alpha-secret-token", source);
    ASSERT_TRUE(alpha.status.ok()) << alpha.status.error_message();
    key = alpha.response.key();
    // Written behind the answer: until it has reached the store.
    ASSERT_TRUE(eventually([&] {
      const v1::StatsResponse now = stats(*s.cache, "");
      for (const v1::TierStats& tier : now.tiers())
        if (tier.tier() == "reapi" && tier.puts() > 0) return true;
      return false;
    }, std::chrono::seconds(60), std::chrono::milliseconds(50)));
  }
  // Another machine's daemon: nothing on its disk, no Redis, the fleet's REAPI store.
  TestDaemon other(args(temp_.path() + "/reapi-2", {"--reapi", reapi.endpoint()}));
  Stubs s = stubs(other);
  EXPECT_EQ(compile(*s.compiler, "", source).response.cache(), "compiled") << "the operator got alpha's entry";
  EXPECT_EQ(compile(*s.compiler, "beta-secret-token", source).response.cache(), "compiled")
      << "beta got alpha's entry";
  Compiled alpha = compile(*s.compiler, "alpha-secret-token", source);
  EXPECT_EQ(alpha.response.cache(), "reapi");
  EXPECT_EQ(alpha.response.key(), key);
}

TEST_F(TenantTest, RemoveGcAndExplainStayInTheCallersNamespace) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TestDaemon daemon(args(temp_.path() + "/cache"));
  Stubs s = stubs(daemon);
  const std::string source = kernel_source("remove");
  Compiled alpha = compile(*s.compiler, "alpha-secret-token", source);
  ASSERT_TRUE(alpha.status.ok()) << alpha.status.error_message();
  Compiled beta = compile(*s.compiler, "beta-secret-token", kernel_source("remove-beta"));
  ASSERT_TRUE(beta.status.ok()) << beta.status.error_message();
  const std::string key = alpha.response.key();

  auto remove = [&](const std::string& token, const std::string& which) {
    v1::RemoveRequest request;
    request.set_key(which);
    v1::RemoveResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    return s.cache->Remove(&context, request, &response);
  };
  auto explain_key = [&](const std::string& token, const std::string& which) {
    v1::ExplainRequest request;
    request.mutable_left()->set_key(which);
    request.mutable_right()->set_key(which);
    v1::ExplainResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    return s.cache->Explain(&context, request, &response);
  };
  auto gc = [&](const std::string& token) {
    v1::GcRequest request;
    request.set_max_bytes(0);
    v1::GcResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    EXPECT_TRUE(s.cache->Gc(&context, request, &response).ok());
    return response;
  };

  // beta cannot see, remove or explain alpha's entry.
  EXPECT_EQ(explain_key("beta-secret-token", key).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(explain_key("alpha-secret-token", key).ok());
  ASSERT_TRUE(remove("beta-secret-token", key).ok());  // removing a missing key succeeds, and removes nothing
  EXPECT_EQ(compile(*s.compiler, "alpha-secret-token", source).response.cache(), "memory");

  // beta's gc down to 0 bytes removes beta's entries only.
  v1::GcResponse collected = gc("beta-secret-token");
  EXPECT_EQ(collected.removed_entries(), 1u);
  EXPECT_EQ(listed(*s.cache, "alpha-secret-token"), std::set<std::string>{key});
  EXPECT_TRUE(listed(*s.cache, "beta-secret-token").empty());

  // alpha removes its own: the next compile of it is a miss.
  ASSERT_TRUE(remove("alpha-secret-token", key).ok());
  EXPECT_EQ(compile(*s.compiler, "alpha-secret-token", source).response.cache(), "compiled");

  // verify reads every namespace: the operator's alone.
  v1::VerifyResponse verified;
  grpc::ClientContext tenant_context;
  authorize(tenant_context, "beta-secret-token");
  EXPECT_EQ(s.cache->Verify(&tenant_context, v1::VerifyRequest{}, &verified).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext operator_context;
  EXPECT_TRUE(s.cache->Verify(&operator_context, v1::VerifyRequest{}, &verified).ok());
}

TEST_F(TenantTest, BlobsAreNeverServedToAnotherNamespace) {
  TestDaemon daemon(args(temp_.path() + "/cache"));
  Stubs s = stubs(daemon);
  auto put = [&](const std::string& token) {
    v1::PutBlobRequest request;
    request.set_namespace_("triton");
    request.set_key("K");
    request.set_name("kernel.cubin");
    request.set_data("alpha's bytes");
    v1::PutBlobResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    return s.cache->PutBlob(&context, request, &response);
  };
  auto found = [&](const std::string& token) {
    v1::GetBlobRequest request;
    request.set_namespace_("triton");
    request.set_key("K");
    request.set_name("kernel.cubin");
    v1::GetBlobResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    EXPECT_TRUE(s.cache->GetBlob(&context, request, &response).ok());
    return response.found();
  };
  ASSERT_TRUE(put("alpha-secret-token").ok());
  EXPECT_TRUE(found("alpha-secret-token"));
  EXPECT_TRUE(found("gamma-secret-token"));
  EXPECT_FALSE(found("beta-secret-token"));
  EXPECT_FALSE(found(""));
}

// The configuration (paths, addresses) is the operator's business: a tenant
// asking for the daemon's status gets the rest of it without the settings.
TEST_F(TenantTest, OnlyTheOperatorIsShownTheConfiguration) {
  TestDaemon daemon(args(temp_.path() + "/cache"));
  auto diagnostics =
      v1::Diagnostics::NewStub(grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials()));
  auto status_as = [&](const std::string& token) {
    v1::GetStatusResponse response;
    grpc::ClientContext context;
    authorize(context, token);
    EXPECT_TRUE(diagnostics->GetStatus(&context, v1::GetStatusRequest{}, &response).ok());
    return response;
  };
  const v1::GetStatusResponse tenant = status_as("alpha-secret-token");
  EXPECT_FALSE(tenant.version().empty());
  EXPECT_EQ(tenant.settings_size(), 0) << "a tenant was shown the daemon's configuration";
  const v1::GetStatusResponse operator_view = status_as("");
  EXPECT_GT(operator_view.settings_size(), 0);
  bool names_tenants_file = false;
  for (const v1::ConfigSetting& setting : operator_view.settings())
    names_tenants_file |= setting.key() == "tenants" && setting.value() == tenants_path_;
  EXPECT_TRUE(names_tenants_file) << "the operator's view lacks the tenants file it was started with";
}

TEST_F(TenantTest, TokensAreCheckedAndNeverLogged) {
  DaemonOptions options{args(temp_.path() + "/cache", {"--socket-requires-token", "--log-level", "info"})};
  options.capture_log = true;
  TestDaemon daemon(options);
  Stubs s = stubs(daemon);
  auto stats = [&](const std::string& token, const std::string& raw_authorization = "") {
    v1::StatsResponse response;
    grpc::ClientContext context;
    if (!raw_authorization.empty())
      context.AddMetadata("authorization", raw_authorization);
    else
      authorize(context, token);
    return s.cache->Stats(&context, v1::StatsRequest{}, &response);
  };
  EXPECT_EQ(stats("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status wrong = stats("not-a-tenants-token-xyzzy");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stats("", "Basic abc").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(stats("beta-secret-token").ok());
  // Health needs no token: orchestrators probe it.
  EXPECT_TRUE(Client(daemon.socket_path()).health());
  daemon.stop();
  const std::string log = daemon.log();
  EXPECT_NE(log.find("refused"), std::string::npos) << log;
  EXPECT_EQ(log.find("not-a-tenants-token-xyzzy"), std::string::npos) << "a token reached the log:\n" << log;
  EXPECT_EQ(log.find("beta-secret-token"), std::string::npos) << "a token reached the log:\n" << log;
}

TEST_F(TenantTest, EveryAnswerCarriesARequestIdThatTheLogNames) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  DaemonOptions options{{"--cache-dir", temp_.path() + "/cache", "--log-level", "info"}};
  options.capture_log = true;
  TestDaemon daemon(options);
  Stubs s = stubs(daemon);
  Compiled first = compile(*s.compiler, "", kernel_source("ids"));
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  Compiled second = compile(*s.compiler, "", kernel_source("ids"));
  ASSERT_TRUE(second.status.ok()) << second.status.error_message();
  EXPECT_EQ(first.response.request_id().size(), 16u);
  EXPECT_EQ(first.response.request_id(), first.request_id_metadata);
  EXPECT_NE(first.response.request_id(), second.response.request_id());
  // A refused request has an id too, in its metadata.
  Compiled bad = compile(*s.compiler, "", "this is not CUDA");
  EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad.request_id_metadata.size(), 16u);
  daemon.stop();
  const std::string log = daemon.log();
  for (const std::string& id : {first.response.request_id(), second.response.request_id(), bad.request_id_metadata})
    EXPECT_NE(log.find("[req " + id + "]"), std::string::npos) << "no log line names " << id << ":\n" << log;
}

}  // namespace
}  // namespace kjit::test
