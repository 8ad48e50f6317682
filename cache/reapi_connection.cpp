// REAPI calls with deadlines, headers and a circuit breaker (see reapi_connection.h).
#include "cache/reapi_connection.h"

#include <grpcpp/grpcpp.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>

#include "build/bazel/remote/execution/v2/remote_execution.grpc.pb.h"
#include "google/bytestream/bytestream.grpc.pb.h"

namespace kjit {

namespace re = build::bazel::remote::execution::v2;
namespace bs = google::bytestream;

namespace {

// gRPC's default receive limit; batch calls stay below it whatever the server
// allows, with room for the message around the blobs.
constexpr int64_t k_grpc_message_limit = 4 << 20;
constexpr int64_t k_batch_overhead = 64 << 10;
constexpr size_t k_bytestream_chunk = 1 << 20;

struct DigestFunction {
  re::DigestFunction::Value value;
  const char* name;  // as OpenSSL and kjit's messages name it
};

// In kjit's order of preference; a server listing none takes SHA-256.
constexpr DigestFunction k_digest_functions[] = {
    {re::DigestFunction::SHA256, "sha256"}, {re::DigestFunction::SHA512, "sha512"},
    {re::DigestFunction::SHA384, "sha384"}, {re::DigestFunction::SHA1, "sha1"},
};

re::DigestFunction::Value digest_function_value(std::string_view name) {
  for (const DigestFunction& f : k_digest_functions)
    if (name == f.name) return f.value;
  return re::DigestFunction::UNKNOWN;
}

// Whether a failed call says the server (or the way to it) is failing, as
// opposed to an answer about this request.
bool is_server_failure(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::OUT_OF_RANGE:
      return false;
    default:
      return true;
  }
}

Error call_error(std::string_view call, const grpc::Status& status) {
  const ErrorCode code = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? ErrorCode::deadline_exceeded
                         : status.error_code() == grpc::StatusCode::UNAUTHENTICATED    ? ErrorCode::unauthenticated
                         : status.error_code() == grpc::StatusCode::PERMISSION_DENIED  ? ErrorCode::permission_denied
                                                                                       : ErrorCode::unavailable;
  return make_error(code, "REAPI " + std::string(call) + " failed (gRPC code " +
                              std::to_string(static_cast<int>(status.error_code())) + "): " + status.error_message());
}

Result<std::string> read_whole_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::invalid_argument, std::string(what) + " " + path + " cannot be read");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// "grpc://h:p" → ("h:p", plain); "grpcs://h:p" → ("h:p", TLS); "unix:/p" and
// "h:p" as they are, plain.
struct Endpoint {
  std::string target;
  bool tls = false;
};

Result<Endpoint> parse_endpoint(const std::string& endpoint) {
  auto strip = [&](std::string_view scheme) { return endpoint.substr(scheme.size()); };
  Endpoint out;
  if (endpoint.starts_with("grpcs://")) {
    out = {strip("grpcs://"), true};
  } else if (endpoint.starts_with("grpc://")) {
    out = {strip("grpc://"), false};
  } else if (endpoint.starts_with("unix:")) {
    out = {endpoint, false};
    if (endpoint.size() == 5) return make_error(ErrorCode::invalid_argument, "REAPI endpoint unix: names no socket");
    return out;
  } else if (endpoint.find("://") != std::string::npos) {
    return make_error(ErrorCode::invalid_argument,
                      "REAPI endpoint " + endpoint + ": the scheme must be grpc://, grpcs:// or unix:");
  } else {
    out = {endpoint, false};
  }
  while (!out.target.empty() && out.target.back() == '/') out.target.pop_back();
  if (out.target.empty() || out.target.find('/') != std::string::npos)
    return make_error(ErrorCode::invalid_argument, "REAPI endpoint " + endpoint + " must be HOST:PORT after its scheme");
  return out;
}

// A unique upload name for ByteStream writes.
std::string upload_id() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return text;
}

