// The REAPI tier against a real REAPI server (BuildGrid): entries written and
// read back by another connection, write-behind, blobs past the batch limit
// (ByteStream), the Action mapping, corrupted CAS bytes refused, the server
// down (bounded, counted, breaker) and back after a restart, with its
// entries when its ActionCache is durable.
#include "cache/reapi_store.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cache/reapi_action.h"
#include "redis_server.h"
#include "sample_entries.h"
#include "support/buildgrid_server.h"
#include "support/eventually.h"

namespace kjit {
namespace {

using namespace std::chrono_literals;
using test::key_for;
using test::make_entry;

class ReapiStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::optional<std::string> why = test::BuildGridServer::unavailable()) {
      if (std::getenv("CI")) FAIL() << "CI must run the REAPI tests: " << *why;
      GTEST_SKIP() << *why;
    }
    ASSERT_TRUE(server_.start()) << test::read_file(server_.log_path());
  }

  ReapiConnection::Options options() const {
    ReapiConnection::Options o;
    o.endpoint = server_.endpoint();
    o.timeout = 5s;
    // A backoff long enough that no probe comes while a test looks at the
    // open breaker; the tests that wait for it to pass poll.
    o.breaker = {.failures_to_open = 2, .backoff_initial = 2s, .backoff_max = 2s};
    return o;
  }

  std::unique_ptr<ReapiStore> open_store(bool write_behind = false) const {
    Result<std::shared_ptr<ReapiConnection>> connection = ReapiConnection::open(options());
    EXPECT_TRUE(connection) << connection.error().message;
    ReapiStore::Options store;
    store.write_behind = write_behind;
    return std::make_unique<ReapiStore>(*connection, store);
  }

  test::BuildGridServer server_;
};

