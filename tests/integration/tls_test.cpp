// kjitd's TCP listener: TLS (and mutual TLS) from PEM files, plaintext only
// when asked for by name, and the clients' TLS, address and token options.
// The certificates are made for each run with the openssl command.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kjit/client.h"
#include "pipeline/cache_key.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "support/loopback.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A CA, a server certificate for localhost and 127.0.0.1 that it signed, a
// client certificate it signed, and a second CA that signed nothing here.
class Certificates {
 public:
  Certificates() {
    Result<std::string> dir = make_temp_dir("kjit-tls-");
    if (!dir) {
      ADD_FAILURE() << dir.error().message;
      return;
    }
    dir_ = *dir;
    make_ca("ca");
    make_ca("other-ca");
    write(dir_ / "server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    write(dir_ / "client.ext", "extendedKeyUsage=clientAuth\n");
    make_signed("server", "localhost");
    make_signed("client", "kjit-test-client");
  }
  ~Certificates() {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  const fs::path& dir() const { return dir_; }

 private:
  void openssl(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/env", "openssl"});  // from PATH
    CommandResult r = run_command(args);
    ASSERT_EQ(r.exit_code, 0) << "openssl " << args[2] << ": " << r.err;
  }
  void make_ca(const std::string& name) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
             "-subj", "/CN=kjit test " + name, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign,cRLSign", "-keyout", file(name + ".key"), "-out", file(name + ".crt")});
  }
  void make_signed(const std::string& name, const std::string& common_name) {
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
             "/CN=" + common_name, "-keyout", file(name + ".key"), "-out", file(name + ".csr")});
    openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", file("ca.crt"), "-CAkey", file("ca.key"),
             "-CAcreateserial", "-days", "1", "-extfile", file(name + ".ext"), "-out", file(name + ".crt")});
  }

  fs::path dir_;
};


CompileRequest vector_add() {
  CompileRequest request;
  request.input = k_vector_add;
  request.input_name = "vadd.cu";
  request.target = "cuda:90";
  return request;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certificates_ = std::make_unique<Certificates>(); }
  static void TearDownTestSuite() { certificates_.reset(); }

  static std::string file(const std::string& name) { return certificates_->file(name); }

  // A daemon listening on 127.0.0.1 with the server certificate, and more args.
  std::unique_ptr<TestDaemon> tls_daemon(std::vector<std::string> more = {}) {
    port_ = free_loopback_port();
    std::vector<std::string> args{"--listen",         address(),   "--tls-cert",
                                  file("server.crt"), "--tls-key", file("server.key")};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<TestDaemon>(std::move(args));
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  ClientOptions trusting(const std::string& ca = "ca.crt") const {
    ClientOptions options{std::chrono::seconds(60)};
    options.tls_ca_file = file(ca);
    return options;
  }
  CommandResult kjit(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), kjit_cli_path());
    return run_command(args, env);
  }

  static inline std::unique_ptr<Certificates> certificates_;
  int port_ = 0;
};

TEST_F(TlsTest, AClientTrustingTheCaIsServedOverTls) {
  auto daemon = tls_daemon();
  Result<std::string> health = Client(address(), trusting()).health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, "SERVING");
  // By name too, the name checked in the certificate given apart from the address.
  ClientOptions by_name = trusting();
  by_name.tls_server_name = "localhost";
  Result<std::string> named = Client(address(), by_name).health();
  EXPECT_TRUE(named) << named.error().message;
}

TEST_F(TlsTest, TheConfigurationFileGivesTheSameTls) {
  port_ = free_loopback_port();
  DaemonOptions options;
  options.config = "listen = \"" + address() + "\"\n[tls]\ncert = \"" + file("server.crt") + "\"\nkey = \"" +
                   file("server.key") + "\"\nclient_ca = \"" + file("ca.crt") + "\"\n";
  TestDaemon daemon(options);
  ClientOptions identified = trusting();
  identified.tls_cert_file = file("client.crt");
  identified.tls_key_file = file("client.key");
  Result<std::string> served = Client(address(), identified).health();
  ASSERT_TRUE(served) << served.error().message;
  ClientOptions anonymous = trusting();
  anonymous.timeout = std::chrono::seconds(10);
  EXPECT_FALSE(Client(address(), anonymous).health()) << "client_ca from the file is not in force";
}

