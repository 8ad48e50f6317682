// Direct reads of the disk cache a kjitd on this host writes (its --cache-dir),
// with no RPC: the cheapest way to get a kernel some daemon compiled before,
// or a blob group a program that compiles for itself stored (claiming the
// group through a Client on a miss).
#pragma once

#include <chrono>
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

  // Blob groups, for a program that runs NVRTC itself and keeps what it
  // compiles in kjit (Client::put_blob, then put_blob_group), so that every
  // process on the host compiles each group once:
  //
  //   Result<BlobClaim> got = cache.claim_blob_group(client, "my-app", key, "kernel", 10min);
  //   if (!got) ...                       // compile without a claim (resource_exhausted: too many waiting)
  //   else if (got->outcome() == BlobClaim::Outcome::hit) use(got->group());
  //   else { compile; client.put_blob(...); client.put_blob_group(...); }  // claimed, or timed_out
  //
  // The group read here, each member checked as the daemon checks it (its
  // checksum and the blob identity recorded in it), with no RPC; else
  // Client::claim_blob_group: the group someone put meanwhile, or the claim
  // (one caller at a time, across the daemons sharing Redis too, held while
  // the BlobClaim lives: destroying it hands it to the next waiter, putting
  // the group ends it and answers every waiter), or timed_out after waiting
  // `wait` for another holder. A local read that fails (a file this user
  // may not read) asks the daemon instead. Fields are the daemon's to
  // check: a claim on a bad one is invalid_argument.
  //
  // Read here are only the blobs of the daemon's default namespace, the
  // operator's (what kjitd's own user or root put over the socket), in
  // files only kjitd's user may open: a process of that user reads them.
  // Any other user's, or a tenant's, blobs are stored under other names
  // (its namespace's, and a key of its own): they always miss here, and the
  // claim call brings them.
  Result<BlobClaim> claim_blob_group(const Client& client, const std::string& ns, const std::string& key,
                                     const std::string& group, std::chrono::milliseconds wait) const;
  // The read alone: std::nullopt when the group or any member is missing.
  // Errors: internal for an I/O failure other than an entry being absent.
  Result<std::optional<BlobGroup>> get_blob_group(const std::string& ns, const std::string& key,
                                                  const std::string& group) const;

 private:
  struct Impl;
  explicit LocalCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kjit
