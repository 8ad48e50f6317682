// A namespace's part of the daemon's cache written as a portable bundle
// (cache/cache_bundle.h): its compile entries and client blobs from the
// disk tier, and its recipes, for `kjit cache export`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache_bundle.h"
#include "kjit/status.h"
#include "server/compile/daemon_cache.h"
#include "server/compile/recipe_book.h"

namespace kjit {

struct BundleSelection {
  // Canonical targets ("cuda:90"): only compile entries built for one of
  // them, and no client blobs (they have no target); empty: everything.
  std::vector<std::string> targets;
  bool recipes_only = false;  // recipes alone
};

struct BundleExportReport {
  uint64_t entries = 0;  // compile entries written
  uint64_t blobs = 0;    // client blobs and groups written
  uint64_t recipes = 0;
  uint64_t bytes = 0;
};

// The toolchain components of an entry's key ("toolchain.nvrtc 13.0"), as
// a bundle's manifest lists what its entries were built with.
std::vector<std::string> toolchains_of(const CacheEntry& entry);

// Writes namespace ns's entries (as the caller's view lists them on disk)
// and recipes to sink. The caller has decided that ns is the caller's to
// export (server/rpc/caller_cache.h). recipes may be null (none kept).
// FAILED_PRECONDITION without a disk tier unless recipes_only; a sink's
// error stops the export and is returned.
Result<BundleExportReport> export_bundle(const DaemonCache& cache, RecipeBook* recipes, const std::string& ns,
                                         const BundleSelection& selection, const std::string& producer,
                                         const BundleWriter::Sink& sink);

}  // namespace kjit
