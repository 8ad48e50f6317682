// One file per entry, shared LRU through mtimes (see disk_store.h).
#include "cache/disk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "cache/atomic_file.h"
#include "core/fd_io.h"

namespace kjit {
namespace {

constexpr std::string_view k_gc_lock_name = ".gc.lock";
// The longest key kjit stores: a blob key tagged for a namespace of 32
// characters (138); a file name is then well under NAME_MAX.
constexpr size_t k_max_key_bytes = 160;
// A file larger than this is not read at all: no entry kjit writes gets
// near it, and reading it would cost that much memory.
constexpr uint64_t k_max_entry_file_bytes = 2ull << 30;

bool valid_key(std::string_view key) {
  if (key.size() < 2 || key.size() > k_max_key_bytes) return false;
  // Keys become file names: no separators, no dots, nothing to escape.
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
  });
}

Error bad_key(std::string_view key) {
  return make_error(ErrorCode::invalid_argument, "invalid cache key for the disk tier: '" + std::string(key) + "'");
}


int64_t to_ns(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

int64_t realtime_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return to_ns(now);
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly size bytes; a short read means the file is not what fstat
// said, which for an immutable published entry means damage.
bool read_exactly(int fd, std::string& out, size_t size) {
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

struct DiskStore::ScannedFile {
  std::string key;
  std::string owner;
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

struct DiskStore::Scan {
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t temp_files_removed = 0;
  std::vector<ScannedFile> files;  // only when asked for
  std::map<std::string, OwnerUsage> owners;
};

std::string default_disk_cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/kjit";
  if (const char* home = std::getenv("HOME"); home && *home == '/') return std::string(home) + "/.cache/kjit";
  return "/tmp/kjit-cache-" + std::to_string(::getuid());
}

Result<std::unique_ptr<DiskStore>> DiskStore::open(Options options) {
  if (options.directory.empty()) return make_error(ErrorCode::invalid_argument, "disk cache directory is empty");
  // Entries of another format version live in a sibling directory, so two
  // kjit versions sharing a cache do not remove each other's entries as corrupt.
  std::string root = options.directory + "/v" + std::to_string(k_entry_format_version);
  std::error_code ec;
  std::filesystem::create_directories(options.directory, ec);
  std::unique_ptr<DiskStore> store(new DiskStore(std::move(options), root));
  if (ec || !store->make_directory(root))
    return make_error(ErrorCode::failed_precondition, "cannot create cache directory " + root + ": " +
                                                          (ec ? ec.message() : std::string(std::strerror(errno))));
  if (!store->options_.scan_on_open) return store;  // last_scan_ns_ = 0: the first put rescans
  Result<Scan> scanned = store->scan(/*collect_files=*/false);
  if (!scanned) return scanned.error();
  store->approx_bytes_ = static_cast<int64_t>(scanned->bytes);
  store->approx_entries_ = static_cast<int64_t>(scanned->entries);
  store->recount(scanned->owners);
  store->last_scan_ns_ = steady_ns();
  return store;
}

DiskStore::DiskStore(Options options, std::string root) : options_(std::move(options)), root_(std::move(root)) {}

bool DiskStore::make_directory(const std::string& path) const {
  if (options_.directory_mode == 0) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    return !ec;
  }
  // Made private first: the umask may only take bits away, and none of the
  // mode's may show before chmod sets them exactly.
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if ((st.st_mode & 07777) != options_.directory_mode && st.st_uid == ::geteuid())
    (void)::chmod(path.c_str(), options_.directory_mode);
  return true;
}

std::string DiskStore::path_for(std::string_view key) const {
  std::string path = root_;
  path += '/';
  path += key.substr(0, 2);
  path += '/';
  path += key;
  path += k_disk_entry_suffix;
  return path;
}

Result<DiskStore::Scan> DiskStore::scan(bool collect_files) {
  Scan out;
  DIR* top = ::opendir(root_.c_str());
  if (!top) return io_error("open cache directory", root_, errno);
  const int64_t temp_cutoff_ns =
      realtime_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.temp_max_age).count();
  while (dirent* fan = ::readdir(top)) {
    std::string_view fan_name = fan->d_name;
    if (fan_name.size() != 2 || fan_name[0] == '.') continue;
    const std::string fan_path = root_ + "/" + std::string(fan_name);
    DIR* dir = ::opendir(fan_path.c_str());
    if (!dir) continue;  // removed meanwhile, or not a directory
    const int dir_fd = ::dirfd(dir);
    struct stat dir_st {};
    if (options_.directory_mode != 0 && ::fstat(dir_fd, &dir_st) == 0 && dir_st.st_uid == ::geteuid() &&
        (dir_st.st_mode & 07777) != options_.directory_mode)
      (void)::fchmod(dir_fd, options_.directory_mode);
    while (dirent* file = ::readdir(dir)) {
      std::string_view file_name = file->d_name;
      if (file->d_type != DT_REG && file->d_type != DT_UNKNOWN) continue;
      const bool temp = is_atomic_temp_name(file_name);
      if (!temp && !file_name.ends_with(k_disk_entry_suffix)) continue;
      struct stat st {};
      // Sizes come from the inode alone: opening 100k entries would make
      // startup take seconds.
      if (::fstatat(dir_fd, file->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      if (temp) {
        // A dead writer's file goes at once; one whose writer cannot be
        // told (another user's, unreadable) only once it is old.
        int held = -1;
        const TempFileWriter writer = temp_file_writer(dir_fd, file->d_name, &held);
        const bool dead = writer == TempFileWriter::dead ||
                          (writer == TempFileWriter::unknown && to_ns(st.st_mtim) < temp_cutoff_ns);
        if (dead && ::unlinkat(dir_fd, file->d_name, 0) == 0) ++out.temp_files_removed;
        if (held >= 0) ::close(held);
        continue;
      }
      std::string_view key = file_name.substr(0, file_name.size() - k_disk_entry_suffix.size());
      if (!valid_key(key)) continue;
      if (options_.entry_mode && st.st_uid == ::geteuid() && (st.st_mode & 07777) != mode_of(key))
        (void)::fchmodat(dir_fd, file->d_name, mode_of(key), 0);
      out.bytes += static_cast<uint64_t>(st.st_size);
      ++out.entries;
      std::string whose = owner(key);
      OwnerUsage& usage = out.owners[whose];
      usage.bytes += static_cast<uint64_t>(st.st_size);
      ++usage.entries;
      if (collect_files)
        out.files.push_back(ScannedFile{std::string(key), std::move(whose), fan_path + "/" + std::string(file_name),
                                        static_cast<uint64_t>(st.st_size), to_ns(st.st_mtim)});
    }
    ::closedir(dir);
  }
  ::closedir(top);
  if (out.temp_files_removed > 0) spdlog::info("disk cache: removed {} stale temp file(s)", out.temp_files_removed);
  return out;
}

void DiskStore::account(const std::string& whose, int64_t bytes, int64_t entries, uint64_t evictions) {
  std::lock_guard lock(owners_mutex_);
  OwnerUsage& usage = owners_[whose];
  usage.bytes = static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(usage.bytes) + bytes));
  usage.entries = static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(usage.entries) + entries));
  usage.evictions += evictions;
}

