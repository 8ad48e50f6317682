#include "server/workers/compile_workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <string_view>

#include "backends/triton/triton_build.h"
#include "pipeline/header_set.h"
#include "server/workers/compile_bounds.h"
#include "server/workers/worker_protocol.h"

extern char** environ;

namespace kjit {
namespace {

// The bytes of the files under `dir`; 0 when it is gone.
uint64_t bytes_under(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const uintmax_t size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

constexpr int k_worker_fd = 3;
// Loading NVRTC, nvJitLink, LLVM and the plugins takes well under a second;
// a worker not ready after this is stuck.
constexpr auto k_ready_timeout = std::chrono::seconds(60);
// And a prestarted Triton worker, for each build it warms before it is
// ready (an interpreter importing Triton and describing the build, at idle
// priority first): no compile waits on it, and a busy machine slows it.
constexpr auto k_warm_build_timeout = std::chrono::seconds(180);
// How often a compile checks whether every request waiting on it went away.
constexpr auto k_abandoned_poll = std::chrono::milliseconds(50);

constexpr std::string_view k_abandoned_message = "compile abandoned: every request waiting on it went away";

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// Kills a worker and whatever its toolchain started: each worker leads a
// process group of its own, and a program it ran (an assembler) would
// otherwise outlive the compile, holding the worker's stderr open. Called
// before the worker is reaped, so the group's id is still its own.
void kill_worker(pid_t pid) {
  ::kill(-pid, SIGKILL);
}

// Kills (when asked), closes and waits for a worker; its wait status, or
// nullopt when it could not be reaped.
std::optional<int> reap(pid_t pid, int fd, bool kill_first) {
  if (kill_first) kill_worker(pid);
  ::close(fd);
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid) return std::nullopt;
  return status;
}

// A directory only this worker may write in; its files go with it (end_of).
// Named "kjit-worker-<pid>.<start>.<pid namespace>-XXXXXX" for the process
// that makes it, the daemon: its pid, its start (/proc/self/stat's 22nd
// field) and its pid namespace's inode, so that a daemon starting after
// this one was killed can tell that the directory's owner is gone, and not
// take a reused pid, or one of another pid namespace sharing the temporary
// root, for it (server/daemon/leftover_directories.h reads the name).
// Without /proc the name says no owner, and no such scan removes it.
Result<std::string> make_private_dir() {
  const std::string owner = [] {
    char line[1024] = {};
    const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    const ssize_t got = fd < 0 ? -1 : ::read(fd, line, sizeof(line) - 1);
    if (fd >= 0) ::close(fd);
    struct stat pid_namespace {};
    if (got <= 0 || ::stat("/proc/self/ns/pid", &pid_namespace) != 0) return std::string();
    // The command name (field 2) may hold spaces: fields 3 on follow its
    // last ')', the state (3) and 18 numbers (4-21) before the start (22).
    constexpr const char* k_up_to_start =
        " %*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu";
    const char* fields = std::strrchr(line, ')');
    unsigned long long start = 0;
    if (!fields || std::sscanf(fields + 1, k_up_to_start, &start) != 1) return std::string();
    return std::to_string(::getpid()) + "." + std::to_string(start) + "." + std::to_string(pid_namespace.st_ino) + "-";
  }();
  std::error_code ec;
  std::string pattern = (std::filesystem::temp_directory_path(ec) / ("kjit-worker-" + owner + "XXXXXX")).string();
  if (ec || !::mkdtemp(pattern.data()))
    return make_error(ErrorCode::internal,
                      std::string("compile worker: cannot make its private directory: ") + std::strerror(errno));
  return pattern;
}

std::string with_last_output(std::string message, const std::string& last_output) {
  if (last_output.empty()) return message + " (it wrote nothing to stderr)";
  return message + "; its last output:\n" + last_output;
}

std::string describe_job(const CompileJob& job) {
  return job.input_name + " for " + job.target.canonical();
}

// The header sets a worker remembers having compiled: about what its PCH
// bound (pch_bytes, 1 GiB by default, 100-200 MiB a PCH) holds.
constexpr size_t k_remembered_header_sets = 8;

// Which header set a CUDA C++ compile parses, as the daemon can tell before
// it runs: the target (NVRTC's -arch), the routed toolchain as the key names
// it, the request's options and headers, the source's leading directives
// and, with request headers, the caller's namespace (the worker keeps those
// PCHs per namespace). The pass spells its set from the options NVRTC
// actually gets (builtin_passes.cpp), so the two need not agree: this only
// steers a compile to a worker likely to hold its PCH. Empty for other
// inputs.
std::string affinity_key(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace) {
  if (job.input_kind != InputKind::cuda_source) return {};
  std::string toolchain = job.target.canonical() + "\n" + plan.pipeline.name;
  for (const KeyComponent& component : plan.key.components)
    if (component.name.starts_with("toolchain.")) toolchain += "\n" + component.name + "=" + component.value;
  return header_set_digest(toolchain, job.options, job.headers, leading_directives(job.input), caller_namespace);
}

enum class AnswerWait { ready, timed_out, abandoned };

// Waits until the worker's answer starts (or its socket closes), the
// deadline passes or the compile is abandoned, asking `abandoned` between
// short waits; read_frame then reads what came. An answer already there is
// taken even when abandoned: the compile is done, and its artifact is cached.
AnswerWait wait_for_answer(int fd, std::chrono::steady_clock::time_point deadline,
                           const std::function<bool()>& abandoned) {
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return AnswerWait::timed_out;
    auto slice = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (abandoned) slice = std::min(slice, k_abandoned_poll);
    pollfd p{fd, POLLIN, 0};
    const int polled = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(slice.count(), 60'000)));
    if (polled > 0 || (polled < 0 && errno != EINTR)) return AnswerWait::ready;  // read_frame says what it is
    if (abandoned && abandoned()) return AnswerWait::abandoned;
  }
}

}  // namespace

CompileWorkers::CompileWorkers(Options options, std::string executable)
    : options_(std::move(options)), executable_(std::move(executable)) {}

CompileWorkers::~CompileWorkers() {
  {
    std::lock_guard lock(mutex_);
    if (warmer_.joinable() || triton_prestarter_.joinable()) {
      // Every job has returned its worker by now (the server shut down
      // first): what is busy is a worker keep_ready or prestart_triton is
      // starting, which need not finish its start.
      stopping_ = true;
      for (pid_t pid : busy_) kill_worker(pid);
    }
    keep_ready_ = false;
  }
  warm_wanted_.notify_all();
  toolkits_handed_.notify_all();
  if (warmer_.joinable()) warmer_.join();
  freed_.notify_all();  // prestart_triton's acquire sees stopping_
  if (triton_prestarter_.joinable()) triton_prestarter_.join();
  std::lock_guard lock(mutex_);
  for (Worker& worker : idle_) {
    end_of(worker, /*kill_first=*/false);  // it reads EOF and exits
    private_dirs_.erase(worker.private_dir);
  }
  idle_.clear();
}

void CompileWorkers::keep_ready() {
  std::lock_guard lock(mutex_);
  if (keep_ready_ || stopping_) return;
  keep_ready_ = true;
  warmer_ = std::thread([this] { warm(); });
}

void CompileWorkers::warm() {
  std::unique_lock lock(mutex_);
  for (;;) {
    warm_wanted_.wait(lock,
                      [&] { return !keep_ready_ || stopping_ || (!warm_failed_ && live() < options_.max_workers); });
    if (!keep_ready_ || stopping_) return;
    // Spawned under the lock, as acquire does (no socketpair leaks into it).
    Result<Worker> worker = spawn(WorkerClass{});
    if (!worker) {
      warm_failed_ = true;
      spdlog::warn("{}; workers start with compiles from now on", worker.error().message);
      continue;
    }
    ++starting_;
    busy_.push_back(worker->pid);
    lock.unlock();
    Status ready = await_ready(*worker);
    lock.lock();
    --starting_;
    if (!ready) {
      warm_failed_ = true;
      if (!stopping_) spdlog::warn("{}; workers start with compiles from now on", ready.error().message);
      freed_.notify_all();  // a compile waiting for this start starts its own
      continue;
    }
    std::erase(busy_, worker->pid);
    idle_.push_back(*worker);
    freed_.notify_all();  // whoever waits for a general worker; others wait on
  }
}

namespace {

// The default build first, then the others asked for, each once.
std::vector<std::string> builds_to_warm(const TritonBuild& default_build, const std::vector<std::string>& also_warm) {
  std::vector<std::string> names = {default_build.name};
  auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const std::string& wanted : also_warm) {
    if (wanted == "*") {
      for (const TritonBuild& build : triton_builds()) add(build.name);
    } else if (const TritonBuild* build = find_triton_build(wanted)) {
      add(build->name);
    } else {
      std::string found;
      for (const TritonBuild& b : triton_builds()) found += (found.empty() ? "" : ", ") + b.name;
      spdlog::warn("[triton] prestart_builds names '{}', which is not a build found here ({}); not warmed", wanted,
                   found.empty() ? "none" : found);
    }
  }
  return names;
}

}  // namespace

