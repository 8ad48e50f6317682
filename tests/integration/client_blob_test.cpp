// The C++ client's blob calls (Client::put_blob, get_blob, put_blob_group,
// get_blob_group) and the request id of its compile results, through a real
// daemon. The blob tests need no toolkit: nothing there compiles.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kjit/client.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

class ClientBlobTest : public ::testing::Test {
 protected:
  DaemonOptions daemon_options(const std::string& config = {}) {
    DaemonOptions options{{"--cache-dir", temp_.path() + "/cache"}};
    options.config = config;
    return options;
  }

  TempDir temp_;
};

// Bytes that are not text: every value, NULs included.
std::string binary_blob(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return out;
}

TEST_F(ClientBlobTest, PutThenGetReturnsTheSameBytes) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  const std::string with_nuls("\0a\0\0b\0", 6);
  const std::string large = binary_blob(1 << 20);
  for (const auto& [name, data] : std::vector<std::pair<std::string, std::string>>{
           {"nuls.bin", with_nuls}, {"large.cubin", large}, {"empty", ""}}) {
    Result<std::string> cache_key = client.put_blob("triton", "K1", name, data);
    ASSERT_TRUE(cache_key) << name << ": " << cache_key.error().message;
    EXPECT_TRUE(cache_key->ends_with("-blob")) << *cache_key;
    Result<std::optional<std::string>> got = client.get_blob("triton", "K1", name);
    ASSERT_TRUE(got) << name << ": " << got.error().message;
    ASSERT_TRUE(got->has_value()) << name;
    EXPECT_EQ(got->value().size(), data.size()) << name;
    EXPECT_EQ(got->value(), data) << name;
  }
  // The key put_blob names is the one the disk tier lists.
  Result<std::string> cache_key = client.put_blob("triton", "K1", "nuls.bin", with_nuls);
  ASSERT_TRUE(cache_key);
  Result<std::vector<CacheListing>> listed = client.cache_list();
  ASSERT_TRUE(listed) << listed.error().message;
  bool found = false;
  for (const CacheListing& entry : *listed) found = found || entry.key == *cache_key;
  EXPECT_TRUE(found) << *cache_key;
}

// Listed with a blob namespace, the disk tier answers only the caller's
// blobs and groups of that namespace, each with its identity: what a
// framework's cache needs to count or clear its own entries.
TEST_F(ClientBlobTest, ListingABlobNamespaceNamesEachBlobAndGroupOfItAlone) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  Result<std::string> cubin = client.put_blob("triton", "K1", "k.cubin", "cubin bytes");
  ASSERT_TRUE(cubin) << cubin.error().message;
  ASSERT_TRUE(client.put_blob("triton", "K1", "k.json", "{}"));
  ASSERT_TRUE(client.put_blob_group("triton", "K1", "k.json", {"k.cubin", "k.json"}));
  ASSERT_TRUE(client.put_blob("cuda-core", "K9", "other.cubin", "other"));

  Result<std::vector<CacheListing>> listed = client.cache_list(0, "triton");
  ASSERT_TRUE(listed) << listed.error().message;
  std::set<std::string> seen;
  for (const CacheListing& entry : *listed) {
    EXPECT_EQ(entry.blob_namespace, "triton") << entry.key;
    EXPECT_EQ(entry.blob_key, "K1") << entry.key;
    seen.insert(entry.blob_kind + " " + entry.blob_name);
    if (entry.blob_kind == "client-blob" && entry.blob_name == "k.cubin") EXPECT_EQ(entry.key, *cubin);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"client-blob k.cubin", "client-blob k.json", "client-blob-group k.json"}));
  // Without one, every entry, none of them described.
  Result<std::vector<CacheListing>> all = client.cache_list();
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->size(), 4u);
  for (const CacheListing& entry : *all) EXPECT_TRUE(entry.blob_kind.empty()) << entry.key;
}

TEST_F(ClientBlobTest, AnUnknownNameIsAMissNotAnError) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  ASSERT_TRUE(client.put_blob("triton", "K1", "add.cubin", "data"));
  // Each of namespace, key and name is part of the identity.
  for (auto [ns, key, name] : {std::tuple{"triton", "K1", "never-put"}, std::tuple{"other", "K1", "add.cubin"},
                               std::tuple{"triton", "K2", "add.cubin"}}) {
    Result<std::optional<std::string>> got = client.get_blob(ns, key, name);
    ASSERT_TRUE(got) << ns << " " << key << " " << name << ": " << got.error().message;
    EXPECT_FALSE(got->has_value()) << ns << " " << key << " " << name;
  }
  Result<CacheStats> stats = client.cache_stats();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->blobs.misses, 3u);
}

