#include "backends/tileiras/tileiras.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "backends/toolkit_discovery.h"
#include "core/hex.h"

extern char** environ;

namespace kjit {
namespace {

namespace fs = std::filesystem;

// What tileiras may write on stdout and stderr that is kept: its
// diagnostics come first, and a flood of remarks must not fill the worker.
constexpr size_t k_output_limit = 64 * 1024;
// Asking tileiras what it is takes well under a second.
constexpr std::chrono::milliseconds k_probe_timeout{30'000};

std::string hex_sha256(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return hex_lower(digest, size);
}

// The environment tileiras runs in: this process's, without CUDA_HOME
// (tileiras takes that toolkit's libraries over its own wheel's and fails),
// with TMPDIR as given.
std::vector<std::string> tool_environment(const std::string& tmpdir) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("CUDA_HOME=") || entry.starts_with("TMPDIR=")) continue;
    env.emplace_back(entry);
  }
  if (!tmpdir.empty()) env.push_back("TMPDIR=" + tmpdir);
  return env;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// "13.4.92" from "Cuda compilation tools, release 13.4, V13.4.92".
std::string version_of(const std::string& text) {
  const size_t v = text.find(", V");
  if (v == std::string::npos) return {};
  size_t end = v + 3;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  return text.substr(v + 3, end - v - 3);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// --gpu-name's values as --help lists them ("    =sm_90   -   SM 90").
std::vector<uint32_t> gpu_names_of(const std::string& help) {
  std::vector<uint32_t> sms;
  for (const std::string& line : lines_of(help)) {
    const size_t at = line.find("=sm_");
    if (at == std::string::npos || line.find_first_not_of(' ') != at) continue;
    uint32_t sm = 0;
    const char* begin = line.data() + at + 4;
    auto [end, ec] = std::from_chars(begin, line.data() + line.size(), sm);
    if (ec == std::errc{} && end != begin && (end == line.data() + line.size() || *end == ' ')) sms.push_back(sm);
  }
  std::sort(sms.begin(), sms.end());
  sms.erase(std::unique(sms.begin(), sms.end()), sms.end());
  return sms;
}

Result<std::string> ask(const std::string& path, const char* question) {
  Result<ToolRun> run = run_tool({path, question}, tool_environment({}), "/", k_probe_timeout);
  if (!run) return run.error();
  if (run->exit_code != 0)
    return make_error(ErrorCode::failed_precondition, "tileiras at " + path + " " + question + " failed (status " +
                                                          std::to_string(run->exit_code) + "): " + run->output);
  return run->output;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string sm_list(const std::vector<uint32_t>& sms) {
  std::vector<std::string> names;
  for (uint32_t sm : sms) names.push_back("sm_" + std::to_string(sm));
  return joined(names);
}

// Where a wheel puts tileiras, under each nvidia/cuNN directory `path`
// holds (newest CUDA first), or `path`/bin itself.
std::vector<fs::path> candidates_in(const std::string& path) {
  std::vector<fs::path> found;
  const fs::path root(path);
  std::vector<fs::path> homes{root};
  for (const fs::path& nvidia : {root, root / "nvidia"}) {
    std::error_code ec;
    std::vector<fs::path> cus;
    for (fs::directory_iterator it(nvidia, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().starts_with("cu")) cus.push_back(it->path());
    std::sort(cus.rbegin(), cus.rend());
    homes.insert(homes.end(), cus.begin(), cus.end());
  }
  for (const std::string& cu : python_env_cuda_dirs(path)) homes.push_back(cu);
  for (const fs::path& home : homes) found.push_back(home / "bin" / "tileiras");
  return found;
}

struct Process {
  std::mutex mutex;
  TileirasSearch search{{}, {}, default_local_tileiras_prefix()};
  std::optional<Result<TileirasToolchain>> found;
};
Process& process() {
  static Process p;
  return p;
}

// pidfd_open(2): poll(2) on it wakes when the child ends, so the time bound
// needs no polling loop.
int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

std::string TileirasToolchain::describe() const { return "tileiras " + version + " at " + path; }

std::string default_local_tileiras_prefix() {
  const std::string cuda_wheels = default_local_toolkit_prefix();
  if (cuda_wheels.empty()) return {};
  return (fs::path(cuda_wheels).parent_path() / "tileiras").string();
}

Result<ToolRun> run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& working_dir, std::chrono::milliseconds timeout) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
    return make_error(ErrorCode::internal, "run_tool: the program must be an absolute path");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return make_error(ErrorCode::internal, std::string("run_tool: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return make_error(ErrorCode::failed_precondition,
                      "cannot run " + argv[0] + ": " + std::strerror(spawned));
  }
  const int pidfd = open_pidfd(pid);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string output;
  bool timed_out = false;
  // Read until the pipe closes (the child and whatever it started are done
  // writing) or the time is up.
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&fds, 1, static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char buffer[16384];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
    if (output.size() > 2 * k_output_limit) output.erase(0, output.size() - k_output_limit);
  }
  ::close(pipe_fds[0]);
  if (!timed_out && pidfd >= 0) {
    // A child that closed its output may still be running: wait out the rest of the bound on its pidfd.
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd fds{pidfd, POLLIN, 0};
      const int ready = ::poll(&fds, 1, static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX)));
      if (ready > 0) break;
      if (ready < 0 && errno != EINTR) break;
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (output.size() > k_output_limit) output.erase(0, output.size() - k_output_limit);
  if (timed_out)
    return make_error(ErrorCode::deadline_exceeded, argv[0] + " ran past its time bound of " +
                                                        std::to_string(timeout.count() / 1000) + " s and was killed",
                      output);
  ToolRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  run.output = std::move(output);
  return run;
}

