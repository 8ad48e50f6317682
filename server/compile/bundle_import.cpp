#include "server/compile/bundle_import.h"

#include <algorithm>

#include "pipeline/blob_key.h"
#include "pipeline/cache_key.h"
#include "server/compile/blob_store.h"
#include "server/compile/bundle_export.h"
#include "server/edge/compile_translation.h"

namespace kjit {
namespace {

// Recipes handed to the book between two checks of what it kept: under its
// queue's bound, which drops what comes past it.
constexpr size_t k_recipe_batch = 128;

// The key components naming a CUDA toolkit by its version, as
// CudaToolkit::version() spells it (and `kjit toolkits` lists it).
constexpr std::string_view k_cuda_toolchains[] = {"toolchain.nvrtc", "toolchain.nvjitlink"};

// Roughly what an entry takes in a tier, before it is encoded: what the
// namespace's share is counted in.
uint64_t stored_size(const CacheEntry& entry) {
  return k_entry_header_bytes + entry.key.size() + entry.artifact.bytes.size() + entry.artifact.log.size();
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

uint64_t BundleImportReport::skipped() const {
  uint64_t out = 0;
  for (const Skip& s : skips) out += s.count;
  return out;
}

BundleImport::BundleImport(const DaemonCache& cache, RecipeBook* recipes, const DaemonConfig& config,
                           const CompilePipeline& pipeline, std::string ns)
    : cache_(cache), recipes_(recipes), config_(config), pipeline_(pipeline), view_(cache.blobs_in(ns)) {
  report_.ns = std::move(ns);
  // The largest entry this daemon could have written: its largest artifact
  // or blob, with the metadata's own bound.
  BundleLimits limits;
  limits.max_entry_bytes = k_entry_header_bytes + k_max_entry_key_bytes + k_max_entry_metadata_bytes +
                           std::max(config.compile_bounds.output_bytes, config.max_blob_bytes);
  limits.max_recipe_bytes = std::max<uint64_t>(config.cache.max_recipe_bytes, 1);
  BundleReader::Handler handler;
  handler.manifest = [this](const BundleManifest& manifest) { return on_manifest(manifest); };
  handler.entry = [this](CacheEntry entry) { return on_entry(std::move(entry)); };
  handler.recipe = [this](std::string bytes) { return on_recipe(std::move(bytes)); };
  reader_ = std::make_unique<BundleReader>(limits, std::move(handler));
}

BundleImport::~BundleImport() = default;

void BundleImport::skip(std::string_view reason, std::string_view example) {
  auto it = std::find_if(report_.skips.begin(), report_.skips.end(),
                         [&](const BundleImportReport::Skip& s) { return s.reason == reason; });
  if (it == report_.skips.end()) {
    report_.skips.push_back({std::string(reason), 0, std::string(example)});
    it = std::prev(report_.skips.end());
  }
  ++it->count;
}

Status BundleImport::feed(std::string_view bytes) {
  Status fed = reader_->feed(bytes);
  report_.bytes = reader_->bytes_read();
  return fed;
}

Result<BundleImportReport> BundleImport::finish() {
  Result<BundleCounts> counts = reader_->finish();
  settle_recipes();
  if (!counts) return counts.error();
  return report_;
}

Status BundleImport::on_manifest(const BundleManifest& manifest) {
  report_.entry_format = k_entry_format_version;  // the reader refused any other before the manifest
  report_.toolchains = manifest.toolchains;
  manifest_toolchains_.insert(manifest.toolchains.begin(), manifest.toolchains.end());
  // The toolkits the entries were built with must be this daemon's: a key
  // holds its toolkit's version, so an entry of another toolkit would never
  // be asked for here.
  std::set<std::string> versions;
  for (const RoutedToolkit& routed : pipeline_.toolkits().all()) versions.insert(routed.toolkit->version());
  std::vector<std::string> missing;
  for (const std::string& toolchain : manifest.toolchains) {
    const size_t space = toolchain.find(' ');
    const std::string name = toolchain.substr(0, space);
    const std::string version = space == std::string::npos ? std::string() : toolchain.substr(space + 1);
    if (std::find(std::begin(k_cuda_toolchains), std::end(k_cuda_toolchains), name) == std::end(k_cuda_toolchains))
      continue;
    if (!versions.contains(version)) missing.push_back("CUDA " + version + " (" + name + ")");
  }
  if (!missing.empty()) {
    std::vector<std::string> have(versions.begin(), versions.end());
    return make_error(ErrorCode::failed_precondition,
                      "the bundle's entries were built with " + joined(missing) +
                          ", which this daemon does not have (its toolkits: CUDA " + joined(have) +
                          "); export from a daemon with the same toolkits, or --target the ones this daemon has");
  }
  // The share bounds the memory and the disk tier alike: the fuller counts.
  const NamespaceStats stats = cache_.namespace_stats(report_.ns);
  share_ = stats.max_bytes.value_or(0);
  share_used_ = std::max(stats.disk_bytes, stats.memory_bytes);
  if (recipes_ && config_.cache.max_recipes > 0) {
    Result<std::vector<v1::RecipeSummary>> listed = recipes_->list(report_.ns, 0);
    if (listed)
      for (const v1::RecipeSummary& summary : *listed) known_recipes_.insert(summary.digest());
  }
  return Ok{};
}

std::string BundleImport::key_mismatch(const CacheEntry& entry) const {
  if (entry.blob) {
    const BlobIdentity& id = *entry.blob;
    if (id.kind != k_blob_kind && id.kind != k_blob_group_kind) return "a blob of a kind this daemon does not import";
    if (!check_blob_field("namespace", id.ns, /*is_file_name=*/false) ||
        !check_blob_field("key", id.key, /*is_file_name=*/false) || !check_blob_field("name", id.name, /*is_file_name=*/true))
      return "a blob whose identity a PutBlob would refuse";
    if (blob_cache_key(id.kind, id.ns, id.key, id.name) != entry.key) return "its key is not its blob identity's";
    return {};
  }
  if (!is_key_hex(entry.key)) return "a compile entry whose key is not 64 hex digits";
  if (!entry.artifact.key.empty() && entry.artifact.key != entry.key) return "its key is not the one its artifact records";
  if (derive_key(entry.artifact.key_components).hex != entry.key) return "its key is not the digest of its key components";
  for (const std::string& toolchain : toolchains_of(entry))
    if (!manifest_toolchains_.contains(toolchain)) return "built with a toolchain the manifest does not list";
  return {};
}

Status BundleImport::on_entry(CacheEntry entry) {
  if (std::string why = key_mismatch(entry); !why.empty()) {
    skip(why, entry.key);
    return Ok{};
  }
  // What is there stays: a valid entry reads as a hit (a damaged one as a
  // miss, and is replaced).
  if (view_.get(entry.key)) {
    skip("already there (kept)", entry.key);
    return Ok{};
  }
  const uint64_t size = stored_size(entry);
  if (share_ && share_used_ + size > share_) {
    skip("over the namespace's share of the tiers (max_bytes " + std::to_string(share_) + ")", entry.key);
    return Ok{};
  }
  const bool blob = entry.blob.has_value();
  view_.put(std::move(entry));
  share_used_ += size;
  ++(blob ? report_.blobs : report_.entries);
  return Ok{};
}

Status BundleImport::on_recipe(std::string bytes) {
  if (!recipes_ || config_.cache.max_recipes == 0) {
    skip("recipes are off on this daemon (max_recipes = 0, or no cache)", {});
    return Ok{};
  }
  v1::GetRecipeResponse record;
  if (!record.ParseFromString(bytes)) {
    skip("a recipe that does not parse", {});
    return Ok{};
  }
  const std::string& digest = record.summary().digest();
  // A recipe is the request without its target: sent as the request it
  // was last asked as, it passes the checks every Compile passes here.
  v1::CompileRequest request = std::move(*record.mutable_request());
  if (record.summary().last_target().empty()) {
    skip("a recipe without the target it was asked for", digest);
    return Ok{};
  }
  request.set_target(record.summary().last_target());
  request.clear_targets();
  Result<CompileJob> job = to_compile_job(request, config_);
  if (!job) {
    skip("a recipe this daemon's request checks refuse", digest + ": " + job.error().message);
    return Ok{};
  }
  const std::string own_digest = recipe_digest(*job);
  if (known_recipes_.contains(own_digest)) {
    skip("recipe already there (kept)", own_digest);
    return Ok{};
  }
  Result<CacheKey> key = pipeline_.key(*job);
  // The key only lets a hit move the recipe's last-asked time; a target
  // this daemon cannot plan for still keeps its recipe.
  recipes_->record(*job, report_.ns, key ? key->hex : own_digest);
  known_recipes_.insert(own_digest);
  pending_recipes_.push_back(own_digest);
  if (pending_recipes_.size() >= k_recipe_batch) settle_recipes();
  return Ok{};
}

void BundleImport::settle_recipes() {
  if (pending_recipes_.empty()) return;
  recipes_->flush();
  Result<std::vector<v1::RecipeSummary>> listed = recipes_->list(report_.ns, 0);
  std::set<std::string> stored;
  if (listed)
    for (const v1::RecipeSummary& summary : *listed) stored.insert(summary.digest());
  for (const std::string& digest : pending_recipes_) {
    if (stored.contains(digest))
      ++report_.recipes;
    else
      skip("recipe not kept by the recipe book (max_recipes, max_recipe_bytes, or its queue was full)", digest);
  }
  pending_recipes_.clear();
}

}  // namespace kjit
