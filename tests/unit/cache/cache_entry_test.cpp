// The entry format: round trip of every field, and any damage (flipped or
// missing bytes, wrong key or version, bad metadata) is a corrupt-entry error.
#include "cache/cache_entry.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>

#include "kjit/internal/artifact_record.pb.h"
#include "sample_entries.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

void expect_corrupt(const Result<CacheEntry>& decoded) {
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(is_corrupt_entry_error(decoded.error())) << decoded.error().message;
}

// Rewrites the metadata of an encoded entry and fixes up the size and the
// checksum, so only the metadata check can reject it.
std::string with_metadata(const std::string& encoded, const std::string& key, const std::string& metadata,
                          const std::string& payload) {
  std::string out = encoded.substr(0, k_entry_header_bytes) + key + metadata + payload;
  uint64_t size = metadata.size();
  for (int i = 0; i < 8; ++i) out[16 + i] = static_cast<char>(size >> (8 * i));
  XXH128_canonical_t digest;
  const std::string body = key + metadata + payload;
  XXH128_canonicalFromHash(&digest, XXH3_128bits(body.data(), body.size()));
  out.replace(32, 32, std::string(32, '\0'));
  out.replace(32, 16, reinterpret_cast<const char*>(digest.digest), 16);
  return out;
}

TEST(CacheEntry, RoundTripKeepsEveryField) {
  CacheEntry entry = make_entry(key_for(1), std::string("\0\x01\xff binary payload", 19));
  const std::string encoded = encode_entry(entry);
  // From a view (the bytes stay the caller's) and from a buffer handed over
  // (its storage becomes the payload's): the same entry.
  Result<CacheEntry> viewed = decode_entry(std::string_view(encoded), entry.key);
  ASSERT_TRUE(viewed.ok()) << viewed.error().message;
  test::expect_same_entry(*viewed, entry);
  Result<CacheEntry> moved = decode_entry(std::string(encoded), entry.key);
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  test::expect_same_entry(*moved, entry);
}

TEST(CacheEntry, EncodesEveryArtifactField) {
  // Fires when Artifact grows: add the new field to the metadata in
  // cache_entry.cpp (and to expect_same_entry), bump k_entry_format_version
  // unless the field is one readers of the current format may ignore (a new
  // ArtifactRecord field, empty in every entry written before it: the Triton
  // metadata and intermediate files), then update this size.
  EXPECT_EQ(sizeof(Artifact), 456u) << "Artifact changed: extend the cache entry metadata";
  EXPECT_EQ(sizeof(KernelInfo), 128u) << "KernelInfo changed: extend the cache entry metadata";
}

TEST(CacheEntry, HeaderStartsWithMagicAndVersion) {
  std::string encoded = encode_entry(make_entry(key_for(1), "x"));
  EXPECT_EQ(encoded.substr(0, 8), "KJITCACH");
  EXPECT_EQ(static_cast<uint8_t>(encoded[8]), k_entry_format_version);
  EXPECT_EQ(encoded.substr(k_entry_header_bytes, 64), key_for(1));
}

TEST(CacheEntry, EmptyPayloadAndEmptyArtifactRoundTrip) {
  CacheEntry entry;
  entry.key = key_for(2);
  Result<CacheEntry> decoded = decode_entry(encode_entry(entry), entry.key);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  test::expect_same_entry(*decoded, entry);
}

TEST(CacheEntry, InvalidUtf8InLogStillEncodes) {
  CacheEntry entry = make_entry(key_for(3), "payload");
  entry.artifact.log = "bad \xff\xfe bytes";
  Result<CacheEntry> decoded = decode_entry(encode_entry(entry), entry.key);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->artifact.bytes, "payload");
  EXPECT_NE(decoded->artifact.log.find("bad "), std::string::npos);
}

TEST(CacheEntry, OtherKeyIsCorrupt) {
  std::string encoded = encode_entry(make_entry(key_for(1), "payload"));
  expect_corrupt(decode_entry(encoded, key_for(2)));
}

TEST(CacheEntry, EmptyExpectedKeyAcceptsAnyKey) {
  std::string encoded = encode_entry(make_entry(key_for(1), "payload"));
  Result<CacheEntry> decoded = decode_entry(encoded, "");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->key, key_for(1));
}

