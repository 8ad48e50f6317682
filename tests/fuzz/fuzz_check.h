// FUZZ_CHECK: an invariant of a parser's result that, when broken, is a crash
// libFuzzer records like any sanitizer report (abort, with what was broken).
#pragma once

#include <cstdio>
#include <cstdlib>

// Not assert(): it must hold in the RelWithDebInfo build, where NDEBUG is set.
#define FUZZ_CHECK(condition)                                                                     \
  do {                                                                                            \
    if (!(condition)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                               \
    }                                                                                             \
  } while (0)
