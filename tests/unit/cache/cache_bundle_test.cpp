// The bundle format: a round trip keeps every entry, recipe and manifest
// field, in any piece sizes; wrong magic, another bundle or entry format, a
// truncated file, a flipped byte anywhere and oversized length fields are
// each a clear error naming what is wrong, and never a crash or a large
// allocation.
#include "cache/cache_bundle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sample_entries.h"

namespace kjit {
namespace {

using test::key_for;
using test::make_entry;

BundleManifest sample_manifest() {
  BundleManifest manifest;
  manifest.created_unix = 1764633600;
  manifest.ns = "team-a";
  manifest.targets = {"cuda:90", "hip:gfx942"};
  manifest.toolchains = {"toolchain.nvjitlink 13.0", "toolchain.nvrtc 13.0"};
  manifest.producer = "kjit test";
  return manifest;
}

std::vector<CacheEntry> sample_entries() {
  std::vector<CacheEntry> out;
  for (int i = 0; i < 3; ++i) out.push_back(make_entry(key_for(i), std::string(100 + i * 1000, static_cast<char>('a' + i))));
  CacheEntry blob;
  blob.key = std::string(64, 'b') + "-blob";
  blob.blob = BlobIdentity{"client-blob", "triton", "k", "kernel.cubin"};
  blob.artifact.bytes = std::string("\0blob\xff", 6);
  blob.created_unix = 42;
  out.push_back(blob);
  return out;
}

const std::vector<std::string> k_recipes = {"recipe one", std::string("recipe\0two", 10)};

std::string write_bundle(const BundleManifest& manifest = sample_manifest()) {
  std::string out;
  BundleWriter writer([&](std::string_view bytes) -> Status {
    out.append(bytes);
    return Ok{};
  });
  EXPECT_TRUE(writer.begin(manifest));
  for (const CacheEntry& entry : sample_entries()) EXPECT_TRUE(writer.add_entry(entry));
  for (const std::string& recipe : k_recipes) EXPECT_TRUE(writer.add_recipe(recipe));
  EXPECT_TRUE(writer.finish());
  EXPECT_EQ(writer.bytes_written(), out.size());
  return out;
}

struct Read {
  std::vector<BundleManifest> manifests;
  std::vector<CacheEntry> entries;
  std::vector<std::string> recipes;
  Result<BundleCounts> result = make_error(ErrorCode::internal, "not read");
};

Read read_bundle(std::string_view bytes, size_t piece = SIZE_MAX, BundleLimits limits = {}) {
  Read out;
  BundleReader reader(limits, {.manifest = [&](const BundleManifest& m) -> Status {
                                 out.manifests.push_back(m);
                                 return Ok{};
                               },
                               .entry = [&](CacheEntry e) -> Status {
                                 out.entries.push_back(std::move(e));
                                 return Ok{};
                               },
                               .recipe = [&](std::string r) -> Status {
                                 out.recipes.push_back(std::move(r));
                                 return Ok{};
                               }});
  for (size_t at = 0; at < bytes.size(); at += piece) {
    if (Status fed = reader.feed(bytes.substr(at, std::min(piece, bytes.size() - at))); !fed) {
      out.result = fed.error();
      return out;
    }
  }
  out.result = reader.finish();
  return out;
}

void expect_error(const Read& read, ErrorCode code, std::string_view words) {
  ASSERT_FALSE(read.result.ok()) << "accepted; wanted an error saying: " << words;
  EXPECT_EQ(read.result.error().code, code) << read.result.error().message;
  EXPECT_NE(read.result.error().message.find(words), std::string::npos) << read.result.error().message;
}

void put_u32(std::string& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<char>(value >> (8 * i));
}
void put_u64(std::string& bytes, size_t offset, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

// Where the first entry record starts: after the header and the manifest record.
size_t first_entry_offset(const std::string& bundle) {
  uint64_t manifest_size = 0;
  for (int i = 0; i < 8; ++i)
    manifest_size |= static_cast<uint64_t>(static_cast<unsigned char>(bundle[k_bundle_header_bytes + 4 + i])) << (8 * i);
  return k_bundle_header_bytes + k_bundle_record_header_bytes + manifest_size;
}

TEST(CacheBundle, RoundTripKeepsEverything) {
  const std::string bundle = write_bundle();
  ASSERT_EQ(bundle.substr(0, 8), "KJITBNDL");
  // Whole, and in pieces smaller than any record header: the same records.
  for (size_t piece : {SIZE_MAX, size_t{4096}, size_t{7}, size_t{1}}) {
    const Read read = read_bundle(bundle, piece);
    ASSERT_TRUE(read.result.ok()) << read.result.error().message;
    ASSERT_EQ(read.manifests.size(), 1u);
    EXPECT_EQ(read.manifests[0], sample_manifest());
    const std::vector<CacheEntry> expected = sample_entries();
    ASSERT_EQ(read.entries.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i].blob) {
        EXPECT_EQ(read.entries[i].blob, expected[i].blob);
        EXPECT_EQ(read.entries[i].artifact.bytes, expected[i].artifact.bytes);
        EXPECT_EQ(read.entries[i].key, expected[i].key);
      } else {
        test::expect_same_entry(read.entries[i], expected[i]);
      }
    }
    EXPECT_EQ(read.recipes, k_recipes);
    EXPECT_EQ(read.result->entries, expected.size());
    EXPECT_EQ(read.result->recipes, k_recipes.size());
    EXPECT_EQ(read.result->records, 1 + expected.size() + k_recipes.size());
  }
}

TEST(CacheBundle, AnEmptyBundleIsValid) {
  std::string out;
  BundleWriter writer([&](std::string_view bytes) -> Status {
    out.append(bytes);
    return Ok{};
  });
  ASSERT_TRUE(writer.begin(BundleManifest{}));
  ASSERT_TRUE(writer.finish());
  const Read read = read_bundle(out);
  ASSERT_TRUE(read.result.ok()) << read.result.error().message;
  EXPECT_EQ(read.result->entries, 0u);
}

TEST(CacheBundle, WrongMagicIsNotABundle) {
  std::string bundle = write_bundle();
  bundle[0] = 'X';
  expect_error(read_bundle(bundle), ErrorCode::invalid_argument, "not a kjit bundle");
  // Refused from its first bytes, not after the whole file.
  expect_error(read_bundle("GIF89a"), ErrorCode::invalid_argument, "not a kjit bundle");
  expect_error(read_bundle(""), ErrorCode::invalid_argument, "empty");
}

TEST(CacheBundle, AnotherBundleFormatIsRefusedNamingBoth) {
  std::string bundle = write_bundle();
  put_u32(bundle, 8, k_bundle_format_version + 1);
  expect_error(read_bundle(bundle), ErrorCode::failed_precondition,
               "bundle format " + std::to_string(k_bundle_format_version + 1) + ", this kjit reads format " +
                   std::to_string(k_bundle_format_version));
}

TEST(CacheBundle, AnotherEntryFormatIsRefusedNamingBoth) {
  std::string bundle = write_bundle();
  put_u32(bundle, 12, k_entry_format_version - 1);
  const Read read = read_bundle(bundle);
  expect_error(read, ErrorCode::failed_precondition,
               "bundle entry format " + std::to_string(k_entry_format_version - 1) + ", this daemon " +
                   std::to_string(k_entry_format_version));
  EXPECT_TRUE(read.manifests.empty()) << "refused before any record";
}

TEST(CacheBundle, TruncatedAnywhereIsNamedSo) {
  const std::string bundle = write_bundle();
  // Every cut: a clear error, never a crash; records before the cut may
  // have been handed on (each is whole and verified), the bundle is not.
  for (size_t cut = 0; cut < bundle.size(); ++cut) {
    const Read read = read_bundle(std::string_view(bundle).substr(0, cut), 97);
    ASSERT_FALSE(read.result.ok()) << "cut at " << cut;
    EXPECT_EQ(read.result.error().code, ErrorCode::invalid_argument) << read.result.error().message;
    if (cut >= 8) {
      EXPECT_NE(read.result.error().message.find("truncated"), std::string::npos) << read.result.error().message;
    }
  }
  expect_error(read_bundle(std::string_view(bundle).substr(0, bundle.size() - 40)), ErrorCode::invalid_argument,
               "before its end record");
}

TEST(CacheBundle, AFlippedByteAnywhereIsFound) {
  const std::string bundle = write_bundle();
  for (size_t at = 0; at < bundle.size(); ++at) {
    std::string damaged = bundle;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    const Read read = read_bundle(damaged, 512);
    ASSERT_FALSE(read.result.ok()) << "a flipped byte at " << at << " was not found";
  }
  std::string damaged = bundle;
  const size_t in_first_entry_body = first_entry_offset(bundle) + k_bundle_record_header_bytes + 100;
  damaged[in_first_entry_body] ^= 1;
  expect_error(read_bundle(damaged), ErrorCode::invalid_argument, "record 2 at byte");
  expect_error(read_bundle(damaged), ErrorCode::invalid_argument, "entry record fails its checksum");
}

TEST(CacheBundle, OversizedLengthFieldsAreRefusedBeforeAllocating) {
  const std::string bundle = write_bundle();
  const size_t entry = first_entry_offset(bundle);
  std::string huge = bundle;
  put_u64(huge, entry + 4, UINT64_MAX - 3);
  expect_error(read_bundle(huge), ErrorCode::invalid_argument, "over the bound");
  // Under the bounds a reader is given (a daemon's largest entry).
  const Read bounded = read_bundle(bundle, SIZE_MAX, BundleLimits{.max_entry_bytes = 1000, .max_recipe_bytes = 1000});
  expect_error(bounded, ErrorCode::invalid_argument, "over the bound of 1000");
  std::string manifest = bundle;
  put_u64(manifest, k_bundle_header_bytes + 4, (1ull << 20) + 1);
  expect_error(read_bundle(manifest), ErrorCode::invalid_argument, "manifest record of");
}

TEST(CacheBundle, RecordsOutOfOrderOrUnknownAreRefused) {
  const std::string bundle = write_bundle();
  // The entries without the manifest before them.
  std::string headless = bundle.substr(0, k_bundle_header_bytes) + bundle.substr(first_entry_offset(bundle));
  expect_error(read_bundle(headless), ErrorCode::invalid_argument, "entry record before the manifest");
  std::string unknown = bundle;
  put_u32(unknown, first_entry_offset(bundle), 77);
  expect_error(read_bundle(unknown), ErrorCode::invalid_argument, "unknown record kind 77");
  expect_error(read_bundle(bundle + "x"), ErrorCode::invalid_argument, "after its end record");
}

TEST(CacheBundle, AManifestValueWithALineBreakIsNotWritten) {
  BundleManifest manifest;
  manifest.ns = "a\nrecipes_only 1";
  EXPECT_FALSE(encode_bundle_manifest(manifest).ok());
  std::string out;
  BundleWriter writer([&](std::string_view bytes) -> Status {
    out.append(bytes);
    return Ok{};
  });
  EXPECT_FALSE(writer.begin(manifest).ok());
}

TEST(CacheBundle, ManifestLinesOfLaterWritersAreSkipped) {
  Result<BundleManifest> read =
      decode_bundle_manifest("kjit-bundle-manifest 1\nnamespace x\nsomething_new 1 2 3\ntoolchain a b\n");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->ns, "x");
  EXPECT_EQ(read->toolchains, std::vector<std::string>{"a b"});
  EXPECT_FALSE(decode_bundle_manifest("kjit-bundle-manifest 1\ncreated_unix soon\n").ok());
  EXPECT_FALSE(decode_bundle_manifest("hello\n").ok());
}

TEST(CacheBundle, AHandlersRefusalStopsTheReader) {
  const std::string bundle = write_bundle();
  int entries = 0;
  BundleReader::Handler handler;
  handler.entry = [&](CacheEntry) -> Status {
    ++entries;
    return make_error(ErrorCode::failed_precondition, "no room");
  };
  BundleReader reader({}, handler);
  Status fed = reader.feed(bundle);
  ASSERT_FALSE(fed.ok());
  EXPECT_EQ(fed.error().message, "no room");
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(reader.feed("more").ok());
  EXPECT_FALSE(reader.finish().ok());
}

}  // namespace
}  // namespace kjit
