// A Triton build's Python interpreter running kjit's Triton worker script as
// a child process: started once, then asked many questions (describe, one
// compile per job), so Triton is imported once per process, not per compile.
// Requests and answers are JSON objects, each framed by a 4-byte
// little-endian length, on the child's stdin and stdout; its stderr is the
// caller's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"

namespace kjit {

// The worker script, embedded in the binary at build time.
std::string_view triton_worker_script();

// How an interpreter is started, besides its build and working directory.
struct TritonInterpreterOptions {
  // Imports Triton at idle CPU priority (a prestarted worker's warm-up).
  bool warm_at_idle = false;
  // "NAME=value" entries added to its environment (a build's configured
  // plugins').
  std::vector<std::string> environment;
  // Killed (SIGKILL) when the thread that started it ends, which includes
  // the process's exit: for the short-lived interpreters of discovery, so
  // that a daemon stopped while they run leaves none of them running on.
  // Never for an interpreter kept for later jobs, whose starting thread may
  // end first.
  bool ends_with_starting_thread = false;
  // The build's description as the daemon holds it (JSON): the interpreter
  // takes it instead of describing itself again, which compiles a probe for
  // every candidate target (seconds of CPU at each start), once it sees it
  // is its own build's. Empty for the interpreters that describe a build.
  std::string description;
};

class TritonInterpreter {
 public:
  // Starts `python -I -B -c <script>` in `working_dir` (created if missing),
  // with a minimal environment: no TRITON_* or CUDA_HOME from the caller, and
  // HOME and TMPDIR under the working directory. The child stays in the
  // caller's process group, so whoever kills the group stops it too. It
  // takes none of the caller's CPU or memory limits below their hard ones
  // (a compile worker's are a job's; each job's child sets its own).
  static Result<std::unique_ptr<TritonInterpreter>> start(const std::string& python, const std::string& working_dir,
                                                          const TritonInterpreterOptions& options = {});
  ~TritonInterpreter();  // closes its stdin, then ends it
  TritonInterpreter(const TritonInterpreter&) = delete;
  TritonInterpreter& operator=(const TritonInterpreter&) = delete;

  // One request, one answer (a JSON object as text). deadline_exceeded when
  // no answer comes within `timeout` (the child is killed: its state is
  // unknown), internal when the child died or wrote something that is not
  // an answer. After a failure the interpreter is dead; start another.
  Result<std::string> ask(std::string_view request_json, std::chrono::milliseconds timeout);
  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  TritonInterpreter(pid_t pid, int to_child, int from_child) : pid_(pid), to_child_(to_child), from_child_(from_child) {}
  void end(bool kill_first);
  pid_t pid_;
  int to_child_;
  int from_child_;
};

}  // namespace kjit
