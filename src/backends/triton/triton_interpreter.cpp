#include "backends/triton/triton_interpreter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace kjit {
namespace {

// An answer larger than this is not one the script writes (a cubin of a few
// MiB, its IR files): the child is broken.
constexpr uint32_t k_max_answer_bytes = 512u << 20;
// Below the kernel's bound on one environment string (128 KiB).
constexpr size_t k_max_description_bytes = 120u << 10;

Error internal(std::string message) { return make_error(ErrorCode::internal, std::move(message)); }

bool write_all_fd(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes before `deadline`: 1 read, 0 the child closed
// its end, -1 the deadline passed, -2 an error.
int read_exactly(int fd, char* out, size_t size, std::chrono::steady_clock::time_point deadline) {
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return -2;
    if (ready == 0) continue;
    ssize_t n = ::read(fd, out, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -2;
    if (n == 0) return 0;
    out += n;
    size -= static_cast<size_t>(n);
  }
  return 1;
}

}  // namespace

Result<std::unique_ptr<TritonInterpreter>> TritonInterpreter::start(const std::string& python,
                                                                    const std::string& working_dir,
                                                                    const TritonInterpreterOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(working_dir + "/tmp", ec);
  if (ec) return internal("cannot create " + working_dir + " for a Triton interpreter: " + ec.message());
  // Everything the child needs is made before fork: after it, only calls a
  // forked child of a threaded process may make.
  const std::string script(triton_worker_script());
  std::vector<std::string> args{python, "-I", "-B", "-c", script};
  std::vector<std::string> env{"PATH=/usr/bin:/bin", "HOME=" + working_dir, "TMPDIR=" + working_dir + "/tmp",
                               "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"};
  if (options.warm_at_idle) env.push_back("KJIT_TRITON_WARM_AT_IDLE=1");
  // One variable holds at most 128 KiB (MAX_ARG_STRLEN); a description is a
  // few. One past the bound is left out: the interpreter describes itself.
  if (!options.description.empty() && options.description.size() < k_max_description_bytes)
    env.push_back("KJIT_TRITON_DESCRIPTION=" + options.description);
  env.insert(env.end(), options.environment.begin(), options.environment.end());
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return internal(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return internal(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::chdir(working_dir.c_str()) != 0) ::_exit(126);
    // The starting thread may have ended between fork and prctl: then the
    // child is already some other process's, and goes.
    if (options.ends_with_starting_thread && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent))
      ::_exit(126);
    // A compile worker's CPU limit is its current job's, and its memory
    // limit its own size plus a job's: the interpreter lives for many jobs
    // and bounds each job's child instead.
    for (int resource : {RLIMIT_CPU, RLIMIT_AS}) {
      rlimit limit{};
      if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(resource, &limit);
      }
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  return std::unique_ptr<TritonInterpreter>(new TritonInterpreter(pid, in[1], out[0]));
}

TritonInterpreter::~TritonInterpreter() { end(false); }

void TritonInterpreter::end(bool kill_first) {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ <= 0) return;
  if (!kill_first) {
    // EOF on its stdin ends the script; give it a moment, then make sure.
    for (int i = 0; i < 50; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      ::usleep(10'000);
    }
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

Result<std::string> TritonInterpreter::ask(std::string_view request_json, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return internal("the Triton interpreter is not running");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const uint32_t size = static_cast<uint32_t>(request_json.size());
  const char header[4] = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                          static_cast<char>((size >> 16) & 0xff), static_cast<char>((size >> 24) & 0xff)};
  // A child that died makes the write fail with EPIPE, not the process die.
  struct sigaction ignore {}, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  const bool sent = write_all_fd(to_child_, header, 4) && write_all_fd(to_child_, request_json.data(), request_json.size());
  ::sigaction(SIGPIPE, &previous, nullptr);
  auto died = [&](const std::string& what) -> Error {
    int status = 0;
    std::string how = "ended";
    // Its pipe closes as it exits: give the exit a moment to be reaped, so
    // the message can say how it ended (a signal: a crash in Triton's C++).
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
        pid_ = -1;
        break;
      }
      ::usleep(10'000);
    }
    end(true);
    return internal("the Triton interpreter " + how + " " + what);
  };
  if (!sent) return died("before taking the request");
  char length[4];
  int got = read_exactly(from_child_, length, 4, deadline);
  if (got == -1) {
    end(true);
    return make_error(ErrorCode::deadline_exceeded,
                      "Triton did not answer within " + std::to_string(timeout.count() / 1000) + " s (killed)");
  }
  if (got != 1) return died("without answering");
  const uint32_t answer_size = static_cast<uint8_t>(length[0]) | (static_cast<uint8_t>(length[1]) << 8) |
                               (static_cast<uint8_t>(length[2]) << 16) |
                               (static_cast<uint32_t>(static_cast<uint8_t>(length[3])) << 24);
  if (answer_size > k_max_answer_bytes) return died("after writing a " + std::to_string(answer_size) + "-byte frame");
  std::string answer(answer_size, '\0');
  got = read_exactly(from_child_, answer.data(), answer.size(), deadline);
  if (got == -1) {
    end(true);
    return make_error(ErrorCode::deadline_exceeded, "Triton's answer did not arrive within the time bound (killed)");
  }
  if (got != 1) return died("in the middle of its answer");
  return answer;
}

}  // namespace kjit