void CompileWorkers::prestart_triton(std::vector<std::string> also_warm) {
  std::lock_guard lock(mutex_);
  if (stopping_ || triton_prestarter_.joinable()) return;
  triton_prestarter_ = std::thread([this, also_warm = std::move(also_warm)] {
    const TritonBuild* build = default_triton_build();  // the discovery, the first time
    if (!build || stopping()) return;
    const WorkerClass triton{.triton = true};
    {
      std::lock_guard lock(mutex_);
      if (live_by_class_[triton.index()] > 0) return;
    }
    const std::vector<std::string> warm = builds_to_warm(*build, also_warm);
    const auto began = std::chrono::steady_clock::now();
    Result<Worker> worker = acquire(
        triton, [this] { return stopping(); }, {}, warm);
    {
      std::lock_guard lock(mutex_);
      triton_prestarting_ = false;
    }
    if (!worker) {
      if (!stopping()) spdlog::warn("{}; Triton workers start with Triton compiles", worker.error().message);
      return;
    }
    std::string names;
    for (const std::string& name : warm) names += (names.empty() ? "" : ", ") + name;
    spdlog::info(
        "Triton worker {} ready with {} imported and warm, {} ms after the builds were known", worker->pid, names,
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count());
    release(std::move(worker.value()));
  });
}

