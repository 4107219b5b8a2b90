// Tests of the error macros (core/error.h): ZERO_CHECK reports the caller's message
// with the failed condition and file:line, ZERO_ASSERT says it is a bug in Zero, and
// ZERO_NOT_IMPLEMENTED throws the exercise-stub error naming the exercise.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_support.h"
#include "zero/core/error.h"

namespace zero {
namespace {

using testing::error_message;
using testing::contains;

TEST(ErrorTest, CheckPassesWhenTrue) { EXPECT_NO_THROW(ZERO_CHECK(1 + 1 == 2, "unused")); }

TEST(ErrorTest, CheckMessageHasStreamedTextConditionAndFileLine) {
  const int got = 7;
  const int line = __LINE__ + 1;
  const std::string msg = error_message([&] { ZERO_CHECK(got == 3, "expected 3, got ", got); });
  EXPECT_TRUE(contains(msg, "expected 3, got 7")) << msg;
  EXPECT_TRUE(contains(msg, "got == 3")) << msg;
  EXPECT_TRUE(contains(msg, "error_test.cpp:" + std::to_string(line))) << msg;
  EXPECT_FALSE(contains(msg, "bug in Zero")) << msg;
}

TEST(ErrorTest, CheckWithoutMessageStillSaysWhatFailed) {
  const std::string msg = error_message([] { ZERO_CHECK(false); });
  EXPECT_TRUE(contains(msg, "check failed")) << msg;
}

TEST(ErrorTest, AssertSaysBugInZero) {
  const int line = __LINE__ + 1;
  const std::string msg = error_message([] { ZERO_ASSERT(2 < 1, "invariant ", 42, " broken"); });
  EXPECT_TRUE(contains(msg, "bug in Zero")) << msg;
  EXPECT_TRUE(contains(msg, "invariant 42 broken")) << msg;
  EXPECT_TRUE(contains(msg, "error_test.cpp:" + std::to_string(line))) << msg;
}

TEST(ErrorTest, NotImplementedThrowsNotImplementedErrorNamingTheExercise) {
  try {
    ZERO_NOT_IMPLEMENTED("ex04.2");
    FAIL() << "ZERO_NOT_IMPLEMENTED returned";
  } catch (const NotImplementedError& e) {
    EXPECT_TRUE(contains(e.what(), "ex04.2")) << e.what();
    EXPECT_TRUE(contains(e.what(), "not implemented")) << e.what();
  }
}

TEST(ErrorTest, ErrorClassesShareTheBase) {
  EXPECT_THROW(throw NotImplementedError("x"), Error);
  EXPECT_THROW(throw CudaError("x"), Error);
  EXPECT_THROW(ZERO_CHECK(false, "x"), std::runtime_error);
}

}  // namespace
}  // namespace zero
