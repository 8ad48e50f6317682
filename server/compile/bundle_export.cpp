#include "server/compile/bundle_export.h"

#include <algorithm>
#include <ctime>
#include <set>

namespace kjit {
namespace {

constexpr std::string_view k_toolchain_prefix = "toolchain.";

bool selected(const CacheEntry& entry, const BundleSelection& selection) {
  if (selection.targets.empty()) return true;
  if (entry.blob) return false;
  return std::find(selection.targets.begin(), selection.targets.end(), entry.artifact.target) !=
         selection.targets.end();
}

}  // namespace

std::vector<std::string> toolchains_of(const CacheEntry& entry) {
  std::vector<std::string> out;
  for (const KeyComponent& component : entry.artifact.key_components) {
    if (!component.name.starts_with(k_toolchain_prefix)) continue;
    std::string line = component.name + " " + component.value;
    // A manifest line is one line.
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::replace(line.begin(), line.end(), '\0', ' ');
    out.push_back(std::move(line));
  }
  return out;
}

Result<BundleExportReport> export_bundle(const DaemonCache& cache, RecipeBook* recipes, const std::string& ns,
                                         const BundleSelection& selection, const std::string& producer,
                                         const BundleWriter::Sink& sink) {
  if (!selection.recipes_only && !cache.has_disk())
    return make_error(ErrorCode::failed_precondition,
                      "the disk cache tier is off on this daemon: its entries cannot be listed (--recipes-only "
                      "exports the recipes alone)");
  // The blob view reaches compile entries and blobs alike under the same
  // stored keys, and its lookups never count as the namespace's compile
  // lookups, so an export leaves the hit rates as they were.
  const NamespacedCache view = cache.blobs_in(ns);
  BundleManifest manifest;
  manifest.created_unix = static_cast<int64_t>(std::time(nullptr));
  manifest.ns = ns;
  manifest.recipes_only = selection.recipes_only;
  manifest.targets = selection.targets;
  manifest.producer = producer;

  // First pass: which entries go, and what they were built with, which the
  // manifest states ahead of them so an importer refuses before any entry.
  std::vector<std::string> chosen;
  if (!selection.recipes_only) {
    Result<std::vector<StoredKey>> keys = view.list();
    if (!keys) return keys.error();
    std::set<std::string> toolchains;
    for (const StoredKey& stored : *keys) {
      std::optional<CacheHit> hit = view.get(stored.key);
      if (!hit || !selected(*hit->entry, selection)) continue;  // gone since the listing, or not asked for
      for (std::string& toolchain : toolchains_of(*hit->entry)) toolchains.insert(std::move(toolchain));
      chosen.push_back(stored.key);
    }
    manifest.toolchains.assign(toolchains.begin(), toolchains.end());
  }

  BundleWriter writer(sink);
  if (Status begun = writer.begin(manifest); !begun) return begun.error();
  BundleExportReport report;
  for (const std::string& key : chosen) {
    std::optional<CacheHit> hit = view.get(key);
    if (!hit) continue;  // evicted between the passes: the manifest may list a toolchain more
    CacheEntry entry = *hit->entry;
    entry.key = key;  // as stored once imported: the importer's view adds its namespace
    if (Status added = writer.add_entry(entry); !added) return added.error();
    ++(entry.blob ? report.blobs : report.entries);
  }
  if (recipes) {
    recipes->flush();  // the compiles just answered are recorded too
    Result<std::vector<v1::RecipeSummary>> listed = recipes->list(ns, 0);
    if (!listed) return listed.error();
    for (v1::RecipeSummary& summary : *listed) {
      Result<v1::CompileRequest> request = recipes->request(ns, summary.digest());
      if (!request) continue;  // left the tiers since the listing
      v1::GetRecipeResponse record;
      *record.mutable_summary() = std::move(summary);
      *record.mutable_request() = std::move(*request);
      if (Status added = writer.add_recipe(record.SerializeAsString()); !added) return added.error();
      ++report.recipes;
    }
  }
  if (Status finished = writer.finish(); !finished) return finished.error();
  report.bytes = writer.bytes_written();
  return report;
}

}  // namespace kjit
