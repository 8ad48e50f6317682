// Client blobs over Cache.PutBlob, GetBlob, PutBlobGroup and GetBlobGroup,
// and claims on groups over ClaimBlobGroup and ReleaseBlobClaim.
// Nothing is checked here: the daemon validates every field at its edge, so
// there is one set of rules and one wording of each refusal.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "client/client_impl.h"
#include "kjit/client.h"

namespace kjit {

Result<std::string> Client::put_blob(const std::string& ns, const std::string& key, const std::string& name,
                                     const std::string& data, bool replace) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::PutBlobRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_name(name);
  request.set_data(data);
  request.set_replace(replace);
  v1::PutBlobResponse response;
  grpc::Status status = impl_->cache->PutBlob(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return std::move(*response.mutable_cache_key());
}

Result<std::optional<std::string>> Client::get_blob(const std::string& ns, const std::string& key,
                                                    const std::string& name) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::GetBlobRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_name(name);
  v1::GetBlobResponse response;
  grpc::Status status = impl_->cache->GetBlob(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  if (!response.found()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(*response.mutable_data()));
}

Status Client::put_blob_group(const std::string& ns, const std::string& key, const std::string& group,
                              const std::vector<std::string>& names) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::PutBlobGroupRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_group(group);
  for (const std::string& name : names) request.add_names(name);
  v1::PutBlobGroupResponse response;
  grpc::Status status = impl_->cache->PutBlobGroup(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return Ok{};
}

namespace {

// The group a GetBlobGroupResponse holds, the members it deferred fetched.
Result<BlobGroup> read_group(const Client& client, const std::string& ns, const std::string& key,
                             v1::GetBlobGroupResponse& response) {
  BlobGroup out;
  for (v1::Blob& member : *response.mutable_members())
    out.members.push_back({std::move(*member.mutable_name()), std::move(*member.mutable_data())});
  out.missing.assign(response.missing().begin(), response.missing().end());
  // The daemon keeps one answer within max_blob_bytes and names the members
  // it left out; each fits a GetBlob of its own. One gone since is missing.
  for (const std::string& name : response.deferred()) {
    Result<std::optional<std::string>> data = client.get_blob(ns, key, name);
    if (!data) return data.error();
    if (*data)
      out.members.push_back({name, std::move(**data)});
    else
      out.missing.push_back(name);
  }
  return out;
}

// Reads the first message of a call, cancelling the call if none comes
// within `bound`: the claim call itself has no deadline, as it stays open
// for as long as its claim is held.
template <typename Reader, typename Message>
bool read_within(Reader& reader, grpc::ClientContext& context, Message& message, std::chrono::milliseconds bound) {
  std::mutex mutex;
  std::condition_variable read;
  bool done = false;
  std::thread guard([&] {
    std::unique_lock lock(mutex);
    if (!read.wait_for(lock, bound, [&] { return done; })) context.TryCancel();
  });
  const bool got = reader.Read(&message);
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  read.notify_one();
  guard.join();
  return got;
}

}  // namespace

Result<std::optional<BlobGroup>> Client::get_blob_group(const std::string& ns, const std::string& key,
                                                        const std::string& group) const {
  v1::GetBlobGroupResponse response;
  {
    grpc::ClientContext context;
    if (Status ready = impl_->prepare(context); !ready) return ready.error();
    v1::GetBlobGroupRequest request;
    request.set_namespace_(ns);
    request.set_key(key);
    request.set_group(group);
    grpc::Status status = impl_->cache->GetBlobGroup(&context, request, &response);
    if (!status.ok()) return from_grpc_status(status, context);
  }
  if (!response.found()) return std::optional<BlobGroup>();
  Result<BlobGroup> read = read_group(*this, ns, key, response);
  if (!read) return read.error();
  return std::optional<BlobGroup>(std::move(*read));
}

struct BlobClaim::Impl {
  Outcome outcome = Outcome::timed_out;
  BlobGroup group;
  std::string claim_id;
  std::chrono::milliseconds lease{0};
  bool fleet = false;
  // The call, open while the claim is held (the context outlives its reader).
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<v1::ClaimBlobGroupResponse>> reader;
  // For ReleaseBlobClaim, which may come after the Client is gone.
  std::unique_ptr<v1::Cache::Stub> cache;
  std::string authorization;
  std::chrono::milliseconds timeout{0};

