// Directories left by kjit processes that are gone (see leftover_directories.h).
#include "server/daemon/leftover_directories.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <sstream>

namespace kjit {
namespace {

namespace fs = std::filesystem;

// How a pattern's name goes on after its prefix.
enum class NameShape {
  tag_then_random,  // "<tag>-XXXXXX", mkdtemp's six characters
  tag_or_pid,       // "<tag>", or "<pid>" as older kjits named it
  pid,              // "<pid>"
};

struct LeftoverPattern {
  std::string_view prefix;
  NameShape shape;
};

// Every directory name kjit leaves in the temporary root. The longer
// prefix first: "kjitd-triton-home-" also starts with "kjitd-triton-".
constexpr LeftoverPattern k_leftover_patterns[] = {
    {"kjit-worker-", NameShape::tag_then_random},
    {"kjitd-triton-home-", NameShape::tag_or_pid},
    {"kjitd-triton-", NameShape::tag_or_pid},
    {"kjit-triton-", NameShape::pid},
};

constexpr size_t k_mkdtemp_suffix = 6;

// A decimal number, the whole of `text`: no sign, no spaces.
std::optional<uint64_t> whole_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<pid_t> pid_of(std::string_view text) {
  const std::optional<uint64_t> value = whole_number(text);
  if (!value || *value == 0 || *value > static_cast<uint64_t>(INT_MAX)) return std::nullopt;
  return static_cast<pid_t>(*value);
}

// "<pid>.<start>.<pid namespace>"
std::optional<DirectoryOwner> owner_of_tag(std::string_view tag) {
  const size_t first = tag.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = tag.find('.', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::optional<pid_t> pid = pid_of(tag.substr(0, first));
  const std::optional<uint64_t> start = whole_number(tag.substr(first + 1, second - first - 1));
  const std::optional<uint64_t> pid_namespace = whole_number(tag.substr(second + 1));
  if (!pid || !start || !pid_namespace) return std::nullopt;
  return DirectoryOwner{*pid, start, pid_namespace};
}

std::optional<DirectoryOwner> owner_of_pid(std::string_view text) {
  const std::optional<pid_t> pid = pid_of(text);
  if (!pid) return std::nullopt;
  return DirectoryOwner{*pid, std::nullopt, std::nullopt};
}

std::optional<DirectoryOwner> owner_in(std::string_view rest, NameShape shape) {
  switch (shape) {
    case NameShape::tag_then_random: {
      if (rest.size() <= k_mkdtemp_suffix + 1 || rest[rest.size() - k_mkdtemp_suffix - 1] != '-') return std::nullopt;
      return owner_of_tag(rest.substr(0, rest.size() - k_mkdtemp_suffix - 1));
    }
    case NameShape::tag_or_pid: {
      if (std::optional<DirectoryOwner> owner = owner_of_tag(rest)) return owner;
      return owner_of_pid(rest);
    }
    case NameShape::pid:
      return owner_of_pid(rest);
  }
  return std::nullopt;
}

// The whole of a small /proc file; nullopt with errno set when it cannot be read.
std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[1024];
  ssize_t got = 0;
  while ((got = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(got));
  const int saved = errno;
  ::close(fd);
  if (got < 0) {
    errno = saved;
    return std::nullopt;
  }
  return text;
}

// The state (field 3) and starttime (field 22) of a /proc/<pid>/stat line.
// The command name (field 2) may hold spaces and parentheses: the fields
// are read after its last ')'.
std::optional<OwnerProcess> parse_stat(const std::string& line) {
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  std::string state;
  if (!(fields >> state)) return std::nullopt;
  std::string field;
  for (int number = 4; number <= 22; ++number)
    if (!(fields >> field)) return std::nullopt;
  const std::optional<uint64_t> start = whole_number(field);
  if (!start) return std::nullopt;
  OwnerProcess process;
  process.state = state == "Z" || state == "X" ? OwnerProcess::State::ended : OwnerProcess::State::running;
  process.start_ticks = *start;
  return process;
}

std::optional<uint64_t> pid_namespace_of_this_process() {
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) != 0) return std::nullopt;
  return static_cast<uint64_t>(ns.st_ino);
}

// What a confined worker may have left unwritable (a directory of mode
// 0500) stops remove_all: made writable by its owner, it goes. Symbolic
// links are neither followed nor changed.
void remove_tree(const fs::path& path, std::error_code& ec) {
  fs::remove_all(path, ec);
  if (!ec) return;
  std::error_code walk_ec;
  ::chmod(path.c_str(), 0700);
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, walk_ec);
       !walk_ec && it != fs::recursive_directory_iterator(); it.increment(walk_ec)) {
    std::error_code status_ec;
    if (it->symlink_status(status_ec).type() == fs::file_type::directory) ::chmod(it->path().c_str(), 0700);
  }
  ec.clear();
  fs::remove_all(path, ec);
}

}  // namespace