void DiskStore::recount(const std::map<std::string, OwnerUsage>& scanned) {
  std::lock_guard lock(owners_mutex_);
  for (auto& [whose, usage] : owners_) usage.bytes = usage.entries = 0;
  for (const auto& [whose, usage] : scanned) {
    owners_[whose].bytes = usage.bytes;
    owners_[whose].entries = usage.entries;
  }
}

uint64_t DiskStore::owner_bytes(const std::string& whose) const {
  std::lock_guard lock(owners_mutex_);
  auto found = owners_.find(whose);
  return found == owners_.end() ? 0 : found->second.bytes;
}

void DiskStore::set_shares(std::shared_ptr<const StoreShares> shares) { shares_.store(std::move(shares)); }

std::map<std::string, OwnerUsage> DiskStore::owner_usage() const {
  std::lock_guard lock(owners_mutex_);
  return owners_;
}

void DiskStore::remove_corrupt(std::string_view key, const std::string& path, uint64_t inode, uint64_t bytes) {
  ++counters_.corruptions;
  // Another process may have published a good entry over the bad one since
  // it was read; only the inode that failed is removed.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_ino) == inode && ::unlink(path.c_str()) == 0) {
    approx_bytes_ -= static_cast<int64_t>(bytes);
    --approx_entries_;
    account(owner(key), -static_cast<int64_t>(bytes), -1);
  }
}

