// Loopback TCP for tests and benchmarks: a port nothing listens on, and a
// plain HTTP GET (for the Prometheus endpoint).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace kjit::test {

// A port on 127.0.0.1 nothing listens on now (bound, read back, released);
// 0 when none could be bound.
uint16_t free_loopback_port();

// GET `path` from 127.0.0.1:port over HTTP/1.0: the status line and the
// body; empty strings when nothing answered. `headers`: more header lines,
// each ending in "\r\n" ("Authorization: Bearer ...\r\n").
std::pair<std::string, std::string> http_get(uint16_t port, const std::string& path, const std::string& headers = "");

}  // namespace kjit::test
