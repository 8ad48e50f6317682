// Client blobs over Cache.PutBlob, GetBlob, PutBlobGroup and GetBlobGroup.
// Nothing is checked here: the daemon validates every field at its edge, so
// there is one set of rules and one wording of each refusal.
#include <grpcpp/grpcpp.h>

#include "client/client_impl.h"
#include "kjit/client.h"

namespace kjit {

Result<std::string> Client::put_blob(const std::string& ns, const std::string& key, const std::string& name,
                                     const std::string& data) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::PutBlobRequest request;
  request.set_namespace_(ns);
  request.set_key(key);
  request.set_name(name);
  request.set_data(data);
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
  BlobGroup out;
  for (v1::Blob& member : *response.mutable_members())
    out.members.push_back({std::move(*member.mutable_name()), std::move(*member.mutable_data())});
  out.missing.assign(response.missing().begin(), response.missing().end());
  // The daemon keeps one answer within max_blob_bytes and names the members
  // it left out; each fits a GetBlob of its own. One gone since is missing.
  for (const std::string& name : response.deferred()) {
    Result<std::optional<std::string>> data = get_blob(ns, key, name);
    if (!data) return data.error();
    if (*data)
      out.members.push_back({name, std::move(**data)});
    else
      out.missing.push_back(name);
  }
  return std::optional<BlobGroup>(std::move(out));
}

}  // namespace kjit