std::optional<DirectoryOwner> owner_of_directory_name(std::string_view name) {
  for (const LeftoverPattern& pattern : k_leftover_patterns) {
    if (!name.starts_with(pattern.prefix)) continue;
    if (std::optional<DirectoryOwner> owner = owner_in(name.substr(pattern.prefix.size()), pattern.shape)) return owner;
  }
  return std::nullopt;
}

std::optional<std::string> owner_tag_of_this_process() {
  const std::optional<std::string> stat = read_proc_file("/proc/self/stat");
  const std::optional<OwnerProcess> self = stat ? parse_stat(*stat) : std::nullopt;
  const std::optional<uint64_t> pid_namespace = pid_namespace_of_this_process();
  if (!self || !pid_namespace) return std::nullopt;
  return std::to_string(::getpid()) + "." + std::to_string(self->start_ticks) + "." + std::to_string(*pid_namespace);
}

OwnerProcess owner_process(pid_t pid) {
  const std::optional<std::string> stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) {
    // ENOENT and ESRCH (the process went while it was read) say that no
    // process has the pid; anything else says nothing.
    return OwnerProcess{errno == ENOENT || errno == ESRCH ? OwnerProcess::State::none : OwnerProcess::State::unknown};
  }
  return parse_stat(*stat).value_or(OwnerProcess{});
}

LeftoverVerdict judge_leftover(const DirectoryOwner& owner, const LeftoverFacts& facts) {
  if (facts.directory_uid != facts.our_uid) return LeftoverVerdict::keep_other_user;
  if (owner.pid_namespace && *owner.pid_namespace != facts.our_pid_namespace)
    return LeftoverVerdict::keep_other_pid_namespace;
  switch (facts.process.state) {
    case OwnerProcess::State::none:
    case OwnerProcess::State::ended:
      return LeftoverVerdict::remove;
    case OwnerProcess::State::unknown:
      return LeftoverVerdict::keep_unknown;
    case OwnerProcess::State::running:
      // Another start: the owner died and its pid went to a later process.
      // A pid-only name cannot tell, and keeps the directory.
      if (owner.start_ticks && *owner.start_ticks != facts.process.start_ticks) return LeftoverVerdict::remove;
      return LeftoverVerdict::keep_owner_alive;
  }
  return LeftoverVerdict::keep_unknown;
}

LeftoverScan remove_leftover_directories(const fs::path& root) {
  LeftoverScan scan;
  // Without /proc every owner would look gone.
  const std::optional<uint64_t> our_pid_namespace = pid_namespace_of_this_process();
  if (!our_pid_namespace || owner_process(::getpid()).state != OwnerProcess::State::running) return scan;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<DirectoryOwner> owner = owner_of_directory_name(name);
    if (!owner) continue;
    struct stat entry {};
    if (::lstat(it->path().c_str(), &entry) != 0 || !S_ISDIR(entry.st_mode)) continue;
    const LeftoverFacts facts{entry.st_uid, ::geteuid(), *our_pid_namespace, owner_process(owner->pid)};
    if (judge_leftover(*owner, facts) != LeftoverVerdict::remove) continue;
    std::error_code remove_ec;
    remove_tree(it->path(), remove_ec);
    if (remove_ec)
      scan.failed.push_back(it->path().string() + ": " + remove_ec.message());
    else
      scan.removed.push_back(it->path().string());
  }
  return scan;
}

}  // namespace kjit
