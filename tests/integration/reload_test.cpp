// Reloading a serving kjitd (SIGHUP, `kjit admin reload`): a token added
// works and a token revoked is refused from the next call on, on
// connections already open; a tenants file that does not parse keeps the
// old one, and the refusal is answered, logged and counted; keys that need
// a restart are named; the TCP listener's certificate is replaced for new
// connections while calls go on without a failure, and a certificate that
// does not match its key is refused.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "kjit/client.h"
#include "pipeline/cache_key.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"
#include "support/test_certificates.h"
#include "support/tls_channels.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string tenants_text(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += "[[tenants]]\nname = \"" + name + "\"\ntoken_sha256 = \"" + sha256_hex(name + "-token") + "\"\n";
  return text;
}

double reloads(uint16_t metrics_port, const std::string& result) {
  return metric_sample(scrape_metrics(metrics_port), "kjit_config_reloads_total", {{"result", result}});
}

// A daemon with tenants, asking TCP callers (plaintext here) for tokens;
// its socket's caller, without a token, is the operator.
class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> dir = make_temp_dir("kjit-reload-");
    ASSERT_TRUE(dir) << dir.error().message;
    dir_ = *dir;
    tenants_ = dir_ + "/tenants.toml";
    write(tenants_, tenants_text({"alpha", "beta"}));
    tcp_port_ = free_loopback_port();
    metrics_port_ = free_loopback_port();
  }
  void TearDown() override {
    daemon_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void start(DaemonOptions options = {}) {
    options.args.insert(options.args.end(),
                        {"--tenants", tenants_, "--insecure-listen", "127.0.0.1:" + std::to_string(tcp_port_),
                         "--metrics-port", std::to_string(metrics_port_), "--compile-workers", "0", "--no-cache"});
    daemon_ = std::make_unique<TestDaemon>(std::move(options));
  }
  Client tenant(const std::string& name) const {
    ClientOptions options{std::chrono::seconds(10)};
    options.token = name + "-token";
    return Client("127.0.0.1:" + std::to_string(tcp_port_), options);
  }
  Client operator_client() const { return Client(daemon_->socket_path(), {std::chrono::seconds(30)}); }

  std::string dir_, tenants_;
  uint16_t tcp_port_ = 0, metrics_port_ = 0;
  std::unique_ptr<TestDaemon> daemon_;
};

bool refused_as_unknown(const Result<std::string>& answer) {
  return !answer && answer.error().code == ErrorCode::unauthenticated;
}

TEST_F(ReloadTest, SighupRevokesATokenOnConnectionsAlreadyOpenAndAddsOne) {
  start();
  const Client alpha = tenant("alpha"), beta = tenant("beta"), gamma = tenant("gamma");
  ASSERT_TRUE(alpha.echo("open"));
  ASSERT_TRUE(beta.echo("open")) << "beta's connection is open before the reload";
  EXPECT_TRUE(refused_as_unknown(gamma.echo("before")));

  write(tenants_, tenants_text({"alpha", "gamma"}));
  const auto signalled = Clock::now();
  daemon_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return refused_as_unknown(beta.echo("after")); }, std::chrono::seconds(10),
                         std::chrono::milliseconds(1)))
      << "beta's token still served after SIGHUP";
  const double revoked_ms = std::chrono::duration<double, std::milli>(Clock::now() - signalled).count();
  RecordProperty("revocation_ms", std::to_string(revoked_ms));
  std::printf("SIGHUP to the revoked token's first refusal on its open connection: %.1f ms\n", revoked_ms);

  EXPECT_TRUE(alpha.echo("kept")) << "alpha's open connection lost its token";
  Result<std::string> added = gamma.echo("added");
  EXPECT_TRUE(added) << added.error().message;
  EXPECT_TRUE(eventually([&] { return reloads(metrics_port_, "ok") == 1; })) << scrape_metrics(metrics_port_);
}

