// The kjit CLI's exit codes: a contract scripts rely on.
#pragma once

#include <string>

#include "kjit/status.h"

namespace kjit::cli {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_compile_error = 1;  // the daemon refused or failed the request
inline constexpr int k_exit_usage = 2;          // bad flags, unreadable input file
inline constexpr int k_exit_unreachable = 3;    // no daemon at the socket or address

// Prints "kjit COMMAND: message" to stderr and returns k_exit_usage.
int usage_error(const std::string& command, const std::string& message);

// Prints the error (and its log) to stderr and returns the exit code for it;
// `target` is the socket path or address the command used.
int report_error(const Error& error, const std::string& target);

}  // namespace kjit::cli
