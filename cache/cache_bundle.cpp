// Writing and reading cache bundles (see cache_bundle.h for the layout).
#include "cache/cache_bundle.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>

#include "cache/little_endian.h"
#include "core/hex.h"

namespace kjit {
namespace {

constexpr size_t k_offset_format = 8;
constexpr size_t k_offset_entry_format = 12;
constexpr uint64_t k_end_body_bytes = 32;
constexpr std::string_view k_manifest_first_line = "kjit-bundle-manifest";

std::string_view kind_name(uint32_t kind) {
  switch (static_cast<BundleRecordKind>(kind)) {
    case BundleRecordKind::manifest: return "manifest";
    case BundleRecordKind::entry: return "entry";
    case BundleRecordKind::recipe: return "recipe";
    case BundleRecordKind::end: return "end";
  }
  return "unknown";
}

// The record's header (kind, size) seeds its body's checksum, so a flipped
// byte in either fails the record as surely as one in the body.
uint64_t record_checksum(uint32_t kind, uint64_t size, std::string_view body) {
  std::string framing;
  append_le<uint32_t>(framing, kind);
  append_le<uint64_t>(framing, size);
  const uint64_t seed = XXH3_64bits(framing.data(), framing.size());
  return XXH3_64bits_withSeed(body.data(), body.size(), seed);
}

std::string record_header(BundleRecordKind kind, std::string_view body) {
  std::string out;
  append_le<uint32_t>(out, static_cast<uint32_t>(kind));
  append_le<uint64_t>(out, body.size());
  append_le<uint64_t>(out, record_checksum(static_cast<uint32_t>(kind), body.size(), body));
  return out;
}

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

bool is_clean_value(std::string_view value) { return value.find_first_of(std::string_view("\n\0", 2)) == std::string_view::npos; }

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

// The end record's hash of everything before it.
struct BundleHash {
  XXH3_state_t* state = XXH3_createState();
  BundleHash() { XXH3_64bits_reset(state); }
  ~BundleHash() { XXH3_freeState(state); }
  BundleHash(const BundleHash&) = delete;
  BundleHash& operator=(const BundleHash&) = delete;
  void update(std::string_view bytes) { XXH3_64bits_update(state, bytes.data(), bytes.size()); }
  uint64_t digest() const { return XXH3_64bits_digest(state); }
};

Result<std::string> encode_bundle_manifest(const BundleManifest& manifest) {
  std::string out = std::string(k_manifest_first_line) + " " + std::to_string(k_bundle_format_version) + "\n";
  auto line = [&](std::string_view name, std::string_view value) -> Status {
    if (!is_clean_value(value))
      return invalid("bundle manifest: " + std::string(name) + " holds a line break or a NUL byte");
    out += name;
    out += ' ';
    out += value;
    out += '\n';
    return Ok{};
  };
  Status written = Ok{};
  auto add = [&](std::string_view name, std::string_view value) {
    if (written) written = line(name, value);
  };
  add("created_unix", std::to_string(manifest.created_unix));
  add("namespace", manifest.ns);
  add("recipes_only", manifest.recipes_only ? "1" : "0");
  for (const std::string& target : manifest.targets) add("target", target);
  for (const std::string& toolchain : manifest.toolchains) add("toolchain", toolchain);
  add("producer", manifest.producer);
  if (!written) return written.error();
  return out;
}

Result<BundleManifest> decode_bundle_manifest(std::string_view text) {
  BundleManifest manifest;
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) return invalid("bundle manifest: its last line has no line break");
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    ++line_number;
    const size_t space = line.find(' ');
    const std::string_view name = line.substr(0, space);
    const std::string_view value = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    auto bad = [&](std::string_view why) {
      return invalid("bundle manifest line " + std::to_string(line_number) + " (" + std::string(name) + "): " +
                     std::string(why));
    };
    if (line_number == 1) {
      if (name != k_manifest_first_line) return bad("not a bundle manifest");
      continue;
    }
    if (line.find('\0') != std::string_view::npos) return bad("holds a NUL byte");
    if (name == "created_unix") {
      std::optional<int64_t> value_int = parse_int(value);
      if (!value_int) return bad("not a number");
      manifest.created_unix = *value_int;
    } else if (name == "namespace") {
      manifest.ns = std::string(value);
    } else if (name == "recipes_only") {
      if (value != "0" && value != "1") return bad("neither 0 nor 1");
      manifest.recipes_only = value == "1";
    } else if (name == "target") {
      manifest.targets.emplace_back(value);
    } else if (name == "toolchain") {
      manifest.toolchains.emplace_back(value);
    } else if (name == "producer") {
      manifest.producer = std::string(value);
    }
    // Any other name is a later writer's addition: skipped (cache_bundle.h).
  }
  if (line_number == 0) return invalid("bundle manifest: empty");
  return manifest;
}

BundleWriter::BundleWriter(Sink sink) : sink_(std::move(sink)), hash_(std::make_unique<BundleHash>()) {}
BundleWriter::~BundleWriter() = default;

Status BundleWriter::write(std::string_view bytes) {
  hash_->update(bytes);
  bytes_ += bytes.size();
  return sink_(bytes);
}

