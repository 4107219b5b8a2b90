// Tests of crash-safe writing (io/atomic_file.h): files and folders are replaced whole,
// an exception while writing leaves the old version intact and no debris, and
// recover_directory repairs each state a crash between the renames can leave.
#include "zero/io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "tests/data/test_files.h"

namespace zero::io {
namespace {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// Names in `dir`, sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFileTest, CommitReplacesAndAbandonLeavesOldFile) {
  TempDir dir;
  write_file_atomically(dir / "f", "old");
  EXPECT_EQ(read_bytes(dir / "f"), "old");
  {
    AtomicFile file(dir / "f");
    file.Write("new but unfinished", 18);
  }  // destroyed without Commit (as when an exception unwinds)
  EXPECT_EQ(read_bytes(dir / "f"), "old");
  write_file_atomically(dir / "f", "new");
  EXPECT_EQ(read_bytes(dir / "f"), "new");
  EXPECT_EQ(listing(dir.str()), (std::vector<std::string>{"f"}));
}

TEST(AtomicFileTest, ReplaceDirectoryCreatesAndReplaces) {
  TempDir dir;
  const std::string ckpt = dir / "ckpt";
  replace_directory_atomically(ckpt, [](const std::string& tmp) {
    write_bytes(tmp + "/a", "1");
    write_bytes(tmp + "/b", "2");
  });
  EXPECT_EQ(listing(ckpt), (std::vector<std::string>{"a", "b"}));
  replace_directory_atomically(ckpt + "/", [&](const std::string& tmp) {
    EXPECT_NE(tmp, ckpt);
    write_bytes(tmp + "/c", "3");
  });
  EXPECT_EQ(listing(ckpt),
            (std::vector<std::string>{"c"}));  // old files are gone with the old folder
  EXPECT_EQ(read_bytes(ckpt + "/c"), "3");
  EXPECT_EQ(listing(dir.str()), (std::vector<std::string>{"ckpt"}));
}

// mkdtemp makes private folders (0700); a checkpoint folder must get the mode any new
// folder gets (0777 less the umask), or another user of the machine cannot read it.
TEST(AtomicFileTest, ReplacedDirectoryHasTheUsualMode) {
  TempDir dir;
  const mode_t old_mask = ::umask(022);
  replace_directory_atomically(dir / "ckpt", [](const std::string& tmp) {
    write_bytes(tmp + "/a", "1");
  });
  ::umask(old_mask);
  const auto perms = fs::status(dir / "ckpt").permissions();
  EXPECT_EQ(perms & fs::perms::all, fs::perms::owner_all | fs::perms::group_read |
                                        fs::perms::group_exec | fs::perms::others_read |
                                        fs::perms::others_exec);
}

TEST(AtomicFileTest, ExceptionInsideWriteLeavesOldDirectoryIntact) {
  TempDir dir;
  const std::string ckpt = dir / "ckpt";
  replace_directory_atomically(ckpt,
                               [](const std::string& tmp) { write_bytes(tmp + "/model", "good"); });
  EXPECT_THROW(replace_directory_atomically(ckpt,
                                            [](const std::string& tmp) {
                                              write_bytes(tmp + "/model", "half");
                                              throw std::runtime_error("disk full");
                                            }),
               std::runtime_error);
  EXPECT_EQ(read_bytes(ckpt + "/model"), "good");
  EXPECT_EQ(listing(dir.str()), (std::vector<std::string>{"ckpt"}));  // no temporary left behind
}

TEST(AtomicFileTest, RecoverRestoresBackupAfterCrashBetweenRenames) {
  TempDir dir;
  const std::string ckpt = dir / "ckpt";
  fs::create_directory(ckpt + ".old");  // state after rename (A), before (B)
  write_bytes(ckpt + ".old/model", "previous");
  fs::create_directory(ckpt + ".tmp-abc123");
  EXPECT_TRUE(recover_directory(ckpt));
  EXPECT_EQ(read_bytes(ckpt + "/model"), "previous");
  EXPECT_EQ(listing(dir.str()), (std::vector<std::string>{"ckpt"}));

  fs::create_directory(ckpt + ".old");  // state after (B), before (C): the backup is garbage
  write_bytes(ckpt + ".old/model", "stale");
  EXPECT_FALSE(recover_directory(ckpt));
  EXPECT_EQ(read_bytes(ckpt + "/model"), "previous");
  EXPECT_EQ(listing(dir.str()), (std::vector<std::string>{"ckpt"}));
}

TEST(AtomicFileTest, ErrorsNameThePath) {
  testing::expect_error([] { write_file_atomically("/nonexistent_zero_dir/f", "x"); },
                        {"/nonexistent_zero_dir/f.tmp"});
  testing::expect_error([] { replace_directory_atomically("", [](const std::string&) {}); },
                        {"empty"});
}

}  // namespace
}  // namespace zero::io