void CompileWorkers::add_pch_counts(const worker::PchCounts& pch) {
  std::lock_guard lock(mutex_);
  counters_.pch_hits += pch.hits();
  counters_.pch_creations += pch.creations();
  counters_.pch_fallbacks += pch.fallbacks();
  counters_.pch_evictions += pch.evictions();
  counters_.pch_firsts += pch.firsts();
}

bool CompileWorkers::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

size_t CompileWorkers::live_workers() const {
  std::lock_guard lock(mutex_);
  return live();
}

size_t CompileWorkers::ready_workers() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

size_t CompileWorkers::busy_workers() const {
  std::lock_guard lock(mutex_);
  // keep_ready's and prestart_triton's starts are in busy_ too, for no compile.
  return busy_.size() - starting_ - (triton_prestarting_ ? 1 : 0);
}

Result<CompileWorkers::Worker> CompileWorkers::spawn(const WorkerClass& worker_class) {
  const auto began = std::chrono::steady_clock::now();
  Result<std::string> private_dir = make_private_dir();
  if (!private_dir) return private_dir.error();
  int fds[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorCode::internal, std::string("compile worker: socketpair: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(ErrorCode::internal, std::string("compile worker: pipe: ") + std::strerror(errno));
  }
  int child_end = fds[1];
  if (child_end == k_worker_fd) {  // dup2 onto itself would leave FD_CLOEXEC set
    child_end = ::fcntl(fds[1], F_DUPFD_CLOEXEC, k_worker_fd + 1);
    ::close(fds[1]);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears FD_CLOEXEC on the copies: fd 3 and stderr are all the
  // worker gets.
  posix_spawn_file_actions_adddup2(&actions, child_end, k_worker_fd);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  if (!options_.launch.directory.empty())
    posix_spawn_file_actions_addchdir_np(&actions, options_.launch.directory.c_str());
  std::vector<std::string> args = options_.launch.command;
  args.insert(args.end(), {"--worker-fd", std::to_string(k_worker_fd)});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // A process group of its own (pgid = its pid), so that a stopped compile
  // takes the programs its toolchain runs with it.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const std::string program = executable_.empty() ? "/proc/self/exe" : executable_;
  const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_end);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    ::close(err[0]);
    std::error_code ec;
    std::filesystem::remove_all(*private_dir, ec);
    return make_error(ErrorCode::internal, std::string("compile worker: cannot start: ") + std::strerror(spawned));
  }
  private_dirs_.insert(*private_dir);
  ++live_by_class_[worker_class.index()];
  ++counters_.started;
  return Worker{worker_class, pid, fds[0], std::make_shared<WorkerOutput>(err[0], pid), *private_dir, began, {}, {}};
}

