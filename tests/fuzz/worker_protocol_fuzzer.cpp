// Fuzzes the daemon <-> compile worker protocol: read_frame over a real
// socketpair, and from_worker_job on the bytes parsed as a worker::Job.
//
// The worker is the same binary, but a crashed or confused one must not take
// the daemon down with it.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fuzz_check.h"
#include "server/workers/worker_protocol.h"

namespace {

// A frame declaring more bytes than follow makes read_frame allocate the
// declared size before it sees the stream end, as the protocol intends (up
// to k_max_worker_frame_bytes). Past this size such inputs only slow the
// fuzzer down, so the stream is cut before them.
constexpr uint32_t k_max_unbacked_frame_bytes = 1u << 20;
// Longer streams add time per input and reach no other code.
constexpr size_t k_max_stream_bytes = 256 * 1024;

void check_job(std::string_view bytes) {
  kjit::worker::Job job;
  if (!job.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  static const kjit::DaemonConfig config{};
  kjit::Result<kjit::WorkerJob> decoded = kjit::from_worker_job(job, config);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().code == kjit::ErrorCode::internal);
    return;
  }
  // What the daemon sends for a job and its plan must come back the same.
  kjit::Result<kjit::WorkerJob> again =
      kjit::from_worker_job(kjit::to_worker_job(decoded->job, decoded->plan, decoded->caller_namespace), config);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->caller_namespace == decoded->caller_namespace);
  FUZZ_CHECK(again->job == decoded->job);
  FUZZ_CHECK(again->plan == decoded->plan);
}

uint32_t load_le32(std::string_view bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= uint32_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  return value;
}

// The frames read_frame must return for `stream`, and how the last read
// ends; `stream` is cut where a frame would only cost a large allocation.
struct Expected {
  std::vector<std::string_view> frames;
  kjit::FrameRead last = kjit::FrameRead::closed;
};

Expected expect(std::string_view& stream) {
  Expected expected;
  size_t offset = 0;
  while (stream.size() - offset >= 4) {
    const uint32_t size = load_le32(stream, offset);
    const size_t left = stream.size() - offset - 4;
    if (size > kjit::k_max_worker_frame_bytes) {
      expected.last = kjit::FrameRead::error;
      return expected;
    }
    if (size > left) {
      if (size > k_max_unbacked_frame_bytes) stream = stream.substr(0, offset);
      return expected;  // closed: the peer went away mid-frame
    }
    expected.frames.push_back(stream.substr(offset + 4, size));
    offset += 4 + size;
  }
  return expected;  // closed, between frames or inside a length prefix
}

void check_framing(std::string_view stream) {
  if (stream.size() > k_max_stream_bytes) stream = stream.substr(0, k_max_stream_bytes);
  const Expected expected = expect(stream);

  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  // The peer writes from its own thread, as a worker process would, so a
  // stream longer than the socket's buffer cannot block the reader.
  std::thread peer([&] {
    size_t written = 0;
    while (written < stream.size()) {
      ssize_t n = ::send(fds[1], stream.data() + written, stream.size() - written, MSG_NOSIGNAL);
      if (n <= 0) break;  // the reader stopped early (an error frame) and closed its end
      written += static_cast<size_t>(n);
    }
    ::close(fds[1]);  // the peer is gone after the last byte: reads end in `closed`
  });

  // A deadline only so that a wrong `closed` shows as a timeout, not a hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::string frame;
  size_t count = 0;
  kjit::FrameRead result;
  while ((result = kjit::read_frame(fds[0], frame, deadline)) == kjit::FrameRead::ok) {
    FUZZ_CHECK(count < expected.frames.size());
    FUZZ_CHECK(frame == expected.frames[count]);
    ++count;
    check_job(frame);
  }
  ::close(fds[0]);
  peer.join();
  FUZZ_CHECK(count == expected.frames.size());
  FUZZ_CHECK(result == expected.last);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_job(bytes);
  check_framing(bytes);
  return 0;
}