namespace {

// The program at path and what sits beside it; nullopt when it is no file.
std::optional<TileirasLocation> location_of(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  if (ec || !fs::is_regular_file(canonical, ec)) return std::nullopt;
  return TileirasLocation{canonical.string(), (canonical.parent_path() / "ptxas").string(),
                          canonical.parent_path().parent_path().string()};
}

}  // namespace

Result<TileirasToolchain> probe_tileiras(const std::string& path) {
  const std::optional<TileirasLocation> location = location_of(path);
  if (!location) return make_error(ErrorCode::failed_precondition, "tileiras: " + path + " is not a file");
  TileirasToolchain tileiras;
  tileiras.path = location->path;
  tileiras.root = location->root;
  tileiras.ptxas = location->ptxas;
  Result<std::string> version = ask(tileiras.path, "--version");
  if (!version) return version.error();
  tileiras.version = version_of(*version);
  if (tileiras.version.empty())
    return make_error(ErrorCode::failed_precondition,
                      "tileiras at " + tileiras.path + " did not say its version: " + *version);
  tileiras.build_digest = hex_sha256(*version).substr(0, 16);
  Result<std::string> versions = ask(tileiras.path, "--list-versions");
  if (!versions) return versions.error();
  tileiras.bytecode_versions = lines_of(*versions);
  Result<std::string> help = ask(tileiras.path, "--help");
  if (!help) return help.error();
  tileiras.sms = gpu_names_of(*help);
  if (tileiras.bytecode_versions.empty() || tileiras.sms.empty())
    return make_error(ErrorCode::failed_precondition,
                      "tileiras at " + tileiras.path + " lists no bytecode versions or no GPUs");
  return tileiras;
}

Result<TileirasToolchain> find_tileiras(const TileirasSearch& search) {
  if (!search.configured.empty()) return probe_tileiras(search.configured);
  std::vector<std::string> places = search.wheel_paths;
  if (!search.local_prefix.empty()) places.push_back(search.local_prefix);
  for (const std::string& place : places) {
    for (const fs::path& candidate : candidates_in(place)) {
      std::error_code ec;
      if (!fs::is_regular_file(candidate, ec)) continue;
      Result<TileirasToolchain> probed = probe_tileiras(candidate.string());
      if (probed) return probed;
      spdlog::warn("{}", probed.error().message);
    }
  }
  std::string where = places.empty() ? "nowhere (no toolkit_paths, no local prefix)" : joined(places);
  return make_error(ErrorCode::failed_precondition,
                    "Tile IR needs tileiras, which was not found: looked in " + where +
                        " (nvidia/cuNN/bin/tileiras of NVIDIA's nvidia-cuda-tileiras wheel). Install it "
                        "(scripts/install-deps.sh, or pip install nvidia-cuda-tileiras) or name it with the "
                        "tileiras configuration key");
}

void set_tileiras_search(TileirasSearch search) {
  Process& p = process();
  std::lock_guard lock(p.mutex);
  if (p.search == search) return;
  p.search = std::move(search);
  p.found.reset();
}

const Result<TileirasToolchain>& tileiras_toolchain() {
  Process& p = process();
  std::lock_guard lock(p.mutex);
  if (!p.found) {
    p.found = find_tileiras(p.search);
    if (*p.found) spdlog::debug("Tile IR: {}", (*p.found)->describe());
  }
  return *p.found;
}