TEST_F(ReloadTest, TheReloadRpcRevokesFromTheNextCall) {
  start();
  const Client beta = tenant("beta");
  ASSERT_TRUE(beta.echo("open"));
  write(tenants_, tenants_text({"alpha"}));
  Result<ReloadResult> reloaded = operator_client().reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_NE(std::find(reloaded->reloaded.begin(), reloaded->reloaded.end(), "tenants"), reloaded->reloaded.end());
  EXPECT_TRUE(reloaded->needs_restart.empty());
  // The answer comes once the new tenants are in force: no wait.
  EXPECT_TRUE(refused_as_unknown(beta.echo("after"))) << "beta's token served after the reload answered";
  EXPECT_TRUE(tenant("alpha").echo("kept"));
  EXPECT_EQ(reloads(metrics_port_, "ok"), 1);

  // The CLI says the same.
  CommandResult cli = run_command({kjit_cli_path(), "admin", "reload", "--socket", daemon_->socket_path()});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("reloaded: tenants"), std::string::npos) << cli.out;
}

TEST_F(ReloadTest, ABrokenTenantsFileKeepsTheOldOneAndTheRefusalIsCounted) {
  start();
  const Client beta = tenant("beta");
  ASSERT_TRUE(beta.echo("open"));
  write(tenants_, tenants_text({"alpha"}) + "[[tenants]\nname = \"broken\n");
  Result<ReloadResult> refused = operator_client().reload();
  ASSERT_FALSE(refused) << "a tenants file that does not parse was put in force";
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;
  EXPECT_NE(refused.error().message.find(tenants_), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("line"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(beta.echo("still")) << "the old tenants are not in force";

  daemon_->signal(SIGHUP);
  EXPECT_TRUE(eventually([&] { return reloads(metrics_port_, "failed") == 2; })) << scrape_metrics(metrics_port_);
  EXPECT_TRUE(beta.echo("still")) << "SIGHUP put a broken tenants file in force";
  EXPECT_EQ(reloads(metrics_port_, "ok"), 0);

  CommandResult cli = run_command({kjit_cli_path(), "admin", "reload", "--socket", daemon_->socket_path()});
  EXPECT_EQ(cli.exit_code, 1) << cli.out;
  EXPECT_NE(cli.err.find("line"), std::string::npos) << cli.err;

  // Mended, it is read as any other.
  write(tenants_, tenants_text({"alpha"}));
  ASSERT_TRUE(operator_client().reload());
  EXPECT_TRUE(refused_as_unknown(beta.echo("after")));
}

TEST_F(ReloadTest, OnlyTheOperatorReloads) {
  start();
  Result<ReloadResult> refused = tenant("alpha").reload();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::permission_denied) << refused.error().message;
  EXPECT_NE(refused.error().message.find("operator"), std::string::npos) << refused.error().message;
  EXPECT_EQ(reloads(metrics_port_, "ok"), 0) << "a refused caller's reload ran";
}

TEST_F(ReloadTest, KeysThatNeedARestartAreNamedAndKeepTheirValue) {
  DaemonOptions options;
  options.config = "log_level = \"warn\"\n";
  start(options);
  write(daemon_->config_path(), "log_level = \"info\"\ndrain_timeout_s = 7\n[cache]\nmemory_bytes = 1024\n");
  Result<ReloadResult> reloaded = operator_client().reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  auto has = [](const std::vector<std::string>& list, const std::string& what) {
    return std::find(list.begin(), list.end(), what) != list.end();
  };
  EXPECT_TRUE(has(reloaded->reloaded, "drain_timeout_s"));
  // The test daemon's --log-level warn: flags still win over the file.
  EXPECT_FALSE(has(reloaded->reloaded, "log_level"));
  EXPECT_TRUE(has(reloaded->needs_restart, "cache.memory_bytes"));
  Result<DaemonStatus> status = operator_client().status();
  ASSERT_TRUE(status) << status.error().message;
  std::map<std::string, std::string> settings;
  for (const DaemonStatus::Setting& setting : status->settings) settings[setting.key] = setting.value;
  EXPECT_EQ(settings["log_level"], "warn");
  EXPECT_EQ(settings["drain_timeout_s"], "7");
  EXPECT_NE(settings["cache.memory_bytes"], "1024") << "a key that needs a restart changed while serving";

  // A file that does not parse changes nothing, and says where.
  write(daemon_->config_path(), "log_level = \n");
  Result<ReloadResult> refused = operator_client().reload();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << refused.error().message;
  EXPECT_NE(refused.error().message.find(daemon_->config_path()), std::string::npos) << refused.error().message;
}

// after_warmup follows reloads, so a fleet seals every daemon at once from
// the configuration they share: a change seals (or unseals) every
// namespace, while a reload that leaves it as it was keeps what the
// operator sealed or unsealed since.
TEST_F(ReloadTest, AfterWarmupChangedByAReloadSealsAndUnsealsEveryNamespace) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  DaemonOptions options;
  options.config = "after_warmup = \"off\"\n";
  start(options);  // no cache: every compile is a miss
  auto compile = [&](const Client& client) {
    CompileRequest request;
    request.input = k_vector_add;
    request.input_name = "vector_add.cu";
    request.target = "cuda:90";
    return client.compile(request);
  };
  auto refused_by_seal = [](const Result<CompileResult>& answer) {
    return !answer && answer.error().code == ErrorCode::failed_precondition &&
           answer.error().message.find("sealed") != std::string::npos;
  };
  Result<CompileResult> before = compile(tenant("alpha"));
  ASSERT_TRUE(before) << before.error().message;

  write(daemon_->config_path(), "after_warmup = \"refuse\"\n");
  Result<ReloadResult> sealed = operator_client().reload();
  ASSERT_TRUE(sealed) << sealed.error().message;
  EXPECT_NE(std::find(sealed->reloaded.begin(), sealed->reloaded.end(), "after_warmup"), sealed->reloaded.end());
  EXPECT_TRUE(refused_by_seal(compile(tenant("alpha"))));
  EXPECT_TRUE(refused_by_seal(compile(tenant("beta"))));

  // The operator lifts it; a reload of the same file leaves it lifted.
  Result<std::vector<WarmupSealState>> lifted = operator_client().set_seal(true, true, "", "");
  ASSERT_TRUE(lifted) << lifted.error().message;
  EXPECT_TRUE(lifted->empty());
  ASSERT_TRUE(operator_client().reload());
  Result<CompileResult> unchanged = compile(tenant("alpha"));
  EXPECT_TRUE(unchanged) << unchanged.error().message;

  // Sealed again by the file, then unsealed by it.
  write(daemon_->config_path(), "after_warmup = \"count\"\n");
  ASSERT_TRUE(operator_client().reload());
  write(daemon_->config_path(), "after_warmup = \"refuse\"\n");
  ASSERT_TRUE(operator_client().reload());
  EXPECT_TRUE(refused_by_seal(compile(tenant("beta"))));
  write(daemon_->config_path(), "after_warmup = \"off\"\n");
  ASSERT_TRUE(operator_client().reload());
  Result<CompileResult> after = compile(tenant("beta"));
  EXPECT_TRUE(after) << after.error().message;
  Result<std::vector<WarmupSealState>> seals = operator_client().set_seal(true, false, "nobody", "");
  ASSERT_TRUE(seals) << seals.error().message;
  EXPECT_TRUE(seals->empty());
}

