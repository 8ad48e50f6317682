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

// What a parser promises for bad input: invalid_argument, with a message.
#define FUZZ_CHECK_REFUSED(error)                                  \
  do {                                                             \
    FUZZ_CHECK((error).code == kjit::ErrorCode::invalid_argument); \
    FUZZ_CHECK(!(error).message.empty());                          \
  } while (0)