void CompileWorkers::hand_toolkits(std::vector<ToolkitHome> toolkits) {
  {
    std::lock_guard lock(mutex_);
    handed_toolkits_ = std::move(toolkits);
  }
  toolkits_handed_.notify_all();
}

Status CompileWorkers::await_ready(Worker& worker) {
  worker::Setup setup;
  setup.set_config_text(options_.launch.config_text);
  setup.set_config_path(options_.launch.config_path);
  setup.set_private_dir(worker.private_dir);
  setup.set_tileir(worker.worker_class.tileir);
  setup.set_background(worker.worker_class.background);
  setup.set_triton(worker.worker_class.triton);
  if (worker.worker_class.triton)
    for (const TritonBuild& build : triton_builds()) {
      worker::TritonBuildSetup& out = *setup.add_triton_builds();
      out.set_python(build.python);
      out.set_description(build.description);
    }
  for (const std::string& build : worker.triton_warm_builds) setup.add_triton_warm_builds(build);
  if (options_.launch.toolkits_from_daemon) {
    // The worker loads its binary meanwhile, which takes longer than the
    // daemon's discovery: this wait is seldom a wait at all.
    std::unique_lock lock(mutex_);
    toolkits_handed_.wait_until(lock, worker.started + k_ready_timeout,
                                [&] { return handed_toolkits_.has_value() || stopping_; });
    setup.set_toolkits_handed(handed_toolkits_.has_value());
    if (handed_toolkits_)
      for (const ToolkitHome& toolkit : *handed_toolkits_) {
        worker::ToolkitHome& out = *setup.add_toolkits();
        out.set_origin(toolkit.origin);
        out.set_home(toolkit.home);
        if (toolkit.facts) {
          out.set_facts_given(true);
          out.set_version(toolkit.facts->version);
          for (uint32_t sm : toolkit.facts->archs) out.add_archs(sm);
          out.set_has_nvrtc(toolkit.facts->nvrtc);
          out.set_has_nvjitlink(toolkit.facts->nvjitlink);
          out.set_has_nvfatbin(toolkit.facts->nvfatbin);
        }
      }
  }
  std::string bytes;
  worker::Ready ready;
  FrameRead read = FrameRead::error;
  if (!write_frame(worker.fd, setup) ||
      (read = read_frame(worker.fd, bytes,
                         std::chrono::steady_clock::now() + k_ready_timeout +
                             k_warm_build_timeout * static_cast<int>(worker.triton_warm_builds.size()))) !=
          FrameRead::ok ||
      !ready.ParseFromString(bytes)) {
    const WorkerEnd end = discard(worker, /*kill_first=*/true);
    if (stopping()) {
      count_end("shutdown");
      return make_error(ErrorCode::unavailable, "kjitd is shutting down");
    }
    count_end(read == FrameRead::timed_out ? "timeout" : "crashed");
    return make_error(ErrorCode::internal,
                      with_last_output("a compile worker could not start: it " + end.how, end.last_output));
  }
  const auto start_time =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - worker.started);
  spdlog::debug("compile worker {} ready in {} ms, {}", worker.pid, start_time.count() / 1000.0, ready.confinement());
  std::lock_guard lock(mutex_);
  last_start_ = StartReport{ready.confinement(), start_time, last_start_.started + 1};
  if (worker.worker_class == WorkerClass{}) last_client_start_ = last_start_;
  return Ok{};
}

