#include "server/workers/compile_bounds.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <new>

namespace kjit {
namespace {

// The address space of this process now, from /proc/self/status (VmSize).
uint64_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "VmSize:  123456 kB"
  }
  return 0;
}

// How many file descriptors this process holds; "all of them" when not
// even the directory listing them can be opened.
size_t open_descriptors(size_t limit) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return errno == EMFILE ? limit : 0;
  size_t count = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count ? count - 1 : 0;  // the directory's own descriptor
}

Status set_limit(int resource, rlim_t soft, rlim_t hard, const char* name) {
  const rlimit limit{soft, hard};
  if (::setrlimit(resource, &limit) != 0)
    return make_error(ErrorCode::internal, std::string("cannot set ") + name + ": " + std::strerror(errno));
  return Ok{};
}

[[noreturn]] void out_of_memory() {
  constexpr char k_message[] = "kjit compile worker: out of memory (limits.compile_memory_bytes)\n";
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, k_message, sizeof(k_message) - 1);
  ::_exit(k_exit_out_of_memory);
}

// What the crash handler below needs, set before any bound applies.
uint64_t g_address_space_limit = 0;
uint64_t g_crash_margin = 0;
long g_page_size = 4096;
alignas(16) char g_crash_stack[64 * 1024];

// The address space now from /proc/self/statm, with system calls only (this
// runs in a signal handler); 0 when it cannot be read.
uint64_t address_space_in_handler() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[64];
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  uint64_t pages = 0;
  for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pages = pages * 10 + uint64_t(text[i] - '0');
  return pages * static_cast<uint64_t>(g_page_size);
}

// A toolchain that does not check an allocation the memory bound refused
// dies of SIGSEGV or SIGBUS rather than reporting it. Near the bound, that
// crash is the bound: said so, as a failed allocation is. Anywhere else it is
// a crash, and the signal is delivered again without this handler.
void crash_near_the_bound(int signal) {
  const uint64_t used = address_space_in_handler();
  if (used != 0 && used + g_crash_margin >= g_address_space_limit) out_of_memory();
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void install_crash_handler(uint64_t limit, uint64_t compile_bytes) {
  g_address_space_limit = limit;
  g_crash_margin = compile_bytes / 2;
  g_page_size = ::sysconf(_SC_PAGESIZE);
  // Its own stack: the crash may be a stack that could not grow.
  stack_t stack{};
  stack.ss_sp = g_crash_stack;
  stack.ss_size = sizeof(g_crash_stack);
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = crash_near_the_bound;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, nullptr);
  ::sigaction(SIGBUS, &action, nullptr);
}

constexpr bool k_address_sanitizer =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

Result<std::string> apply_worker_bounds(const CompileBounds& bounds, bool memory_hard_limit_open) {
  std::string applied;
  if (k_address_sanitizer) {
    // The sanitizer's shadow reserves terabytes of address space up front:
    // any RLIMIT_AS would stop every later allocation.
    applied = "memory unbounded (AddressSanitizer build)";
  } else {
    const uint64_t limit = address_space_bytes() + bounds.memory_bytes;
    install_crash_handler(limit, bounds.memory_bytes);
    rlimit previous{};
    ::getrlimit(RLIMIT_AS, &previous);
    const rlim_t hard = memory_hard_limit_open ? previous.rlim_max : limit;
    if (Status s = set_limit(RLIMIT_AS, limit, hard, "the memory bound (RLIMIT_AS)"); !s) return s.error();
    applied = "memory " + mib(bounds.memory_bytes) + " beyond the worker's " + mib(limit - bounds.memory_bytes);
  }
  std::set_new_handler(out_of_memory);
  if (Status s = set_limit(RLIMIT_NOFILE, bounds.open_files, bounds.open_files, "the open-file bound (RLIMIT_NOFILE)");
      !s)
    return s.error();
  // Files a toolchain writes are bounded like the artifact: past it the
  // kernel sends SIGXFSZ.
  if (Status s = set_limit(RLIMIT_FSIZE, bounds.output_bytes, bounds.output_bytes,
                           "the output bound (RLIMIT_FSIZE)");
      !s)
    return s.error();
  // No core files: a crashing compiler must not write the request's source
  // anywhere.
  if (Status s = set_limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE"); !s) return s.error();
  return applied + ", " + std::to_string(bounds.open_files) + " open files, output " + mib(bounds.output_bytes) +
         ", CPU " + std::to_string(bounds.cpu_seconds) + " s per compile";
}

void start_compile_cpu_bound(const CompileBounds& bounds) {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const uint64_t used = static_cast<uint64_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec);
  // Past the soft limit the kernel sends SIGXCPU, which ends the worker
  // (the daemon reads it as this bound). The hard limit is left alone: once
  // lowered it could not be raised for the next job.
  rlimit limit{};
  ::getrlimit(RLIMIT_CPU, &limit);
  limit.rlim_cur = std::min<rlim_t>(used + bounds.cpu_seconds + 1, limit.rlim_max);  // +1: the second begun
  ::setrlimit(RLIMIT_CPU, &limit);
}

