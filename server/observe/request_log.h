// Request ids in the daemon's log: each request gets an id, and every log
// line written on a thread working for it (the gRPC thread that received it,
// the pool thread that compiles it) carries "[req <id>]", so one grep finds
// everything about a request.
#pragma once

#include <string>
#include <string_view>

namespace kjit {

// A fresh id: 16 hex digits, random. A client may send its own in the
// "kjit-request-id" metadata (1-64 of [A-Za-z0-9._-]); see accept_request_id.
std::string new_request_id();

// The client's id when it is well formed, else a fresh one.
std::string accept_request_id(std::string_view from_client);

// While alive, log lines of this thread carry the id, and who called when
// the daemon knows ("uid 1000 gid 1000 pid 4242" on its socket):
// "[req <id>] [uid 1000 gid 1000 pid 4242] ...".
class RequestLogScope {
 public:
  explicit RequestLogScope(std::string_view request_id, std::string_view who = {});
  ~RequestLogScope();
  RequestLogScope(const RequestLogScope&) = delete;
  RequestLogScope& operator=(const RequestLogScope&) = delete;

 private:
  std::string previous_;
  std::string previous_who_;
};

// The id of the request this thread works for; empty when none.
const std::string& current_request_id();

// The daemon's log format, with the request id (the %* flag) before the
// message: "[2026-12-01 03:00:00.123] [kjitd] [info] [req 1f2e...] ...".
void use_request_log_format();

// Logs to `path` (appended) instead of stderr; reopen_log_file() reopens it
// under the same name (after logrotate moved it away). Empty path: stderr.
// Returns false (and logs to stderr) when the file cannot be opened.
bool log_to_file(const std::string& path, const std::string& logger_name);
void reopen_log_file();

}  // namespace kjit
