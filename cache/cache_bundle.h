// A portable cache bundle: cache entries, client blobs and recipes as one
// checksummed stream (`kjit cache export` / `import`), to seed a container
// image, an air-gapped node or a CI cache. docs/bundle-format.md describes
// the bytes; this file writes and reads them, with no gRPC and no daemon,
// so the format is tested alone.
//
// Layout, integers little-endian:
//   header:  magic[8] "KJITBNDL" | bundle_format:u32 | entry_format:u32
//   records: kind:u32 | size:u64 | checksum:u64 | body[size]
//            checksum = XXH3-64(body, seed = XXH3-64(kind | size))
//   first the manifest (kind 1, text lines "name value"), then entries
//   (kind 2, each an encoded cache entry, cache_entry.h) and recipes (kind
//   3, bytes the daemon gives meaning to), last the end record (kind 4:
//   records, entries, recipes:u64 and XXH3-64 of every byte before it).
//
// Both sides stream: the writer hands its bytes to a sink as it goes, the
// reader takes bytes in any pieces and holds at most one record, whose size
// is checked against its bound before anything is allocated.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_entry.h"
#include "kjit/status.h"

namespace kjit {

inline constexpr std::string_view k_bundle_magic = "KJITBNDL";
// Bumped when the header, the record framing or a record's meaning
// changes; readers refuse any other. Fields added to the manifest do not
// bump it: readers skip manifest lines they do not know.
inline constexpr uint32_t k_bundle_format_version = 1;
inline constexpr size_t k_bundle_header_bytes = 16;
inline constexpr size_t k_bundle_record_header_bytes = 20;
inline constexpr uint64_t k_max_bundle_manifest_bytes = 1ull << 20;

// XXH3-64 over a stream of bytes (cache_bundle.cpp).
struct BundleHash;

enum class BundleRecordKind : uint32_t { manifest = 1, entry = 2, recipe = 3, end = 4 };

// What the bundle says of itself, before any entry: enough for a daemon to
// refuse it without reading further.
struct BundleManifest {
  int64_t created_unix = 0;
  std::string ns;                       // the namespace it was exported from ("" the default)
  bool recipes_only = false;
  std::vector<std::string> targets;     // the export's target filter; empty: every target
  // What the entries were built with: "toolchain.nvrtc 13.0", each a
  // toolchain component of the entries' cache keys, sorted, once each.
  std::vector<std::string> toolchains;
  std::string producer;                 // "kjit 0.9.0"
  bool operator==(const BundleManifest&) const = default;
};

// The manifest's text and back. INVALID_ARGUMENT for a value holding a line
// break or NUL (writing), or lines that do not parse (reading).
Result<std::string> encode_bundle_manifest(const BundleManifest& manifest);
Result<BundleManifest> decode_bundle_manifest(std::string_view text);

struct BundleCounts {
  uint64_t records = 0;  // before the end record, the manifest included
  uint64_t entries = 0;
  uint64_t recipes = 0;
};

class BundleWriter {
 public:
  // Receives the bundle's bytes in order; an error stops the writer.
  using Sink = std::function<Status(std::string_view bytes)>;
  explicit BundleWriter(Sink sink);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // The header and the manifest: first, once.
  Status begin(const BundleManifest& manifest);
  // entry.key is the key it is stored under once imported (a bare key).
  Status add_entry(const CacheEntry& entry);
  Status add_recipe(std::string_view recipe);
  // The end record; nothing may be added after it.
  Status finish();

  uint64_t bytes_written() const { return bytes_; }
  const BundleCounts& counts() const { return counts_; }

 private:
  Status write(std::string_view bytes);
  Status record(BundleRecordKind kind, std::string_view body);

  Sink sink_;
  std::unique_ptr<BundleHash> hash_;  // of every byte written, for the end record
  BundleCounts counts_;
  uint64_t bytes_ = 0;
  bool begun_ = false, finished_ = false;
};

// The largest record bodies a reader accepts: checked before a record is
// buffered, so a damaged size field never makes it allocate.
struct BundleLimits {
  uint64_t max_entry_bytes = 1ull << 30;
  uint64_t max_recipe_bytes = 256ull << 20;
};

class BundleReader {
 public:
  // Each record as it completes, in the bundle's order. An error a handler
  // returns stops the reader and is what feed returns.
  struct Handler {
    std::function<Status(const BundleManifest&)> manifest;
    // Verified as the disk tier verifies a file (decode_entry: sizes,
    // checksum, metadata).
    std::function<Status(CacheEntry)> entry;
    std::function<Status(std::string recipe)> recipe;
  };
  BundleReader(BundleLimits limits, Handler handler);
  ~BundleReader();
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  // The bundle's next bytes, in pieces of any size. Errors: INVALID_ARGUMENT
  // naming the record, its byte offset and what is wrong (bad magic, a
  // size over its bound, a checksum, a corrupt entry, records out of
  // order); FAILED_PRECONDITION for a well-formed bundle of another bundle
  // format or entry format ("bundle entry format 2, this daemon 3"). After
  // an error every call returns it again.
  Status feed(std::string_view bytes);
  // The end of the input: the end record must have been read. INVALID_ARGUMENT
  // for a truncated bundle.
  Result<BundleCounts> finish();

  uint64_t bytes_read() const { return offset_ + buffer_.size(); }

 private:
  Status step(bool& progressed);
  Error fail(Error error);  // kept: every later call returns it
  Error damaged(std::string_view what) const;
  Status dispatch(BundleRecordKind kind, std::string body);

  BundleLimits limits_;
  Handler handler_;
  std::string buffer_;   // bytes not consumed yet start at cursor_
  size_t cursor_ = 0;
  uint64_t offset_ = 0;  // of buffer_[0] in the bundle
  bool header_read_ = false, manifest_read_ = false, ended_ = false;
  uint64_t record_offset_ = 0;  // of the record being read, for messages
  BundleCounts counts_;
  std::unique_ptr<BundleHash> hash_;  // of every byte before the end record
  std::optional<Error> failed_;
};

}  // namespace kjit