std::string with_instance(std::string_view instance, std::string rest) {
  return instance.empty() ? rest : std::string(instance) + "/" + rest;
}

re::Digest to_wire(const ReapiDigest& d) {
  re::Digest out;
  out.set_hash(d.hash);
  out.set_size_bytes(d.size);
  return out;
}

}  // namespace

struct ReapiConnection::Stubs {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<re::ActionCache::Stub> action_cache;
  std::unique_ptr<re::ContentAddressableStorage::Stub> cas;
  std::unique_ptr<re::Capabilities::Stub> capabilities;
  std::unique_ptr<bs::ByteStream::Stub> bytestream;
};

ReapiConnection::ReapiConnection(Options options)
    : options_(std::move(options)), stubs_(std::make_unique<Stubs>()), breaker_(options_.breaker) {}

ReapiConnection::~ReapiConnection() = default;

Result<std::shared_ptr<ReapiConnection>> ReapiConnection::open(Options options) {
  Result<Endpoint> endpoint = parse_endpoint(options.endpoint);
  if (!endpoint) return endpoint.error();
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (endpoint->tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      Result<std::string> roots = read_whole_file(options.tls_ca_file, "REAPI TLS CA file");
      if (!roots) return roots.error();
      ssl.pem_root_certs = *roots;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (!options.token_file.empty()) {
    if (Result<std::string> token = read_whole_file(options.token_file, "REAPI token file"); !token)
      return token.error();
  }
  std::shared_ptr<ReapiConnection> connection(new ReapiConnection(std::move(options)));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(k_grpc_message_limit + k_batch_overhead));
  // Reconnect soon after the server comes back, not after gRPC's default
  // two-minute backoff: the breaker already keeps calls from piling up.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  Stubs& s = *connection->stubs_;
  s.channel = grpc::CreateCustomChannel(endpoint->target, credentials, args);
  s.action_cache = re::ActionCache::NewStub(s.channel);
  s.cas = re::ContentAddressableStorage::NewStub(s.channel);
  s.capabilities = re::Capabilities::NewStub(s.channel);
  s.bytestream = bs::ByteStream::NewStub(s.channel);
  return connection;
}

std::vector<std::pair<std::string, std::string>> ReapiConnection::call_metadata() {
  std::vector<std::pair<std::string, std::string>> out = options_.headers;
  if (!options_.token_file.empty()) {
    struct stat st{};
    std::lock_guard lock(mutex_);
    if (::stat(options_.token_file.c_str(), &st) == 0) {
      const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      if (mtime != token_mtime_ns_) {
        if (Result<std::string> token = read_whole_file(options_.token_file, "REAPI token file"); token) {
          std::string text = *token;
          while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
          token_ = text;
          token_mtime_ns_ = mtime;
        }
      }
    }
    // A token that cannot be read now is the last one read.
    if (!token_.empty()) out.emplace_back("authorization", "Bearer " + token_);
  }
  return out;
}

Status ReapiConnection::admit() {
  if (breaker_.allow()) return Ok{};
  ++skipped_;
  return make_error(ErrorCode::unavailable, "REAPI server " + options_.endpoint + " skipped: it has been failing");
}

void ReapiConnection::settle(bool server_failed) {
  if (server_failed) {
    ++errors_;
    breaker_.record_failure();
  } else {
    breaker_.record_success();
  }
}

namespace {

// A client context with the call's deadline and headers.
std::unique_ptr<grpc::ClientContext> make_context(std::chrono::milliseconds timeout,
                                                  const std::vector<std::pair<std::string, std::string>>& metadata) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  for (const auto& [name, value] : metadata) context->AddMetadata(name, value);
  return context;
}

}  // namespace

