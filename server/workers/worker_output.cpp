#include "server/workers/worker_output.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

namespace kjit {
namespace {
constexpr size_t k_max_line_bytes = 512;  // a line longer is cut, so one line cannot take the whole tail
}

WorkerOutput::WorkerOutput(int fd, pid_t pid) : fd_(fd), pid_(pid), reader_([this] { drain(); }) {}

WorkerOutput::~WorkerOutput() { wait_for_end(); }

void WorkerOutput::wait_for_end() {
  if (reader_.joinable()) reader_.join();
}

std::string WorkerOutput::last_lines() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const std::string& line : first_) out += line + "\n";
  if (left_out_) out += "... (" + std::to_string(left_out_) + " lines left out)\n";
  for (const std::string& line : last_) out += line + "\n";
  return out;
}

void WorkerOutput::keep(std::string line) {
  if (line.empty()) return;
  if (line == k_job_marker) {
    std::lock_guard lock(mutex_);
    first_.clear();
    last_.clear();
    last_bytes_ = 0;
    left_out_ = 0;
    job_over_ = false;
    return;
  }
  if (line == k_job_end_marker) {
    mark_job_over();
    return;
  }
  spdlog::warn("compile worker {}: {}", pid_, line);
  if (line.size() > k_max_line_bytes) line = line.substr(0, k_max_line_bytes) + "...";
  std::lock_guard lock(mutex_);
  if (first_.size() < k_first_lines) {
    first_.push_back(std::move(line));
    return;
  }
  last_bytes_ += line.size() + 1;
  last_.push_back(std::move(line));
  while (last_.size() > k_last_lines || (last_bytes_ > k_max_bytes && last_.size() > 1)) {
    last_bytes_ -= last_.front().size() + 1;
    last_.pop_front();
    ++left_out_;
  }
}

void WorkerOutput::drain() {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t eol; (eol = pending.find('\n', start)) != std::string::npos; start = eol + 1)
      keep(pending.substr(start, eol - start));
    pending.erase(0, start);
    if (pending.size() > k_max_line_bytes * 8) {  // a runaway line without newline
      keep(std::move(pending));
      pending.clear();
    }
  }
  keep(std::move(pending));
  ::close(fd_);
  mark_job_over();
}

void WorkerOutput::mark_job_over() {
  {
    std::lock_guard lock(mutex_);
    job_over_ = true;
  }
  job_over_changed_.notify_all();
}

bool WorkerOutput::wait_for_job_end(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return job_over_changed_.wait_for(lock, timeout, [this] { return job_over_; });
}

}  // namespace kjit
