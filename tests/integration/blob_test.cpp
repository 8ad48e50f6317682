// Client blobs (Cache.PutBlob, GetBlob, PutBlobGroup, GetBlobGroup) through
// a real daemon: roundtrips, groups, misses, validation at the edge, a
// restart served from the disk tier, counting apart from compiles, and the
// wall between blob keys and compile keys. No toolkit needed: nothing here
// compiles.
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kjit/client.h"
#include "kjit/v1/cache.grpc.pb.h"
#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {


class BlobTest : public ::testing::Test {
 protected:
  std::vector<std::string> cache_args() { return {"--cache-dir", temp_.path() + "/cache"}; }

  static std::unique_ptr<v1::Cache::Stub> stub(const TestDaemon& daemon) {
    return v1::Cache::NewStub(grpc::CreateChannel("unix:" + daemon.socket_path(), grpc::InsecureChannelCredentials()));
  }

  static grpc::Status put(v1::Cache::Stub& cache, const std::string& ns, const std::string& key,
                          const std::string& name, const std::string& data, std::string* cache_key = nullptr) {
    v1::PutBlobRequest request;
    request.set_namespace_(ns);
    request.set_key(key);
    request.set_name(name);
    request.set_data(data);
    v1::PutBlobResponse response;
    grpc::ClientContext context;
    grpc::Status status = cache.PutBlob(&context, request, &response);
    if (cache_key) *cache_key = response.cache_key();
    return status;
  }