Result<ReapiCapabilities> ReapiConnection::capabilities() {
  {
    std::lock_guard lock(mutex_);
    if (capabilities_) return *capabilities_;
  }
  if (Status admitted = admit(); !admitted) return admitted.error();
  re::GetCapabilitiesRequest request;
  request.set_instance_name(options_.instance);
  re::ServerCapabilities reply;
  auto context = make_context(options_.timeout, call_metadata());
  grpc::Status status = stubs_->capabilities->GetCapabilities(context.get(), request, &reply);
  settle(!status.ok() && is_server_failure(status.error_code()));
  if (!status.ok()) return call_error("GetCapabilities", status);
  const re::CacheCapabilities& cache = reply.cache_capabilities();
  ReapiCapabilities out;
  if (cache.digest_functions_size() == 0) {
    out.digest_function = "sha256";
  } else {
    for (const DigestFunction& f : k_digest_functions) {
      const auto& offered = cache.digest_functions();
      if (std::find(offered.begin(), offered.end(), f.value) != offered.end()) {
        out.digest_function = f.name;
        break;
      }
    }
  }
  if (out.digest_function.empty())
    return make_error(ErrorCode::failed_precondition,
                      "REAPI server " + options_.endpoint +
                          " offers no digest function kjit computes (SHA-256, SHA-512, SHA-384, SHA-1)");
  const int64_t limit = k_grpc_message_limit - k_batch_overhead;
  out.max_batch_bytes = cache.max_batch_total_size_bytes() > 0
                            ? std::min(cache.max_batch_total_size_bytes() - k_batch_overhead, limit)
                            : limit;
  out.max_batch_bytes = std::max<int64_t>(out.max_batch_bytes, 0);
  // A server that does not say lets clients write (bazel-remote, BuildGrid
  // with updates allowed); one that refuses fails the update, counted.
  out.updates_allowed = !cache.has_action_cache_update_capabilities() ||
                        cache.action_cache_update_capabilities().update_enabled();
  std::lock_guard lock(mutex_);
  capabilities_ = out;
  return out;
}

Result<ReapiDigest> ReapiConnection::digest_of(std::string_view bytes) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  const EVP_MD* md = EVP_get_digestbyname(caps->digest_function.c_str());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!md || EVP_Digest(bytes.data(), bytes.size(), out, &size, md, nullptr) != 1)
    return make_error(ErrorCode::internal, "OpenSSL cannot compute " + caps->digest_function);
  static constexpr char k_hex[] = "0123456789abcdef";
  ReapiDigest digest;
  digest.hash.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    digest.hash += k_hex[out[i] >> 4];
    digest.hash += k_hex[out[i] & 15];
  }
  digest.size = static_cast<int64_t>(bytes.size());
  return digest;
}

Result<std::optional<ReapiConnection::Output>> ReapiConnection::get_output(std::string_view instance,
                                                                           const ReapiDigest& action,
                                                                           std::string_view path) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  if (Status admitted = admit(); !admitted) return admitted.error();
  re::GetActionResultRequest request;
  request.set_instance_name(std::string(instance));
  *request.mutable_action_digest() = to_wire(action);
  request.add_inline_output_files(std::string(path));
  request.set_digest_function(digest_function_value(caps->digest_function));
  re::ActionResult result;
  auto context = make_context(options_.timeout, call_metadata());
  grpc::Status status = stubs_->action_cache->GetActionResult(context.get(), request, &result);
  settle(!status.ok() && is_server_failure(status.error_code()));
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<Output>();
  if (!status.ok()) return call_error("GetActionResult", status);
  for (const re::OutputFile& file : result.output_files()) {
    if (file.path() != path) continue;
    Output out{{file.digest().hash(), file.digest().size_bytes()}, std::nullopt};
    // Inlined contents of an empty file and no contents look the same; an
    // entry is never empty, so empty contents mean "not inlined".
    if (!file.contents().empty()) out.contents = file.contents();
    return std::optional<Output>(std::move(out));
  }
  return std::optional<Output>();
}