Status BundleWriter::record(BundleRecordKind kind, std::string_view body) {
  if (!begun_ || finished_)
    return make_error(ErrorCode::internal, "bundle writer: a record outside begin() .. finish()");
  if (Status s = write(record_header(kind, body)); !s) return s;
  if (Status s = write(body); !s) return s;
  ++counts_.records;
  return Ok{};
}

Status BundleWriter::begin(const BundleManifest& manifest) {
  if (begun_) return make_error(ErrorCode::internal, "bundle writer: begin() twice");
  Result<std::string> text = encode_bundle_manifest(manifest);
  if (!text) return text.error();
  std::string header(k_bundle_magic);
  append_le<uint32_t>(header, k_bundle_format_version);
  append_le<uint32_t>(header, k_entry_format_version);
  if (Status s = write(header); !s) return s;
  begun_ = true;
  return record(BundleRecordKind::manifest, *text);
}

Status BundleWriter::add_entry(const CacheEntry& entry) {
  if (Status s = record(BundleRecordKind::entry, encode_entry(entry)); !s) return s;
  ++counts_.entries;
  return Ok{};
}

Status BundleWriter::add_recipe(std::string_view recipe) {
  if (Status s = record(BundleRecordKind::recipe, recipe); !s) return s;
  ++counts_.recipes;
  return Ok{};
}

Status BundleWriter::finish() {
  std::string body;
  append_le<uint64_t>(body, counts_.records);
  append_le<uint64_t>(body, counts_.entries);
  append_le<uint64_t>(body, counts_.recipes);
  append_le<uint64_t>(body, hash_->digest());
  const uint64_t records = counts_.records;
  if (Status s = record(BundleRecordKind::end, body); !s) return s;
  counts_.records = records;  // the end record counts itself out, as the reader does
  finished_ = true;
  return Ok{};
}

BundleReader::BundleReader(BundleLimits limits, Handler handler)
    : limits_(limits), handler_(std::move(handler)), hash_(std::make_unique<BundleHash>()) {}
BundleReader::~BundleReader() = default;

Error BundleReader::fail(Error error) {
  failed_ = error;
  buffer_.clear();
  buffer_.shrink_to_fit();
  cursor_ = 0;
  return error;
}

Error BundleReader::damaged(std::string_view what) const {
  return invalid("damaged bundle: record " + std::to_string(counts_.records + 1) + " at byte " +
                 std::to_string(record_offset_) + ": " + std::string(what));
}

Status BundleReader::feed(std::string_view bytes) {
  if (failed_) return *failed_;
  if (bytes.empty()) return Ok{};
  if (ended_) return fail(invalid("damaged bundle: bytes after its end record at byte " + std::to_string(bytes_read())));
  // Consumed bytes go before new ones come, so the buffer holds at most the
  // record being read and the piece just given.
  if (cursor_ > 0) {
    buffer_.erase(0, cursor_);
    offset_ += cursor_;
    cursor_ = 0;
  }
  buffer_.append(bytes);
  bool progressed = true;
  while (progressed && !failed_) {
    progressed = false;
    if (Status s = step(progressed); !s) return failed_ ? *failed_ : fail(s.error());
  }
  return Ok{};
}