void CompileWorkers::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (pid_t pid : busy_) kill_worker(pid);
  }
  freed_.notify_all();
  warm_wanted_.notify_all();
  toolkits_handed_.notify_all();
}

size_t CompileWorkers::max_tileir_workers() const {
  return std::max<size_t>(1, options_.max_workers / 2);
}

size_t CompileWorkers::live() const {
  return std::accumulate(live_by_class_.begin(), live_by_class_.end(), size_t{0});
}

size_t CompileWorkers::tileir_live() const {
  return live_by_class_[WorkerClass{true, false}.index()] + live_by_class_[WorkerClass{true, true}.index()];
}

bool CompileWorkers::may_start(const WorkerClass& wanted) const {
  // The prestarted Triton worker warms up at idle CPU priority, which a busy
  // machine may starve: no compile waits behind it for a place, so the pool
  // holds one worker more while it warms.
  const size_t warming = triton_prestarting_ ? 1 : 0;
  if (live() - warming >= options_.max_workers) return false;
  if (!wanted.tileir) return true;
  return tileir_live() < max_tileir_workers();
}

std::vector<CompileWorkers::Worker>::iterator CompileWorkers::idle_to_retire(const WorkerClass& wanted) {
  const size_t tileir = tileir_live();
  // idle_ is in the order the workers became ready: the first is idle longest.
  return std::find_if(idle_.begin(), idle_.end(), [&](const Worker& w) {
    if (w.worker_class == wanted) return false;
    // Ending it must leave room for one more of the class.
    if (live() - 1 >= options_.max_workers) return false;
    return !wanted.tileir || tileir - (w.worker_class.tileir ? 1 : 0) < max_tileir_workers();
  });
}

