// A portable bundle (cache/cache_bundle.h) read into one namespace of the
// daemon's tiers, for `kjit cache import`. Nothing in the bundle is trusted:
// the reader bounds and verifies every record (sizes, checksums, each entry
// as the disk tier verifies a file); here each entry's key must be what its
// contents derive (a compile key from its key components, a blob key from
// its identity), the toolkits the manifest names must be this daemon's,
// and each recipe must pass the checks a Compile request passes.
//
// What is there stays: an entry whose key the namespace already holds
// (valid: a damaged one reads as a miss) is skipped, as is a recipe the
// namespace has. The namespace's share of the tiers ([[tenants]]
// max_bytes) bounds what is imported. Every record not imported is counted
// under its reason.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cache/cache_bundle.h"
#include "kjit/status.h"
#include "pipeline/compile_pipeline.h"
#include "server/compile/daemon_cache.h"
#include "server/compile/recipe_book.h"
#include "server/config/daemon_config.h"

namespace kjit {

struct BundleImportReport {
  uint64_t entries = 0;  // compile entries imported
  uint64_t blobs = 0;    // client blobs and groups imported
  uint64_t recipes = 0;
  struct Skip {
    std::string reason;
    uint64_t count = 0;
    std::string example;  // the first key (or recipe digest) skipped for it
  };
  std::vector<Skip> skips;  // in the order each reason first came up
  uint64_t skipped() const;
  uint32_t entry_format = 0;            // the bundle's, once its header is read
  std::vector<std::string> toolchains;  // the manifest's
  uint64_t bytes = 0;                   // of the bundle, read so far
  std::string ns;                       // where its records went
};

class BundleImport {
 public:
  // ns: the caller's namespace, or the one the operator named. recipes may
  // be null (none kept: recipes are skipped).
  BundleImport(const DaemonCache& cache, RecipeBook* recipes, const DaemonConfig& config,
               const CompilePipeline& pipeline, std::string ns);
  ~BundleImport();
  BundleImport(const BundleImport&) = delete;
  BundleImport& operator=(const BundleImport&) = delete;

  // The bundle's next bytes. An error (a damaged bundle, another format, a
  // toolkit this daemon lacks) ends the import; what was imported before
  // it was verified and stays (report() counts it).
  Status feed(std::string_view bytes);
  // The end of the bundle: a truncated one is INVALID_ARGUMENT.
  Result<BundleImportReport> finish();
  const BundleImportReport& report() const { return report_; }

 private:
  Status on_manifest(const BundleManifest& manifest);
  Status on_entry(CacheEntry entry);
  Status on_recipe(std::string bytes);
  // Waits for the recipes handed to the book and counts which it kept.
  void settle_recipes();
  void skip(std::string_view reason, std::string_view example);
  // Why the entry's key is not what its contents derive; empty when it is.
  std::string key_mismatch(const CacheEntry& entry) const;

  const DaemonCache& cache_;
  RecipeBook* recipes_;
  const DaemonConfig& config_;
  const CompilePipeline& pipeline_;
  NamespacedCache view_;
  BundleImportReport report_;
  std::set<std::string> manifest_toolchains_;
  uint64_t share_ = 0;       // the namespace's share of the tiers; 0: none
  uint64_t share_used_ = 0;  // what it holds, plus what this import added
  std::set<std::string> known_recipes_;     // digests the namespace has
  std::vector<std::string> pending_recipes_;  // handed to the book, not yet seen stored
  std::unique_ptr<BundleReader> reader_;
};

}  // namespace kjit