TEST_F(TlsTest, ACompileOverTlsSucceeds) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  auto daemon = tls_daemon();
  Result<CompileResult> result = Client(address(), trusting()).compile(vector_add());
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->artifact_kind, ArtifactKind::cubin);
  EXPECT_FALSE(result->artifact.empty());
}

TEST_F(TlsTest, AClientThatDoesNotTrustTheCaIsRefused) {
  auto daemon = tls_daemon();
  ClientOptions quick{std::chrono::seconds(10)};
  quick.tls_ca_file = file("other-ca.crt");
  Result<std::string> health = Client(address(), quick).health();
  ASSERT_FALSE(health) << "served a client that does not trust the daemon's CA";
  EXPECT_EQ(health.error().code, ErrorCode::unavailable) << health.error().message;
  // Nor does a plaintext client get through to a TLS listener.
  Result<std::string> plain = Client(address(), {std::chrono::seconds(10)}).health();
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code, ErrorCode::unavailable) << plain.error().message;
}

TEST_F(TlsTest, MutualTlsServesOnlyClientsWithASignedCertificate) {
  auto daemon = tls_daemon({"--tls-client-ca", file("ca.crt")});
  ClientOptions anonymous = trusting();
  anonymous.timeout = std::chrono::seconds(10);
  Result<std::string> refused = Client(address(), anonymous).health();
  ASSERT_FALSE(refused) << "served a client without a certificate";
  EXPECT_EQ(refused.error().code, ErrorCode::unavailable) << refused.error().message;

  ClientOptions identified = trusting();
  identified.tls_cert_file = file("client.crt");
  identified.tls_key_file = file("client.key");
  Result<std::string> served = Client(address(), identified).health();
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(*served, "SERVING");
}

TEST_F(TlsTest, AnUnreadableCaFileIsAnErrorFromEveryCallNotACrash) {
  ClientOptions options{std::chrono::seconds(5)};
  options.tls_ca_file = file("no-such-ca.crt");
  Client client("127.0.0.1:1", options);
  for (int i = 0; i < 2; ++i) {
    Result<std::string> health = client.health();
    ASSERT_FALSE(health);
    EXPECT_EQ(health.error().code, ErrorCode::failed_precondition);
    EXPECT_NE(health.error().message.find("no-such-ca.crt"), std::string::npos) << health.error().message;
  }
}

TEST_F(TlsTest, ListenWithoutTlsOrInsecureListenIsRefusedAtStart) {
  CommandResult r = run_kjitd({"--listen", "127.0.0.1:0", "--no-cache"});
  EXPECT_NE(r.exit_code, 0);
  const std::string output = r.out + r.err;
  EXPECT_NE(output.find("--insecure-listen"), std::string::npos) << output;
  EXPECT_NE(output.find("--tls-cert"), std::string::npos) << output;
}

