// Direct reads of the disk cache a kjitd on this host writes (its --cache-dir),
// with no RPC: the cheapest way to get a kernel some daemon compiled before.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kjit/client.h"
#include "kjit/status.h"

namespace kjit {

// Read-only: entries are only ever written by daemons, so a process reading
// the directory cannot publish anything a daemon did not verify. Keys are
// not derived here: a key depends on the daemon's pipelines, plugins and
// toolkit, so the only trustworthy key is one a daemon returned
// (CompileResult::key), kept by the application for its next run.
//
// Safe to share between threads; get() takes no lock of its own.
class LocalCache {
 public:
  // Opens `directory`, the daemon's --cache-dir or [cache] directory, without
  // scanning it: O(1) whatever it holds. A missing directory is created, as
  // the daemon would create it, so opening before any daemon ran succeeds.
  static Result<LocalCache> open(const std::string& directory);

  ~LocalCache();
  LocalCache(LocalCache&&) noexcept;
  LocalCache& operator=(LocalCache&&) noexcept;

  // The entry stored under `key`, checked against its checksum, as the
  // daemon would answer it: artifact, kernels, lowered names, key and its
  // components, with cache = "local-disk" and one "cache" timing for this
  // read. std::nullopt when there is no such entry, and also for a corrupt
  // one, which is removed (as a daemon removes it) so the next compile
  // replaces it. A hit counts as a use for the directory's
  // least-recently-used eviction, as a daemon's hit does.
  // Errors: invalid_argument for a string that cannot be a key, internal for
  // an I/O failure other than the entry being absent.
  Result<std::optional<CompileResult>> get(const std::string& key) const;

 private:
  struct Impl;
  explicit LocalCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kjit
