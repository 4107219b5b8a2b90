// Tests of DirLock (zero/io/dir_lock.h): a second holder is refused with a message that
// names the folder and the first holder, and the lock is free again once released.
#include "zero/io/dir_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "zero/core/error.h"

namespace zero::io {
namespace {

using ::testing::HasSubstr;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(DirLockTest, SecondLockIsRefusedNamingTheHolder) {
  const std::string dir = fresh_dir("zero_dir_lock_a");
  std::optional<DirLock> first;
  first.emplace(dir, "first-run");
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  try {
    DirLock second(dir, "second-run");
    FAIL() << "a second lock on one folder must be refused";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is in use by another run"));
    EXPECT_THAT(e.what(), HasSubstr("first-run, pid " + std::to_string(::getpid())));
    EXPECT_THAT(e.what(), HasSubstr(dir));
  }
  first.reset();
  EXPECT_NO_THROW(DirLock again(dir, "third-run"));  // released: free to take
}

// A process that dies holding the lock (here: a child that exits without cleaning up)
// leaves nothing stale: the kernel drops flock locks with the process.
TEST(DirLockTest, LockOfAnExitedProcessIsFree) {
  const std::string dir = fresh_dir("zero_dir_lock_b");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    new DirLock(dir, "child");  // never destroyed
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NO_THROW(DirLock mine(dir, "parent"));
}

TEST(DirLockTest, AFileInTheWayIsAClearError) {
  const std::string path = fresh_dir("zero_dir_lock_file");
  { std::FILE* f = std::fopen(path.c_str(), "w"); std::fclose(f); }
  try {
    DirLock lock(path, "run");
    FAIL() << "locking a regular file as a folder must fail";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot create the folder"));
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace zero::io