// The metrics port's bearer token: 401 without it or with another, the
// metrics with it; a reload puts a new digest in force for the next scrape.
TEST_F(ReloadTest, TheMetricsPortAsksForItsTokenAndAReloadReplacesIt) {
  DaemonOptions options;
  options.config = "metrics_token_sha256 = \"" + sha256_hex("first-scrape-token") + "\"\n";
  start(options);
  auto scrape = [&](const std::string& token) {
    return http_get(metrics_port_, "/metrics", token.empty() ? "" : "Authorization: Bearer " + token + "\r\n");
  };
  EXPECT_NE(scrape("").first.find(" 401 "), std::string::npos) << scrape("").first;
  EXPECT_NE(scrape("not-the-token").first.find(" 401 "), std::string::npos);
  auto [status, body] = scrape("first-scrape-token");
  EXPECT_NE(status.find(" 200 "), std::string::npos) << status;
  EXPECT_NE(body.find("kjit_config_reloads_total"), std::string::npos) << body;

  write(daemon_->config_path(), "metrics_token_sha256 = \"" + sha256_hex("second-scrape-token") + "\"\n");
  Result<ReloadResult> reloaded = operator_client().reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_NE(std::find(reloaded->reloaded.begin(), reloaded->reloaded.end(), "metrics_token_sha256"),
            reloaded->reloaded.end());
  EXPECT_NE(scrape("first-scrape-token").first.find(" 401 "), std::string::npos) << "the old token still scrapes";
  EXPECT_NE(scrape("second-scrape-token").first.find(" 200 "), std::string::npos);

  // A digest that is not one is refused like any bad key, and changes nothing.
  write(daemon_->config_path(), "metrics_token_sha256 = \"second-scrape-token\"\n");
  Result<ReloadResult> refused = operator_client().reload();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("metrics_token_sha256"), std::string::npos) << refused.error().message;
  EXPECT_NE(scrape("second-scrape-token").first.find(" 200 "), std::string::npos);
}

