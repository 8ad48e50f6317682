// Many users on one host, one kjitd: clients run as two real non-root users
// (kjit-test-a and kjit-test-b, of the group kjit-test given as
// --socket-group) against a daemon run by root, and every step by which one
// user could reach the other's client blobs is refused or separated:
// storing over the other's blob, reading it back, listing, removing, and the
// operator's actions. The users are made with useradd when missing; the
// tests skip where they do not run as root.
#include <gtest/gtest.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "kjit/v1/cache.grpc.pb.h"
#include "pipeline/cache_key.h"
#include "server/compile/namespaced_cache.h"
#include "support/eventually.h"
#include "support/child_process.h"
#include "support/daemon_test.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"

namespace kjit::test {
namespace {

constexpr const char* k_group = "kjit-test";
constexpr const char* k_user_a = "kjit-test-a";
constexpr const char* k_user_b = "kjit-test-b";

// gRPC status codes as the peer client prints them ("ERR <code> ...").
std::string refused_with(grpc::StatusCode code) { return "ERR " + std::to_string(static_cast<int>(code)) + " "; }

uint32_t uid_of(const char* name) {
  const passwd* entry = ::getpwnam(name);
  return entry ? entry->pw_uid : 0;
}

class LocalUsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "runs clients as the users kjit-test-a and kjit-test-b, which only root can create and become";
    }
    if (!::getgrnam(k_group)) {
      ASSERT_EQ(run_command({"/usr/sbin/groupadd", "-f", k_group}).exit_code, 0);
    }
    for (const char* user : {k_user_a, k_user_b}) {
      if (::getpwnam(user)) continue;
      CommandResult made = run_command({"/usr/sbin/useradd", "-M", "-N", "-g", k_group, "-s", "/usr/sbin/nologin", user});
      ASSERT_EQ(made.exit_code, 0) << made.err;
    }
    Result<std::string> dir = make_temp_dir("kjit-local-users-");
    ASSERT_TRUE(dir) << dir.error().message;
    dir_ = *dir;
    ::chmod(dir_.c_str(), 0755);  // the users reach the socket's directory (the daemon's, group kjit-test) and the client
    client_ = dir_ + "/peer_client";
    std::filesystem::copy_file(KJIT_TEST_PEER_CLIENT, client_);
    ::chmod(client_.c_str(), 0755);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  DaemonOptions options(std::vector<std::string> extra = {}) {
    DaemonOptions o;
    o.args = {"--socket-group", k_group, "--cache-dir", dir_ + "/cache"};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    o.socket_path = dir_ + "/run/kjitd.sock";
    return o;
  }

  // One call of the peer client as `user` (root: as this process): its stdout.
  std::string as(const char* user, const TestDaemon& daemon, std::vector<std::string> args,
                 std::vector<std::string> env = {}) {
    std::vector<std::string> argv;
    if (std::string(user) != "root") argv = {"/usr/bin/setpriv", "--reuid", user, "--regid", k_group, "--init-groups"};
    argv.push_back(client_);
    argv.push_back(daemon.socket_path());
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = run_command(argv, env);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return r.out;
  }

  std::string dir_, client_;
};

