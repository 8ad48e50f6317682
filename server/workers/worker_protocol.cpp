#include "server/workers/worker_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "server/edge/compile_translation.h"
#include "core/fd_io.h"
#include "convert/artifact_record.h"
#include "pipeline/cache_key.h"

namespace kjit {

worker::Job to_worker_job(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace) {
  worker::Job out;
  to_compile_request(job, *out.mutable_request());
  out.set_caller_namespace(std::string(caller_namespace));
  worker::Plan& p = *out.mutable_plan();
  p.set_pipeline(plan.pipeline.name);
  for (const StageSpec& stage : plan.pipeline.stages) {
    worker::Stage& s = *p.add_stages();
    s.set_name(stage.name);
    s.set_takes(std::string(to_string(stage.takes)));
    s.set_gives(std::string(to_string(stage.gives)));
    for (const std::string& pass : stage.passes) s.add_passes(pass);
  }
  for (const auto& [key, value] : plan.args) (*p.mutable_args())[key] = value;
  p.set_key(plan.key.hex);
  for (const KeyComponent& component : plan.key.components) {
    internal::KeyComponent& c = *p.add_key_components();
    c.set_name(component.name);
    c.set_value(component.value);
  }
  return out;
}

Result<WorkerJob> from_worker_job(const worker::Job& in, const DaemonConfig& config) {
  auto garbled = [](const std::string& what) {
    return make_error(ErrorCode::internal, "compile worker: a job's " + what);
  };
  Result<CompileJob> job = to_compile_job(in.request(), config);
  if (!job) return garbled("request is refused: " + job.error().message);
  const worker::Plan& p = in.plan();
  CompilePlan plan;
  plan.pipeline.name = p.pipeline();
  plan.pipeline.inputs = {job->input_kind};
  for (const worker::Stage& s : p.stages()) {
    std::optional<IrKind> takes = parse_ir_kind(s.takes());
    std::optional<IrKind> gives = parse_ir_kind(s.gives());
    if (!takes || !gives) return garbled("plan names an unknown IR kind");
    plan.pipeline.stages.push_back(StageSpec{s.name(), *takes, *gives, {s.passes().begin(), s.passes().end()}});
  }
  plan.args.insert(p.args().begin(), p.args().end());
  if (!is_key_hex(p.key())) return garbled("plan has no key");
  plan.key.hex = p.key();
  for (const internal::KeyComponent& c : p.key_components()) plan.key.components.push_back({c.name(), c.value()});
  return WorkerJob{std::move(job.value()), std::move(plan), in.caller_namespace()};
}

worker::Outcome artifact_outcome(Artifact&& artifact) {
  worker::Outcome outcome;
  internal::ArtifactRecord& record = *outcome.mutable_artifact();
  to_record(artifact, record);
  record.set_payload(std::move(artifact.bytes));
  return outcome;
}

Result<Artifact> from_artifact_outcome(worker::Outcome&& outcome) {
  Result<Artifact> artifact = from_record(std::move(*outcome.mutable_artifact()));
  if (!artifact) return make_error(ErrorCode::internal, "compile worker: an answer's " + artifact.error().message);
  return artifact;
}

namespace {

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
  if (write_all(fd, frame) != 0)
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