std::optional<TileirasLocation> tileiras_location() {
  TileirasSearch search;
  {
    Process& p = process();
    std::lock_guard lock(p.mutex);
    // Once probed, what was found is the answer (a candidate that did not
    // answer is not it).
    if (p.found) {
      if (!*p.found) return std::nullopt;
      return TileirasLocation{(*p.found)->path, (*p.found)->ptxas, (*p.found)->root};
    }
    search = p.search;
  }
  if (!search.configured.empty()) return location_of(search.configured);
  std::vector<std::string> places = search.wheel_paths;
  if (!search.local_prefix.empty()) places.push_back(search.local_prefix);
  for (const std::string& place : places)
    for (const fs::path& candidate : candidates_in(place))
      if (std::optional<TileirasLocation> found = location_of(candidate.string())) return found;
  return std::nullopt;
}

std::vector<std::string> tileiras_executables() {
  const Result<TileirasToolchain>& tileiras = tileiras_toolchain();
  if (!tileiras) return {};
  return {tileiras->path, tileiras->ptxas};
}

std::string tileir_bytecode_version(std::string_view bytecode) {
  constexpr std::string_view k_magic{"\x7fTileIR\0", 8};
  if (bytecode.size() < k_magic.size() + 2 || !bytecode.starts_with(k_magic)) return {};
  return std::to_string(static_cast<unsigned char>(bytecode[8])) + "." +
         std::to_string(static_cast<unsigned char>(bytecode[9]));
}

Status check_tileir_input(const TileirasToolchain& tileiras, std::string_view bytecode, uint32_t sm) {
  const std::string version = tileir_bytecode_version(bytecode);
  if (version.empty())
    return make_error(ErrorCode::invalid_argument,
                      "the input is not Tile IR bytecode: it does not start with \\x7fTileIR\\x00 and a version");
  if (std::find(tileiras.bytecode_versions.begin(), tileiras.bytecode_versions.end(), version) ==
      tileiras.bytecode_versions.end())
    return make_error(ErrorCode::failed_precondition,
                      "Tile IR bytecode " + version + " is not a version " + tileiras.describe() + " reads (" +
                          joined(tileiras.bytecode_versions) + "); export it for one of those (cuTile's "
                          "bytecode_version) or route to a tileiras that reads " + version);
  if (std::find(tileiras.sms.begin(), tileiras.sms.end(), sm) == tileiras.sms.end())
    return make_error(ErrorCode::invalid_argument, "target sm_" + std::to_string(sm) + " is not one " +
                                                       tileiras.describe() + " builds for; it builds " +
                                                       sm_list(tileiras.sms));
  return Ok{};
}

Result<TileirasOutput> assemble_tile_ir(const TileirasToolchain& tileiras, const TileirasRequest& request) {
  if (Status s = check_tileir_input(tileiras, request.bytecode, request.sm); !s) return s.error();
  std::string parent = request.temp_parent;
  if (parent.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
  }
  std::string dir_template = parent + "/tileiras.XXXXXX";
  if (::mkdtemp(dir_template.data()) == nullptr)
    return make_error(ErrorCode::internal, "cannot make a temporary directory in " + parent + ": " +
                                               std::strerror(errno));
  const fs::path dir(dir_template);
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{dir};
  const fs::path input = dir / "input.tileirbc";
  const fs::path output = dir / "output.cubin";
  {
    std::ofstream out(input, std::ios::binary);
    out.write(request.bytecode.data(), static_cast<std::streamsize>(request.bytecode.size()));
    if (!out) return make_error(ErrorCode::internal, "cannot write the bytecode to " + input.string());
  }
  std::vector<std::string> argv{tileiras.path, "--gpu-name=sm_" + std::to_string(request.sm)};
  argv.insert(argv.end(), request.options.begin(), request.options.end());
  argv.push_back("--output-file=" + output.string());
  argv.push_back(input.string());
  Result<ToolRun> run = run_tool(argv, tool_environment(dir.string()), dir.string(), request.timeout);
  if (!run) return run.error();
  if (run->exit_code != 0) {
    // A signal is tileiras' own failure (or a bound); an exit status is its verdict on the input.
    const ErrorCode code = run->exit_code < 0 ? ErrorCode::internal : ErrorCode::invalid_argument;
    return make_error(code,
                      request.input_name + ": tileiras could not assemble it for sm_" + std::to_string(request.sm) +
                          (run->exit_code < 0 ? " (killed by signal " + std::to_string(-run->exit_code) + ")"
                                              : " (status " + std::to_string(run->exit_code) + ")"),
                      run->output);
  }
  std::optional<std::string> cubin = read_file(output);
  if (!cubin || cubin->empty())
    return make_error(ErrorCode::internal, "tileiras succeeded but wrote no cubin", run->output);
  return TileirasOutput{std::move(*cubin), std::move(run->output)};
}

}  // namespace kjit
