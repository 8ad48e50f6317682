// fails_with / fails_exactly: assertions on a Result that should be an
// error, for ASSERT_TRUE / EXPECT_TRUE, saying what came back when it is not.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit::test {

template <typename T>
::testing::AssertionResult fails_as(const Result<T>& result, ErrorCode code, std::string_view message, bool exactly) {
  if (result) return ::testing::AssertionFailure() << "it succeeded";
  const Error& error = result.error();
  const bool said = exactly ? error.message == message : error.message.find(message) != std::string::npos;
  if (error.code == code && said) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(error.code) << ": " << error.message << "\n" << error.log;
}

// `result` is an error with `code` whose message holds `part`.
template <typename T>
::testing::AssertionResult fails_with(const Result<T>& result, ErrorCode code, std::string_view part = {}) {
  return fails_as(result, code, part, false);
}

// `result` is an error with `code` and exactly `message`.
template <typename T>
::testing::AssertionResult fails_exactly(const Result<T>& result, ErrorCode code, std::string_view message) {
  return fails_as(result, code, message, true);
}

}  // namespace kjit::test