// The six steps by which, with every tokenless socket caller the operator,
// one user reached another's blobs.
TEST_F(LocalUsersTest, OneUsersBlobsAreNeitherReplacedNorSeenNorRemovedByAnother) {
  TestDaemon daemon(options());
  // 1. A stores a blob; 2. B stores other bytes under the same triple, which
  // succeeds, in B's own namespace.
  const std::string a_put = as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-a"});
  ASSERT_TRUE(a_put.starts_with("OK ")) << a_put;
  const std::string a_key = a_put.substr(3, a_put.find('\n') - 3);
  ASSERT_TRUE(as(k_user_b, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-b"}).starts_with("OK ")) << "B's put";
  // 3. Each gets its own bytes back: B placed nothing in A's process.
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
  EXPECT_EQ(as(k_user_b, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-b\n");
  // The operator's default namespace has neither.
  EXPECT_EQ(as("root", daemon, {"get", "triton", "K", "k.cubin"}), "OK missing\n");
  ASSERT_TRUE(as("root", daemon, {"put", "triton", "K", "op.cubin", "bytes-of-root"}).starts_with("OK "));

  // 4. B's listing has B's blob alone: not A's, not the operator's. (A
  // blob's key names its identity, so B's has the same key as A's; where it
  // is stored is each one's own.)
  const std::string b_list = as(k_user_b, daemon, {"ls"});
  ASSERT_TRUE(b_list.starts_with("OK")) << b_list;
  EXPECT_EQ(b_list, "OK \n" + a_key + "\n");
  // The operator lists its own namespace, not the users'.
  const std::string root_list = as("root", daemon, {"ls"});
  EXPECT_EQ(std::count(root_list.begin(), root_list.end(), '\n'), 2) << root_list;
  // Listed by blob namespace, each entry with its identity, read from the
  // header of a file named with B's own tag.
  EXPECT_EQ(as(k_user_b, daemon, {"ls", "triton"}), "OK \n" + a_key + " client-blob triton K k.cubin\n");
  EXPECT_EQ(as(k_user_b, daemon, {"ls", "cuda.core"}), "OK\n");
  const std::string root_blobs = as("root", daemon, {"ls", "triton"});
  EXPECT_TRUE(root_blobs.ends_with(" client-blob triton K op.cubin\n")) << root_blobs;
  EXPECT_EQ(std::count(root_blobs.begin(), root_blobs.end(), '\n'), 2) << root_blobs;

  // 5. B's rm of A's key reaches B's own namespace only: A keeps its blob
  // (B's own goes; it is stored again for the steps below).
  EXPECT_EQ(as(k_user_b, daemon, {"rm", a_key}), "OK\n");
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
  ASSERT_TRUE(as(k_user_b, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-b"}).starts_with("OK "));
  // A compile entry is everyone's: no user removes one, or has one explained by key.
  const std::string compile_key(64, 'a');
  const std::string rm_compile = as(k_user_b, daemon, {"rm", compile_key});
  EXPECT_TRUE(rm_compile.starts_with(refused_with(grpc::StatusCode::PERMISSION_DENIED))) << rm_compile;
  EXPECT_NE(rm_compile.find("kjit cache rm takes the keys of your own blobs"), std::string::npos) << rm_compile;
  const std::string explain = as(k_user_b, daemon, {"explain", compile_key});
  EXPECT_TRUE(explain.starts_with(refused_with(grpc::StatusCode::PERMISSION_DENIED))) << explain;
  EXPECT_TRUE(as("root", daemon, {"rm", compile_key}).starts_with("OK")) << "the operator removes";

  // 6. Verify is the operator's; gc collects a user's own entries.
  const std::string verify = as(k_user_b, daemon, {"verify"});
  EXPECT_TRUE(verify.starts_with(refused_with(grpc::StatusCode::PERMISSION_DENIED))) << verify;
  EXPECT_NE(verify.find("ask an operator (root, kjitd's user (uid 0))"), std::string::npos) << verify;
  EXPECT_NE(verify.find("kjit cache gc collects your own entries only"), std::string::npos) << verify;
  EXPECT_EQ(as("root", daemon, {"verify"}), "OK\n");
  EXPECT_EQ(as(k_user_b, daemon, {"gc"}), "OK\n");
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");

  // B removes its own blob by its key; A's stays.
  EXPECT_EQ(as(k_user_b, daemon, {"rm", a_key}), "OK\n");
  EXPECT_EQ(as(k_user_b, daemon, {"get", "triton", "K", "k.cubin"}), "OK missing\n");
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
}

// Direct reads: a user reads its own blobs from the disk tier by the names
// its grant lets it make, and nothing else of the daemon's: not another
// user's blobs (it cannot name them), not the operator's (kjitd's user's
// files), not a listing of the directories, not the names secret.
TEST_F(LocalUsersTest, AUserReadsItsOwnBlobsFromDiskAndNoOneElses) {
  TestDaemon daemon(options());
  const std::string a_put = as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-a"});
  ASSERT_TRUE(a_put.starts_with("OK ")) << a_put;
  const std::string blob_key = a_put.substr(3, a_put.find('\n') - 3);
  ASSERT_TRUE(as("root", daemon, {"put", "triton", "K", "k.cubin", "bytes-of-root"}).starts_with("OK "));
  // A put of a stored identity says so.
  EXPECT_EQ(as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "other"}),
            "OK " + blob_key + " already_stored conflict\n");

  const std::string root = dir_ + "/cache/v3";
  // The path of a blob file named with a grant's key ("<ns> <hex key>").
  auto path_with = [&](const std::string& grant) {
    std::istringstream words(grant.substr(3));
    std::string ns, hex;
    words >> ns >> hex;
    NamesKey key{};
    for (size_t i = 0; i < key.size() && 2 * i + 1 < hex.size(); ++i)
      key[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    const std::string stored = namespaced_key(blob_key, ns, &key);
    return root + "/" + stored.substr(0, 2) + "/" + stored + ".kjit";
  };
  const std::string a_grant = as(k_user_a, daemon, {"grant"});
  const std::string b_grant = as(k_user_b, daemon, {"grant"});
  ASSERT_TRUE(a_grant.starts_with("OK U" + std::to_string(uid_of(k_user_a)) + " ")) << a_grant;
  ASSERT_TRUE(b_grant.starts_with("OK U" + std::to_string(uid_of(k_user_b)) + " ")) << b_grant;
  const std::string a_file = path_with(a_grant);
  EXPECT_TRUE(as(k_user_a, daemon, {"read", a_file}).starts_with("OK ")) << "A reads its own blob";
  // B's key names another file, which does not exist: B cannot name A's.
  EXPECT_FALSE(std::filesystem::exists(path_with(b_grant)));
  EXPECT_EQ(as(k_user_b, daemon, {"read", path_with(b_grant)}), "ERR errno No such file or directory\n");
  // Nor find it: no directory of the tier lists for B.
  EXPECT_EQ(as(k_user_b, daemon, {"list", root}), "ERR errno Permission denied\n");
  EXPECT_EQ(as(k_user_b, daemon, {"list", root + "/" + blob_key.substr(0, 2)}), "ERR errno Permission denied\n");
  // The operator's blob is plainly named, and kjitd's user's alone.
  const std::string operator_file = root + "/" + blob_key.substr(0, 2) + "/" + blob_key + ".kjit";
  ASSERT_TRUE(std::filesystem::exists(operator_file));
  EXPECT_EQ(as(k_user_b, daemon, {"read", operator_file}), "ERR errno Permission denied\n");
  EXPECT_EQ(as(k_user_b, daemon, {"read", dir_ + "/cache/blob-names.key"}), "ERR errno Permission denied\n");
  // Tokenless operators are granted plain names.
  EXPECT_EQ(as("root", daemon, {"grant"}), "OK  \n");
}

TEST_F(LocalUsersTest, MembersOfTheAdminGroupAreOperators) {
  TestDaemon daemon(options({"--admin-group", k_group}));
  EXPECT_EQ(as(k_user_a, daemon, {"verify"}), "OK\n");
  // An operator's blobs are the default namespace's: root sees them.
  ASSERT_TRUE(as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "admin-bytes"}).starts_with("OK "));
  EXPECT_EQ(as("root", daemon, {"get", "triton", "K", "k.cubin"}), "OK found admin-bytes\n");
}

TEST_F(LocalUsersTest, DeclaredSharingSharesBlobsAndTheFirstWriterWins) {
  DaemonOptions o = options();
  o.config = "[[blob_sharing]]\nuids = [" + std::to_string(uid_of(k_user_a)) + ", " +
             std::to_string(uid_of(k_user_b)) + "]\nnamespace = \"team\"\n";
  TestDaemon daemon(o);
  ASSERT_TRUE(as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-a"}).starts_with("OK "));
  EXPECT_EQ(as(k_user_b, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
  // B's other bytes for the same blob leave A's in place, and are counted.
  ASSERT_TRUE(as(k_user_b, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-b"}).starts_with("OK "));
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
  EXPECT_EQ(as("root", daemon, {"stats"}), "OK put_conflicts 1\n");
  // The same bytes again are no conflict.
  ASSERT_TRUE(as(k_user_b, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-a"}).starts_with("OK "));
  EXPECT_EQ(as("root", daemon, {"stats"}), "OK put_conflicts 1\n");
  // The declared group is the operator's to name: root's namespace is not it.
  EXPECT_EQ(as("root", daemon, {"get", "triton", "K", "k.cubin"}), "OK missing\n");

  // Asking to replace does not swap a shared blob either: nothing records
  // which member wrote it, so the daemon refuses, says how to replace it on
  // purpose, and counts the conflict; A's bytes stay.
  const std::string refused = as(k_user_b, daemon, {"replace", "triton", "K", "k.cubin", "bytes-of-b"});
  EXPECT_TRUE(refused.starts_with(refused_with(grpc::StatusCode::FAILED_PRECONDITION))) << refused;
  EXPECT_NE(refused.find("[[blob_sharing]]"), std::string::npos) << refused;
  EXPECT_NE(refused.find("kjit cache rm "), std::string::npos) << refused;
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-a\n");
  EXPECT_EQ(as("root", daemon, {"stats"}), "OK put_conflicts 2\n");
  // The same bytes are no replacement, so nothing to refuse.
  EXPECT_TRUE(as(k_user_a, daemon, {"replace", "triton", "K", "k.cubin", "bytes-of-a"}).ends_with(" already_stored\n"));
  // Removed on purpose, the blob takes a member's new bytes.
  const std::string stored = as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-a"});
  ASSERT_TRUE(stored.starts_with("OK ")) << stored;
  const std::string cache_key = stored.substr(3, stored.find_first_of(" \n", 3) - 3);
  ASSERT_EQ(as(k_user_b, daemon, {"rm", cache_key}), "OK\n");
  EXPECT_EQ(as(k_user_b, daemon, {"replace", "triton", "K", "k.cubin", "bytes-of-b"}), "OK " + cache_key + "\n");
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-b\n");
}

// A user's own namespace is its processes' alone: asking to replace stores
// the new bytes there.
TEST_F(LocalUsersTest, AUserReplacesItsOwnBlobButNotAnothersByAskingToReplace) {
  TestDaemon daemon(options());
  ASSERT_TRUE(as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "old-of-a"}).starts_with("OK "));
  ASSERT_TRUE(as(k_user_b, daemon, {"put", "triton", "K", "k.cubin", "bytes-of-b"}).starts_with("OK "));
  EXPECT_TRUE(as(k_user_a, daemon, {"replace", "triton", "K", "k.cubin", "new-of-a"}).ends_with(" replaced\n"));
  EXPECT_EQ(as(k_user_a, daemon, {"get", "triton", "K", "k.cubin"}), "OK found new-of-a\n");
  EXPECT_EQ(as(k_user_b, daemon, {"get", "triton", "K", "k.cubin"}), "OK found bytes-of-b\n");
}

TEST_F(LocalUsersTest, SharingByGroupNamesTheGroupsMembers) {
  DaemonOptions o = options();
  o.config = std::string("[[blob_sharing]]\ngroup = \"") + k_group + "\"\nnamespace = \"ml-team\"\n";
  TestDaemon daemon(o);
  ASSERT_TRUE(as(k_user_a, daemon, {"put", "triton", "K", "k.cubin", "shared"}).starts_with("OK "));
  EXPECT_EQ(as(k_user_b, daemon, {"get", "triton", "K", "k.cubin"}), "OK found shared\n");
}

TEST_F(LocalUsersTest, AnUnknownAdminGroupStopsTheStart) {
  CommandResult r = run_kjitd({"--admin-group", "no-such-group-kjit", "--no-cache"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("admin_group: no group named 'no-such-group-kjit'"), std::string::npos) << r.err;
}

// Metrics name socket users by uid; the log names uid, gid and pid.
TEST_F(LocalUsersTest, MetricsAndTheLogNameTheCallersUid) {
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  DaemonOptions o = options({"--metrics-port", std::to_string(port), "--log-level", "info"});
  o.capture_log = true;
  TestDaemon daemon(o);
  EXPECT_TRUE(as(k_user_a, daemon, {"verify"}).starts_with("ERR"));
  const std::string label = "uid:" + std::to_string(uid_of(k_user_a));
  EXPECT_TRUE(eventually([&] {
    return metric_total(scrape_metrics(port), "kjit_requests_total",
                        {{"method", "Verify"}, {"code", "PERMISSION_DENIED"}, {"tenant", label}}) == 1;
  })) << scrape_metrics(port);
}

TEST_F(LocalUsersTest, ARefusalsLogLineNamesTheCallersUidGidAndPid) {
  DaemonOptions o = options({"--tenants", dir_ + "/tenants.toml", "--log-level", "info"});
  o.capture_log = true;
  std::ofstream(dir_ + "/tenants.toml") << "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" +
                                                sha256_hex("alpha-secret-token") + "\"\n";
  TestDaemon daemon(o);
  const std::string refused = as(k_user_a, daemon, {"stats"}, {"KJIT_TEST_TOKEN=not-a-token"});
  EXPECT_TRUE(refused.starts_with(refused_with(grpc::StatusCode::UNAUTHENTICATED))) << refused;
  const std::string who = "[uid " + std::to_string(uid_of(k_user_a)) + " gid ";
  EXPECT_TRUE(eventually([&] { return daemon.log().find(who) != std::string::npos; })) << daemon.log();
  EXPECT_EQ(daemon.log().find("not-a-token"), std::string::npos) << "the token was logged";
}

// The Kubernetes DaemonSet's default: tokens on the socket too. Two
// workloads with different tokens neither read nor replace each other's
// blobs, and a call without a token is refused.
TEST(SocketTokens, TwoTokensNeitherReadNorReplaceEachOthersBlobs) {
  Result<std::string> dir = make_temp_dir("kjit-socket-tokens-");
  ASSERT_TRUE(dir) << dir.error().message;
  std::ofstream(*dir + "/tenants.toml") << "[[tenants]]\nname = \"one\"\ntoken_sha256 = \"" +
                                               sha256_hex("token-of-one") + "\"\n[[tenants]]\nname = \"two\"\n"
                                               "token_sha256 = \"" + sha256_hex("token-of-two") + "\"\n";
  TestDaemon daemon({"--tenants", *dir + "/tenants.toml", "--socket-requires-token", "--cache-dir", *dir + "/cache"});
  auto cache = v1::Cache::NewStub(grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials()));
  auto put = [&](const std::string& token, const std::string& data) {
    v1::PutBlobRequest request;
    request.set_namespace_("triton");
    request.set_key("K");
    request.set_name("k.cubin");
    request.set_data(data);
    v1::PutBlobResponse response;
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    return cache->PutBlob(&context, request, &response);
  };
  auto get = [&](const std::string& token) -> std::string {
    v1::GetBlobRequest request;
    request.set_namespace_("triton");
    request.set_key("K");
    request.set_name("k.cubin");
    v1::GetBlobResponse response;
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    grpc::Status status = cache->GetBlob(&context, request, &response);
    if (!status.ok()) return "error " + std::to_string(static_cast<int>(status.error_code()));
    return response.found() ? response.data() : "missing";
  };
  ASSERT_TRUE(put("token-of-one", "bytes-of-one").ok());
  EXPECT_EQ(get("token-of-two"), "missing");
  ASSERT_TRUE(put("token-of-two", "bytes-of-two").ok());
  EXPECT_EQ(get("token-of-one"), "bytes-of-one");
  EXPECT_EQ(get("token-of-two"), "bytes-of-two");
  EXPECT_EQ(put("", "no token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(get(""), "error " + std::to_string(static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)));
  std::error_code ec;
  std::filesystem::remove_all(*dir, ec);
}

}  // namespace
}  // namespace kjit::test
