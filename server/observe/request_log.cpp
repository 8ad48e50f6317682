#include "server/observe/request_log.h"

#include <spdlog/details/file_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <filesystem>
#include <mutex>
#include <random>

#include "core/hex.h"

namespace kjit {
namespace {

thread_local std::string t_request_id;
thread_local std::string t_who;

constexpr size_t k_max_client_id = 64;

// Writes "[req <id>] " when the logging thread works for a request, and
// "[uid .. gid .. pid ..] " when the daemon knows who sent it.
class RequestIdFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    if (t_request_id.empty()) return;
    dest.append(std::string_view("[req "));
    dest.append(t_request_id);
    dest.append(std::string_view("] "));
    if (t_who.empty()) return;
    dest.append(std::string_view("["));
    dest.append(t_who);
    dest.append(std::string_view("] "));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<RequestIdFlag>(); }
};

std::unique_ptr<spdlog::formatter> request_log_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<RequestIdFlag>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %*%v");
  return formatter;
}

// A file sink that can reopen its file under the same name, under the
// sink's own lock, so no line is lost or written to a closed file.
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Absolute: the daemon changes its working directory once it serves, and
  // a reopen opens the file by this name.
  explicit ReopenableFileSink(const std::string& path) {
    file_.open(std::filesystem::absolute(path).string(), /*truncate=*/false);
  }
  void reopen() {
    std::lock_guard lock(mutex_);
    file_.reopen(/*truncate=*/false);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    file_.write(formatted);
  }
  void flush_() override { file_.flush(); }

 private:
  spdlog::details::file_helper file_;
};

std::mutex g_file_sink_mutex;
std::shared_ptr<ReopenableFileSink> g_file_sink;

}  // namespace

std::string new_request_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t bits = random();
  return hex_lower(&bits, sizeof bits);
}

std::string accept_request_id(std::string_view from_client) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  };
  if (from_client.empty() || from_client.size() > k_max_client_id ||
      !std::all_of(from_client.begin(), from_client.end(), allowed))
    return new_request_id();
  return std::string(from_client);
}

RequestLogScope::RequestLogScope(std::string_view request_id, std::string_view who)
    : previous_(std::move(t_request_id)), previous_who_(std::move(t_who)) {
  t_request_id.assign(request_id);
  t_who.assign(who);
}

RequestLogScope::~RequestLogScope() {
  t_request_id = std::move(previous_);
  t_who = std::move(previous_who_);
}

const std::string& current_request_id() { return t_request_id; }

void use_request_log_format() { spdlog::set_formatter(request_log_formatter()); }

bool log_to_file(const std::string& path, const std::string& logger_name) {
  if (path.empty()) return true;
  std::shared_ptr<ReopenableFileSink> sink;
  try {
    sink = std::make_shared<ReopenableFileSink>(path);
  } catch (const spdlog::spdlog_ex& e) {
    spdlog::error("cannot open the log file {}: {}; logging to stderr", path, e.what());
    return false;
  }
  sink->set_formatter(request_log_formatter());
  auto logger = std::make_shared<spdlog::logger>(logger_name, sink);
  logger->set_level(spdlog::default_logger()->level());
  logger->flush_on(spdlog::level::info);
  {
    std::lock_guard lock(g_file_sink_mutex);
    g_file_sink = sink;
  }
  spdlog::set_default_logger(std::move(logger));
  return true;
}

void reopen_log_file() {
  std::shared_ptr<ReopenableFileSink> sink;
  {
    std::lock_guard lock(g_file_sink_mutex);
    sink = g_file_sink;
  }
  if (!sink) return;
  try {
    sink->reopen();
    spdlog::info("log file reopened");
  } catch (const spdlog::spdlog_ex& e) {
    // Nothing to write to: say it where someone may look.
    fprintf(stderr, "kjitd: cannot reopen the log file: %s\n", e.what());
  }
}

}  // namespace kjit
