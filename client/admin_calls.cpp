// The operator's calls of the Client: a reload of the daemon's
// configuration; and cache bundles, streamed both ways so that neither the
// client nor the daemon holds a whole bundle.
#include <vector>

#include "client/client_impl.h"

namespace kjit {
namespace {

// What each ImportBundle message carries: well under the daemon's bound on
// a message, large enough to be few messages.
constexpr size_t k_import_chunk_bytes = 1u << 20;

}  // namespace

Result<ReloadResult> Client::reload() const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ReloadResponse response;
  grpc::Status status = impl_->diagnostics->Reload(&context, v1::ReloadRequest{}, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  ReloadResult out;
  out.reloaded.assign(response.reloaded().begin(), response.reloaded().end());
  out.needs_restart.assign(response.needs_restart().begin(), response.needs_restart().end());
  return out;
}

Result<BundleExportResult> Client::export_bundle(const BundleExportOptions& options,
                                       const std::function<Status(std::string_view bytes)>& write) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ExportBundleRequest request;
  request.set_namespace_(options.ns);
  for (const std::string& target : options.targets) request.add_targets(target);
  request.set_recipes_only(options.recipes_only);
  std::unique_ptr<grpc::ClientReader<v1::BundleChunk>> stream = impl_->cache->ExportBundle(&context, request);
  v1::BundleChunk chunk;
  BundleExportResult out;
  std::optional<Error> write_failed;
  while (stream->Read(&chunk)) {
    if (!chunk.data().empty()) {
      if (Status written = write(chunk.data()); !written) {
        write_failed = written.error();
        context.TryCancel();
        break;
      }
    }
    if (chunk.has_summary()) {
      out.entries = chunk.summary().entries();
      out.blobs = chunk.summary().blobs();
      out.recipes = chunk.summary().recipes();
      out.bytes = chunk.summary().bytes();
    }
  }
  grpc::Status status = stream->Finish();
  if (write_failed) return *write_failed;
  if (!status.ok()) return from_grpc_status(status, context);
  return out;
}

Result<BundleImportResult> Client::import_bundle(
    const std::string& ns, const std::function<Result<size_t>(char* buffer, size_t capacity)>& read) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ImportBundleResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::ImportBundleRequest>> stream = impl_->cache->ImportBundle(&context, &response);
  v1::ImportBundleRequest message;
  message.set_namespace_(ns);
  std::vector<char> buffer(k_import_chunk_bytes);
  std::optional<Error> read_failed;
  bool sent_first = false;
  while (true) {
    Result<size_t> got = read(buffer.data(), buffer.size());
    if (!got) {
      read_failed = got.error();
      context.TryCancel();
      break;
    }
    // The first message goes even for an empty bundle: it names the namespace.
    if (*got == 0 && sent_first) break;
    message.set_data(buffer.data(), *got);
    // A refused write: the daemon has answered already (a damaged bundle);
    // Finish says why.
    if (!stream->Write(message)) break;
    sent_first = true;
    message.clear_namespace_();
    if (*got == 0) break;
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (read_failed) return *read_failed;
  if (!status.ok()) return from_grpc_status(status, context);
  BundleImportResult out;
  out.entries_imported = response.entries_imported();
  out.blobs_imported = response.blobs_imported();
  out.recipes_imported = response.recipes_imported();
  out.skipped = response.skipped();
  for (const v1::BundleSkip& skip : response.skips()) out.skips.push_back({skip.reason(), skip.count(), skip.example()});
  out.entry_format = response.entry_format();
  out.toolchains.assign(response.toolchains().begin(), response.toolchains().end());
  out.bundle_bytes = response.bundle_bytes();
  out.ns = response.namespace_();
  return out;
}

}  // namespace kjit