TEST_F(ClientBlobTest, AGroupPutThenGetReturnsEveryMember) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  const std::vector<Blob> blobs = {
      {"k.cubin", binary_blob(5000)}, {"k.ptx", "// ptx"}, {"k.json", "{\"name\": \"k\"}"}};
  std::vector<std::string> names;
  for (const Blob& blob : blobs) {
    ASSERT_TRUE(client.put_blob("triton", "K", blob.name, blob.data));
    names.push_back(blob.name);
  }
  // A group may share a blob's name.
  Status put = client.put_blob_group("triton", "K", "k.json", names);
  ASSERT_TRUE(put) << put.error().message;
  Result<std::optional<BlobGroup>> group = client.get_blob_group("triton", "K", "k.json");
  ASSERT_TRUE(group) << group.error().message;
  ASSERT_TRUE(group->has_value());
  const BlobGroup& got = group->value();
  EXPECT_TRUE(got.complete());
  ASSERT_EQ(got.members.size(), blobs.size());
  for (size_t i = 0; i < blobs.size(); ++i) {
    EXPECT_EQ(got.members[i].name, blobs[i].name);
    EXPECT_EQ(got.members[i].data, blobs[i].data) << blobs[i].name;
  }
  // The blob named like the group is still the blob.
  Result<std::optional<std::string>> blob = client.get_blob("triton", "K", "k.json");
  ASSERT_TRUE(blob && blob->has_value());
  EXPECT_EQ(blob->value(), "{\"name\": \"k\"}");

  // A member gone is named, not an error.
  ASSERT_TRUE(client.put_blob_group("triton", "K", "partial", {"k.ptx", "never-put"}));
  Result<std::optional<BlobGroup>> partial = client.get_blob_group("triton", "K", "partial");
  ASSERT_TRUE(partial) << partial.error().message;
  ASSERT_TRUE(partial->has_value());
  EXPECT_FALSE(partial->value().complete());
  ASSERT_EQ(partial->value().members.size(), 1u);
  EXPECT_EQ(partial->value().members[0].name, "k.ptx");
  EXPECT_EQ(partial->value().missing, std::vector<std::string>{"never-put"});

  // No such group: a miss.
  Result<std::optional<BlobGroup>> absent = client.get_blob_group("triton", "K", "absent");
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_FALSE(absent->has_value());
}

TEST_F(ClientBlobTest, MembersPastTheDaemonsAnswerSizeAreFetchedToo) {
  TestDaemon daemon(daemon_options("[limits]\nmax_blob_bytes = 1000\n"));
  Client client(daemon.socket_path());
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(client.put_blob("ns", "k", name, std::string(600, name[0])));
  ASSERT_TRUE(client.put_blob_group("ns", "k", "g", {"a", "b", "c"}));
  Result<std::optional<BlobGroup>> group = client.get_blob_group("ns", "k", "g");
  ASSERT_TRUE(group) << group.error().message;
  ASSERT_TRUE(group->has_value());
  EXPECT_TRUE(group->value().complete());
  ASSERT_EQ(group->value().members.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    EXPECT_EQ(group->value().members[i].name, name);
    EXPECT_EQ(group->value().members[i].data, std::string(600, name[0]));
  }
}

TEST_F(ClientBlobTest, AnInvalidFieldIsRefusedByTheDaemon) {
  TestDaemon daemon(daemon_options());
  Client client(daemon.socket_path());
  struct Case {
    std::string ns, key, name;
  };
  for (const Case& c : {Case{"", "k", "n"}, Case{"ns", "", "n"}, Case{"ns", "k", "a/b"}, Case{"ns", "k", ".."},
                        Case{"ns", "k", std::string("a\0b", 3)}}) {
    Result<std::string> put = client.put_blob(c.ns, c.key, c.name, "x");
    ASSERT_FALSE(put) << c.ns << "/" << c.key << "/" << c.name;
    EXPECT_EQ(put.error().code, ErrorCode::invalid_argument) << put.error().message;
    EXPECT_FALSE(put.error().message.empty());
    Result<std::optional<std::string>> get = client.get_blob(c.ns, c.key, c.name);
    ASSERT_FALSE(get) << c.ns << "/" << c.key << "/" << c.name;
    EXPECT_EQ(get.error().code, ErrorCode::invalid_argument) << get.error().message;
  }
  Status group = client.put_blob_group("ns", "k", "g", {"ok", "../escape"});
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().code, ErrorCode::invalid_argument) << group.error().message;
  Result<std::optional<BlobGroup>> get_group = client.get_blob_group("", "k", "g");
  ASSERT_FALSE(get_group);
  EXPECT_EQ(get_group.error().code, ErrorCode::invalid_argument) << get_group.error().message;
}

TEST_F(ClientBlobTest, ABlobOverTheLimitIsResourceExhausted) {
  TestDaemon daemon(daemon_options("[limits]\nmax_blob_bytes = 1000\n"));
  Client client(daemon.socket_path());
  Result<std::string> over = client.put_blob("ns", "k", "big", std::string(1001, 'x'));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, ErrorCode::resource_exhausted) << over.error().message;
  EXPECT_NE(over.error().message.find("max_blob_bytes"), std::string::npos) << over.error().message;
  Result<std::optional<std::string>> got = client.get_blob("ns", "k", "big");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(client.put_blob("ns", "k", "fits", std::string(1000, 'x')));
}

TEST(ClientRequestIdTest, ACompileResultCarriesTheIdTheDaemonLogs) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir temp;
  DaemonOptions options{{"--cache-dir", temp.path() + "/cache", "--log-level", "info"}};
  options.capture_log = true;
  TestDaemon daemon(options);
  Client client(daemon.socket_path());
  CompileRequest request;
  request.input = std::string(k_vector_add) + "\n// client request id\n";
  request.input_name = "request_id.cu";
  request.target = "cuda:90";
  Result<CompileResult> first = client.compile(request);
  ASSERT_TRUE(first) << first.error().message;
  Result<CompileResult> second = client.compile(request);  // a cache hit has an id of its own
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(first->cache, "compiled");
  EXPECT_EQ(second->cache, "memory");
  EXPECT_EQ(first->request_id.size(), 16u) << first->request_id;
  EXPECT_EQ(second->request_id.size(), 16u) << second->request_id;
  EXPECT_NE(first->request_id, second->request_id);
  daemon.stop();
  const std::string log = daemon.log();
  for (const std::string& id : {first->request_id, second->request_id})
    EXPECT_NE(log.find("[req " + id + "]"), std::string::npos) << "no log line names " << id << ":\n" << log;
}

}  // namespace
}  // namespace kjit::test