Result<std::optional<CacheEntry>> DiskStore::get(std::string_view key) {
  if (!valid_key(key)) return bad_key(key);
  const std::string path = path_for(key);
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      ++counters_.misses;
      return std::optional<CacheEntry>();
    }
    ++counters_.errors;
    return io_error("open", path, errno);
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) {
    ++counters_.errors;
    return io_error("stat", path, errno);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > k_max_entry_file_bytes) {
    ++counters_.errors;
    return make_error(ErrorCode::resource_exhausted, "cache entry " + path + " is too large to read");
  }
  std::string bytes;
  Result<CacheEntry> entry = read_exactly(file.fd, bytes, size)
                                 ? decode_entry(std::move(bytes), key)
                                 : Result<CacheEntry>(make_error(ErrorCode::internal, "corrupt entry: short read"));
  if (!entry) {
    spdlog::warn("disk cache: removing {}: {}", path, entry.error().message);
    remove_corrupt(key, path, static_cast<uint64_t>(st.st_ino), size);
    ++counters_.misses;
    return std::optional<CacheEntry>();
  }
  // The shared recency clock. Failure (a file owned by another user) only
  // makes eviction less precise, so it is ignored.
  const int64_t touch_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.touch_interval).count();
  if (realtime_ns() - to_ns(st.st_mtim) >= touch_ns) {
    const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    (void)::futimens(file.fd, times);
  }
  ++counters_.hits;
  return std::optional<CacheEntry>(std::move(entry).value());
}

Result<std::optional<CacheEntry>> DiskStore::read_head(std::string_view key) const {
  if (!valid_key(key)) return bad_key(key);
  const std::string path = path_for(key);
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<CacheEntry>();
    return io_error("open", path, errno);
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return io_error("stat", path, errno);
  std::string header;
  if (!read_exactly(file.fd, header, k_entry_header_bytes)) return std::optional<CacheEntry>();
  Result<uint64_t> head_size = entry_head_size(header, static_cast<uint64_t>(st.st_size));
  if (!head_size) return std::optional<CacheEntry>();
  std::string head;
  if (!read_exactly(file.fd, head, *head_size)) return std::optional<CacheEntry>();
  Result<CacheEntry> entry = decode_entry_head(head);
  if (!entry || entry->key != key) return std::optional<CacheEntry>();
  return std::optional<CacheEntry>(std::move(entry).value());
}

Status DiskStore::put(const CacheEntry& entry) {
  if (!valid_key(entry.key)) return bad_key(entry.key);
  const std::string encoded = encode_entry(entry);
  // Keeping an entry larger than the whole bound would evict everything.
  if (encoded.size() > options_.max_bytes) return Ok{};
  const std::string path = path_for(entry.key);
  struct stat old {};
  const bool replacing = ::stat(path.c_str(), &old) == 0;
  const AtomicWriteOptions write_options{.sync = options_.sync, .mode = mode_of(entry.key)};
  Status written = write_file_atomically(path, encoded, write_options);
  if (!written) {
    // Fan-out directories are made on first use (or again, if the cache
    // directory was removed); trying the write first spares a mkdir per put.
    // Retried whether this thread or a concurrent one made the directory.
    if (make_directory(root_) && make_directory(path.substr(0, path.rfind('/'))))
      written = write_file_atomically(path, encoded, write_options);
  }
  if (!written) {
    ++counters_.errors;
    return written;
  }
  ++counters_.puts;
  const int64_t added = static_cast<int64_t>(encoded.size()) - (replacing ? static_cast<int64_t>(old.st_size) : 0);
  approx_bytes_ += added;
  if (!replacing) ++approx_entries_;
  const std::string whose = owner(entry.key);
  account(whose, added, replacing ? 0 : 1);
  after_put(whose);
  return Ok{};
}

