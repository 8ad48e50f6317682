// The CPU priority of a background worker (fleet builds): the lowest there
// is, so that a client's compile or hit sharing the cores with it takes
// them first. An unprivileged process may lower its priority but never
// raise it again, which is why background compiles have workers of their own.
#pragma once

#include <string>

#include "kjit/status.h"

namespace kjit {

// Lowers the calling process to SCHED_IDLE, or to nice 19 where the kernel
// refuses SCHED_IDLE. Linux keeps both per thread and a new thread inherits
// them, so this is called while the worker has one thread, before it loads
// anything. Returns what was applied ("SCHED_IDLE").
Result<std::string> lower_to_background_priority();

}  // namespace kjit