TEST_F(TlsTest, TlsSettingsThatDoNotGoTogetherAreRefused) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : {Case{{"--listen", "127.0.0.1:0", "--tls-key", file("server.key")}, "--tls-cert"},
                        Case{{"--listen", "127.0.0.1:0", "--tls-client-ca", file("ca.crt")}, "--tls-client-ca"},
                        Case{{"--tls-cert", file("server.crt"), "--tls-key", file("server.key")}, "--listen"},
                        Case{{"--listen", "127.0.0.1:0", "--insecure-listen", "127.0.0.1:0"}, "--insecure-listen"}}) {
    CommandResult r = run_kjitd(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

TEST_F(TlsTest, AMissingCertificateFileIsNamedAtStartAndByCheckConfig) {
  const std::string missing = file("missing.crt");
  const std::string config =
      "listen = \"127.0.0.1:0\"\n[tls]\ncert = \"" + missing + "\"\nkey = \"" + file("server.key") + "\"\n";
  CommandResult start = run_kjitd({"--no-cache"}, config);
  EXPECT_NE(start.exit_code, 0);
  EXPECT_NE((start.out + start.err).find(missing), std::string::npos) << start.out << start.err;
  CommandResult check = run_kjitd({"--check-config"}, config);
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_NE(check.err.find(missing), std::string::npos) << check.err;
}

TEST_F(TlsTest, InsecureListenServesPlaintextAndWarns) {
  port_ = free_loopback_port();
  DaemonOptions options{{"--insecure-listen", address()}};
  options.capture_log = true;
  TestDaemon daemon(options);
  Result<std::string> health = Client(address(), {std::chrono::seconds(10)}).health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ(*health, "SERVING");
  EXPECT_NE(daemon.log().find("anyone who can reach this address can use the daemon"), std::string::npos)
      << daemon.log();
}

TEST_F(TlsTest, TheCliReachesATlsDaemonByFlagOrEnvironment) {
  auto daemon = tls_daemon();
  CommandResult flags = kjit({"--address", address(), "--tls-ca", file("ca.crt"), "health"});
  EXPECT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_EQ(flags.out, "SERVING\n");
  // After the subcommand, the address from the environment.
  CommandResult env = kjit({"health", "--tls-ca", file("ca.crt")}, {"KJIT_ADDRESS=" + address()});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  // Without the CA the daemon is unreachable, with the exit code that says so.
  CommandResult untrusted = kjit({"--address", address(), "health"});
  EXPECT_EQ(untrusted.exit_code, 3) << untrusted.err;
}

TEST_F(TlsTest, TheCliCompilesOverTls) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  auto daemon = tls_daemon();
  const fs::path source = certificates_->dir() / "vadd.cu";
  write(source, k_vector_add);
  const fs::path by_flag = certificates_->dir() / "by_flag.cubin";
  CommandResult flags = kjit({"--address", address(), "--tls-ca", file("ca.crt"), "compile", source.string(),
                              "--target", "cuda:90", "-o", by_flag.string()});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_GT(fs::file_size(by_flag), 0u);
  const fs::path by_env = certificates_->dir() / "by_env.cubin";
  CommandResult env =
      kjit({"compile", source.string(), "--target", "cuda:90", "-o", by_env.string(), "--tls-ca", file("ca.crt")},
           {"KJIT_ADDRESS=" + address()});
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(fs::file_size(by_env), fs::file_size(by_flag));
}

TEST_F(TlsTest, TheTokenGoesWithEveryCallFromTheClientAndTheCli) {
  write(certificates_->dir() / "tenants.toml",
        "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" + sha256_hex("alpha-token") + "\"\n");
  write(certificates_->dir() / "alpha.token", "\n  alpha-token \n\n");
  auto daemon = tls_daemon({"--tenants", file("tenants.toml")});
  // The TCP listener asks every call for a token once there are tenants.
  Result<CacheStats> anonymous = Client(address(), trusting()).cache_stats();
  ASSERT_FALSE(anonymous) << "a call without a token was served";
  EXPECT_EQ(anonymous.error().code, ErrorCode::unauthenticated) << anonymous.error().message;
  ClientOptions with_token = trusting();
  with_token.token = "alpha-token";
  Result<CacheStats> stats = Client(address(), with_token).cache_stats();
  EXPECT_TRUE(stats) << stats.error().message;

  const std::vector<std::string> stats_command{"--address", address(), "--tls-ca", file("ca.crt"), "cache", "stats"};
  CommandResult none = kjit(stats_command);
  EXPECT_EQ(none.exit_code, 1) << none.err;
  std::vector<std::string> by_file = stats_command;
  by_file.insert(by_file.end(), {"--token-file", file("alpha.token")});
  CommandResult from_file = kjit(by_file, {"KJIT_TOKEN=not-a-token"});  // the flag wins
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  CommandResult from_env = kjit(stats_command, {"KJIT_TOKEN=alpha-token"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  CommandResult wrong = kjit(stats_command, {"KJIT_TOKEN=not-a-token"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.err;
  EXPECT_EQ(wrong.err.find("not-a-token"), std::string::npos) << "the CLI printed the token: " << wrong.err;
}

TEST_F(TlsTest, AnEmptyOrMissingTokenFileIsAUsageError) {
  write(certificates_->dir() / "empty.token", " \n\n");
  for (const std::string& token_file : {file("empty.token"), file("no-such.token")}) {
    CommandResult r = kjit({"health", "--token-file", token_file});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--token-file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(token_file), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace kjit::test