  static v1::PutBlobResponse replace(v1::Cache::Stub& cache, const std::string& ns, const std::string& key,
                                     const std::string& name, const std::string& data) {
    v1::PutBlobRequest request;
    request.set_namespace_(ns);
    request.set_key(key);
    request.set_name(name);
    request.set_data(data);
    request.set_replace(true);
    v1::PutBlobResponse response;
    grpc::ClientContext context;
    grpc::Status status = cache.PutBlob(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  static grpc::Status get(v1::Cache::Stub& cache, const std::string& ns, const std::string& key,
                          const std::string& name, v1::GetBlobResponse& response) {
    v1::GetBlobRequest request;
    request.set_namespace_(ns);
    request.set_key(key);
    request.set_name(name);
    grpc::ClientContext context;
    return cache.GetBlob(&context, request, &response);
  }

  static v1::StatsResponse stats(v1::Cache::Stub& cache) {
    v1::StatsResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(cache.Stats(&context, v1::StatsRequest{}, &response).ok());
    return response;
  }

  TempDir temp_;
};

// Bytes that are not text: every value, NULs included.
std::string binary_blob(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return out;
}

TEST_F(BlobTest, PutGetRoundtripAndMiss) {
  TestDaemon daemon(cache_args());
  auto cache = stub(daemon);
  const std::string data = binary_blob(100'000);
  std::string cache_key;
  ASSERT_TRUE(put(*cache, "triton", "K1", "add.cubin", data, &cache_key).ok());
  EXPECT_EQ(cache_key.size(), 69u);
  EXPECT_TRUE(cache_key.ends_with("-blob")) << cache_key;

  v1::GetBlobResponse got;
  ASSERT_TRUE(get(*cache, "triton", "K1", "add.cubin", got).ok());
  EXPECT_TRUE(got.found());
  EXPECT_EQ(got.data(), data);
  EXPECT_EQ(got.cache(), "memory");

  // Each of namespace, key and name is part of the identity.
  for (auto [ns, key, name] : {std::tuple{"other", "K1", "add.cubin"}, std::tuple{"triton", "K2", "add.cubin"},
                               std::tuple{"triton", "K1", "add.ptx"}}) {
    v1::GetBlobResponse miss;
    ASSERT_TRUE(get(*cache, ns, key, name, miss).ok());
    EXPECT_FALSE(miss.found()) << ns << " " << key << " " << name;
    EXPECT_TRUE(miss.data().empty());
  }

  // An empty blob is a blob.
  ASSERT_TRUE(put(*cache, "triton", "K1", "empty", "").ok());
  v1::GetBlobResponse empty;
  ASSERT_TRUE(get(*cache, "triton", "K1", "empty", empty).ok());
  EXPECT_TRUE(empty.found());
  EXPECT_TRUE(empty.data().empty());

  // A second put of other bytes leaves the first (the first writer wins),
  // and is counted; once removed, the blob takes new bytes.
  ASSERT_TRUE(put(*cache, "triton", "K1", "add.cubin", "new").ok());
  v1::GetBlobResponse kept;
  ASSERT_TRUE(get(*cache, "triton", "K1", "add.cubin", kept).ok());
  EXPECT_EQ(kept.data(), data);
  EXPECT_EQ(stats(*cache).blobs().put_conflicts(), 1u);
  ASSERT_TRUE(put(*cache, "triton", "K1", "add.cubin", data).ok());
  EXPECT_EQ(stats(*cache).blobs().put_conflicts(), 1u) << "the same bytes again are no conflict";
  v1::RemoveRequest remove;
  remove.set_key(cache_key);
  v1::RemoveResponse removed;
  grpc::ClientContext context;
  ASSERT_TRUE(cache->Remove(&context, remove, &removed).ok());
  ASSERT_TRUE(put(*cache, "triton", "K1", "add.cubin", "new").ok());
  v1::GetBlobResponse replaced;
  ASSERT_TRUE(get(*cache, "triton", "K1", "add.cubin", replaced).ok());
  EXPECT_EQ(replaced.data(), "new");
}

TEST_F(BlobTest, GroupGetReturnsEveryMemberInOneAnswer) {
  TestDaemon daemon(cache_args());
  auto cache = stub(daemon);
  ASSERT_TRUE(put(*cache, "triton", "K", "k.cubin", binary_blob(5000)).ok());
  ASSERT_TRUE(put(*cache, "triton", "K", "k.ptx", "// ptx").ok());
  ASSERT_TRUE(put(*cache, "triton", "K", "k.json", "{\"name\": \"k\"}").ok());

  v1::PutBlobGroupRequest group;
  group.set_namespace_("triton");
  group.set_key("K");
  group.set_group("k.json");  // a group may share a blob's name
  for (const char* name : {"k.cubin", "k.ptx", "k.json"}) group.add_names(name);
  {
    v1::PutBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->PutBlobGroup(&context, group, &response).ok());
  }
  v1::GetBlobGroupRequest request;
  request.set_namespace_("triton");
  request.set_key("K");
  request.set_group("k.json");
  {
    v1::GetBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->GetBlobGroup(&context, request, &response).ok());
    EXPECT_TRUE(response.found());
    ASSERT_EQ(response.members_size(), 3);
    EXPECT_EQ(response.members(0).name(), "k.cubin");
    EXPECT_EQ(response.members(0).data(), binary_blob(5000));
    EXPECT_EQ(response.members(1).data(), "// ptx");
    EXPECT_EQ(response.members(2).data(), "{\"name\": \"k\"}");
    EXPECT_EQ(response.missing_size(), 0);
    EXPECT_EQ(response.deferred_size(), 0);
  }
  // The blob named like the group is still the blob.
  v1::GetBlobResponse blob;
  ASSERT_TRUE(get(*cache, "triton", "K", "k.json", blob).ok());
  EXPECT_EQ(blob.data(), "{\"name\": \"k\"}");

  // A group whose member is gone says which.
  group.set_group("partial");
  group.add_names("never-put");
  {
    v1::PutBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->PutBlobGroup(&context, group, &response).ok());
  }
  request.set_group("partial");
  {
    v1::GetBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->GetBlobGroup(&context, request, &response).ok());
    EXPECT_TRUE(response.found());
    EXPECT_EQ(response.members_size(), 3);
    ASSERT_EQ(response.missing_size(), 1);
    EXPECT_EQ(response.missing(0), "never-put");
  }
  // No such group.
  request.set_group("absent");
  {
    v1::GetBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->GetBlobGroup(&context, request, &response).ok());
    EXPECT_FALSE(response.found());
    EXPECT_EQ(response.members_size(), 0);
  }
}