void DiskStore::after_put(const std::string& whose) {
  const std::shared_ptr<const StoreShares> shares = shares_.load();
  const std::optional<uint64_t> share = shares ? shares->share_of(whose) : std::nullopt;
  const bool over_share = share && owner_bytes(whose) > *share;
  const bool over = approx_bytes_.load() > static_cast<int64_t>(options_.max_bytes);
  const bool stale = steady_ns() - last_scan_ns_.load() >
                     std::chrono::duration_cast<std::chrono::nanoseconds>(options_.rescan_interval).count();
  if (!over && !stale && !over_share) return;
  // One maintenance pass per process at a time; other puts carry on.
  if (maintenance_running_.exchange(true)) return;
  if (over_share) {
    // An owner past its share makes room from its own entries alone.
    const auto target = static_cast<uint64_t>(static_cast<double>(*share) * options_.low_watermark);
    Result<GcReport> report =
        collect(target, /*wait_for_lock=*/false, [&](std::string_view key) { return owner(key) == whose; });
    if (!report) spdlog::warn("disk cache: gc of a share failed: {}", report.error().message);
  }
  if (stale && !over) {
    // Picks up what other processes wrote since the last scan, which may
    // itself show the directory over its bound.
    if (Result<Scan> scanned = scan(/*collect_files=*/false); scanned) {
      approx_bytes_ = static_cast<int64_t>(scanned->bytes);
      approx_entries_ = static_cast<int64_t>(scanned->entries);
      recount(scanned->owners);
      last_scan_ns_ = steady_ns();
    }
  }
  if (approx_bytes_.load() > static_cast<int64_t>(options_.max_bytes)) {
    const auto target = static_cast<uint64_t>(static_cast<double>(options_.max_bytes) * options_.low_watermark);
    Result<GcReport> report = collect(target, /*wait_for_lock=*/false, {}, &whose);
    if (!report) spdlog::warn("disk cache: gc failed: {}", report.error().message);
  }
  maintenance_running_ = false;
}

Status DiskStore::remove(std::string_view key) {
  if (!valid_key(key)) return bad_key(key);
  const std::string path = path_for(key);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Ok{};
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return Ok{};
    ++counters_.errors;
    return io_error("remove", path, errno);
  }
  approx_bytes_ -= st.st_size;
  --approx_entries_;
  account(owner(key), -static_cast<int64_t>(st.st_size), -1);
  return Ok{};
}

Result<bool> DiskStore::contains(std::string_view key) {
  if (!valid_key(key)) return bad_key(key);
  const std::string path = path_for(key);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  ++counters_.errors;
  return io_error("stat", path, errno);
}

StoreStats DiskStore::stats() const {
  StoreStats out = counters_.snapshot();
  out.bytes = static_cast<uint64_t>(std::max<int64_t>(0, approx_bytes_.load()));
  out.entries = static_cast<uint64_t>(std::max<int64_t>(0, approx_entries_.load()));
  return out;
}