TEST_F(ReapiStoreTest, AnEntryWrittenIsReadByAnotherConnection) {
  std::unique_ptr<ReapiStore> writer = open_store();
  const CacheEntry entry = make_entry(key_for(1), std::string(100'000, 'x'));
  ASSERT_TRUE(writer->put(entry));
  std::unique_ptr<ReapiStore> reader = open_store();
  Result<std::optional<CacheEntry>> got = reader->get(key_for(1));
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(got->has_value());
  test::expect_same_entry(**got, entry);
  EXPECT_EQ(reader->stats().hits, 1u);
  EXPECT_GE(reader->transfer_stats().bytes_read, entry.artifact.bytes.size());
  Result<bool> there = reader->contains(key_for(1));
  ASSERT_TRUE(there);
  EXPECT_TRUE(*there);
}

TEST_F(ReapiStoreTest, AnUnknownKeyIsAMissNotAnError) {
  std::unique_ptr<ReapiStore> store = open_store();
  Result<std::optional<CacheEntry>> got = store->get(key_for(2));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(store->stats().misses, 1u);
  EXPECT_EQ(store->stats().errors, 0u);
  EXPECT_FALSE(store->breaker_open());
}

TEST_F(ReapiStoreTest, WritesBehindTheAnswerArriveAfterAFlush) {
  std::unique_ptr<ReapiStore> writer = open_store(/*write_behind=*/true);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(writer->put(make_entry(key_for(10 + i), "payload " + std::to_string(i))));
  writer->flush();
  EXPECT_EQ(writer->transfer_stats().queued, 0u);
  EXPECT_EQ(writer->stats().puts, 5u);
  std::unique_ptr<ReapiStore> reader = open_store();
  for (int i = 0; i < 5; ++i) {
    Result<std::optional<CacheEntry>> got = reader->get(key_for(10 + i));
    ASSERT_TRUE(got && got->has_value()) << i;
    EXPECT_EQ((*got)->artifact.bytes, "payload " + std::to_string(i));
  }
}

TEST_F(ReapiStoreTest, AnEntryPastTheBatchLimitGoesThroughByteStream) {
  std::unique_ptr<ReapiStore> store = open_store();
  Result<ReapiCapabilities> caps = ReapiConnection::open(options()).value()->capabilities();
  ASSERT_TRUE(caps) << caps.error().message;
  const size_t size = static_cast<size_t>(caps->max_batch_bytes) + (1 << 20);
  std::string payload(size, '\0');
  for (size_t i = 0; i < size; ++i) payload[i] = static_cast<char>((i * 131) >> 7);
  ASSERT_TRUE(store->put(make_entry(key_for(3), payload)));
  std::unique_ptr<ReapiStore> reader = open_store();
  Result<std::optional<CacheEntry>> got = reader->get(key_for(3));
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->artifact.bytes, payload);
}

TEST_F(ReapiStoreTest, CorruptedCasBytesAreRefusedAndCounted) {
  std::unique_ptr<ReapiStore> store = open_store();
  const CacheEntry entry = make_entry(key_for(4), std::string(50'000, 'c'));
  ASSERT_TRUE(store->put(entry));
  Result<ReapiDigest> digest = ReapiConnection::open(options()).value()->digest_of(encode_entry(entry));
  ASSERT_TRUE(digest);
  const std::string file = server_.blob_file(digest->hash);
  ASSERT_FALSE(file.empty()) << "the entry's blob is not in " << server_.cas_directory();
  {
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(20'000);
    bytes.put('!');
  }
  std::unique_ptr<ReapiStore> reader = open_store();
  Result<std::optional<CacheEntry>> got = reader->get(key_for(4));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(got->has_value()) << "damaged bytes were served";
  EXPECT_EQ(reader->stats().corruptions, 1u);
  // A recompile writes the entry again: its own creation time and compile
  // time make other bytes, under a digest of their own, which the store
  // takes (a CAS keeps what it has under a digest, damaged or not).
  CacheEntry recompiled = entry;
  recompiled.created_unix += 1;
  ASSERT_TRUE(reader->put(recompiled));
  Result<std::optional<CacheEntry>> again = reader->get(key_for(4));
  ASSERT_TRUE(again && again->has_value());
  EXPECT_EQ((*again)->artifact.bytes, entry.artifact.bytes);
}

TEST_F(ReapiStoreTest, BytesTheServerHasCrossOnceAndLostOrDamagedOnesAgain) {
  std::unique_ptr<ReapiStore> store = open_store();
  std::string payload(1 << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>((i * 197) >> 5);
  const CacheEntry entry = make_entry(key_for(7), payload);
  ASSERT_TRUE(store->put(entry));
  const uint64_t first = store->transfer_stats().bytes_written;
  EXPECT_GE(first, payload.size());

  // The same bytes again (a bundle imported on a second node): the server
  // says it has every blob, and nothing is sent.
  ASSERT_TRUE(store->put(entry));
  EXPECT_EQ(store->transfer_stats().bytes_written, first);

  // The server lost the entry's blob: it is sent again, and read back.
  Result<ReapiDigest> digest = ReapiConnection::open(options()).value()->digest_of(encode_entry(entry));
  ASSERT_TRUE(digest);
  const std::string file = server_.blob_file(digest->hash);
  ASSERT_FALSE(file.empty()) << "the entry's blob is not in " << server_.cas_directory();
  ASSERT_EQ(std::remove(file.c_str()), 0);
  ASSERT_TRUE(store->put(entry));
  const uint64_t second = store->transfer_stats().bytes_written;
  EXPECT_GE(second - first, payload.size());
  std::unique_ptr<ReapiStore> reader = open_store();
  Result<std::optional<CacheEntry>> got = reader->get(key_for(7));
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->artifact.bytes, payload);

  // Damaged in place: the server still says it has the digest, but a store
  // that refused those bytes sends them again rather than trust it.
  {
    std::fstream bytes(server_.blob_file(digest->hash), std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(300'000);
    bytes.put('!');
  }
  got = reader->get(key_for(7));
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->has_value()) << "damaged bytes were served";
  EXPECT_EQ(reader->stats().corruptions, 1u);
  ASSERT_TRUE(reader->put(entry));
  EXPECT_GE(reader->transfer_stats().bytes_written, payload.size());
  // A server that replaces what it has serves the entry again; one that
  // keeps the first bytes under a digest (BuildGrid) goes on being refused.
  got = reader->get(key_for(7));
  ASSERT_TRUE(got);
  if (got->has_value()) EXPECT_EQ((*got)->artifact.bytes, payload);
}

TEST_F(ReapiStoreTest, ARemovedEntryIsAMiss) {
  std::unique_ptr<ReapiStore> store = open_store();
  ASSERT_TRUE(store->put(make_entry(key_for(5), "gone soon")));
  ASSERT_TRUE(store->remove(key_for(5)));
  Result<std::optional<CacheEntry>> got = store->get(key_for(5));
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->has_value());
}

TEST_F(ReapiStoreTest, AServerDownFailsFastAndComesBackAfterARestart) {
  std::unique_ptr<ReapiStore> store = open_store();
  ASSERT_TRUE(store->put(make_entry(key_for(6), "before the crash")));
  server_.kill();
  // Every call ends within its deadline; after two failures the breaker
  // refuses locally.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(store->get(key_for(6)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  EXPECT_TRUE(store->breaker_open());
  EXPECT_GE(store->stats().errors, 2u);
  EXPECT_GE(store->stats().skipped, 1u);
  ASSERT_TRUE(server_.start()) << test::read_file(server_.log_path());
  // The CAS on disk outlived the crash; BuildGrid's in-memory ActionCache
  // did not, so the entry reads as a miss until written again.
  EXPECT_TRUE(test::eventually([&] {
    Result<std::optional<CacheEntry>> got = store->get(key_for(6));
    return got.ok();
  }, 60s, 200ms)) << "the tier did not come back after the server did";
  EXPECT_FALSE(store->breaker_open());
  ASSERT_TRUE(store->put(make_entry(key_for(6), "after the restart")));
  Result<std::optional<CacheEntry>> got = store->get(key_for(6));
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->artifact.bytes, "after the restart");
}

// With a durable ActionCache (BuildGrid's !redis-action-cache; bazel-remote,
// Buildbarn and NativeLink keep theirs on disk or in a bucket), an entry
// outlives a crash of the server and is read again by a connection that
// reconnects on its own.
TEST_F(ReapiStoreTest, WithADurableActionCacheEntriesOutliveARestart) {
  if (!test::RedisServer::installed()) GTEST_SKIP() << "redis-server is not installed";
  test::RedisServer redis;
  ASSERT_TRUE(redis.start());
  server_.kill();
  server_.keep_action_cache_in_redis(redis.port());
  ASSERT_TRUE(server_.start()) << test::read_file(server_.log_path());
  std::unique_ptr<ReapiStore> store = open_store();
  const CacheEntry entry = make_entry(key_for(30), std::string(20'000, 'd'));
  ASSERT_TRUE(store->put(entry));
  server_.kill();
  ASSERT_TRUE(server_.start()) << test::read_file(server_.log_path());
  std::optional<CacheEntry> found;
  EXPECT_TRUE(test::eventually([&] {
    Result<std::optional<CacheEntry>> got = store->get(key_for(30));
    if (got && got->has_value()) found = std::move(**got);
    return found.has_value();
  }, 60s, 200ms)) << "the entry did not outlive the restart";
  ASSERT_TRUE(found);
  test::expect_same_entry(*found, entry);
}

// namespaces = "instance": each stored key's entry in the instance its
// namespace names, for servers that keep instances apart; the ByteStream
// resource names carry the instance too.
TEST_F(ReapiStoreTest, AnInstancePerNamespaceKeepsEntriesInTheirInstance) {
  server_.kill();
  server_.add_instance("kjit/alpha");
  ASSERT_TRUE(server_.start()) << test::read_file(server_.log_path());
  Result<std::shared_ptr<ReapiConnection>> connection = ReapiConnection::open(options());
  ASSERT_TRUE(connection);
  ReapiStore::Options routed;
  routed.write_behind = false;
  routed.instance_of = [](std::string_view key) { return key == key_for(40) || key == key_for(41) ? "kjit/alpha" : ""; };
  ReapiStore store(*connection, routed);
  Result<ReapiCapabilities> caps = (*connection)->capabilities();
  ASSERT_TRUE(caps);
  const std::string large(static_cast<size_t>(caps->max_batch_bytes) + 4096, 'L');  // through ByteStream
  ASSERT_TRUE(store.put(make_entry(key_for(40), "alpha's")));
  ASSERT_TRUE(store.put(make_entry(key_for(41), large)));
  ASSERT_TRUE(store.put(make_entry(key_for(42), "the default instance's")));
  for (int i : {40, 41, 42}) {
    Result<std::optional<CacheEntry>> got = store.get(key_for(i));
    ASSERT_TRUE(got && got->has_value()) << i;
  }
  // Seen from each instance alone.
  auto reader_in = [&](const std::string& instance) {
    ReapiConnection::Options o = options();
    o.instance = instance;
    ReapiStore::Options plain;
    plain.write_behind = false;
    return std::make_unique<ReapiStore>(ReapiConnection::open(o).value(), plain);
  };
  auto holds = [](ReapiStore& reader, int i) {
    Result<std::optional<CacheEntry>> got = reader.get(key_for(i));
    return got && got->has_value();
  };
  std::unique_ptr<ReapiStore> alpha = reader_in("kjit/alpha"), others = reader_in("");
  EXPECT_TRUE(holds(*alpha, 40));
  EXPECT_TRUE(holds(*alpha, 41));
  EXPECT_FALSE(holds(*alpha, 42));
  EXPECT_FALSE(holds(*others, 40));
  EXPECT_FALSE(holds(*others, 41));
  EXPECT_TRUE(holds(*others, 42));
}

TEST_F(ReapiStoreTest, WritesBehindTheAnswerNeverFailAPutWhileTheServerIsDown) {
  std::unique_ptr<ReapiStore> store = open_store(/*write_behind=*/true);
  server_.kill();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(store->put(make_entry(key_for(20 + i), "lost to the outage")));
  store->flush();
  EXPECT_EQ(store->transfer_stats().write_failures, 3u);
  EXPECT_EQ(store->stats().puts, 0u);
}

TEST(ReapiAction, EachKeyAndFormatNamesItsOwnCommand) {
  EXPECT_EQ(reapi_entry_command("alpha/abc"), reapi_entry_command("alpha/abc")) << "deterministic";
  EXPECT_NE(reapi_entry_command("alpha/abc"), reapi_entry_command("beta/abc"))
      << "a namespace is part of the key, so of the action";
  const std::string command = reapi_entry_command("k");
  EXPECT_NE(command.find("v" + std::to_string(k_entry_format_version)), std::string::npos);
  EXPECT_NE(command.find(k_reapi_entry_path), std::string::npos);
  EXPECT_NE(reapi_entry_action("aa", 1, "e3"), reapi_entry_action("ab", 1, "e3"));
}

TEST(ReapiConnection, EndpointsAreCheckedWithoutTheNetwork) {
  for (const char* bad : {"http://h:1", "grpc://", "grpcs://h:1/path", "unix:", ""}) {
    ReapiConnection::Options o;
    o.endpoint = bad;
    Result<std::shared_ptr<ReapiConnection>> c = ReapiConnection::open(o);
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().code, ErrorCode::invalid_argument) << bad;
  }
  for (const char* good : {"grpc://127.0.0.1:1", "grpcs://cache.example:443", "127.0.0.1:9092", "unix:/tmp/x.sock"}) {
    ReapiConnection::Options o;
    o.endpoint = good;
    EXPECT_TRUE(ReapiConnection::open(o)) << good;
  }
  ReapiConnection::Options o;
  o.endpoint = "grpcs://h:1";
  o.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_FALSE(ReapiConnection::open(o));
}

}  // namespace
}  // namespace kjit
