// The uncompressed layout, all integers little-endian uint64:
//   "__CLANG_OFFLOAD_BUNDLE__" (24 bytes, no NUL), entry count,
//   per entry: offset from the file's start, size, id length, id bytes,
//   then the entries' bytes, each at its offset (zeros in between).
#include "backends/bundle/offload_bundle.h"

#include <cstdint>
#include <set>

namespace kjit {
namespace {

constexpr std::string_view k_magic = "__CLANG_OFFLOAD_BUNDLE__";
// clang's compressed bundles start with this instead; kjit writes none.
constexpr std::string_view k_compressed_magic = "CCOB";
// Offset, size and id length: the least one entry takes in the header.
constexpr uint64_t k_entry_fixed_size = 3 * sizeof(uint64_t);

void put_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Bounds-checked reads from the front of `rest`; false when it is too short.
bool take_u64(std::string_view& rest, uint64_t& value) {
  if (rest.size() < sizeof(uint64_t)) return false;
  value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(rest[i]);
  rest.remove_prefix(sizeof(uint64_t));
  return true;
}

Error malformed(std::string what) {
  return make_error(ErrorCode::invalid_argument, "offload bundle: " + what);
}

}  // namespace

std::string hip_bundle_id(std::string_view target_id) {
  return "hipv4-" + std::string(target_id);
}

Result<std::string> write_offload_bundle(const std::vector<BundleEntry>& entries) {
  if (entries.empty()) return malformed("no code objects to bundle");
  std::set<std::string_view> seen{k_host_bundle_id};
  for (const BundleEntry& entry : entries) {
    if (entry.id.empty()) return malformed("an entry has an empty id");
    if (!seen.insert(entry.id).second) return malformed("id '" + entry.id + "' given twice");
  }

  // Laid out as clang lays it out: the header, then each entry at the next
  // aligned offset. The host entry is empty, so it shares the first device
  // entry's offset.
  std::vector<const BundleEntry*> all;
  const BundleEntry host{std::string(k_host_bundle_id), {}};
  all.push_back(&host);
  for (const BundleEntry& entry : entries) all.push_back(&entry);

  uint64_t header_size = k_magic.size() + sizeof(uint64_t);
  for (const BundleEntry* entry : all) header_size += k_entry_fixed_size + entry->id.size();
  std::vector<uint64_t> offsets;
  uint64_t end = header_size;
  for (const BundleEntry* entry : all) {
    end = align_up(end, k_bundle_alignment);
    offsets.push_back(end);
    end += entry->bytes.size();
  }

  std::string out;
  out.reserve(end);
  out.append(k_magic);
  put_u64(out, all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    put_u64(out, offsets[i]);
    put_u64(out, all[i]->bytes.size());
    put_u64(out, all[i]->id.size());
    out.append(all[i]->id);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    out.resize(offsets[i], '\0');
    out.append(all[i]->bytes);
  }
  // Where every entry is empty, the file still reaches the last offset, so
  // every entry lies inside it.
  if (out.size() < end) out.resize(end, '\0');
  return out;
}

Result<std::vector<BundleEntry>> read_offload_bundle(std::string_view bytes) {
  if (bytes.starts_with(k_compressed_magic)) return malformed("compressed bundles are not supported");
  if (!bytes.starts_with(k_magic)) return malformed("no __CLANG_OFFLOAD_BUNDLE__ magic");
  std::string_view rest = bytes.substr(k_magic.size());
  uint64_t count = 0;
  if (!take_u64(rest, count)) return malformed("truncated before the entry count");
  // Checked before anything is reserved: a forged count must not allocate.
  if (count == 0) return malformed("no entries");
  if (count > rest.size() / k_entry_fixed_size) {
    return malformed("entry count " + std::to_string(count) + " does not fit in " + std::to_string(bytes.size()) +
                     " bytes");
  }

  struct Span {
    uint64_t offset, size;
  };
  std::vector<BundleEntry> entries;
  std::vector<Span> spans;
  entries.reserve(count);
  spans.reserve(count);
  std::set<std::string_view> seen;
  for (uint64_t i = 0; i < count; ++i) {
    Span span{};
    uint64_t id_size = 0;
    if (!take_u64(rest, span.offset) || !take_u64(rest, span.size) || !take_u64(rest, id_size)) {
      return malformed("truncated in entry " + std::to_string(i) + "'s header");
    }
    if (id_size > rest.size()) return malformed("truncated in entry " + std::to_string(i) + "'s id");
    if (id_size == 0) return malformed("entry " + std::to_string(i) + " has an empty id");
    std::string_view id = rest.substr(0, id_size);
    rest.remove_prefix(id_size);
    if (!seen.insert(id).second) return malformed("id '" + std::string(id) + "' appears twice");
    entries.push_back(BundleEntry{std::string(id), {}});
    spans.push_back(span);
  }

  const uint64_t header_end = bytes.size() - rest.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Span& span = spans[i];
    if (span.offset > bytes.size() || span.size > bytes.size() - span.offset) {
      return malformed("entry '" + entries[i].id + "' (offset " + std::to_string(span.offset) + ", size " +
                       std::to_string(span.size) + ") lies outside the " + std::to_string(bytes.size()) + "-byte file");
    }
    if (span.size > 0 && span.offset < header_end) {
      return malformed("entry '" + entries[i].id + "' overlaps the header");
    }
    entries[i].bytes.assign(bytes.substr(span.offset, span.size));
  }
  return entries;
}

}  // namespace kjit