Result<std::vector<StoredKey>> DiskStore::list() {
  Result<Scan> scanned = scan(/*collect_files=*/true);
  if (!scanned) return scanned.error();
  std::vector<StoredKey> out;
  out.reserve(scanned->files.size());
  for (const ScannedFile& f : scanned->files) out.push_back({f.key, f.bytes, f.mtime_ns / 1'000'000'000});
  return out;
}

Result<DiskStore::VerifyReport> DiskStore::verify() {
  Result<Scan> scanned = scan(/*collect_files=*/true);
  if (!scanned) return scanned.error();
  VerifyReport report;
  report.temp_files_removed = scanned->temp_files_removed;
  for (const ScannedFile& f : scanned->files) {
    Fd file(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0) continue;  // removed meanwhile
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) continue;
    ++report.checked;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    std::string bytes;
    // Unlike get(), a hit here is not a use: the mtime is left alone.
    if (size <= k_max_entry_file_bytes && read_exactly(file.fd, bytes, size) && decode_entry(bytes, f.key)) continue;
    spdlog::warn("disk cache: verify removes {}", f.path);
    remove_corrupt(f.key, f.path, static_cast<uint64_t>(st.st_ino), size);
    ++report.removed;
  }
  return report;
}

Result<DiskStore::GcReport> DiskStore::gc(uint64_t max_bytes,
                                          const std::function<bool(std::string_view key)>& in_scope) {
  return collect(max_bytes, /*wait_for_lock=*/true, in_scope);
}

Result<DiskStore::GcReport> DiskStore::collect(uint64_t max_bytes, bool wait_for_lock,
                                               const std::function<bool(std::string_view key)>& in_scope,
                                               const std::string* putting_owner) {
  const std::string lock_path = root_ + "/" + std::string(k_gc_lock_name);
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.fd < 0) return io_error("open", lock_path, errno);
  // flock is dropped by the kernel when its holder dies, so a crashed
  // collector never blocks the others.
  if (::flock(lock.fd, wait_for_lock ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    if (!wait_for_lock && errno == EWOULDBLOCK) return GcReport{};  // another process is collecting
    return io_error("lock", lock_path, errno);
  }
  Result<Scan> scanned = scan(/*collect_files=*/true);
  if (!scanned) return scanned.error();
  GcReport report;
  report.entries_before = scanned->entries;
  report.bytes_before = scanned->bytes;
  report.temp_files_removed = scanned->temp_files_removed;
  std::vector<ScannedFile>& files = scanned->files;
  if (in_scope) {
    std::erase_if(files, [&](const ScannedFile& f) { return !in_scope(f.key); });
    report.entries_before = files.size();
    report.bytes_before = 0;
    for (const ScannedFile& f : files) report.bytes_before += f.bytes;
  } else {
    recount(scanned->owners);
  }
  std::sort(files.begin(), files.end(),
            [](const ScannedFile& a, const ScannedFile& b) { return a.mtime_ns < b.mtime_ns; });
  uint64_t bytes = report.bytes_before;
  uint64_t entries = report.entries_before;
  std::map<std::string, OwnerUsage>& held = scanned->owners;  // as files go
  std::vector<char> done(files.size(), 0);
  // One pass over the files, least recently used first, taking those `pick` accepts.
  auto pass = [&](const std::function<bool(const ScannedFile&)>& pick) {
    for (size_t i = 0; i < files.size() && bytes > max_bytes; ++i) {
      const ScannedFile& f = files[i];
      if (done[i] || !pick(f)) continue;
      struct stat st {};
      const bool gone = ::stat(f.path.c_str(), &st) != 0;  // someone else removed it
      // Used or replaced since the scan: no longer the least recently used.
      if (!gone && to_ns(st.st_mtim) != f.mtime_ns) continue;
      if (!gone && ::unlink(f.path.c_str()) != 0) continue;
      done[i] = 1;
      bytes -= f.bytes;
      --entries;
      held[f.owner].bytes -= std::min(held[f.owner].bytes, f.bytes);
      if (gone) continue;
      ++report.removed_entries;
      report.removed_bytes += f.bytes;
      account(f.owner, -static_cast<int64_t>(f.bytes), -1, 1);
    }
  };
  const std::shared_ptr<const StoreShares> shares = shares_.load();
  if (shares && !in_scope && putting_owner) {
    // Owners without a share or past it first; then the putting owner's
    // own; then (shares past the bound) anyone's.
    pass([&](const ScannedFile& f) {
      const std::optional<uint64_t> share = shares->share_of(f.owner);
      return !share || held[f.owner].bytes > *share;
    });
    pass([&](const ScannedFile& f) { return f.owner == *putting_owner; });
  }
  pass([](const ScannedFile&) { return true; });
  report.bytes_after = bytes;
  report.entries_after = entries;
  counters_.evictions += report.removed_entries;
  if (in_scope) {
    approx_bytes_ -= static_cast<int64_t>(report.removed_bytes);
    approx_entries_ -= static_cast<int64_t>(report.removed_entries);
  } else {
    approx_bytes_ = static_cast<int64_t>(bytes);
    approx_entries_ = static_cast<int64_t>(entries);
  }
  last_scan_ns_ = steady_ns();
  if (report.removed_entries > 0)
    spdlog::debug("disk cache: evicted {} entries ({} bytes), {} bytes left", report.removed_entries,
                  report.removed_bytes, bytes);
  return report;
}

}  // namespace kjit
