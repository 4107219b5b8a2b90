// Builds the messages of ZERO_CHECK / ZERO_ASSERT / ZERO_NOT_IMPLEMENTED.
// The file name is shortened to its path below `zero/` so messages stay readable.
#include "zero/core/error.h"

#include <cstring>

namespace zero::detail {
namespace {

const char* short_path(const char* file) {
  const char* p = std::strstr(file, "zero/");
  return p ? p : file;
}

}  // namespace

void throw_check_failure(const char* file, int line, const char* cond, const std::string& msg) {
  // ZERO_CHECK(false, ...) marks an unconditional error: the condition says nothing.
  const std::string where = std::strcmp(cond, "false") == 0 ? "" : str_cat(cond, " ");
  throw Error(str_cat(msg.empty() ? "check failed" : msg, " [", where, "at ", short_path(file),
                      ":", line, "]"));
}

void throw_assert_failure(const char* file, int line, const char* cond, const std::string& msg) {
  throw Error(str_cat("internal error, a bug in Zero: ", msg, " [", cond, " at ",
                      short_path(file), ":", line, "]"));
}

void throw_not_implemented(const char* file, int line, const char* tag) {
  throw NotImplementedError(str_cat("exercise ", tag, " is not implemented yet (",
                                    short_path(file), ":", line, ")"));
}

}  // namespace zero::detail
