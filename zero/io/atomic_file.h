/// @file
/// Writing files and folders so that a crash leaves the old version or the new, never
/// a mix: temporary names, `fsync`, and `rename`.
///
/// A checkpoint written in place and interrupted (power cut, out of disk, Ctrl-C)
/// destroys the previous good checkpoint. Everything Zero saves goes through here;
/// see Note [Crash-safe replacement] in atomic_file.cpp for the argument. POSIX only.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace zero::io {

/// A file written under a temporary name (`path.tmp`) and moved over `path` by `Commit`.
/// Destroyed without `Commit` (an exception while writing), it removes the temporary
/// file and `path` is untouched.
class AtomicFile {
 public:
  /// Opens `path`.tmp for writing, truncating it. @throws zero::Error if it cannot.
  explicit AtomicFile(const std::string& path);
  /// Removes the temporary file unless `Commit` succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;             ///< Not copyable.
  AtomicFile& operator=(const AtomicFile&) = delete;  ///< Not copyable.

  /// Appends `bytes` bytes. @throws zero::Error on a write error (disk full ...).
  void Write(const void* data, size_t bytes);
  /// Flushes the data to disk (`fsync`), renames the file over `path` and syncs the
  /// folder, so the new name survives a crash too.
  void Commit();

 private:
  std::string path_, tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `bytes` to `path` through an `AtomicFile`.
void write_file_atomically(const std::string& path, const std::string& bytes);

/// Replaces the folder `final_dir` with a new version made by `write`: `write` fills a
/// fresh temporary folder (`final_dir`.tmp-XXXXXX, next to it, whose path it receives);
/// then every file in it is synced and it is renamed into place. If `write` throws, the
/// temporary folder is removed, `final_dir` is untouched and the exception propagates.
/// Starts with `recover_directory(final_dir)`. One writer per `final_dir` at a time.
void replace_directory_atomically(const std::string& final_dir,
                                  const std::function<void(const std::string& tmp_dir)>& write);

/// A folder prepared under a staging name (`final_dir`.staging) and moved over
/// `final_dir` by `Commit` (through `replace_directory_atomically`). Destroyed without
/// `Commit` (a later check failed), it removes the staging folder and `final_dir` is
/// untouched: a program can prepare files, check everything, and only then replace.
class StagedDirectory {
 public:
  /// Starts an empty staging folder next to `final_dir` (removing a leftover one).
  explicit StagedDirectory(const std::string& final_dir);
  /// Removes the staging folder unless `Commit` moved it.
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;             ///< Not copyable.
  StagedDirectory& operator=(const StagedDirectory&) = delete;  ///< Not copyable.

  /// Where to write the files now.
  const std::string& staging() const { return staging_; }
  /// Where they will be after `Commit`.
  const std::string& final_dir() const { return final_; }
  /// Replaces `final_dir` with the staging folder's contents, atomically, and removes
  /// the (then empty) staging folder.
  void Commit();
  /// Removes what a process killed before `Commit` left: `final_dir`.staging, if any.
  static void Discard(const std::string& final_dir);

 private:
  std::string final_, staging_;
};

/// Repairs what a crash inside `replace_directory_atomically` can leave: if `final_dir`
/// is missing but its backup `final_dir`.old exists, the backup is renamed back (and
/// true is returned); a leftover backup beside a complete `final_dir`, and leftover
/// `final_dir`.tmp-* folders, are removed. Call it before reading `final_dir`.
bool recover_directory(const std::string& final_dir);

}  // namespace zero::io