std::optional<Error> bound_crossed_by(const Result<Artifact>& outcome, const CompileBounds& bounds) {
  if (outcome) {
    if (outcome->bytes.size() > bounds.output_bytes)
      return make_error(ErrorCode::resource_exhausted,
                        "the compile's output is " + std::to_string(outcome->bytes.size()) +
                            " bytes, more than limits.compile_output_bytes (" + std::to_string(bounds.output_bytes) +
                            ")");
    return std::nullopt;
  }
  // NVRTC catches its own failed allocations and reports a "catastrophic
  // error: out of memory" compile error; in a worker under an address-space
  // bound that is the bound, not the input's fault.
  const Error& failed = outcome.error();
  if (failed.log.find("catastrophic error: out of memory") != std::string::npos)
    return make_error(ErrorCode::resource_exhausted,
                      "the compile ran out of memory: " + std::string("limits.compile_memory_bytes is ") +
                          std::to_string(bounds.memory_bytes) + " bytes beyond the worker's own (" + failed.message + ")",
                      failed.log);
  // A toolchain that met EMFILE reports it in its own words, if at all; a
  // failure with the descriptor table full is the bound, however it was said.
  const Error& error = outcome.error();
  const std::string emfile = std::strerror(EMFILE);
  if (open_descriptors(bounds.open_files) + 1 >= bounds.open_files || error.message.find(emfile) != std::string::npos ||
      error.log.find(emfile) != std::string::npos)
    return make_error(ErrorCode::resource_exhausted,
                      "the compile ran out of file descriptors: limits.compile_open_files is " +
                          std::to_string(bounds.open_files) + " (" + error.message + ")",
                      error.log);
  return std::nullopt;
}

std::optional<std::string> bound_crossed(std::optional<int> wait_status, std::string_view job_output,
                                         const CompileBounds& bounds) {
  const std::string memory = "it needed more memory than limits.compile_memory_bytes (" +
                             std::to_string(bounds.memory_bytes) + " bytes beyond the worker's own)";
  if (wait_status) {
    const int status = *wait_status;
    if (WIFEXITED(status) && WEXITSTATUS(status) == k_exit_out_of_memory) return memory;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
      return "it used more CPU time than limits.compile_cpu_seconds (" + std::to_string(bounds.cpu_seconds) + " s)";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ)
      return "it wrote a file larger than limits.compile_output_bytes (" + std::to_string(bounds.output_bytes) +
             " bytes)";
  }
  // How the toolchains say an allocation failed, when they survive it or
  // abort on it.
  for (std::string_view words : {"out of memory", "Memory allocation failure", "std::bad_alloc",
                                 "Cannot allocate memory", "NVRTC_ERROR_OUT_OF_MEMORY"})
    if (job_output.find(words) != std::string_view::npos) return memory;
  return std::nullopt;
}

}  // namespace kjit
