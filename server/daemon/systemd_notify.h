// Tells the service manager how kjitd stands (systemd's Type=notify
// protocol): ready once it serves, stopping once it drains, and a one-line
// status between. Started without systemd (NOTIFY_SOCKET unset) every call
// does nothing, so nothing changes for a daemon run by hand or in a
// container.
#pragma once

#include <string>

namespace kjit::systemd_notify {

// READY=1 with a STATUS= line: the socket accepts calls from now on, so
// `systemctl start` returns and units ordered after kjitd may start.
void ready(const std::string& status);

// STATUS= alone, e.g. how many calls a drain still waits for.
void status(const std::string& status);

// STOPPING=1 with a STATUS= line: the daemon refuses new calls and finishes
// those in flight.
void stopping(const std::string& status);

}  // namespace kjit::systemd_notify
