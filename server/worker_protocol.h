// The framing and messages between kjitd and a compile worker process
// (compile_worker.proto): each message is a 4-byte little-endian length and
// the serialized proto, over a unix socketpair.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/compile_job.h"
#include "kjit/status.h"
#include "server/compile_worker.pb.h"

namespace kjit {

// Larger than any job (inputs and headers are bounded far below it) or
// artifact; a length beyond it means the peer is not speaking the protocol.
inline constexpr uint32_t k_max_worker_frame_bytes = 1u << 30;

worker::Job to_worker_job(const CompileJob& job);
Result<CompileJob> from_worker_job(const worker::Job& job);

// Writes one frame; an error when the peer is gone.
Status write_frame(int fd, const google::protobuf::MessageLite& message);

enum class FrameRead { ok, closed, timed_out, error };
// Reads one frame into `bytes`, waiting until `deadline` (nullopt: forever).
// `closed` when the peer closed the socket (or died) before a whole frame.
FrameRead read_frame(int fd, std::string& bytes, std::optional<std::chrono::steady_clock::time_point> deadline);

}  // namespace kjit
