// systemd's notification protocol through libsystemd (see systemd_notify.h).
#include "server/daemon/systemd_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstring>

namespace kjit::systemd_notify {
namespace {

// A status is one line for systemctl status; a newline would start a new
// assignment in the message.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

void send(const std::string& message) {
  // unset_environment = 0: the variable stays for the later STOPPING=1.
  // 0 means no NOTIFY_SOCKET: not started by a service manager.
  const int sent = ::sd_notify(0, message.c_str());
  if (sent < 0) spdlog::warn("cannot notify the service manager ({}): {}", one_line(message), std::strerror(-sent));
}

}  // namespace

void ready(const std::string& status) { send("READY=1\nSTATUS=" + one_line(status)); }

void status(const std::string& status) { send("STATUS=" + one_line(status)); }

void stopping(const std::string& status) { send("STOPPING=1\nSTATUS=" + one_line(status)); }

}  // namespace kjit::systemd_notify