TEST_F(BlobTest, EveryFieldIsValidatedAtTheEdge) {
  DaemonOptions options;
  options.args = cache_args();
  options.config = "[limits]\nmax_blob_bytes = 1000\n";
  TestDaemon daemon(options);
  auto cache = stub(daemon);
  const std::string long_field(257, 'a');
  const std::string with_nul("a\0b", 3);
  struct Case {
    std::string ns, key, name;
  };
  for (const Case& c : {Case{"", "k", "n"}, Case{"ns", "", "n"}, Case{"ns", "k", ""}, Case{long_field, "k", "n"},
                        Case{"ns", long_field, "n"}, Case{"ns", "k", long_field}, Case{with_nul, "k", "n"},
                        Case{"ns", with_nul, "n"}, Case{"ns", "k", with_nul}, Case{"ns", "k", "a/b"},
                        Case{"ns", "k", ".."}, Case{"ns", "k", "a..b"}, Case{"ns", "k", "."}, Case{"ns", "k", "a\nb"}}) {
    grpc::Status status = put(*cache, c.ns, c.key, c.name, "x");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.ns << "/" << c.key << "/" << c.name;
    v1::GetBlobResponse response;
    EXPECT_EQ(get(*cache, c.ns, c.key, c.name, response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  // 256 bytes is allowed.
  EXPECT_TRUE(put(*cache, std::string(256, 'n'), std::string(256, 'k'), std::string(256, 'f'), "x").ok());

  grpc::Status over = put(*cache, "ns", "k", "big", std::string(1001, 'x'));
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find("max_blob_bytes"), std::string::npos) << over.error_message();
  EXPECT_TRUE(put(*cache, "ns", "k", "fits", std::string(1000, 'x')).ok());

  // A group's names are checked like a blob's.
  v1::PutBlobGroupRequest group;
  group.set_namespace_("ns");
  group.set_key("k");
  group.set_group("g");
  group.add_names("../escape");
  v1::PutBlobGroupResponse response;
  grpc::ClientContext context;
  EXPECT_EQ(cache->PutBlobGroup(&context, group, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// Whatever a hostile client sends, the answer is its own fault's status,
// never INTERNAL: names with separators, dots and control characters
// (DEL too) in every field that becomes a file name, too many group
// members, members and groups over the limits, a request over gRPC's own
// bound.
TEST_F(BlobTest, HostileRequestsGetTheirOwnFaultsStatusNeverInternal) {
  DaemonOptions options;
  options.args = cache_args();
  // Every limit small, so that gRPC's own bound (the largest request they
  // admit, and 1 MiB) is small too.
  options.config =
      "[limits]\nmax_blob_bytes = 1000\nmax_launch_bytes = 1000\nmax_input_bytes = 1000\nmax_header_bytes = 1000\n";
  TestDaemon daemon(options);
  auto cache = stub(daemon);
  auto put_group = [&](const std::string& group_name, const std::vector<std::string>& names) {
    v1::PutBlobGroupRequest group;
    group.set_namespace_("ns");
    group.set_key("k");
    group.set_group(group_name);
    for (const std::string& name : names) group.add_names(name);
    v1::PutBlobGroupResponse response;
    grpc::ClientContext context;
    return cache->PutBlobGroup(&context, group, &response).error_code();
  };
  auto get_group = [&](const std::string& group_name) {
    v1::GetBlobGroupRequest request;
    request.set_namespace_("ns");
    request.set_key("k");
    request.set_group(group_name);
    v1::GetBlobGroupResponse response;
    grpc::ClientContext context;
    return cache->GetBlobGroup(&context, request, &response).error_code();
  };
  for (const std::string& bad : {std::string("a/b"), std::string("/abs"), std::string(".."), std::string("../x"),
                                 std::string("x\x7f"), std::string("tab\there"), std::string("\x1b[31m"),
                                 std::string(""), std::string(257, 'g'), std::string("n\0ul", 4)}) {
    EXPECT_EQ(put_group(bad, {"a"}), grpc::StatusCode::INVALID_ARGUMENT) << "group '" << bad << "'";
    EXPECT_EQ(get_group(bad), grpc::StatusCode::INVALID_ARGUMENT) << "group '" << bad << "'";
    EXPECT_EQ(put_group("g", {"a", bad}), grpc::StatusCode::INVALID_ARGUMENT) << "member '" << bad << "'";
    EXPECT_EQ(put(*cache, "ns", "k", bad, "x").error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
  // Too many members, by one.
  std::vector<std::string> many;
  for (int i = 0; i <= 1024; ++i) many.push_back("m" + std::to_string(i));
  EXPECT_EQ(put_group("g", many), grpc::StatusCode::INVALID_ARGUMENT);
  many.pop_back();
  EXPECT_EQ(put_group("g", many), grpc::StatusCode::OK);
  EXPECT_EQ(get_group("g"), grpc::StatusCode::OK);
  // Over max_blob_bytes: the daemon's refusal names the limit.
  EXPECT_EQ(put(*cache, "ns", "k", "big", std::string(1001, 'x')).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Far over everything the configuration admits: gRPC refuses it before
  // kjitd reads it.
  EXPECT_EQ(put(*cache, "ns", "k", "huge", std::string(3u << 20, 'x')).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A daemon still serving after all of it.
  EXPECT_TRUE(put(*cache, "ns", "k", "fine", "x").ok());
}

TEST_F(BlobTest, GroupAnswerStaysWithinTheBlobLimit) {
  DaemonOptions options;
  options.args = cache_args();
  options.config = "[limits]\nmax_blob_bytes = 1000\n";
  TestDaemon daemon(options);
  auto cache = stub(daemon);
  v1::PutBlobGroupRequest group;
  group.set_namespace_("ns");
  group.set_key("k");
  group.set_group("g");
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(put(*cache, "ns", "k", name, std::string(600, name[0])).ok());
    group.add_names(name);
  }
  {
    v1::PutBlobGroupResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(cache->PutBlobGroup(&context, group, &response).ok());
  }
  v1::GetBlobGroupRequest request;
  request.set_namespace_("ns");
  request.set_key("k");
  request.set_group("g");
  v1::GetBlobGroupResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(cache->GetBlobGroup(&context, request, &response).ok());
  ASSERT_EQ(response.members_size(), 1);
  EXPECT_EQ(response.members(0).name(), "a");
  ASSERT_EQ(response.deferred_size(), 2);
  EXPECT_EQ(response.deferred(0), "b");
  EXPECT_EQ(response.deferred(1), "c");
}

// A put asking to replace stores over other bytes, in every tier: the
// daemon's next read (memory) and a restarted daemon's (disk) get the new
// bytes. It changes nothing for the same bytes, and a group still keeps its
// first names.
TEST_F(BlobTest, AReplacingPutStoresOverOtherBytesInEveryTier) {
  const std::string first = binary_blob(50'000), second = binary_blob(60'000).substr(7);
  std::string cache_key;
  {
    TestDaemon daemon(cache_args());
    auto cache = stub(daemon);
    ASSERT_TRUE(put(*cache, "cuda.core", "K", "program", first, &cache_key).ok());
    v1::PutBlobResponse replaced = replace(*cache, "cuda.core", "K", "program", second);
    EXPECT_TRUE(replaced.replaced());
    EXPECT_FALSE(replaced.already_stored());
    EXPECT_FALSE(replaced.conflict());
    EXPECT_EQ(replaced.cache_key(), cache_key);
    v1::GetBlobResponse got;
    ASSERT_TRUE(get(*cache, "cuda.core", "K", "program", got).ok());
    EXPECT_EQ(got.cache(), "memory");
    EXPECT_EQ(got.data(), second);

    v1::PutBlobResponse same = replace(*cache, "cuda.core", "K", "program", second);
    EXPECT_TRUE(same.already_stored());
    EXPECT_FALSE(same.replaced());
    EXPECT_FALSE(same.conflict());
    // Nothing stored yet: a replacing put is a first put.
    v1::PutBlobResponse fresh = replace(*cache, "cuda.core", "K2", "program", first);
    EXPECT_FALSE(fresh.replaced() || fresh.already_stored() || fresh.conflict());
    EXPECT_EQ(stats(*cache).blobs().put_conflicts(), 0u) << "a replacement is no conflict";

    auto put_group = [&](const std::vector<std::string>& names) {
      v1::PutBlobGroupRequest request;
      request.set_namespace_("cuda.core");
      request.set_key("K");
      request.set_group("program");
      for (const std::string& name : names) request.add_names(name);
      v1::PutBlobGroupResponse response;
      grpc::ClientContext context;
      EXPECT_TRUE(cache->PutBlobGroup(&context, request, &response).ok());
      return response;
    };
    EXPECT_FALSE(put_group({"program"}).already_stored());
    EXPECT_TRUE(put_group({"program", "other"}).conflict()) << "a group's names were replaced";
  }
  TestDaemon restarted(cache_args());
  auto cache = stub(restarted);
  v1::GetBlobResponse got;
  ASSERT_TRUE(get(*cache, "cuda.core", "K", "program", got).ok());
  EXPECT_EQ(got.cache(), "disk");
  EXPECT_EQ(got.data(), second);
  v1::GetBlobGroupRequest request;
  request.set_namespace_("cuda.core");
  request.set_key("K");
  request.set_group("program");
  v1::GetBlobGroupResponse group;
  grpc::ClientContext context;
  ASSERT_TRUE(cache->GetBlobGroup(&context, request, &group).ok());
  ASSERT_EQ(group.members_size(), 1);
  EXPECT_EQ(group.members(0).data(), second);
  EXPECT_EQ(group.missing_size(), 0);
}

TEST_F(BlobTest, ARestartServesTheBlobFromDisk) {
  const std::string data = binary_blob(70'000);
  {
    TestDaemon daemon(cache_args());
    ASSERT_TRUE(put(*stub(daemon), "triton", "K", "k.cubin", data).ok());
  }
  TestDaemon restarted(cache_args());
  auto cache = stub(restarted);
  v1::GetBlobResponse got;
  ASSERT_TRUE(get(*cache, "triton", "K", "k.cubin", got).ok());
  EXPECT_TRUE(got.found());
  EXPECT_EQ(got.cache(), "disk");
  EXPECT_EQ(got.data(), data);
  v1::GetBlobResponse again;
  ASSERT_TRUE(get(*cache, "triton", "K", "k.cubin", again).ok());
  EXPECT_EQ(again.cache(), "memory");

  // The disk tier's tools take blob entries in their stride.
  Client client(restarted.socket_path());
  auto verified = client.cache_verify();
  ASSERT_TRUE(verified) << verified.error().message;
  EXPECT_EQ(verified->checked, 1u);
  EXPECT_EQ(verified->removed, 0u);
  auto listed = client.cache_list();
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].key.ends_with("-blob"));
  ASSERT_TRUE(client.cache_remove((*listed)[0].key));
  v1::GetBlobResponse removed;
  ASSERT_TRUE(get(*cache, "triton", "K", "k.cubin", removed).ok());
  EXPECT_FALSE(removed.found());
}

TEST_F(BlobTest, StatsCountBlobsApartFromCompiles) {
  TestDaemon daemon(cache_args());
  auto cache = stub(daemon);
  const uint64_t lookups_before = stats(*cache).lookups();
  ASSERT_TRUE(put(*cache, "ns", "k", "a", "data").ok());
  v1::GetBlobResponse response;
  ASSERT_TRUE(get(*cache, "ns", "k", "a", response).ok());
  ASSERT_TRUE(get(*cache, "ns", "k", "b", response).ok());
  v1::StatsResponse after = stats(*cache);
  EXPECT_EQ(after.blobs().puts(), 1u);
  EXPECT_EQ(after.blobs().put_bytes(), 4u);
  EXPECT_EQ(after.blobs().gets(), 2u);
  EXPECT_EQ(after.blobs().hits(), 1u);
  EXPECT_EQ(after.blobs().misses(), 1u);
  EXPECT_EQ(after.lookups(), lookups_before);
  EXPECT_EQ(after.misses(), 0u);
  EXPECT_EQ(after.compiles(), 0u);

  // The same figures through the C++ client and the CLI.
  Result<CacheStats> from_client = Client(daemon.socket_path()).cache_stats();
  ASSERT_TRUE(from_client) << from_client.error().message;
  EXPECT_EQ(from_client->blobs.puts, 1u);
  EXPECT_EQ(from_client->blobs.put_bytes, 4u);
  EXPECT_EQ(from_client->blobs.gets, 2u);
  EXPECT_EQ(from_client->blobs.hits, 1u);
  EXPECT_EQ(from_client->blobs.misses, 1u);
  EXPECT_EQ(from_client->blobs.group_gets, 0u);
  CommandResult json = run_command({kjit_cli_path(), "--socket", daemon.socket_path(), "cache", "stats", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json blobs = nlohmann::json::parse(json.out).at("blobs");
  EXPECT_EQ(blobs.at("puts"), 1);
  EXPECT_EQ(blobs.at("put_bytes"), 4);
  EXPECT_EQ(blobs.at("gets"), 2);
  EXPECT_EQ(blobs.at("hits"), 1);
  EXPECT_EQ(blobs.at("misses"), 1);
  EXPECT_EQ(blobs.at("groups_put"), 0);
  CommandResult text = run_command({kjit_cli_path(), "--socket", daemon.socket_path(), "cache", "stats"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("client blobs: puts 1 (4 bytes), gets 2 (hits 1, misses 1)"), std::string::npos)
      << text.out;
}

TEST_F(BlobTest, ABlobKeyIsNeverACompileKey) {
  TestDaemon daemon(cache_args());
  auto cache = stub(daemon);
  std::string cache_key;
  ASSERT_TRUE(put(*cache, "ns", "k", "a.cubin", "not a cubin", &cache_key).ok());
  Client client(daemon.socket_path());
  // The RPCs that take a compile key refuse a blob's.
  ExplainSide side;
  side.key = cache_key;
  auto explained = client.explain(side, side);
  ASSERT_FALSE(explained);
  EXPECT_EQ(explained.error().code, ErrorCode::invalid_argument) << explained.error().message;
  // Its hex part alone names nothing either: the suffix is not a decoration.
  side.key = cache_key.substr(0, 64);
  explained = client.explain(side, side);
  ASSERT_FALSE(explained);
  EXPECT_EQ(explained.error().code, ErrorCode::not_found) << explained.error().message;
}

}  // namespace
}  // namespace kjit::test
