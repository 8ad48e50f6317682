// The REAPI tier: kjit's entries in a Remote Execution API server's
// ActionCache and CAS (mapping in reapi_action.h), durable where the server
// is (its disk, or S3, GCS or Azure behind bazel-remote and NativeLink), and
// shared by every daemon that points at it.
//
// Reads are checked twice: the bytes against the digest the ActionCache
// named, then as the disk tier checks an entry (header, key, checksum).
// Either failing is a corruption: counted, reported as a miss, never served.
//
// Writes go behind the answer (Options::write_behind): put() queues the
// encoded entry and returns; a WriteBehindQueue uploads it, bounded in bytes
// (an entry past the bound is dropped and counted as skipped). A failed
// write is counted, never a compile's failure. A large upload first asks
// the server which of its blobs it lacks (FindMissingBlobs), so bytes the
// CAS already holds are not sent again. Thread-safe.
//
// REAPI has neither deletion nor listing: remove() records an ActionResult
// without the entry (later reads miss), and list() is unimplemented.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/reapi_connection.h"
#include "cache/store.h"
#include "cache/write_behind_queue.h"

namespace kjit {

// Bytes moved by the REAPI tier since it was opened.
struct ReapiTransferStats {
  uint64_t bytes_read = 0;     // entries read from the CAS (inlined or not)
  uint64_t bytes_written = 0;  // entries, Commands and Actions uploaded
  uint64_t queued = 0;         // writes waiting behind answers now
  uint64_t write_failures = 0; // writes behind answers that failed (the entry stays in the tiers above)
};

class ReapiStore final : public Store {
 public:
  struct Options {
    bool write_behind = true;                // false: put() returns once the server has the entry
    uint64_t max_queued_bytes = 256ull << 20;  // write-behind queue bound
    // The instance name a stored key's entry lives in; unset: the
    // connection's instance for every key.
    std::function<std::string(std::string_view stored_key)> instance_of;
  };

  ReapiStore(std::shared_ptr<ReapiConnection> connection, Options options);
  ~ReapiStore() override;  // waits (bounded by the connection's timeouts) for queued writes
  ReapiStore(const ReapiStore&) = delete;
  ReapiStore& operator=(const ReapiStore&) = delete;

  std::string_view name() const override { return "reapi"; }
  Result<std::optional<CacheEntry>> get(std::string_view key) override;
  Status put(const CacheEntry& entry) override;
  Status remove(std::string_view key) override;
  Result<bool> contains(std::string_view key) override;
  StoreStats stats() const override;
  Result<std::vector<StoredKey>> list() override;

  // Blocks until every write queued before the call has been tried.
  void flush();
  ReapiTransferStats transfer_stats() const;
  bool breaker_open() const { return connection_->breaker_open(); }
  const ReapiConnection& connection() const { return *connection_; }

 private:
  std::string instance_for(std::string_view key) const;
  // The digest of key's Action, uploading its Command and Action with
  // `also` when `upload` is set.
  Result<ReapiDigest> action_digest(std::string_view key, std::string_view instance, bool upload,
                                    const std::vector<std::pair<ReapiDigest, std::string_view>>& also = {});
  // Of blobs about to be uploaded, those the server lacks (FindMissingBlobs),
  // asked only when they are large enough for the question to pay; a digest
  // this store found damaged is always kept.
  Result<std::vector<std::pair<ReapiDigest, std::string_view>>> not_stored(
      std::string_view instance, std::vector<std::pair<ReapiDigest, std::string_view>> blobs);
  Status write_now(const std::string& key, const std::string& bytes);
  // write_now on the queue's thread, whose failure nobody waits for.
  void write_behind(const std::string& key, const std::string& bytes);

  std::shared_ptr<ReapiConnection> connection_;
  Options options_;
  StoreCounters counters_;
  std::atomic<uint64_t> bytes_read_{0}, bytes_written_{0}, write_failures_{0};

  static constexpr uint64_t k_ask_before_uploading_bytes = 256 << 10;
  static constexpr size_t k_damaged_digests_kept = 4096;
  std::mutex damaged_mutex_;
  std::unordered_set<std::string> damaged_;  // digests whose bytes a read refused

  // Null without write_behind. Last, and emptied first by the destructor:
  // its writes use everything above.
  std::unique_ptr<WriteBehindQueue> writes_;
};

}  // namespace kjit