Result<CompileWorkers::Worker> CompileWorkers::acquire(const WorkerClass& wanted,
                                                       const std::function<bool()>& abandoned,
                                                       const std::string& header_set,
                                                       const std::vector<std::string>& warm_builds) {
  std::unique_lock lock(mutex_);
  std::optional<Worker> retired;  // an idle worker of another class, ended to make room
  for (;;) {
    if (stopping_) return make_error(ErrorCode::unavailable, "kjitd is shutting down");
    // idle_ is in the order the workers became ready. Without a header set
    // the latest of the class (its memory is the warmest); with one, the
    // latest that compiled it, else the one ready longest.
    auto mine = [&wanted](const Worker& w) { return w.worker_class == wanted; };
    auto latest = std::find_if(idle_.rbegin(), idle_.rend(), mine);
    if (latest != idle_.rend()) {
      auto chosen = std::prev(latest.base());
      if (!header_set.empty()) {
        auto knows = [&](const Worker& w) {
          return mine(w) && std::find(w.header_sets.begin(), w.header_sets.end(), header_set) != w.header_sets.end();
        };
        auto known = std::find_if(idle_.rbegin(), idle_.rend(), knows);
        chosen = known != idle_.rend() ? std::prev(known.base()) : std::find_if(idle_.begin(), idle_.end(), mine);
      }
      Worker worker = std::move(*chosen);
      idle_.erase(chosen);
      busy_.push_back(worker.pid);
      return worker;
    }
    // A worker keep_ready is starting (a general one for clients) started
    // before this compile came: it is ready sooner than one started now.
    const bool warm_start_coming = wanted == WorkerClass{} && starting_ > 0;
    if (!warm_start_coming) {
      if (may_start(wanted)) break;
      if (auto victim = idle_to_retire(wanted); victim != idle_.end()) {
        retired = std::move(*victim);
        idle_.erase(victim);
        --live_by_class_[retired->worker_class.index()];
        break;
      }
    }
    if (!abandoned) {
      freed_.wait(lock);
      continue;
    }
    // Asked without the lock: whoever answers it may take locks of its own.
    lock.unlock();
    const bool gone = abandoned();
    lock.lock();
    if (gone) return make_error(ErrorCode::cancelled, std::string(k_abandoned_message));
    freed_.wait_for(lock, k_abandoned_poll);
  }
  // Spawned under the lock: no other socketpair is open in this process
  // while a worker is started, so none leaks into it. Its start-up (loading
  // the toolchains, confining itself) is awaited outside it, so the pool,
  // the status and a shutdown never wait on a worker getting ready.
  Result<Worker> worker = spawn(wanted);
  if (worker) {
    busy_.push_back(worker->pid);
    if (wanted.triton && !warm_builds.empty()) {  // prestart_triton's
      worker->triton_warm_builds = warm_builds;
      triton_prestarting_ = true;
    }
  }
  lock.unlock();
  if (retired) {
    // It reads the closed socket and exits; nothing of it is lost but its PCHs.
    end_of(*retired, /*kill_first=*/false);
    std::lock_guard relock(mutex_);
    private_dirs_.erase(retired->private_dir);
  }
  if (!worker) {
    // The retired worker's place is free again, for keep_ready or a waiting compile.
    freed_.notify_all();
    warm_wanted_.notify_one();
    return worker;
  }
  if (Status ready = await_ready(*worker); !ready) return ready.error();
  {
    std::lock_guard relock(mutex_);
    warm_failed_ = false;  // workers start again: keep_ready may try again
  }
  warm_wanted_.notify_one();
  return worker;
}

void CompileWorkers::release(Worker worker) {
  {
    std::lock_guard lock(mutex_);
    std::erase(busy_, worker.pid);
    idle_.push_back(worker);
  }
  freed_.notify_all();  // the compiles waiting may want another class; each looks
}

CompileWorkers::WorkerEnd CompileWorkers::end_of(const Worker& worker, bool kill_first) const {
  const std::optional<int> status = reap(worker.pid, worker.fd, kill_first);
  worker.output->wait_for_end();  // everything it wrote, up to its death, is read
  // Every way a worker ends (a compile's end of it, a retirement, the
  // pool's end) comes here once it is reaped: its directory goes with it.
  std::error_code ec;
  std::filesystem::remove_all(worker.private_dir, ec);
  if (ec)
    spdlog::warn("cannot remove compile worker {}'s directory {}: {}", worker.pid, worker.private_dir, ec.message());
  WorkerEnd end;
  end.signaled = status && WIFSIGNALED(*status);
  end.how = status ? describe_exit(*status) : "lost";
  end.last_output = worker.output->last_lines();
  end.bound = bound_crossed(status, end.last_output, options_.bounds);
  return end;
}

CompileWorkers::WorkerEnd CompileWorkers::discard(Worker worker, bool kill_first) {
  {
    // Out of stop()'s reach before it is reaped: its pid, and so a process
    // group stop() would kill, may belong to another process after that.
    std::lock_guard lock(mutex_);
    std::erase(busy_, worker.pid);
  }
  WorkerEnd end = end_of(worker, kill_first);
  {
    std::lock_guard lock(mutex_);
    --live_by_class_[worker.worker_class.index()];
    private_dirs_.erase(worker.private_dir);
  }
  freed_.notify_all();
  warm_wanted_.notify_one();  // keep_ready replaces it
  return end;
}

