#include "worker_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace kjit {

worker::Job to_worker_job(const CompileJob& job) {
  worker::Job out;
  out.set_input_kind(std::string(to_string(job.input_kind)));
  out.set_input(job.input);
  out.set_input_name(job.input_name);
  out.set_target(job.target.canonical());
  for (const std::string& option : job.options) out.add_options(option);
  for (const auto& [name, content] : job.headers) {
    worker::Header& header = *out.add_headers();
    header.set_name(name);
    header.set_content(content);
  }
  for (const std::string& expression : job.name_expressions) out.add_name_expressions(expression);
  out.set_wanted(std::string(to_string(job.wanted)));
  out.set_pipeline(job.pipeline);
  for (const auto& [key, value] : job.pass_args) {
    worker::PassArg& arg = *out.add_pass_args();
    arg.set_key(key);
    arg.set_value(value);
  }
  out.set_allow_ptx_fallback(job.allow_ptx_fallback);
  return out;
}

Result<CompileJob> from_worker_job(const worker::Job& in) {
  CompileJob job;
  std::optional<InputKind> kind = parse_input_kind(in.input_kind());
  std::optional<ArtifactKind> wanted = parse_artifact_kind(in.wanted());
  Result<Target> target = parse_target(in.target());
  if (!kind || !wanted || !target)
    return make_error(ErrorCode::internal, "compile worker: a job names an unknown input kind, artifact or target");
  job.input_kind = *kind;
  job.input = in.input();
  job.input_name = in.input_name();
  job.target = *target;
  job.options.assign(in.options().begin(), in.options().end());
  for (const worker::Header& header : in.headers()) job.headers.emplace(header.name(), header.content());
  job.name_expressions.assign(in.name_expressions().begin(), in.name_expressions().end());
  job.wanted = *wanted;
  job.pipeline = in.pipeline();
  for (const worker::PassArg& arg : in.pass_args()) job.pass_args.emplace(arg.key(), arg.value());
  job.allow_ptx_fallback = in.allow_ptx_fallback();
  return job;
}

namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    // MSG_NOSIGNAL: a worker that died must not SIGPIPE the daemon.
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes into `out`, polling so the deadline holds.
FrameRead read_all(int fd, char* out, size_t size, std::optional<std::chrono::steady_clock::time_point> deadline) {
  while (size > 0) {
    int timeout_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return FrameRead::timed_out;
      timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, INT32_MAX));
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return FrameRead::error;
    if (ready == 0) continue;  // the deadline is checked at the top
    ssize_t n = ::read(fd, out, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return errno == ECONNRESET ? FrameRead::closed : FrameRead::error;
    if (n == 0) return FrameRead::closed;
    out += n;
    size -= static_cast<size_t>(n);
  }
  return FrameRead::ok;
}

}  // namespace

Status write_frame(int fd, const google::protobuf::MessageLite& message) {
  std::string frame(4, '\0');
  if (!message.AppendToString(&frame)) return make_error(ErrorCode::internal, "compile worker: cannot serialize");
  const size_t size = frame.size() - 4;
  if (size > k_max_worker_frame_bytes) return make_error(ErrorCode::resource_exhausted, "compile worker: message too large");
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  if (!write_all(fd, frame.data(), frame.size()))
    return make_error(ErrorCode::unavailable, "compile worker: the other end is gone");
  return Ok{};
}

FrameRead read_frame(int fd, std::string& bytes, std::optional<std::chrono::steady_clock::time_point> deadline) {
  unsigned char length[4];
  if (FrameRead r = read_all(fd, reinterpret_cast<char*>(length), 4, deadline); r != FrameRead::ok) return r;
  const uint32_t size = uint32_t{length[0]} | uint32_t{length[1]} << 8 | uint32_t{length[2]} << 16 |
                        uint32_t{length[3]} << 24;
  if (size > k_max_worker_frame_bytes) return FrameRead::error;
  bytes.resize(size);
  return read_all(fd, bytes.data(), size, deadline);
}

}  // namespace kjit
