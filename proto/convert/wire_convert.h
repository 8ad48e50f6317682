// Conversions between the wire types (kjit.v1 protos) and kjit's value types,
// shared by the daemon and the client library so both read the wire alike.
#pragma once

#include <optional>

#include "kjit/types.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit {

// Trailing metadata of a failed call: the full compiler log (larger than a
// status message may be) and the message without the log excerpt.
inline constexpr const char* k_log_trailer = "kjit-log-bin";
inline constexpr const char* k_message_trailer = "kjit-message-bin";
// On a refusal worth retrying: milliseconds to wait, in kjit's own trailer
// and in gRPC's retry pushback (which a client's retry policy honours).
inline constexpr const char* k_retry_after_trailer = "kjit-retry-after-ms";
inline constexpr const char* k_grpc_retry_pushback_trailer = "grpc-retry-pushback-ms";

v1::InputKind to_proto(InputKind kind);
std::optional<InputKind> from_proto(v1::InputKind kind);  // nullopt: unspecified/unknown

v1::ArtifactKind to_proto(ArtifactKind kind);
ArtifactKind from_proto(v1::ArtifactKind kind);  // unspecified means cubin

void to_proto(const KernelInfo& info, v1::KernelInfo& out);
KernelInfo from_proto(const v1::KernelInfo& info);

void to_proto(const Dim3& dims, v1::Dim3& out);
Dim3 from_proto(const v1::Dim3& dims);

void to_proto(const TritonEdit& edit, v1::TritonEdit& out);
TritonEdit from_proto(const v1::TritonEdit& edit);

}  // namespace kjit