// The TCP listener with TLS: certificate "a" at start, "b" after a reload.
class CertificateRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(certificates_.status()) << certificates_.status().error().message;
    for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(certificates_.make_server(name, std::string("kjitd-") + name));
    serve("a");
    port_ = free_loopback_port();
    daemon_ = std::make_unique<TestDaemon>(
        std::vector<std::string>{"--listen", address(), "--tls-cert", certificates_.file("served.crt"), "--tls-key",
                                 certificates_.file("served.key"), "--compile-workers", "0", "--no-cache"});
    ca_ = read_file(certificates_.file("ca.crt"));
  }
  // The configured files become certificate `name`'s, as an operator's
  // renewal would leave them.
  void serve(const std::string& name, const std::string& key_of = "") {
    fs::copy_file(certificates_.file(name + ".crt"), certificates_.file("served.crt"),
                  fs::copy_options::overwrite_existing);
    fs::copy_file(certificates_.file((key_of.empty() ? name : key_of) + ".key"), certificates_.file("served.key"),
                  fs::copy_options::overwrite_existing);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string presented() const {
    return echo_on(fresh_tls_channel(address(), ca_), std::chrono::seconds(10)).common_name;
  }

  TestCertificates certificates_;
  int port_ = 0;
  std::string ca_;
  std::unique_ptr<TestDaemon> daemon_;
};

