#include "server/rpc/cache_service.h"

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "pipeline/cache_key.h"
#include "server/compile/bundle_export.h"
#include "server/compile/bundle_import.h"
#include "server/edge/compile_translation.h"
#include "server/edge/status_mapping.h"
#include "server/rpc/caller_cache.h"
#include "server/rpc/caller_stats.h"
#include "target/target.h"

namespace kjit {
namespace {

Error cache_off() { return make_error(ErrorCode::failed_precondition, "the compile cache is off on this daemon"); }

void to_group_response(const BlobGroupAnswer& answer, v1::GetBlobGroupResponse& response) {
  response.set_found(answer.found);
  for (const auto& [name, hit] : answer.members) {
    v1::Blob* out = response.add_members();
    out->set_name(name);
    out->set_data(hit.entry->artifact.bytes);
  }
  for (const std::string& name : answer.missing) response.add_missing(name);
  for (const std::string& name : answer.deferred) response.add_deferred(name);
}

v1::BlobClaimEnded::Reason to_reason(ClaimEnd end) {
  switch (end) {
    case ClaimEnd::fulfilled:
      return v1::BlobClaimEnded::REASON_FULFILLED;
    case ClaimEnd::released:
      return v1::BlobClaimEnded::REASON_RELEASED;
    case ClaimEnd::failed:
      return v1::BlobClaimEnded::REASON_FAILED;
    case ClaimEnd::stopped:
      break;
  }
  return v1::BlobClaimEnded::REASON_DRAINING;
}
Error disk_off() { return make_error(ErrorCode::failed_precondition, "the disk cache tier is off on this daemon"); }

// What an export streams per message: well under gRPC's message bounds,
// large enough that a big bundle is not thousands of tiny writes.
constexpr size_t k_bundle_chunk_bytes = 1u << 20;
constexpr size_t k_max_bundle_targets = 64;

// The export's targets, each as the target table spells it.
Result<std::vector<std::string>> canonical_targets(const google::protobuf::RepeatedPtrField<std::string>& targets) {
  if (static_cast<size_t>(targets.size()) > k_max_bundle_targets)
    return make_error(ErrorCode::invalid_argument, "at most " + std::to_string(k_max_bundle_targets) + " targets, not " +
                                                       std::to_string(targets.size()));
  std::vector<std::string> out;
  for (const std::string& text : targets) {
    Result<Target> target = parse_target(text);
    if (!target) return make_error(ErrorCode::invalid_argument, "target: " + target.error().message);
    out.push_back(target->canonical());
  }
  return out;
}

std::string imported_so_far(const BundleImportReport& report) {
  return std::to_string(report.entries) + " entries, " + std::to_string(report.blobs) + " blobs and " +
         std::to_string(report.recipes) + " recipes imported before it, each verified";
}

}  // namespace

// A bundle holds a namespace's compile entries: the caller's own (the
// operator's, a tenant's), never those every socket user shares, which a
// socket user may neither list nor replace.
Result<std::string> CacheService::bundle_namespace_of(const Caller& caller, std::string_view asked) const {
  if (!caller.is_operator() && !owns_its_compiles(caller))
    return gate_->operators_only("a cache bundle, which holds the compile entries every socket user shares,",
                                 "ask an operator, or call with a tenant's token for its own namespace");
  return recipe_namespace_of(caller, asked);
}

CacheService::CacheService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<CallGate> gate)
    : compiler_(std::move(compiler)), gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {
  if (DaemonCache* cache = compiler_->cache()) {
    const DaemonConfig& config = compiler_->config();
    BlobClaimLimits claims{std::chrono::milliseconds(config.max_claim_wait_ms),
                           {config.max_claim_waiters_per_key, config.max_claim_waiters_per_namespace,
                            config.max_claims_per_namespace}};
    blobs_ = std::make_unique<BlobStore>(config.max_blob_bytes, cache->blob_claims(), claims);
  }
}

