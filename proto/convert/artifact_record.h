// An Artifact to and from kjit.internal.ArtifactRecord: the one conversion
// behind both a cache entry's metadata and a compile worker's answer.
#pragma once

#include "core/artifact.h"
#include "kjit/internal/artifact_record.pb.h"
#include "kjit/status.h"

namespace kjit {

// Every Artifact field but its bytes: whoever carries the bytes decides
// where (the record's payload field, or a cache entry's payload).
void to_record(const Artifact& artifact, internal::ArtifactRecord& record);

// Moves the record's fields (and its payload, if any) into an Artifact. An
// unknown artifact kind is an error naming it, for the caller to classify.
Result<Artifact> from_record(internal::ArtifactRecord&& record);

}  // namespace kjit
