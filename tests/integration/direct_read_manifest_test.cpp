// The direct-read manifest beside the socket: written while a daemon with a
// disk tier serves tokenless socket callers, naming the socket it describes
// and the disk tier where a blob the daemon stored lies; absent otherwise, and
// removed when the daemon stops. (The Python client's reader of it is tested
// in client/python/tests/test_direct.py.)
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kjit/v1/cache.grpc.pb.h"
#include "pipeline/cache_key.h"
#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

namespace fs = std::filesystem;

std::string manifest_path(const DaemonProcess& daemon) { return daemon.socket_path() + ".direct.json"; }

nlohmann::json read_manifest(const DaemonProcess& daemon) {
  std::ifstream in(manifest_path(daemon));
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

class DirectReadManifestTest : public ::testing::Test {
 protected:
  std::string cache_dir() const { return temp_.path() + "/cache"; }
  TempDir temp_;
};

TEST_F(DirectReadManifestTest, DescribesTheServingSocketAndWhereItsBlobsLie) {
  auto daemon = std::make_unique<TestDaemon>(std::vector<std::string>{"--cache-dir", cache_dir()});
  ASSERT_TRUE(fs::exists(manifest_path(*daemon)));
  struct stat manifest_stat {};
  ASSERT_EQ(::stat(manifest_path(*daemon).c_str(), &manifest_stat), 0);
  // Readable by every user: it holds no secret; a user reads its own blobs
  // only with the names key the socket gives it.
  EXPECT_EQ(manifest_stat.st_mode & 0777, 0644u);
  EXPECT_EQ(manifest_stat.st_uid, ::geteuid());

  const nlohmann::json manifest = read_manifest(*daemon);
  struct stat socket_stat {};
  ASSERT_EQ(::stat(daemon->socket_path().c_str(), &socket_stat), 0);
  EXPECT_EQ(manifest.at("format"), 2);
  EXPECT_EQ(manifest.at("socket"), daemon->socket_path());
  EXPECT_EQ(manifest.at("socket_inode").get<uint64_t>(), static_cast<uint64_t>(socket_stat.st_ino));
  EXPECT_EQ(manifest.at("socket_device").get<uint64_t>(), static_cast<uint64_t>(socket_stat.st_dev));
  EXPECT_EQ(manifest.at("socket_ctime_ns").get<int64_t>(),
            static_cast<int64_t>(socket_stat.st_ctim.tv_sec) * 1'000'000'000 + socket_stat.st_ctim.tv_nsec);
  EXPECT_EQ(manifest.at("kjitd_pid").get<int64_t>(), daemon->pid());
  EXPECT_EQ(manifest.at("disk_root"), cache_dir() + "/v3");
  EXPECT_EQ(manifest.at("entry_format"), 3);
  EXPECT_EQ(manifest.at("entry_suffix"), ".kjit");
  EXPECT_EQ(manifest.at("blob_key_domain"), "kjit client blob key v1");
  EXPECT_EQ(manifest.at("namespace"), "");
  EXPECT_GT(manifest.at("touch_interval_ms").get<int64_t>(), 0);
  EXPECT_EQ(manifest.at("daemon_uid").get<uint32_t>(), ::geteuid());
  EXPECT_EQ(manifest.at("names_key_id").get<std::string>().size(), 32u);

  // A stored blob lies where the manifest says a reader finds it.
  auto cache = v1::Cache::NewStub(
      grpc::CreateChannel("unix:" + daemon->socket_path(), grpc::InsecureChannelCredentials()));
  v1::PutBlobRequest put;
  put.set_namespace_("triton");
  put.set_key("K");
  put.set_name("k.cubin");
  put.set_data("cubin bytes");
  v1::PutBlobResponse stored;
  grpc::ClientContext context;
  ASSERT_TRUE(cache->PutBlob(&context, put, &stored).ok());
  const std::string key = stored.cache_key();
  const std::string spelled = std::string("kjit client blob key v1") + '\0' + "11:client-blob" + "6:triton" + "1:K" +
                              "7:k.cubin";
  EXPECT_EQ(key, sha256_hex(spelled) + "-blob") << "the spelling a direct reader derives keys by";
  const std::string entry =
      manifest.at("disk_root").get<std::string>() + "/" + key.substr(0, 2) + "/" + key + ".kjit";
  EXPECT_TRUE(fs::exists(entry)) << entry;

  const std::string path = manifest_path(*daemon);
  EXPECT_EQ(daemon->stop(), 0);
  EXPECT_FALSE(fs::exists(path)) << "a stopped daemon's manifest would describe a socket nobody serves";
}

TEST_F(DirectReadManifestTest, ALeftoverIsReplacedAtStart) {
  const std::string socket = temp_.path() + "/k.sock";
  { std::ofstream(socket + ".direct.json") << "{\"format\": 1, \"socket_inode\": 1}"; }
  DaemonOptions options{{"--cache-dir", cache_dir()}};
  options.socket_path = socket;
  TestDaemon daemon(options);
  struct stat socket_stat {};
  ASSERT_EQ(::stat(socket.c_str(), &socket_stat), 0);
  EXPECT_EQ(read_manifest(daemon).at("socket_inode").get<uint64_t>(), static_cast<uint64_t>(socket_stat.st_ino));
}

// kjitd changes its working directory once it serves: a socket named by a
// relative path is still removed, with its manifest, when it stops.
TEST_F(DirectReadManifestTest, ARelativeSocketPathIsCleanedUpToo) {
  const std::string absolute = temp_.path() + "/rel.sock";
  DaemonOptions options{{"--cache-dir", cache_dir()}};
  options.socket_path = fs::relative(absolute).string();
  ASSERT_NE(options.socket_path.front(), '/');
  auto daemon = std::make_unique<TestDaemon>(options);
  EXPECT_EQ(read_manifest(*daemon).at("socket"), absolute);
  EXPECT_EQ(daemon->stop(), 0);
  EXPECT_FALSE(fs::exists(absolute));
  EXPECT_FALSE(fs::exists(absolute + ".direct.json"));
}

TEST_F(DirectReadManifestTest, NoneWithoutADiskTierOrWhenTurnedOff) {
  const std::string socket = temp_.path() + "/k.sock";
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--no-disk-cache"},
                                              std::vector<std::string>{"--no-cache"},
                                              std::vector<std::string>{"--no-direct-reads", "--cache-dir", cache_dir()}}) {
    // A leftover from an earlier daemon goes too.
    { std::ofstream(socket + ".direct.json") << "{}"; }
    DaemonOptions options{args};
    options.socket_path = socket;
    TestDaemon daemon(options);
    EXPECT_FALSE(fs::exists(socket + ".direct.json")) << args.front();
  }
  DaemonOptions configured{{"--cache-dir", cache_dir()}};
  configured.config = "[cache]\ndirect_reads = false\n";
  TestDaemon daemon(configured);
  EXPECT_FALSE(fs::exists(manifest_path(daemon))) << "cache.direct_reads = false";
}

// A tokenless request on the socket is served in the default namespace
// unless the socket asks for tokens: then the daemon decides each caller's
// namespace, and no reader may read on its own.
TEST_F(DirectReadManifestTest, OnlyWhereTheSocketServesCallersWithoutAToken) {
  const std::string tenants = temp_.path() + "/tenants.toml";
  std::ofstream(tenants) << "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" << sha256_hex("alpha-token")
                         << "\"\n";
  {
    TestDaemon daemon(std::vector<std::string>{"--tenants", tenants, "--cache-dir", cache_dir()});
    ASSERT_TRUE(fs::exists(manifest_path(daemon)));
    EXPECT_EQ(read_manifest(daemon).at("namespace"), "");
  }
  TestDaemon daemon(
      std::vector<std::string>{"--tenants", tenants, "--socket-requires-token", "--cache-dir", cache_dir()});
  EXPECT_FALSE(fs::exists(manifest_path(daemon)));
}

}  // namespace
}  // namespace kjit::test
