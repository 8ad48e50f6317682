#include "server/workers/worker_class.h"

namespace kjit {

std::string WorkerClass::name() const {
  return std::string(tileir ? "tileir" : "general") + (background ? " background" : "");
}

WorkerClass worker_class_for(const CompileJob& job, bool background) {
  // Only Tile IR input reaches tileiras: its pass takes Tile IR, which no
  // other input kind becomes.
  return WorkerClass{job.input_kind == InputKind::tileir, background};
}

}  // namespace kjit
