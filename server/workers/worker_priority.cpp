#include "server/workers/worker_priority.h"

#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace kjit {

Result<std::string> lower_to_background_priority() {
  // SCHED_IDLE weighs a fifth of nice 19 against ordinary threads, and a
  // waking client thread preempts it at once.
  sched_param param{};
  param.sched_priority = 0;
  if (::sched_setscheduler(0, SCHED_IDLE, &param) == 0) return std::string("SCHED_IDLE");
  const int idle_error = errno;
  if (::setpriority(PRIO_PROCESS, 0, 19) == 0)
    return std::string("nice 19 (SCHED_IDLE refused: ") + std::strerror(idle_error) + ")";
  return make_error(ErrorCode::internal, std::string("cannot lower the CPU priority: SCHED_IDLE: ") +
                                             std::strerror(idle_error) + "; nice 19: " + std::strerror(errno));
}

}  // namespace kjit