Status ReapiConnection::update_output(std::string_view instance, const ReapiDigest& action, std::string_view path,
                                      const std::optional<ReapiDigest>& output) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  if (Status admitted = admit(); !admitted) return admitted;
  re::UpdateActionResultRequest request;
  request.set_instance_name(std::string(instance));
  *request.mutable_action_digest() = to_wire(action);
  request.mutable_action_result()->set_exit_code(0);
  if (output) {
    re::OutputFile* file = request.mutable_action_result()->add_output_files();
    file->set_path(std::string(path));
    *file->mutable_digest() = to_wire(*output);
  }
  request.set_digest_function(digest_function_value(caps->digest_function));
  re::ActionResult reply;
  auto context = make_context(options_.timeout, call_metadata());
  grpc::Status status = stubs_->action_cache->UpdateActionResult(context.get(), request, &reply);
  settle(!status.ok() && is_server_failure(status.error_code()));
  if (!status.ok()) return call_error("UpdateActionResult", status);
  return Ok{};
}

Result<std::optional<std::string>> ReapiConnection::read_blob(std::string_view instance, const ReapiDigest& digest) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  if (Status admitted = admit(); !admitted) return admitted.error();
  if (digest.size <= caps->max_batch_bytes) {
    re::BatchReadBlobsRequest request;
    request.set_instance_name(std::string(instance));
    *request.add_digests() = to_wire(digest);
    request.set_digest_function(digest_function_value(caps->digest_function));
    re::BatchReadBlobsResponse reply;
    auto context = make_context(options_.timeout, call_metadata());
    grpc::Status status = stubs_->cas->BatchReadBlobs(context.get(), request, &reply);
    settle(!status.ok() && is_server_failure(status.error_code()));
    if (!status.ok()) return call_error("BatchReadBlobs", status);
    if (reply.responses_size() != 1)
      return make_error(ErrorCode::unavailable, "REAPI BatchReadBlobs answered " +
                                                    std::to_string(reply.responses_size()) + " blobs for one asked");
    re::BatchReadBlobsResponse::Response& blob = *reply.mutable_responses(0);
    if (blob.status().code() == static_cast<int>(grpc::StatusCode::NOT_FOUND)) return std::optional<std::string>();
    if (blob.status().code() != 0)
      return make_error(ErrorCode::unavailable, "REAPI BatchReadBlobs refused a blob: " + blob.status().message());
    return std::optional<std::string>(std::move(*blob.mutable_data()));
  }
  bs::ReadRequest request;
  request.set_resource_name(with_instance(instance, "blobs/" + digest.hash + "/" + std::to_string(digest.size)));
  // A large blob gets a deadline that grows with it (at least 16 MiB/s).
  auto context = make_context(options_.timeout + std::chrono::milliseconds(digest.size >> 14), call_metadata());
  std::unique_ptr<grpc::ClientReader<bs::ReadResponse>> reader = stubs_->bytestream->Read(context.get(), request);
  std::string data;
  data.reserve(static_cast<size_t>(digest.size));
  bs::ReadResponse chunk;
  while (reader->Read(&chunk)) {
    data += chunk.data();
    if (static_cast<int64_t>(data.size()) > digest.size) break;  // longer than named: the check below refuses it
  }
  if (static_cast<int64_t>(data.size()) > digest.size) context->TryCancel();
  grpc::Status status = reader->Finish();
  if (static_cast<int64_t>(data.size()) > digest.size) {
    settle(false);
    return std::optional<std::string>(std::move(data));
  }
  settle(!status.ok() && is_server_failure(status.error_code()));
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::optional<std::string>();
  if (!status.ok()) return call_error("ByteStream.Read", status);
  return std::optional<std::string>(std::move(data));
}