Status BundleReader::step(bool& progressed) {
  const std::string_view available = std::string_view(buffer_).substr(cursor_);
  if (!header_read_) {
    const size_t magic_bytes = std::min(available.size(), k_bundle_magic.size());
    if (available.substr(0, magic_bytes) != k_bundle_magic.substr(0, magic_bytes))
      return invalid("not a kjit bundle: it starts with " + hex_lower(available.substr(0, magic_bytes)) +
                     ", not the magic \"" + std::string(k_bundle_magic) + "\"");
    if (available.size() < k_bundle_header_bytes) return Ok{};
    const uint32_t format = load_le<uint32_t>(available, k_offset_format);
    if (format != k_bundle_format_version)
      return make_error(ErrorCode::failed_precondition,
                        "bundle format " + std::to_string(format) + ", this kjit reads format " +
                            std::to_string(k_bundle_format_version));
    const uint32_t entry_format = load_le<uint32_t>(available, k_offset_entry_format);
    if (entry_format != k_entry_format_version)
      return make_error(ErrorCode::failed_precondition,
                        "bundle entry format " + std::to_string(entry_format) + ", this daemon " +
                            std::to_string(k_entry_format_version) +
                            ": its entries are another kjit version's; export them again from a daemon of this one");
    hash_->update(available.substr(0, k_bundle_header_bytes));
    cursor_ += k_bundle_header_bytes;
    header_read_ = progressed = true;
    return Ok{};
  }
  if (ended_) {
    if (!available.empty()) return invalid("damaged bundle: bytes after its end record at byte " + std::to_string(offset_ + cursor_));
    return Ok{};
  }
  record_offset_ = offset_ + cursor_;
  if (available.size() < k_bundle_record_header_bytes) return Ok{};
  const uint32_t kind = load_le<uint32_t>(available, 0);
  const uint64_t size = load_le<uint64_t>(available, 4);
  const uint64_t checksum = load_le<uint64_t>(available, 12);
  // Every size is bounded by its kind before the body is waited for.
  uint64_t bound = 0;
  switch (static_cast<BundleRecordKind>(kind)) {
    case BundleRecordKind::manifest:
      if (manifest_read_) return damaged("a second manifest");
      bound = k_max_bundle_manifest_bytes;
      break;
    case BundleRecordKind::entry:
      bound = limits_.max_entry_bytes;
      break;
    case BundleRecordKind::recipe:
      bound = limits_.max_recipe_bytes;
      break;
    case BundleRecordKind::end:
      if (size != k_end_body_bytes) return damaged("an end record of " + std::to_string(size) + " bytes, not 32");
      bound = k_end_body_bytes;
      break;
    default:
      return damaged("unknown record kind " + std::to_string(kind));
  }
  if (!manifest_read_ && static_cast<BundleRecordKind>(kind) != BundleRecordKind::manifest)
    return damaged(std::string(kind_name(kind)) + " record before the manifest");
  if (size > bound)
    return damaged("a " + std::string(kind_name(kind)) + " record of " + std::to_string(size) +
                   " bytes, over the bound of " + std::to_string(bound));
  if (available.size() - k_bundle_record_header_bytes < size) {
    // Room for the whole record at once, now that its size is known sane.
    buffer_.reserve(cursor_ + k_bundle_record_header_bytes + size);
    return Ok{};
  }
  const std::string_view body = available.substr(k_bundle_record_header_bytes, size);
  if (record_checksum(kind, size, body) != checksum)
    return damaged(std::string(kind_name(kind)) + " record fails its checksum");
  if (static_cast<BundleRecordKind>(kind) == BundleRecordKind::end) {
    const BundleCounts stated{load_le<uint64_t>(body, 0), load_le<uint64_t>(body, 8), load_le<uint64_t>(body, 16)};
    if (stated.records != counts_.records || stated.entries != counts_.entries || stated.recipes != counts_.recipes)
      return damaged("the end record counts " + std::to_string(stated.records) + " records (" +
                     std::to_string(stated.entries) + " entries, " + std::to_string(stated.recipes) +
                     " recipes), the bundle holds " + std::to_string(counts_.records) + " (" +
                     std::to_string(counts_.entries) + ", " + std::to_string(counts_.recipes) + ")");
    if (load_le<uint64_t>(body, 24) != hash_->digest()) return damaged("the bundle's bytes fail the end record's hash");
    cursor_ += k_bundle_record_header_bytes + size;
    ended_ = progressed = true;
    return Ok{};
  }
  hash_->update(available.substr(0, k_bundle_record_header_bytes + size));
  std::string copy(body);
  cursor_ += k_bundle_record_header_bytes + size;
  progressed = true;
  return dispatch(static_cast<BundleRecordKind>(kind), std::move(copy));
}

Status BundleReader::dispatch(BundleRecordKind kind, std::string body) {
  switch (kind) {
    case BundleRecordKind::manifest: {
      Result<BundleManifest> manifest = decode_bundle_manifest(body);
      if (!manifest) return damaged(manifest.error().message);
      manifest_read_ = true;
      ++counts_.records;
      return handler_.manifest ? handler_.manifest(*manifest) : Status(Ok{});
    }
    case BundleRecordKind::entry: {
      Result<CacheEntry> entry = decode_entry(std::move(body), {});
      if (!entry) return damaged(entry.error().message);
      ++counts_.records;
      ++counts_.entries;
      return handler_.entry ? handler_.entry(std::move(entry.value())) : Status(Ok{});
    }
    case BundleRecordKind::recipe:
      ++counts_.records;
      ++counts_.recipes;
      return handler_.recipe ? handler_.recipe(std::move(body)) : Status(Ok{});
    case BundleRecordKind::end:
      break;
  }
  return make_error(ErrorCode::internal, "bundle reader: the end record dispatched");
}

Result<BundleCounts> BundleReader::finish() {
  if (failed_) return *failed_;
  if (ended_) return counts_;
  const uint64_t total = bytes_read();
  if (!header_read_)
    return fail(invalid(total == 0 ? "not a kjit bundle: it is empty"
                                   : "truncated bundle: " + std::to_string(total) + " bytes, shorter than its header"));
  const std::string_view available = std::string_view(buffer_).substr(cursor_);
  if (available.size() >= k_bundle_record_header_bytes) {
    const uint32_t kind = load_le<uint32_t>(available, 0);
    const uint64_t size = load_le<uint64_t>(available, 4);
    return fail(invalid("truncated bundle: it ends at byte " + std::to_string(total) + ", inside record " +
                        std::to_string(counts_.records + 1) + " (" + std::string(kind_name(kind)) + "), " +
                        std::to_string(available.size() - k_bundle_record_header_bytes) + " of its " +
                        std::to_string(size) + " bytes there"));
  }
  return fail(invalid("truncated bundle: it ends at byte " + std::to_string(total) + " after " +
                      std::to_string(counts_.records) + " records, before its end record"));
}

}  // namespace kjit
