// AtomicFile and replace_directory_atomically (see atomic_file.h).
//
// Note [Crash-safe replacement]
// POSIX `rename` within one file system is atomic: another process, or the file system
// after a crash, sees the old name target or the new one, nothing in between. Two things
// make that hold on disk and not only in the page cache:
//   - the new file's data is `fsync`ed before the rename, otherwise after a crash the
//     name could point at a file whose blocks were never written (an empty checkpoint);
//   - the parent folder is `fsync`ed after the rename, so the rename itself is durable.
// A folder cannot be renamed over a non-empty folder, so replacing a checkpoint folder
// takes two renames:  (A) final -> final.old,  (B) tmp -> final,  then (C) remove
// final.old. A crash at any point leaves a complete version:
//   before A      final is the old version; tmp-XXXXXX is garbage (removed later);
//   between A, B  final is missing and final.old is the complete old version;
//   after B       final is the complete new version; final.old, if any, is garbage.
// `recover_directory` turns the middle case back into the first (renames final.old to
// final) and removes garbage, so readers that call it always find one complete version.
#include "zero/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "zero/core/error.h"

namespace zero::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// fsync a file or folder by path (folders are opened read-only: that is enough to sync).
void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  ZERO_CHECK(fd >= 0, "cannot open '", path, "' to sync it: ", errno_text());
  const int rc = ::fsync(fd);
  const std::string err = rc != 0 ? errno_text() : "";
  ::close(fd);
  ZERO_CHECK(rc == 0, "fsync of '", path, "' failed: ", err);
}

void fsync_tree(const fs::path& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() || entry.is_directory()) {
      fsync_path(entry.path().string(), entry.is_directory());
    }
  }
  fsync_path(dir.string(), true);
}

// `final_dir` without a trailing separator, so appending ".old" names a sibling.
fs::path normalise(const std::string& final_dir) {
  ZERO_CHECK(!final_dir.empty(), "expected a folder path, got an empty string");
  fs::path p = fs::path(final_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

fs::path parent_or_dot(const fs::path& p) {
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  ZERO_CHECK(!ec, "cannot rename '", from.string(), "' to '", to.string(), "': ", ec.message());
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_path_(path + ".tmp") {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ZERO_CHECK(fd_ >= 0, "cannot open '", tmp_path_, "' for writing: ", errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void AtomicFile::Write(const void* data, size_t bytes) {
  ZERO_CHECK(fd_ >= 0, "write to '", path_, "' after Commit()");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    ZERO_CHECK(n > 0, "failed writing '", tmp_path_, "': ", errno_text());
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::Commit() {
  ZERO_CHECK(fd_ >= 0, "Commit() of '", path_, "' called twice");
  ZERO_CHECK(::fsync(fd_) == 0, "fsync of '", tmp_path_, "' failed: ", errno_text());
  const int rc = ::close(fd_);
  fd_ = -1;
  ZERO_CHECK(rc == 0, "closing '", tmp_path_, "' failed: ", errno_text());
  rename_or_throw(tmp_path_, path_);
  committed_ = true;
  fsync_path(parent_or_dot(fs::path(path_)).string(), true);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFile file(path);
  file.Write(bytes.data(), bytes.size());
  file.Commit();
}

bool recover_directory(const std::string& final_dir) {
  const fs::path final_path = normalise(final_dir);
  const fs::path backup = final_path.string() + ".old";
  const fs::path parent = parent_or_dot(final_path);
  std::error_code ec;
  // Leftover temporary folders of interrupted writes (only one writer at a time).
  const std::string tmp_prefix = final_path.filename().string() + ".tmp-";
  if (fs::is_directory(parent, ec)) {
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      if (entry.path().filename().string().rfind(tmp_prefix, 0) == 0) stale.push_back(entry.path());
    }
    for (const auto& p : stale) fs::remove_all(p, ec);
  }
  if (!fs::exists(backup, ec)) return false;
  if (!fs::exists(final_path, ec)) {  // crashed between renames A and B
    rename_or_throw(backup, final_path);
    fsync_path(parent.string(), true);
    return true;
  }
  fs::remove_all(backup, ec);  // crashed after B: the backup is garbage
  ZERO_CHECK(!ec, "cannot remove the stale backup '", backup.string(), "': ", ec.message());
  return false;
}

void replace_directory_atomically(const std::string& final_dir,
                                  const std::function<void(const std::string& tmp_dir)>& write) {
  const fs::path final_path = normalise(final_dir);
  const fs::path parent = parent_or_dot(final_path);
  std::error_code ec;
  fs::create_directories(parent, ec);
  ZERO_CHECK(!ec, "cannot create the folder '", parent.string(), "': ", ec.message());
  recover_directory(final_path.string());

  std::string tmp = final_path.string() + ".tmp-XXXXXX";
  ZERO_CHECK(::mkdtemp(tmp.data()) != nullptr, "cannot create a temporary folder next to '",
             final_path.string(), "': ", errno_text());
  // mkdtemp makes the folder private (0700); the folder it becomes should have the mode
  // any folder the user creates gets (0777 less the umask), as the files inside do.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tmp.c_str(), 0777 & ~mask);
  try {
    write(tmp);
    fsync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  const fs::path backup = final_path.string() + ".old";
  const bool had_old = fs::exists(final_path, ec);
  if (had_old) rename_or_throw(final_path, backup);  // (A)
  std::error_code rename_ec;
  fs::rename(tmp, final_path, rename_ec);  // (B)
  if (rename_ec) {  // put the old version back rather than leave the middle state
    if (had_old) fs::rename(backup, final_path, ec);
    fs::remove_all(tmp, ec);
    ZERO_CHECK(false, "cannot rename '", tmp, "' to '", final_path.string(),
               "': ", rename_ec.message());
  }
  fsync_path(parent.string(), true);
  if (had_old) fs::remove_all(backup, ec);  // (C); a failure here is harmless
}

StagedDirectory::StagedDirectory(const std::string& final_dir)
    : final_(normalise(final_dir).string()), staging_(final_ + ".staging") {
  std::error_code ec;
  fs::remove_all(staging_, ec);
  fs::create_directories(staging_, ec);
  ZERO_CHECK(!ec, "cannot create the folder '", staging_, "': ", ec.message());
}

StagedDirectory::~StagedDirectory() {
  std::error_code ec;
  fs::remove_all(staging_, ec);  // empty after a Commit; the abandoned files otherwise
}

void StagedDirectory::Commit() {
  replace_directory_atomically(final_, [&](const std::string& tmp) {
    for (const auto& entry : fs::directory_iterator(staging_)) {
      rename_or_throw(entry.path(), fs::path(tmp) / entry.path().filename());
    }
  });
  std::error_code ec;
  fs::remove_all(staging_, ec);  // empty now; a leftover would look like a crash's debris
}

void StagedDirectory::Discard(const std::string& final_dir) {
  std::error_code ec;
  fs::remove_all(normalise(final_dir).string() + ".staging", ec);
}

}  // namespace zero::io
