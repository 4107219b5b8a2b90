// What every exercise test includes: ZERO_EXERCISE names the TODO a test checks, so
// tools/check_exercise can report per TODO (it reads the name from gtest's JSON report,
// where RecordProperty puts it), and expect_exercise_error checks that a call throws
// zero::Error without letting an unfinished TODO (zero::NotImplementedError) pass for it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "zero/core/error.h"

/// Inside a TEST body: this test checks exercise `tags` ("ex05.1", or "ex05.1 ex05.2"
/// when it needs both).
#define ZERO_EXERCISE(tags) ::testing::Test::RecordProperty("exercise", tags)

namespace zero::exercise {

/// Runs `f`, expecting a zero::Error that is not an unfinished exercise, and returns
/// its message; records a failure (and returns "") if `f` returns normally. An
/// unfinished TODO propagates, so the test fails naming it.
template <typename F>
std::string expect_exercise_error(F&& f, const std::string& what) {
  try {
    f();
  } catch (const NotImplementedError&) {
    throw;
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected zero::Error for " << what << ", but the call returned normally";
  return "";
}

}  // namespace zero::exercise
