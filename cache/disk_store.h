// The disk tier: one verified file per entry under a directory shared by
// every process on the host, bounded in bytes with least-recently-used
// eviction driven by file modification times.
//
// Layout: <directory>/v<format>/<key[0..2)>/<key>.kjit, published with
// write_file_atomically, so a reader sees a whole entry or none and a crash
// leaves at worst a temp file, removed by a later scan once it is old.
//
// Sharing: the file system is the only source of truth. A hit bumps the
// file's mtime (futimens), so every process sees the same recency. Each
// DiskStore keeps an approximate byte and entry count: a scan on open (stat
// only, no entry is read), plus its own puts and removals, refreshed by a
// rescan every rescan_interval. Other processes' puts are only seen at the
// next rescan, so the directory can overshoot max_bytes by what the other
// processes write within one interval. When the estimate passes max_bytes,
// the putting thread runs gc down to low_watermark × max_bytes; a lock file
// (flock) keeps processes from collecting at the same time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cache/store.h"
#include "cache/store_shares.h"

namespace kjit {

// An entry's file is <root>/<first two characters of its key>/<key><suffix>.
inline constexpr std::string_view k_disk_entry_suffix = ".kjit";

// $XDG_CACHE_HOME/kjit, else $HOME/.cache/kjit, else /tmp/kjit-cache-<uid>.
std::string default_disk_cache_directory();

class DiskStore final : public Store {
 public:
  struct Options {
    std::string directory{};  // created when missing
    uint64_t max_bytes = 10ull << 30;
    double low_watermark = 0.9;  // gc target as a fraction of max_bytes, so gc is not run on every put
    std::chrono::seconds rescan_interval{60};
    // A hit bumps the mtime only when it is older than this, sparing a
    // metadata write on every hit of a hot entry; recency is thus known to
    // this resolution.
    std::chrono::milliseconds touch_interval{1000};
    // A temp file whose writer holds no lock is a dead writer's and a scan
    // removes it at once (atomic_file.h); one whose writer cannot be told
    // (not readable here) is taken for dead once older than this.
    std::chrono::seconds temp_max_age{3600};
    bool sync = true;  // fsync on publish (see AtomicWriteOptions)
    // Off for readers that never put (the client library reading the
    // daemon's directory): open is then O(1), and a first put would rescan.
    bool scan_on_open = true;
    // Permission bits, applied as given (no umask). A daemon shared by many
    // users keeps most entries to its own user and lets others pass its
    // directories without listing them, so that they open only the files
    // they can name. Null: every entry 0644. Files and directories of
    // another mode, written before, are set right by each scan.
    std::function<unsigned(std::string_view key)> entry_mode{};
    // The format root and its fan-out directories; 0: as the umask makes them.
    unsigned directory_mode = 0;
    // Whose each entry is, for shares of the bound (set_shares).
    OwnerOf owner_of{};
  };

  struct VerifyReport {
    uint64_t checked = 0;
    uint64_t removed = 0;  // failed verification (also counted as corruptions)
    uint64_t temp_files_removed = 0;  // dead writers' temp files
  };

  struct GcReport {
    uint64_t entries_before = 0, bytes_before = 0;
    uint64_t removed_entries = 0, removed_bytes = 0;
    uint64_t entries_after = 0, bytes_after = 0;
    uint64_t temp_files_removed = 0;
  };

  // Creates the directory if needed and scans it (file sizes only).
  static Result<std::unique_ptr<DiskStore>> open(Options options);

  std::string_view name() const override { return "disk"; }
  Result<std::optional<CacheEntry>> get(std::string_view key) override;
  Status put(const CacheEntry& entry) override;
  Status remove(std::string_view key) override;
  // Whether the entry's file exists (one stat; its bytes are not checked).
  Result<bool> contains(std::string_view key) override;
  // bytes and entries are the approximate figures described above.
  StoreStats stats() const override;
  // last_access_unix is the file's mtime (see touch_interval).
  Result<std::vector<StoredKey>> list() override;

  // The key and metadata of key's entry (artifact.bytes empty), read without
  // its payload and unverified (decode_entry_head): what a listing shows of
  // an entry. Counts nothing, keeps the entry's recency, removes nothing;
  // nullopt when there is no such file or it is not a whole entry.
  Result<std::optional<CacheEntry>> read_head(std::string_view key) const;
  // Reads and verifies every entry, removing those that fail.
  Result<VerifyReport> verify();

  // Removes least recently used entries until the directory holds at most
  // max_bytes, and stale temp files; waits for a gc running in another process.
  // With in_scope, only the entries whose keys it accepts are counted and
  // removed (one namespace's share of a shared tier).
  Result<GcReport> gc(uint64_t max_bytes, const std::function<bool(std::string_view key)>& in_scope = {});

  // Divides the bound among the entries' owners (Options::owner_of) from
  // the next put on: an owner past its share is collected down to
  // low_watermark of it, from its own entries, and a full tier evicts the
  // entries of owners without a share or past it first (store_shares.h).
  // Null: no shares.
  void set_shares(std::shared_ptr<const StoreShares> shares);
  // What each owner holds, approximate as bytes and entries are.
  std::map<std::string, OwnerUsage> owner_usage() const;

  // Where the entry for key lives (whether or not it exists).
  std::string path_for(std::string_view key) const;
  const std::string& directory() const { return options_.directory; }
  // The directory of this entry format's files (<directory>/v<N>).
  const std::string& root() const { return root_; }
  std::chrono::milliseconds touch_interval() const { return options_.touch_interval; }

 private:
  struct ScannedFile;
  struct Scan;
  explicit DiskStore(Options options, std::string root);

  Result<Scan> scan(bool collect_files);
  // With putting_owner (a put's own collection), shares order the victims.
  Result<GcReport> collect(uint64_t max_bytes, bool wait_for_lock,
                           const std::function<bool(std::string_view key)>& in_scope = {},
                           const std::string* putting_owner = nullptr);
  void remove_corrupt(std::string_view key, const std::string& path, uint64_t inode, uint64_t bytes);
  std::string owner(std::string_view key) const { return options_.owner_of ? options_.owner_of(key) : std::string(); }
  // Adds to an owner's figures (negative: takes away).
  void account(const std::string& owner, int64_t bytes, int64_t entries, uint64_t evictions = 0);
  // An owner's figures from a whole scan; evictions are kept.
  void recount(const std::map<std::string, OwnerUsage>& scanned);
  uint64_t owner_bytes(const std::string& owner) const;
  // Makes a fan-out directory (or the root) with directory_mode.
  bool make_directory(const std::string& path) const;
  unsigned mode_of(std::string_view key) const { return options_.entry_mode ? options_.entry_mode(key) : 0644; }
  void after_put(const std::string& owner);

  Options options_;
  std::string root_;  // <directory>/v<format>
  std::atomic<int64_t> approx_bytes_{0};
  std::atomic<int64_t> approx_entries_{0};
  std::atomic<int64_t> last_scan_ns_{0};  // steady clock
  std::atomic<bool> maintenance_running_{false};
  StoreCounters counters_;
  std::atomic<std::shared_ptr<const StoreShares>> shares_;
  mutable std::mutex owners_mutex_;
  std::map<std::string, OwnerUsage> owners_;  // approximate, as approx_bytes_
};

}  // namespace kjit