Result<std::vector<ReapiDigest>> ReapiConnection::missing_blobs(std::string_view instance,
                                                                const std::vector<ReapiDigest>& digests) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  if (Status admitted = admit(); !admitted) return admitted.error();
  re::FindMissingBlobsRequest request;
  request.set_instance_name(std::string(instance));
  for (const ReapiDigest& digest : digests) *request.add_blob_digests() = to_wire(digest);
  request.set_digest_function(digest_function_value(caps->digest_function));
  re::FindMissingBlobsResponse reply;
  auto context = make_context(options_.timeout, call_metadata());
  grpc::Status status = stubs_->cas->FindMissingBlobs(context.get(), request, &reply);
  settle(!status.ok() && is_server_failure(status.error_code()));
  if (!status.ok()) return call_error("FindMissingBlobs", status);
  std::vector<ReapiDigest> missing;
  for (const re::Digest& digest : reply.missing_blob_digests())
    missing.push_back(ReapiDigest{digest.hash(), digest.size_bytes()});
  return missing;
}

Status ReapiConnection::write_blobs(std::string_view instance,
                                    const std::vector<std::pair<ReapiDigest, std::string_view>>& blobs) {
  Result<ReapiCapabilities> caps = capabilities();
  if (!caps) return caps.error();
  std::vector<const std::pair<ReapiDigest, std::string_view>*> batch;
  int64_t batch_bytes = 0;
  auto send_batch = [&]() -> Status {
    if (batch.empty()) return Ok{};
    if (Status admitted = admit(); !admitted) return admitted;
    re::BatchUpdateBlobsRequest request;
    request.set_instance_name(std::string(instance));
    request.set_digest_function(digest_function_value(caps->digest_function));
    for (const auto* blob : batch) {
      re::BatchUpdateBlobsRequest::Request* r = request.add_requests();
      *r->mutable_digest() = to_wire(blob->first);
      r->set_data(std::string(blob->second));
    }
    re::BatchUpdateBlobsResponse reply;
    auto context = make_context(options_.timeout, call_metadata());
    grpc::Status status = stubs_->cas->BatchUpdateBlobs(context.get(), request, &reply);
    settle(!status.ok() && is_server_failure(status.error_code()));
    batch.clear();
    batch_bytes = 0;
    if (!status.ok()) return call_error("BatchUpdateBlobs", status);
    for (const auto& answer : reply.responses())
      if (answer.status().code() != 0)
        return make_error(ErrorCode::unavailable, "REAPI BatchUpdateBlobs refused blob " + answer.digest().hash() +
                                                      ": " + answer.status().message());
    return Ok{};
  };
  for (const auto& blob : blobs) {
    if (blob.first.size > caps->max_batch_bytes) {
      if (Status admitted = admit(); !admitted) return admitted;
      const std::string resource = with_instance(
          instance, "uploads/" + upload_id() + "/blobs/" + blob.first.hash + "/" + std::to_string(blob.first.size));
      auto context = make_context(options_.timeout + std::chrono::milliseconds(blob.first.size >> 14), call_metadata());
      bs::WriteResponse reply;
      std::unique_ptr<grpc::ClientWriter<bs::WriteRequest>> writer = stubs_->bytestream->Write(context.get(), &reply);
      size_t offset = 0;
      bool sent = true;
      do {
        bs::WriteRequest chunk;
        if (offset == 0) chunk.set_resource_name(resource);
        const size_t n = std::min(k_bytestream_chunk, blob.second.size() - offset);
        chunk.set_write_offset(static_cast<int64_t>(offset));
        chunk.set_data(std::string(blob.second.substr(offset, n)));
        offset += n;
        chunk.set_finish_write(offset == blob.second.size());
        sent = writer->Write(chunk);
      } while (sent && offset < blob.second.size());
      writer->WritesDone();
      grpc::Status status = writer->Finish();
      settle(!status.ok() && is_server_failure(status.error_code()));
      if (!status.ok()) return call_error("ByteStream.Write", status);
      continue;
    }
    if (batch_bytes + blob.first.size > caps->max_batch_bytes)
      if (Status s = send_batch(); !s) return s;
    batch.push_back(&blob);
    batch_bytes += blob.first.size;
  }
  return send_batch();
}

}  // namespace kjit
