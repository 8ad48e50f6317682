// How kjitd starts its compile workers: wired in by its own start-up (its
// command line, where it started, the configuration file it read), not
// something a user configures.
#pragma once

#include <string>
#include <vector>

#include "backends/toolkit_discovery.h"

namespace kjit {

struct WorkerLaunch {
  // kjitd's own argv without --config; "--worker-fd 3" is added, so a worker
  // builds the same pipeline (same flags, plugins). Empty: no workers.
  std::vector<std::string> command;
  std::string directory;  // where kjitd started: the command's relative paths resolve there
  // The configuration file as the daemon read it at start (empty: none),
  // sent to every new worker, so a file edited since changes nothing.
  std::string config_text, config_path;
  // Whether the daemon hands its discovered toolkits to every worker
  // (CompileWorkers::hand_toolkits): a worker's start then waits for them.
  bool toolkits_from_daemon = false;
};

}  // namespace kjit