TEST_F(CertificateRotationTest, NewConnectionsGetTheNewCertificateWhileCallsGoOnWithoutAFailure) {
  ASSERT_EQ(presented(), "kjitd-a");
  // Clients calling throughout, each on a connection it keeps and on new
  // ones (a new handshake every fourth call).
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, failed{0};
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      std::shared_ptr<grpc::Channel> kept = fresh_tls_channel(address(), ca_);
      for (int i = 0; !stop; ++i) {
        EchoOutcome outcome = echo_on(i % 4 == 0 ? fresh_tls_channel(address(), ca_) : kept, std::chrono::seconds(10));
        ++calls;
        if (outcome.ok) continue;
        ++failed;
        std::lock_guard lock(errors_mutex);
        errors.push_back(outcome.error);
      }
    });
  // Calls going on before the rotation, and after it.
  // (Checked once the clients are joined: a failed assertion must not leave them running.)
  const bool calling_before = eventually([&] { return calls.load() >= 10; }, std::chrono::seconds(60));
  serve("b");
  const auto signalled = Clock::now();
  daemon_->signal(SIGHUP);
  const bool rotated =
      eventually([&] { return presented() == "kjitd-b"; }, std::chrono::seconds(15), std::chrono::milliseconds(20));
  const double rotated_ms = std::chrono::duration<double, std::milli>(Clock::now() - signalled).count();
  const int calls_at_rotation = calls.load();
  const bool calling_after =
      eventually([&] { return calls.load() >= calls_at_rotation + 20; }, std::chrono::seconds(60));
  stop = true;
  for (std::thread& client : clients) client.join();
  EXPECT_TRUE(calling_before) << "the clients made no calls before the rotation";
  EXPECT_TRUE(calling_after) << "the clients made too few calls after the rotation";
  ASSERT_TRUE(rotated) << "new connections still get certificate a";
  std::printf("SIGHUP to the new certificate on a new connection: %.0f ms; %d calls, %d failed\n", rotated_ms,
              calls.load(), failed.load());
  RecordProperty("rotation_ms", std::to_string(rotated_ms));
  EXPECT_GT(calls, 20);
  EXPECT_EQ(failed, 0) << (errors.empty() ? "" : errors.front());

  // Through the RPC: a certificate with another's key is refused, naming
  // both files, and "b" stays.
  serve("c", "b");
  Result<ReloadResult> refused = Client(daemon_->socket_path(), {std::chrono::seconds(30)}).reload();
  ASSERT_FALSE(refused) << "a certificate that does not match its key was put in force";
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition) << refused.error().message;
  EXPECT_NE(refused.error().message.find("does not match"), std::string::npos) << refused.error().message;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past gRPC's reading of its files
  EXPECT_EQ(presented(), "kjitd-b");

  serve("c");
  Result<ReloadResult> reloaded = Client(daemon_->socket_path(), {std::chrono::seconds(30)}).reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_NE(std::find(reloaded->reloaded.begin(), reloaded->reloaded.end(), "tls"), reloaded->reloaded.end());
  EXPECT_TRUE(
      eventually([&] { return presented() == "kjitd-c"; }, std::chrono::seconds(15), std::chrono::milliseconds(20)));
}

// metrics_tls: the metrics port speaks TLS with the listener's certificate
// (and the next one after a reload), and still asks for its token. Read
// with the openssl command as a scraper would connect.
TEST_F(CertificateRotationTest, TheMetricsPortServesTheListenersCertificateAndAsksForItsToken) {
  daemon_.reset();
  const uint16_t metrics_port = free_loopback_port();
  daemon_ = std::make_unique<TestDaemon>(std::vector<std::string>{
      "--listen", address(), "--tls-cert", certificates_.file("served.crt"), "--tls-key",
      certificates_.file("served.key"), "--compile-workers", "0", "--no-cache", "--metrics-port",
      std::to_string(metrics_port), "--metrics-tls", "--metrics-token-sha256", sha256_hex("scrape-token")});
  ASSERT_TRUE(daemon_->status());
  const std::string connect = "openssl s_client -connect 127.0.0.1:" + std::to_string(metrics_port) + " -CAfile '" +
                              certificates_.file("ca.crt") + "' -verify_return_error";
  auto scrape = [&](const std::string& token) {
    const std::string request =
        "GET /metrics HTTP/1.0\\r\\n" + (token.empty() ? "" : "Authorization: Bearer " + token + "\\r\\n") + "\\r\\n";
    return run_command({"/bin/sh", "-c", "printf '" + request + "' | " + connect + " -quiet 2>/dev/null"}).out;
  };
  auto subject = [&] {
    return run_command({"/bin/sh", "-c", connect + " </dev/null 2>/dev/null | openssl x509 -noout -subject"}).out;
  };
  const std::string served = scrape("scrape-token");
  EXPECT_EQ(served.rfind("HTTP/1.1 200", 0), 0u) << served;
  EXPECT_NE(served.find("kjit_config_reloads_total"), std::string::npos) << served;
  EXPECT_EQ(scrape("").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(scrape("other-token").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_NE(subject().find("kjitd-a"), std::string::npos) << subject();

  serve("b");
  ASSERT_TRUE(Client(daemon_->socket_path(), {std::chrono::seconds(30)}).reload());
  EXPECT_NE(subject().find("kjitd-b"), std::string::npos) << subject();
  EXPECT_EQ(scrape("scrape-token").rfind("HTTP/1.1 200", 0), 0u);
}

}  // namespace
}  // namespace kjit::test
