#include "server/workers/worker_class.h"

namespace kjit {

std::string WorkerClass::name() const {
  return std::string(triton ? "triton" : tileir ? "tileir" : "general") + (background ? " background" : "");
}

WorkerClass worker_class_for(const CompileJob& job, bool background) {
  // Only Tile IR input reaches tileiras, and only Triton IR a Triton build:
  // their passes take IR no other input kind becomes.
  return WorkerClass{job.input_kind == InputKind::tileir, background, job.input_kind == InputKind::triton};
}

}  // namespace kjit