TEST(CacheEntry, OtherFormatVersionIsCorrupt) {
  std::string encoded = encode_entry(make_entry(key_for(1), "payload"));
  encoded[8] = static_cast<char>(k_entry_format_version + 1);
  Result<CacheEntry> decoded = decode_entry(encoded, key_for(1));
  expect_corrupt(decoded);
  EXPECT_NE(decoded.error().message.find("version"), std::string::npos);
}

TEST(CacheEntry, EveryFlippedByteIsCorrupt) {
  const std::string key = key_for(4);
  const std::string encoded = encode_entry(make_entry(key, "some payload bytes"));
  for (size_t i = 0; i < encoded.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80}) {
      std::string damaged = encoded;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      Result<CacheEntry> decoded = decode_entry(damaged, key);
      ASSERT_FALSE(decoded.ok()) << "flip of byte " << i << " went unnoticed";
      ASSERT_TRUE(is_corrupt_entry_error(decoded.error())) << decoded.error().message;
    }
  }
}

TEST(CacheEntry, EveryTruncationIsCorrupt) {
  const std::string key = key_for(5);
  const std::string encoded = encode_entry(make_entry(key, "some payload bytes"));
  for (size_t size = 0; size < encoded.size(); ++size) {
    Result<CacheEntry> decoded = decode_entry(std::string_view(encoded).substr(0, size), key);
    ASSERT_FALSE(decoded.ok()) << "truncation to " << size << " bytes went unnoticed";
    ASSERT_TRUE(is_corrupt_entry_error(decoded.error()));
  }
  expect_corrupt(decode_entry(encoded + "x", key));
}

TEST(CacheEntry, HugeSizeFieldsAreRejectedWithoutAllocating) {
  std::string encoded = encode_entry(make_entry(key_for(6), "payload"));
  for (size_t offset : {12u, 16u, 24u}) {  // key, metadata and payload sizes
    std::string damaged = encoded;
    for (size_t i = 0; i < (offset == 12 ? 4u : 8u); ++i) damaged[offset + i] = '\xff';
    expect_corrupt(decode_entry(damaged, key_for(6)));
  }
}

TEST(CacheEntry, RandomBytesNeverDecode) {
  std::mt19937 random(42);
  const std::string key = key_for(7);
  const std::string valid = encode_entry(make_entry(key, "payload"));
  for (int round = 0; round < 3000; ++round) {
    std::string bytes(random() % 400, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    // Half of them get a valid header start, to reach the deeper checks.
    if (round % 2 == 0) bytes = valid.substr(0, std::min<size_t>(valid.size(), random() % valid.size())) + bytes;
    Result<CacheEntry> decoded = decode_entry(bytes, key);
    ASSERT_FALSE(decoded.ok());
    ASSERT_TRUE(is_corrupt_entry_error(decoded.error()));
  }
}

TEST(CacheEntry, WithMetadataKeepsAValidEntryValid) {
  // The helper below must only ever change what the metadata says, or the
  // next test would pass for the wrong reason (a checksum mismatch).
  const std::string key = key_for(8);
  const std::string encoded = encode_entry(make_entry(key, "payload"));
  const std::string metadata =
      encoded.substr(k_entry_header_bytes + key.size(), encoded.size() - k_entry_header_bytes - key.size() - 7);
  Result<CacheEntry> decoded = decode_entry(with_metadata(encoded, key, metadata, "payload"), key);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  test::expect_same_entry(*decoded, make_entry(key, "payload"));
}

TEST(CacheEntry, BadMetadataWithValidChecksumIsCorrupt) {
  const std::string key = key_for(8);
  const std::string encoded = encode_entry(make_entry(key, "payload"));
  internal::ArtifactRecord unknown_kind;
  unknown_kind.set_kind("elf");
  internal::ArtifactRecord valid;
  ASSERT_TRUE(valid.ParseFromString(
      encoded.substr(k_entry_header_bytes + key.size(), encoded.size() - k_entry_header_bytes - key.size() - 7)));
  const std::string whole = valid.SerializeAsString();
  for (const std::string& metadata : {
           std::string(),                       // no kind at all
           unknown_kind.SerializeAsString(),    // a kind kjit does not know
           std::string("\x0a\x05" "ab"),        // a length past the end
           std::string("\x0f"),                 // wire type 7 does not exist
           whole.substr(0, whole.size() - 1),  // cut inside created_unix, the last field
       }) {
    Result<CacheEntry> decoded = decode_entry(with_metadata(encoded, key, metadata, "payload"), key);
    expect_corrupt(decoded);
  }
}

}  // namespace
}  // namespace kjit