void CompileWorkers::count_end(const std::string& cause) {
  std::lock_guard lock(mutex_);
  if (cause == "crashed")
    ++counters_.crashed;
  else
    ++counters_.kills[cause];
}

std::map<std::string, uint64_t> CompileWorkers::live_by_class_locked() const {
  std::map<std::string, uint64_t> out;
  for (size_t index = 0; index < k_worker_class_count; ++index)
    if (live_by_class_[index] > 0) out[WorkerClass::of_index(index).name()] = live_by_class_[index];
  return out;
}

std::map<std::string, uint64_t> CompileWorkers::live_by_class() const {
  std::lock_guard lock(mutex_);
  return live_by_class_locked();
}

WorkerCounters CompileWorkers::counters() const {
  WorkerCounters out;
  std::set<std::string> dirs;
  {
    std::lock_guard lock(mutex_);
    out = counters_;
    out.live = live();
    out.live_by_class = live_by_class_locked();
    dirs = private_dirs_;
  }
  // Read from the files, outside the lock: a worker writes and evicts its
  // PCHs on its own, and says nothing of their size.
  for (const std::string& dir : dirs) out.pch_bytes += bytes_under(dir + "/" + k_worker_pch_directory);
  return out;
}

CompileWorkers::StartReport CompileWorkers::last_start() const {
  std::lock_guard lock(mutex_);
  if (last_client_start_.confinement.empty()) return last_start_;
  StartReport report = last_client_start_;
  report.started = last_start_.started;
  return report;
}

