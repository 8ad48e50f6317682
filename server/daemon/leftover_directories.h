// Directories kjit's processes leave in the temporary root ($TMPDIR, else
// /tmp) when they die without cleaning up (a SIGKILL, a crash): their names,
// which say who made them, and the scan a starting daemon makes to remove
// those whose owner is gone, never those of a live process.
//
// The names: "kjit-worker-<tag>-XXXXXX" (a compile worker's private
// directory, made by its daemon; compile_workers.cpp writes the same tag),
// "kjitd-triton-<tag>" (the daemon's Triton discovery),
// "kjitd-triton-home-<tag>" (the Triton interpreters of a daemon that
// compiles in its own process), where <tag> is "<pid>.<start>.<pid
// namespace>": the owner's pid, its start (/proc/<pid>/stat's starttime, in
// clock ticks after boot) and the inode of its pid namespace. The start
// tells a reused pid from the owner; the namespace keeps a scan from judging
// a directory made in another pid namespace that shares the root (a
// container), whose pids this one cannot see. Older names record a pid alone
// ("kjit-triton-<pid>", "kjitd-triton-<pid>"): they are removed only once no
// process has that pid.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// Who made a directory, as its name says.
struct DirectoryOwner {
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;    // absent in the names that record a pid alone
  std::optional<uint64_t> pid_namespace;  // likewise
};

// The owner a name of kjit's patterns records; nullopt for any other name.
std::optional<DirectoryOwner> owner_of_directory_name(std::string_view name);

// "<pid>.<start>.<pid namespace>" of this process, for the names of the
// directories it makes; nullopt without /proc.
std::optional<std::string> owner_tag_of_this_process();

// The process that has the owner's pid now, as /proc shows it.
struct OwnerProcess {
  enum class State {
    none,     // no process has the pid
    running,  // a process has it, started at start_ticks
    ended,    // a zombie: dead, not yet reaped
    unknown,  // /proc did not say
  };
  State state = State::unknown;
  uint64_t start_ticks = 0;
};

// What is known of a directory of kjit's names when it is judged.
struct LeftoverFacts {
  uid_t directory_uid = 0;  // the directory's owner, from lstat
  uid_t our_uid = 0;        // the scanning process's effective uid
  uint64_t our_pid_namespace = 0;
  OwnerProcess process;  // the process with the owner's pid
};

enum class LeftoverVerdict {
  remove,                    // its owner is gone: dead, or its pid now another process's
  keep_other_user,           // not ours to judge, nor to remove
  keep_other_pid_namespace,  // its owner's pid means nothing here
  keep_owner_alive,          // the owner runs (or a pid-only name's pid is taken)
  keep_unknown,              // /proc did not say: kept, as a live one's would be
};

// The decision alone, from facts gathered by the caller: a directory goes
// only when it is this user's and its owner is certainly gone.
LeftoverVerdict judge_leftover(const DirectoryOwner& owner, const LeftoverFacts& facts);

// /proc/<pid>/stat of `pid`, read now.
OwnerProcess owner_process(pid_t pid);

struct LeftoverScan {
  std::vector<std::string> removed;  // paths removed
  std::vector<std::string> failed;   // paths judged stale that could not be removed, with why
};

// Removes the directories directly under `root` whose names are kjit's
// patterns, which belong to this process's user (lstat: a symbolic link is
// never followed nor removed) and whose owner is gone. Removes nothing
// where /proc cannot be read, since every owner would look gone. Safe
// beside other daemons that scan or create under the same root.
LeftoverScan remove_leftover_directories(const std::filesystem::path& root);

}  // namespace kjit
