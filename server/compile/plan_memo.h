// Plans (pipeline and cache key) of recent jobs, so that a memory hit does
// not derive its key again: deriving it (hashing the input and every key
// component) was a fifth of a hit's CPU in the daemon. A job's plan depends
// on nothing but the job and the daemon's pipelines, which never change
// while it runs; the daemon turns the memo off when a plugin hooks the key
// (a hook may read anything). Entries are found by a fast hash of the job
// and confirmed by comparing the whole job, so a hash collision, even a
// crafted one, costs a recomputation, never another job's key.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/compile_job.h"
#include "pipeline/compile_pipeline.h"

namespace kjit {

class PlanMemo {
 public:
  using PlanPtr = std::shared_ptr<const CompilePlan>;

  // max_bytes bounds what the remembered jobs hold (their inputs and
  // headers, plus a fixed overhead each); least recently used go first.
  explicit PlanMemo(uint64_t max_bytes);
  ~PlanMemo();

  static uint64_t fingerprint(const CompileJob& job);
  // The plan remembered for exactly this job, or nullptr.
  PlanPtr find(const CompileJob& job, uint64_t fingerprint) const;
  void remember(const CompileJob& job, uint64_t fingerprint, PlanPtr plan);

 private:
  struct Shard;
  Shard& shard_for(uint64_t fingerprint) const;
  uint64_t shard_max_bytes_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace kjit
