// The kjit.v1.Cache gRPC service: statistics, listing, removal, gc, verify,
// Explain (why two requests got different keys), client blobs, and
// portable bundles (export, import).
#pragma once

#include <memory>

#include "server/compile/blob_store.h"
#include "server/compile/cached_compiler.h"
#include "server/rpc/call_gate.h"
#include "kjit/v1/cache.grpc.pb.h"

namespace kjit {

class CacheService final : public v1::Cache::Service {
 public:
  // gate null: calls pass a gate without tenants or metrics.
  explicit CacheService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<CallGate> gate = nullptr);

  const BlobStore* blobs() const { return blobs_.get(); }

  grpc::Status Stats(grpc::ServerContext*, const v1::StatsRequest*, v1::StatsResponse*) override;
  grpc::Status List(grpc::ServerContext*, const v1::ListRequest*, v1::ListResponse*) override;
  grpc::Status Remove(grpc::ServerContext*, const v1::RemoveRequest*, v1::RemoveResponse*) override;
  grpc::Status Gc(grpc::ServerContext*, const v1::GcRequest*, v1::GcResponse*) override;
  grpc::Status Verify(grpc::ServerContext*, const v1::VerifyRequest*, v1::VerifyResponse*) override;
  grpc::Status Explain(grpc::ServerContext*, const v1::ExplainRequest*, v1::ExplainResponse*) override;
  grpc::Status PutBlob(grpc::ServerContext*, const v1::PutBlobRequest*, v1::PutBlobResponse*) override;
  grpc::Status GetBlob(grpc::ServerContext*, const v1::GetBlobRequest*, v1::GetBlobResponse*) override;
  grpc::Status PutBlobGroup(grpc::ServerContext*, const v1::PutBlobGroupRequest*, v1::PutBlobGroupResponse*) override;
  grpc::Status GetBlobGroup(grpc::ServerContext*, const v1::GetBlobGroupRequest*, v1::GetBlobGroupResponse*) override;
  // A holder's call stays open while its claim is held: a thread of gRPC's
  // synchronous pool per call, bounded by [limits] max_claims_per_namespace
  // and max_claim_waiters_*.
  grpc::Status ClaimBlobGroup(grpc::ServerContext*, const v1::ClaimBlobGroupRequest*,
                              grpc::ServerWriter<v1::ClaimBlobGroupResponse>*) override;
  grpc::Status ReleaseBlobClaim(grpc::ServerContext*, const v1::ReleaseBlobClaimRequest*,
                                v1::ReleaseBlobClaimResponse*) override;
  grpc::Status GetDirectReadGrant(grpc::ServerContext*, const v1::DirectReadGrantRequest*,
                                  v1::DirectReadGrantResponse*) override;
  // Portable bundles (docs/bundle-format.md): the bundle's bytes stream out
  // as it is written and in as it is read, so neither side holds it whole.
  grpc::Status ExportBundle(grpc::ServerContext*, const v1::ExportBundleRequest*,
                            grpc::ServerWriter<v1::BundleChunk>*) override;
  grpc::Status ImportBundle(grpc::ServerContext*, grpc::ServerReader<v1::ImportBundleRequest>*,
                            v1::ImportBundleResponse*) override;

 private:
  Result<CacheKey> key_of(const v1::ExplainSide& side, const Caller& caller) const;
  // The namespace a bundle call reaches: the caller's own, or the one the operator names.
  Result<std::string> bundle_namespace_of(const Caller& caller, std::string_view asked) const;
  std::shared_ptr<const CachedCompiler> compiler_;
  std::shared_ptr<CallGate> gate_;
  std::unique_ptr<BlobStore> blobs_;  // null when the cache is off
};

}  // namespace kjit
