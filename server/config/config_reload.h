// A reload of the configuration (SIGHUP, `kjit admin reload`) as values:
// which keys of a configuration read again differ from those in force, which
// of them a reload puts in force at once (the table's reloadable rows) and
// which wait for a restart, and what the daemon then serves with.
#pragma once

#include <string>
#include <vector>

#include "server/config/daemon_config.h"

namespace kjit {

// What a reload did, for its log line, its RPC's answer and the tests.
struct ReloadReport {
  std::vector<std::string> reloaded;       // read again and in force: "tenants", "tls", "log_level", ...
  std::vector<std::string> needs_restart;  // keys whose new value waits for a restart
};

struct ConfigChanges {
  std::vector<std::string> reloadable;     // changed keys a reload applies, by TOML path
  std::vector<std::string> needs_restart;  // changed keys that wait for a restart
};

// The keys whose value differs between the configuration in force and the
// one read again: every row of the table, and the structured keys
// (plugins, [[toolkits]], pipelines, ...), which all need a restart.
ConfigChanges config_changes(const DaemonConfig& in_force, const DaemonConfig& read);

// `in_force` with the reloadable keys' values from `read`: what the daemon
// serves with after a reload, so that GetStatus and the next reload compare
// against what is really in force.
DaemonConfig with_reloadable_keys(const DaemonConfig& in_force, const DaemonConfig& read);

}  // namespace kjit