Result<Artifact> CompileWorkers::run(const CompileJob& job, const CompilePlan& plan, std::string_view caller_namespace,
                                     const std::function<bool()>& abandoned, CompilePriority priority) {
  const std::string header_set = affinity_key(job, plan, caller_namespace);
  const WorkerClass worker_class = worker_class_for(job, priority == CompilePriority::background);
  Result<Worker> worker = acquire(worker_class, abandoned, header_set);
  if (!worker) return worker.error();
  if (abandoned && abandoned()) {  // while its worker started: the worker is fine
    release(*worker);
    return make_error(ErrorCode::cancelled, std::string(k_abandoned_message));
  }
  if (!header_set.empty()) {  // whatever the compile's outcome, the worker has now seen the set
    std::erase(worker->header_sets, header_set);
    worker->header_sets.push_back(header_set);
    if (worker->header_sets.size() > k_remembered_header_sets) worker->header_sets.erase(worker->header_sets.begin());
  }
  if (Status sent = write_frame(worker->fd, to_worker_job(job, plan, caller_namespace)); !sent) {
    const WorkerEnd end = discard(*worker, /*kill_first=*/true);
    count_end(stopping() ? "shutdown" : "crashed");
    return make_error(ErrorCode::internal,
                      "the compile worker for " + describe_job(job) + " was gone (" + end.how + ")", end.last_output);
  }
  std::string bytes;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  FrameRead read = FrameRead::timed_out;
  switch (wait_for_answer(worker->fd, deadline, abandoned)) {
    case AnswerWait::ready:
      read = read_frame(worker->fd, bytes, deadline);
      break;
    case AnswerWait::timed_out:
      break;
    case AnswerWait::abandoned: {
      discard(*worker, /*kill_first=*/true);
      count_end("cancelled");
      spdlog::info("compile of {} abandoned by every request waiting on it; its worker was killed", describe_job(job));
      return make_error(ErrorCode::cancelled, std::string(k_abandoned_message));
    }
  }
  switch (read) {
    case FrameRead::ok:
      break;
    case FrameRead::timed_out: {
      const WorkerEnd end = discard(*worker, /*kill_first=*/true);
      count_end("timeout");
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout).count();
      spdlog::warn("compile of {} ran past {} s; its worker was killed", describe_job(job), seconds);
      return make_error(ErrorCode::deadline_exceeded,
                        "the compile of " + describe_job(job) + " ran longer than " + std::to_string(seconds) +
                            " s (limits.compile_timeout_s) and was stopped",
                        end.last_output);
    }
    default: {
      const WorkerEnd end = discard(*worker, /*kill_first=*/true);
      if (stopping()) {
        count_end("shutdown");
        return make_error(ErrorCode::unavailable,
                          "kjitd is shutting down; the compile of " + describe_job(job) + " was stopped");
      }
      count_end(end.bound ? "bound" : "crashed");
      spdlog::warn("compile worker {} {} while compiling {}", worker->pid, end.how, describe_job(job));
      if (end.bound)
        return make_error(ErrorCode::resource_exhausted,
                          "the compile of " + describe_job(job) + " was stopped: " + *end.bound, end.last_output);
      if (!end.signaled)  // it left by itself: most likely its start-up failed
        return make_error(
            ErrorCode::internal,
            with_last_output("the compile worker for " + describe_job(job) + " " + end.how + " before answering",
                             end.last_output),
            end.last_output);
      return make_error(ErrorCode::internal,
                        with_last_output("the compiler crashed while compiling " + describe_job(job) +
                                             ": its worker process was " + end.how + "; kjitd is unaffected",
                                         end.last_output),
                        end.last_output);
    }
  }
  worker::Outcome outcome;
  if (!outcome.ParseFromString(bytes)) {
    discard(*worker, /*kill_first=*/true);
    count_end("crashed");  // a worker that does not speak the protocol is broken
    return make_error(ErrorCode::internal, "compile worker: an answer does not parse");
  }
  if (outcome.has_pch()) add_pch_counts(outcome.pch());
  if (outcome.has_failure()) {
    const worker::Failure& f = outcome.failure();
    if (f.bound_exceeded()) {
      discard(*worker, /*kill_first=*/true);  // it leaves after this answer anyway
      count_end("bound");
      return make_error(ErrorCode::resource_exhausted, f.message(), f.log());
    }
    const bool known = f.code() >= 0 && f.code() <= static_cast<int32_t>(ErrorCode::internal);
    const ErrorCode code = known ? static_cast<ErrorCode>(f.code()) : ErrorCode::internal;
    if (!f.job_bound().empty()) {  // the job's own process went; the worker is fine
      {
        std::lock_guard lock(mutex_);
        ++counters_.job_bounds[f.job_bound()];
      }
      release(*worker);
      return make_error(code, f.message(), f.log());
    }
    // A Triton worker's jobs run in children of its interpreter, whose
    // output (a dead child's "out of memory" among it) is not the worker's
    // own state.
    if (worker->worker_class.triton) {
      release(*worker);
      return make_error(code, f.message(), f.log());
    }
    // A toolchain that survived a failed allocation said so on stderr
    // ("ptxas fatal: Memory allocation failure"): that is the memory bound,
    // and the worker, whose heap may be in any state, goes.
    worker->output->wait_for_job_end(std::chrono::seconds(2));
    const std::string output = worker->output->last_lines();
    if (std::optional<std::string> bound = bound_crossed(std::nullopt, output + f.message(), options_.bounds)) {
      discard(*worker, /*kill_first=*/true);
      count_end("bound");
      return make_error(ErrorCode::resource_exhausted,
                        "the compile of " + describe_job(job) + " was stopped: " + *bound + " (" + f.message() + ")",
                        f.log().empty() ? output : f.log() + "\n" + output);
    }
    release(*worker);
    return make_error(code, f.message(), f.log());
  }
  release(*worker);
  Result<Artifact> artifact = from_artifact_outcome(std::move(outcome));
  if (artifact && artifact->key != plan.key.hex) artifact = make_error(ErrorCode::internal, "it names another key");
  if (!artifact)
    return make_error(ErrorCode::internal, "compile worker answered with an unusable artifact (" +
                                               artifact.error().message +
                                               "): does it run another configuration than the daemon?");
  return artifact;
}

}  // namespace kjit
