// What a compile worker writes to stderr: every line goes to the daemon's
// log as it comes, and the last lines written during the current job are
// kept, so a worker that dies ("killed by signal 6") is reported with its
// own last words ("LLVM ERROR: Cannot select: ...").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kjit {

class WorkerOutput {
 public:
  // Takes ownership of `fd`, the read end of the worker's stderr pipe, and
  // drains it on a thread of its own until the worker closes it (exits).
  WorkerOutput(int fd, pid_t pid);
  // Waits for the pipe's end: call only once the worker is gone.
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  // The line a worker writes to stderr as it starts a job: what came before
  // belongs to another request and is forgotten. Marked in the pipe itself,
  // so a late line of the job before can never land in this one's tail.
  static constexpr std::string_view k_job_marker = "\x1ekjit-job";
  // The line a worker writes when the job's compile is over, before its
  // answer: once the daemon has the answer it can wait for this line and
  // know it holds everything the job wrote.
  static constexpr std::string_view k_job_end_marker = "\x1ekjit-job-end";

  // Waits (at most `timeout`) until the current job's end marker or the
  // pipe's end has been read; false on timeout.
  bool wait_for_job_end(std::chrono::milliseconds timeout);
  // Waits until everything the (dead) worker wrote has been read.
  void wait_for_end();
  // The current job's output, each line ending in '\n': its first lines
  // (where a toolchain says what went wrong: "LLVM ERROR: ...") and its last
  // ones (what came before a crash, a stack dump after the error), with a
  // line saying how many were left out between them.
  std::string last_lines() const;

  static constexpr size_t k_first_lines = 8;
  static constexpr size_t k_last_lines = 16;
  static constexpr size_t k_max_bytes = 4096;  // of the last lines together

 private:
  void drain();
  void keep(std::string line);
  void mark_job_over();

  int fd_;
  pid_t pid_;
  mutable std::mutex mutex_;
  std::vector<std::string> first_;
  std::deque<std::string> last_;
  size_t last_bytes_ = 0;
  size_t left_out_ = 0;
  bool job_over_ = false;  // the end marker or the pipe's end was read
  std::condition_variable job_over_changed_;
  std::thread reader_;
};

}  // namespace kjit
