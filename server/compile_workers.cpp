#include "compile_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "cache/cache_entry.h"
#include "worker_protocol.h"

extern char** environ;

namespace kjit {
namespace {

constexpr int k_worker_fd = 3;

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// Kills (when asked), closes and waits for a worker; its wait status, or
// nullopt when it could not be reaped.
std::optional<int> reap(pid_t pid, int fd, bool kill_first) {
  if (kill_first) ::kill(pid, SIGKILL);
  ::close(fd);
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid) return std::nullopt;
  return status;
}

std::string describe_job(const CompileJob& job) {
  return job.input_name + " for " + job.target.canonical();
}

}  // namespace

CompileWorkers::CompileWorkers(Options options) : options_(std::move(options)) {}

CompileWorkers::~CompileWorkers() {
  std::lock_guard lock(mutex_);
  // Every job has returned its worker by now (the server shut down first).
  for (Worker& worker : idle_) reap(worker.pid, worker.fd, /*kill_first=*/false);  // it reads EOF and exits
  idle_.clear();
}

bool CompileWorkers::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

size_t CompileWorkers::live_workers() const {
  std::lock_guard lock(mutex_);
  return live_;
}

Result<CompileWorkers::Worker> CompileWorkers::spawn() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorCode::internal, std::string("compile worker: socketpair: ") + std::strerror(errno));
  int child_end = fds[1];
  if (child_end == k_worker_fd) {  // dup2 onto itself would leave FD_CLOEXEC set
    child_end = ::fcntl(fds[1], F_DUPFD_CLOEXEC, k_worker_fd + 1);
    ::close(fds[1]);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears FD_CLOEXEC on the copy: fd 3 is the only one the worker gets.
  posix_spawn_file_actions_adddup2(&actions, child_end, k_worker_fd);
  if (!options_.directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, options_.directory.c_str());
  std::vector<std::string> args = options_.command;
  args.insert(args.end(), {"--worker-fd", std::to_string(k_worker_fd)});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_end);
  if (spawned != 0) {
    ::close(fds[0]);
    return make_error(ErrorCode::internal, std::string("compile worker: cannot start: ") + std::strerror(spawned));
  }
  worker::Setup setup;
  setup.set_config_text(options_.config_text);
  setup.set_config_path(options_.config_path);
  if (Status sent = write_frame(fds[0], setup); !sent) {
    reap(pid, fds[0], /*kill_first=*/true);
    return make_error(ErrorCode::internal, "compile worker: exited before its setup");
  }
  spdlog::debug("compile worker {} started", pid);
  return Worker{pid, fds[0]};
}

void CompileWorkers::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (pid_t pid : busy_) ::kill(pid, SIGKILL);
  }
  freed_.notify_all();
}

Result<CompileWorkers::Worker> CompileWorkers::acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [this] { return stopping_ || !idle_.empty() || live_ < options_.max_workers; });
  if (stopping_) return make_error(ErrorCode::unavailable, "kjitd is shutting down");
  Result<Worker> worker = make_error(ErrorCode::internal, "no worker");
  if (!idle_.empty()) {
    worker = idle_.back();
    idle_.pop_back();
  } else {
    // Spawned under the lock: no other socketpair is open in this process
    // while a worker is started, so none leaks into it.
    worker = spawn();
    if (!worker) return worker;
    ++live_;
  }
  busy_.push_back(worker->pid);
  return worker;
}

void CompileWorkers::release(Worker worker) {
  {
    std::lock_guard lock(mutex_);
    std::erase(busy_, worker.pid);
    idle_.push_back(worker);
  }
  freed_.notify_one();
}

CompileWorkers::WorkerEnd CompileWorkers::discard(Worker worker, bool kill_first) {
  const std::optional<int> status = reap(worker.pid, worker.fd, kill_first);
  WorkerEnd how{status && WIFSIGNALED(*status), status ? describe_exit(*status) : "lost"};
  {
    std::lock_guard lock(mutex_);
    std::erase(busy_, worker.pid);
    --live_;
  }
  freed_.notify_one();
  return how;
}

Result<Artifact> CompileWorkers::run(const CompileJob& job, const CompilePipeline::Plan& plan) {
  Result<Worker> worker = acquire();
  if (!worker) return worker.error();
  if (Status sent = write_frame(worker->fd, to_worker_job(job)); !sent) {
    const WorkerEnd end = discard(*worker, /*kill_first=*/true);
    return make_error(ErrorCode::internal,
                      "the compile worker for " + describe_job(job) + " was gone (" + end.how + ")");
  }
  std::string bytes;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  switch (read_frame(worker->fd, bytes, deadline)) {
    case FrameRead::ok:
      break;
    case FrameRead::timed_out: {
      discard(*worker, /*kill_first=*/true);
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout).count();
      spdlog::warn("compile of {} ran past {} s; its worker was killed", describe_job(job), seconds);
      return make_error(ErrorCode::deadline_exceeded,
                        "the compile of " + describe_job(job) + " ran longer than " + std::to_string(seconds) +
                            " s (limits.compile_timeout_s) and was stopped");
    }
    default: {
      const WorkerEnd end = discard(*worker, /*kill_first=*/true);
      if (stopping()) return make_error(ErrorCode::unavailable, "kjitd is shutting down; the compile of " +
                                                                     describe_job(job) + " was stopped");
      spdlog::warn("compile worker {} {} while compiling {}", worker->pid, end.how, describe_job(job));
      if (!end.signaled)  // it left by itself: most likely its start-up failed
        return make_error(ErrorCode::internal, "the compile worker for " + describe_job(job) + " " + end.how +
                                                   " before answering; the daemon's log has its output");
      return make_error(ErrorCode::internal, "the compiler crashed while compiling " + describe_job(job) +
                                                 ": its worker process was " + end.how +
                                                 "; kjitd is unaffected (the daemon's log has the worker's output)");
    }
  }
  worker::Outcome outcome;
  if (!outcome.ParseFromString(bytes)) {
    discard(*worker, /*kill_first=*/true);
    return make_error(ErrorCode::internal, "compile worker: an answer does not parse");
  }
  release(*worker);
  if (outcome.has_failure()) {
    const worker::Failure& f = outcome.failure();
    const bool known = f.code() >= 0 && f.code() <= static_cast<int32_t>(ErrorCode::internal);
    return make_error(known ? static_cast<ErrorCode>(f.code()) : ErrorCode::internal, f.message(), f.log());
  }
  Result<CacheEntry> entry = decode_entry(std::move(*outcome.mutable_entry()), plan.key.hex);
  if (!entry)
    return make_error(ErrorCode::internal, "compile worker answered with an unusable artifact (" +
                                               entry.error().message +
                                               "): does it run another configuration than the daemon?");
  return std::move(entry->artifact);
}

}  // namespace kjit