grpc::Status CacheService::Stats(grpc::ServerContext* context, const v1::StatsRequest*, v1::StatsResponse* response) {
  return gate_->serve(context, "Stats", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    const CompileWorkers* workers = compiler_->workers();
    const std::optional<WorkerCounters> counters =
        workers ? std::optional<WorkerCounters>(workers->counters()) : std::nullopt;
    *response = stats_for(*cache, blobs_->stats(), caller, counters ? &*counters : nullptr);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::List(grpc::ServerContext* context, const v1::ListRequest* request, v1::ListResponse* response) {
  return gate_->serve(context, "List", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    // A caller sees its own namespace's entries, under the keys it knows:
    // the operator the default namespace (compile entries and its blobs), a
    // tenant its namespace, a socket user its blob namespace alone, never
    // the compile entries it shares with every other user.
    // Asked for one blob namespace: the caller's blobs alone, each entry's
    // header read to tell whose namespace it is under (a program cache's
    // len() and clear()).
    const bool blobs_only = !request->blob_namespace().empty();
    const NamespacedCache blobs = blobs_of(*cache, caller);
    Result<std::vector<StoredKey>> keys =
        blobs_only || !owns_its_compiles(caller) ? blobs.list() : compiles_of(*cache, caller).list();
    if (!keys) return to_grpc_status(keys.error(), *context);
    std::sort(keys->begin(), keys->end(), [](const StoredKey& a, const StoredKey& b) { return a.last_access_unix > b.last_access_unix; });
    for (const StoredKey& key : *keys) {
      if (request->limit() && static_cast<uint32_t>(response->entries_size()) >= request->limit()) break;
      std::optional<BlobIdentity> identity;
      if (blobs_only) {
        if (!is_blob_cache_key(key.key)) continue;
        Result<std::optional<BlobIdentity>> read = blobs.blob_on_disk(key.key);
        if (!read) return to_grpc_status(read.error(), *context);
        if (!*read || (*read)->ns != request->blob_namespace()) continue;  // gone since the listing, or another's
        identity = std::move(**read);
      }
      v1::CacheListing* out = response->add_entries();
      out->set_key(key.key);
      out->set_bytes(key.bytes);
      out->set_last_access_unix(key.last_access_unix);
      if (identity) {
        out->set_blob_kind(identity->kind);
        out->set_blob_namespace(identity->ns);
        out->set_blob_key(identity->key);
        out->set_blob_name(identity->name);
      }
    }
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::Remove(grpc::ServerContext* context, const v1::RemoveRequest* request, v1::RemoveResponse*) {
  return gate_->serve(context, "Remove", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    // `kjit cache ls` lists blobs too, so `kjit cache rm` takes their keys.
    const bool blob = is_blob_cache_key(request->key());
    if (!blob)
      if (Status spelled = check_key_spelling(request->key()); !spelled) return to_grpc_status(spelled.error(), *context);
    if (owns_its_compiles(caller)) {
      compiles_of(*cache, caller).remove(request->key());
    } else if (blob) {
      // A socket user's blobs are its own namespace's: nobody else's can be
      // named here.
      blobs_of(*cache, caller).remove(request->key());
    } else {
      return to_grpc_status(gate_->operators_only("removing a compile entry, which every user shares,",
                                                  "kjit cache rm takes the keys of your own blobs (kjit cache ls "
                                                  "lists them)"),
                            *context);
    }
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::Gc(grpc::ServerContext* context, const v1::GcRequest* request, v1::GcResponse* response) {
  return gate_->serve(context, "Gc", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    if (!cache->has_disk()) return to_grpc_status(disk_off(), *context);
    // The operator collects the whole tier; anyone else its own entries
    // (down to max_bytes of its own): a tenant's namespace, a socket user's
    // blobs. The compile entries every user shares are the operator's to
    // collect.
    Result<DiskStore::GcReport> report = caller.is_operator() ? cache->gc_disk(request->max_bytes())
                                                              : blobs_of(*cache, caller).gc(request->max_bytes());
    if (!report) return to_grpc_status(report.error(), *context);
    response->set_removed_entries(report->removed_entries);
    response->set_removed_bytes(report->removed_bytes);
    response->set_entries_after(report->entries_after);
    response->set_bytes_after(report->bytes_after);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::Verify(grpc::ServerContext* context, const v1::VerifyRequest*, v1::VerifyResponse* response) {
  return gate_->serve(context, "Verify", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    if (!cache->has_disk()) return to_grpc_status(disk_off(), *context);
    if (!caller.is_operator())
      return to_grpc_status(gate_->operators_only("cache verify, which reads and removes every user's entries,",
                                                  "kjit cache gc collects your own entries only"),
                            *context);
    Result<DiskStore::VerifyReport> report = cache->verify_disk();
    if (!report) return to_grpc_status(report.error(), *context);
    response->set_checked(report->checked);
    response->set_removed(report->removed);
    response->set_temp_files_removed(report->temp_files_removed);
    return grpc::Status::OK;
  });
}

Result<CacheKey> CacheService::key_of(const v1::ExplainSide& side, const Caller& caller) const {
  if (side.has_request()) {
    Result<CompileJob> job = to_compile_job(side.request(), compiler_->config());
    if (!job) return job.error();
    return compiler_->pipeline().key(*job);
  }
  const std::string& key = side.key();
  if (Status spelled = check_key_spelling(key); !spelled) return spelled.error();
  DaemonCache* cache = compiler_->cache();
  if (!cache) return cache_off();
  // By key, only what the caller may list: a socket user lists no compile
  // entry, as each is every user's.
  if (!owns_its_compiles(caller))
    return gate_->operators_only("explaining a stored entry by its key",
                                 "kjit explain compares two requests (sources and options) for anyone");
  std::optional<CacheHit> hit = compiles_of(*cache, caller).get(key);
  if (!hit) return make_error(ErrorCode::not_found, "no cache entry for key " + key);
  return CacheKey{hit->entry->artifact.key_components, key};
}

grpc::Status CacheService::Explain(grpc::ServerContext* context, const v1::ExplainRequest* request,
                                   v1::ExplainResponse* response) {
  return gate_->serve(context, "Explain", [&](const Caller& caller) -> grpc::Status {
    Result<CacheKey> left = key_of(request->left(), caller);
    if (!left) return to_grpc_status(left.error(), *context);
    Result<CacheKey> right = key_of(request->right(), caller);
    if (!right) return to_grpc_status(right.error(), *context);
    response->set_left_key(left->hex);
    response->set_right_key(right->hex);
    auto add = [](const std::vector<KeyComponent>& from, auto* to) {
      for (const KeyComponent& c : from) {
        v1::KeyComponent* out = to->Add();
        out->set_name(c.name);
        out->set_value(c.value);
      }
    };
    add(left->components, response->mutable_left_components());
    add(right->components, response->mutable_right_components());
    for (const KeyDifference& d : diff_keys(*left, *right)) {
      v1::KeyDifference* out = response->add_differences();
      out->set_name(d.name);
      out->set_left(d.left);
      out->set_right(d.right);
      out->set_present_left(d.present_left);
      out->set_present_right(d.present_right);
    }
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::PutBlob(grpc::ServerContext* context, const v1::PutBlobRequest* request,
                                   v1::PutBlobResponse* response) {
  return gate_->serve(context, "PutBlob", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_) return to_grpc_status(cache_off(), *context);
    // The request is const: its data is copied once, into the entry.
    const BlobPutMode mode{.replace = request->replace(), .shared_namespace = blobs_are_shared(caller)};
    Result<BlobPutOutcome> put = blobs_->put(blobs_of(*compiler_->cache(), caller), request->namespace_(), request->key(), request->name(), request->data(), mode);
    if (!put) return to_grpc_status(put.error(), *context);
    response->set_cache_key(std::move(put->cache_key));
    response->set_already_stored(put->already_stored);
    response->set_conflict(put->conflict);
    response->set_replaced(put->replaced);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest* request,
                                   v1::GetBlobResponse* response) {
  return gate_->serve(context, "GetBlob", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_) return to_grpc_status(cache_off(), *context);
    Result<std::optional<BlobHit>> hit = blobs_->get(blobs_of(*compiler_->cache(), caller), request->namespace_(), request->key(), request->name());
    if (!hit) return to_grpc_status(hit.error(), *context);
    if (!hit->has_value()) return grpc::Status::OK;
    response->set_found(true);
    response->set_data((*hit)->entry->artifact.bytes);
    response->set_cache(std::string(to_string((*hit)->tier)));
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::PutBlobGroup(grpc::ServerContext* context, const v1::PutBlobGroupRequest* request,
                                        v1::PutBlobGroupResponse* response) {
  return gate_->serve(context, "PutBlobGroup", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_) return to_grpc_status(cache_off(), *context);
    std::vector<std::string> names(request->names().begin(), request->names().end());
    Result<BlobPutOutcome> put = blobs_->put_group(blobs_of(*compiler_->cache(), caller), request->namespace_(), request->key(), request->group(), names);
    if (!put) return to_grpc_status(put.error(), *context);
    response->set_already_stored(put->already_stored);
    response->set_conflict(put->conflict);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::GetBlobGroup(grpc::ServerContext* context, const v1::GetBlobGroupRequest* request,
                                        v1::GetBlobGroupResponse* response) {
  return gate_->serve(context, "GetBlobGroup", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_) return to_grpc_status(cache_off(), *context);
    Result<BlobGroupAnswer> answer = blobs_->get_group(blobs_of(*compiler_->cache(), caller), request->namespace_(), request->key(), request->group());
    if (!answer) return to_grpc_status(answer.error(), *context);
    to_group_response(*answer, *response);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::ClaimBlobGroup(grpc::ServerContext* context, const v1::ClaimBlobGroupRequest* request,
                                          grpc::ServerWriter<v1::ClaimBlobGroupResponse>* writer) {
  return gate_->serve(context, "ClaimBlobGroup", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_ || !blobs_->claims()) return to_grpc_status(cache_off(), *context);
    const NamespacedCache view = blobs_of(*compiler_->cache(), caller);
    // A waiter whose caller left, or a daemon that drains, stops waiting;
    // a holder's call that ends (cancelled, its process gone) ends the claim.
    auto gone = [&] { return call_gone(*context) || gate_->draining(); };
    Result<BlobGroupClaim> claim =
        blobs_->claims()->claim_group(*blobs_, view, request->namespace_(), request->key(), request->group(),
                                      std::chrono::milliseconds(request->wait_ms()), gone);
    if (!claim) return to_grpc_status(claim.error(), *context);
    v1::ClaimBlobGroupResponse answer;
    switch (claim->answer) {
      case ClaimAnswer::landed:
        to_group_response(*claim->group, *answer.mutable_group());
        writer->Write(answer);
        return grpc::Status::OK;
      case ClaimAnswer::claimed:
        break;
      case ClaimAnswer::timed_out:
      case ClaimAnswer::refused:
        answer.set_timed_out(true);
        writer->Write(answer);
        return grpc::Status::OK;
    }
    v1::BlobClaim* held = answer.mutable_claimed();
    held->set_claim_id(claim->claim->id());
    held->set_lease_ms(static_cast<uint32_t>(blobs_->claims()->lease_ttl().count()));
    held->set_fleet(claim->claim->fleet());
    // The claim is released when `claim` goes, however this returns.
    if (!writer->Write(answer)) return grpc::Status::OK;
    const ClaimEnd end = blobs_->claims()->hold(*claim->claim, gone);
    if (end == ClaimEnd::stopped && call_gone(*context)) return grpc::Status::OK;  // nobody to tell
    answer.Clear();
    answer.mutable_ended()->set_reason(to_reason(end));
    writer->Write(answer);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::ReleaseBlobClaim(grpc::ServerContext* context, const v1::ReleaseBlobClaimRequest* request,
                                            v1::ReleaseBlobClaimResponse* response) {
  return gate_->serve(context, "ReleaseBlobClaim", [&](const Caller& caller) -> grpc::Status {
    if (!blobs_ || !blobs_->claims()) return to_grpc_status(cache_off(), *context);
    Result<bool> released =
        blobs_->claims()->release(blobs_of(*compiler_->cache(), caller), request->claim_id(), request->failed());
    if (!released) return to_grpc_status(released.error(), *context);
    response->set_released(*released);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::GetDirectReadGrant(grpc::ServerContext* context, const v1::DirectReadGrantRequest*,
                                              v1::DirectReadGrantResponse* response) {
  return gate_->serve(context, "GetDirectReadGrant", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    auto refuse = [&](std::string reason) {
      response->set_reason(std::move(reason));
      return grpc::Status::OK;
    };
    if (!cache || !cache->has_disk()) return refuse("the disk cache tier is off on this daemon");
    // Over TCP, or with a token, the caller may be on another host, and
    // its namespace is the tenant's: the daemon serves it over RPC.
    if (!caller.user) return refuse("direct reads are for callers on the daemon's unix socket");
    if (!caller.tenant.empty()) return refuse("a tenant's blobs are served over RPC only");
    if (caller.is_operator()) {
      // The operator's blobs are named plainly, readable by kjitd's user.
      response->set_granted(true);
      response->set_names_key_id(cache->names_secret_id());
      return grpc::Status::OK;
    }
    std::optional<NamesKey> names_key = cache->names_key_for(caller.blob_ns);
    if (!names_key) return refuse("the disk tier has no names secret on this daemon (see its log)");
    response->set_granted(true);
    response->set_namespace_(caller.blob_ns);
    response->set_names_key(names_key->data(), names_key->size());
    response->set_names_key_id(cache->names_secret_id());
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::ExportBundle(grpc::ServerContext* context, const v1::ExportBundleRequest* request,
                                        grpc::ServerWriter<v1::BundleChunk>* writer) {
  return gate_->serve(context, "ExportBundle", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    Result<std::string> ns = bundle_namespace_of(caller, request->namespace_());
    if (!ns) return to_grpc_status(ns.error(), *context);
    Result<std::vector<std::string>> targets = canonical_targets(request->targets());
    if (!targets) return to_grpc_status(targets.error(), *context);
    v1::BundleChunk chunk;
    auto send = [&]() -> Status {
      if (chunk.data().empty()) return Ok{};
      if (!writer->Write(chunk)) return make_error(ErrorCode::cancelled, "the caller went away during the export");
      chunk.mutable_data()->clear();
      return Ok{};
    };
    auto sink = [&](std::string_view bytes) -> Status {
      chunk.mutable_data()->append(bytes);
      return chunk.data().size() >= k_bundle_chunk_bytes ? send() : Status(Ok{});
    };
    Result<BundleExportReport> report =
        export_bundle(*cache, compiler_->recipes(), *ns, BundleSelection{std::move(*targets), request->recipes_only()},
                      std::string("kjit ") + KJIT_VERSION, sink);
    if (!report) return to_grpc_status(report.error(), *context);
    v1::BundleExportSummary* summary = chunk.mutable_summary();
    summary->set_entries(report->entries);
    summary->set_blobs(report->blobs);
    summary->set_recipes(report->recipes);
    summary->set_bytes(report->bytes);
    if (!writer->Write(chunk)) return to_grpc_status(make_error(ErrorCode::cancelled, "the caller went away during the export"), *context);
    spdlog::info("exported a cache bundle of namespace '{}': {} entries, {} blobs, {} recipes, {} bytes", *ns,
                 report->entries, report->blobs, report->recipes, report->bytes);
    return grpc::Status::OK;
  });
}

grpc::Status CacheService::ImportBundle(grpc::ServerContext* context, grpc::ServerReader<v1::ImportBundleRequest>* reader,
                                        v1::ImportBundleResponse* response) {
  return gate_->serve(context, "ImportBundle", [&](const Caller& caller) -> grpc::Status {
    DaemonCache* cache = compiler_->cache();
    if (!cache) return to_grpc_status(cache_off(), *context);
    v1::ImportBundleRequest message;
    const bool any = reader->Read(&message);
    // The namespace is the first message's; the others carry bytes alone.
    Result<std::string> ns = bundle_namespace_of(caller, message.namespace_());
    if (!ns) return to_grpc_status(ns.error(), *context);
    BundleImport import(*cache, compiler_->recipes(), compiler_->config(), compiler_->pipeline(), *ns);
    auto failed = [&](Error error) {
      if (import.report().entries || import.report().blobs || import.report().recipes)
        error.message += " (" + imported_so_far(import.report()) + ")";
      spdlog::warn("a cache bundle import into namespace '{}' stopped: {}", *ns, error.message);
      return to_grpc_status(error, *context);
    };
    for (bool more = any; more; more = reader->Read(&message)) {
      if (!message.namespace_().empty() && message.namespace_() != *ns)
        return failed(make_error(ErrorCode::invalid_argument,
                                 "the namespace is named in the first message alone, not '" + message.namespace_() + "'"));
      if (Status fed = import.feed(message.data()); !fed) return failed(fed.error());
    }
    if (call_gone(*context)) return failed(make_error(ErrorCode::cancelled, "the caller went away during the import"));
    Result<BundleImportReport> report = import.finish();
    if (!report) return failed(report.error());
    response->set_entries_imported(report->entries);
    response->set_blobs_imported(report->blobs);
    response->set_recipes_imported(report->recipes);
    response->set_skipped(report->skipped());
    for (const BundleImportReport::Skip& skip : report->skips) {
      v1::BundleSkip* out = response->add_skips();
      out->set_reason(skip.reason);
      out->set_count(skip.count);
      out->set_example(skip.example);
    }
    response->set_entry_format(report->entry_format);
    for (const std::string& toolchain : report->toolchains) response->add_toolchains(toolchain);
    response->set_bundle_bytes(report->bytes);
    response->set_namespace_(report->ns);
    spdlog::info("imported a cache bundle into namespace '{}': {} entries, {} blobs, {} recipes, {} skipped", *ns,
                 report->entries, report->blobs, report->recipes, report->skipped());
    return grpc::Status::OK;
  });
}

}  // namespace kjit