  // Ends the call, and so the claim if it is still held.
  void end_call() {
    if (!reader) return;
    context->TryCancel();
    v1::ClaimBlobGroupResponse rest;
    while (reader->Read(&rest)) {
    }
    (void)reader->Finish();
    reader.reset();
  }

  ~Impl() { end_call(); }
};

BlobClaim::BlobClaim(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlobClaim::BlobClaim(BlobClaim&&) noexcept = default;
BlobClaim& BlobClaim::operator=(BlobClaim&&) noexcept = default;
BlobClaim::~BlobClaim() = default;

BlobClaim BlobClaim::found(BlobGroup group) {
  auto impl = std::make_unique<Impl>();
  impl->outcome = Outcome::hit;
  impl->group = std::move(group);
  return BlobClaim(std::move(impl));
}

BlobClaim::Outcome BlobClaim::outcome() const { return impl_->outcome; }
const BlobGroup& BlobClaim::group() const { return impl_->group; }
const std::string& BlobClaim::claim_id() const { return impl_->claim_id; }
std::chrono::milliseconds BlobClaim::lease() const { return impl_->lease; }
bool BlobClaim::fleet() const { return impl_->fleet; }

Status BlobClaim::release(bool failed) {
  if (!impl_ || !impl_->reader) return Ok{};
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->timeout);
  if (!impl_->authorization.empty()) context.AddMetadata("authorization", impl_->authorization);
  v1::ReleaseBlobClaimRequest request;
  request.set_claim_id(impl_->claim_id);
  request.set_failed(failed);
  v1::ReleaseBlobClaimResponse response;
  grpc::Status status = impl_->cache->ReleaseBlobClaim(&context, request, &response);
  // Ended either way: a call that ends gives its claim up too.
  impl_->end_call();
  if (!status.ok()) return from_grpc_status(status, context);
  return Ok{};
}

Result<BlobClaim> Client::claim_blob_group(const std::string& ns, const std::string& key, const std::string& group,
                                           std::chrono::milliseconds wait) const {
  auto claim = std::make_unique<BlobClaim::Impl>();
  claim->context = std::make_unique<grpc::ClientContext>();
  if (Status ready = impl_->prepare(*claim->context); !ready) return ready.error();
  claim->context->set_deadline(std::chrono::system_clock::time_point::max());
  v1::ClaimBlobGroupRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_group(group);
  request.set_wait_ms(static_cast<uint32_t>(std::min<int64_t>(wait.count(), UINT32_MAX)));
  claim->reader = impl_->cache->ClaimBlobGroup(claim->context.get(), request);
  v1::ClaimBlobGroupResponse answer;
  if (!read_within(*claim->reader, *claim->context, answer, wait + impl_->options.timeout)) {
    grpc::Status status = claim->reader->Finish();
    claim->reader.reset();
    if (status.ok()) return make_error(ErrorCode::internal, "ClaimBlobGroup ended without an answer");
    return from_grpc_status(status, *claim->context);
  }
  switch (answer.answer_case()) {
    case v1::ClaimBlobGroupResponse::kClaimed:
      claim->outcome = BlobClaim::Outcome::claimed;
      claim->claim_id = answer.claimed().claim_id();
      claim->lease = std::chrono::milliseconds(answer.claimed().lease_ms());
      claim->fleet = answer.claimed().fleet();
      claim->cache = v1::Cache::NewStub(impl_->channel);
      claim->authorization = impl_->authorization;
      claim->timeout = impl_->options.timeout;
      return BlobClaim(std::move(claim));
    case v1::ClaimBlobGroupResponse::kGroup: {
      claim->end_call();
      Result<BlobGroup> read = read_group(*this, ns, key, *answer.mutable_group());
      if (!read) return read.error();
      claim->outcome = BlobClaim::Outcome::hit;
      claim->group = std::move(*read);
      return BlobClaim(std::move(claim));
    }
    case v1::ClaimBlobGroupResponse::kTimedOut:
      claim->end_call();
      claim->outcome = BlobClaim::Outcome::timed_out;
      return BlobClaim(std::move(claim));
    default:
      break;
  }
  return make_error(ErrorCode::internal, "ClaimBlobGroup answered neither a group, a claim nor a timeout");
}

}  // namespace kjit
