// bgd started from its virtual environment, probed through kjit's own REAPI
// connection (see buildgrid_server.h).
#include "support/buildgrid_server.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cache/reapi_connection.h"
#include "support/eventually.h"
#include "support/loopback.h"

namespace kjit::test {

std::string BuildGridServer::python() {
  const char* env = std::getenv("KJIT_BUILDGRID");
  const std::string prefix = env && *env ? env : std::string(KJIT_TEST_SOURCE_DIR) + "/.deps/buildgrid";
  const std::string path = prefix + "/bin/python";
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

std::optional<std::string> BuildGridServer::unavailable() {
  if (!python().empty()) return std::nullopt;
  return std::string("BuildGrid is not installed in .deps/buildgrid (scripts/install-deps.sh installs it)");
}

BuildGridServer::BuildGridServer() : port_(free_loopback_port()) {
  Result<std::string> dir = make_temp_dir("kjit-buildgrid-");
  if (dir) dir_ = *dir;
}

BuildGridServer::~BuildGridServer() {
  kill();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

bool BuildGridServer::start() {
  if (process_ && process_->running()) return true;
  const std::string config = dir_ + "/bgd.yml";
  {
    std::ofstream out(config);
    out << "server:\n"
           "  - !channel\n"
           "    address: \"127.0.0.1:" << port_ << "\"\n"
           "    insecure-mode: true\n"
           "authorization:\n"
           "  method: none\n"
           "storages:\n"
           "  - !disk-storage &cas-storage\n"
           "    path: " << cas_directory() << "\n"
           "caches:\n";
    if (redis_port_)
      out << "  - !redis-action-cache &ac\n"
             "    storage: *cas-storage\n"
             "    allow-updates: true\n"
             "    redis: !redis-connection\n"
             "      host: 127.0.0.1\n"
             "      port: " << redis_port_ << "\n";
    else
      out << "  - !lru-action-cache &ac\n"
             "    storage: *cas-storage\n"
             "    max-cached-refs: 100000\n"
             "    allow-updates: true\n";
    for (size_t i = 0; i < instances_.size(); ++i)
      out << "  - !lru-action-cache &ac" << i << "\n"
             "    storage: *cas-storage\n"
             "    max-cached-refs: 100000\n"
             "    allow-updates: true\n";
    out << "instances:\n";
    auto instance = [&](const std::string& name, const std::string& cache) {
      out << "  - name: \"" << name << "\"\n"
             "    services:\n"
             "      - !action-cache\n"
             "        cache: *" << cache << "\n"
             "      - !cas\n"
             "        storage: *cas-storage\n"
             "      - !bytestream\n"
             "        storage: *cas-storage\n";
    };
    instance("", "ac");
    for (size_t i = 0; i < instances_.size(); ++i) instance(instances_[i], "ac" + std::to_string(i));
  }
  SpawnOptions options;
  options.stdout_path = log_path() + ".out";
  options.stderr_path = log_path();
  Result<ChildProcess> child = ChildProcess::spawn(
      {python(), "-c", "import sys; from buildgrid.server.app import cli; sys.exit(cli())", "server", "start", config},
      options);
  if (!child) return false;
  process_ = std::make_unique<ChildProcess>(std::move(child).value());
  // Generous: a Python server importing its packages on a loaded two-core
  // machine takes seconds. A server that exited ends the wait at once.
  ReapiConnection::Options probe_options;
  probe_options.endpoint = endpoint();
  probe_options.timeout = std::chrono::milliseconds(1000);
  probe_options.breaker.failures_to_open = 1'000'000;  // the probe asks again and again
  bool exited = false;
  const bool answers = eventually(
      [&] {
        if (!process_->running()) {
          exited = true;
          return true;
        }
        // A fresh connection each time: a failed GetCapabilities is not kept.
        Result<std::shared_ptr<ReapiConnection>> probe = ReapiConnection::open(probe_options);
        return probe && (*probe)->capabilities().ok();
      },
      std::chrono::seconds(120), std::chrono::milliseconds(200));
  if (answers && !exited) return true;
  kill();
  return false;
}

void BuildGridServer::kill() {
  if (!process_) return;
  if (process_->running()) process_->signal(SIGKILL);
  process_->wait();
  process_.reset();
}

std::string BuildGridServer::blob_file(const std::string& hash) const {
  if (hash.size() < 3) return {};
  // BuildGrid's disk storage: <path>/cas/objects/<first two digits>/<the rest>.
  const std::string path = cas_directory() + "/cas/objects/" + hash.substr(0, 2) + "/" + hash.substr(2);
  return std::filesystem::is_regular_file(path) ? path : std::string();
}

}  // namespace kjit::test
