/// @file
/// `DirLock`: one process at a time in a folder, such as a training run's out-dir.
///
/// Two trainers writing one out-dir interleave their metrics and delete each other's
/// temporary checkpoint folders. A `DirLock` takes an exclusive `flock` on the file
/// `.lock` inside the folder for as long as it lives; the kernel drops the lock when the
/// process ends in any way, `kill -9` included, so a crashed run never leaves a stale
/// lock behind. POSIX only.
#pragma once

#include <string>

namespace zero::io {

/// An exclusive lock on a folder, held until destruction.
class DirLock {
 public:
  /// Creates `dir` if needed and locks it for this process. `who` names the program in
  /// the lock file (for the message another process gets).
  /// @throws zero::Error if another process holds the lock (naming its pid and program)
  /// or the folder cannot be created.
  DirLock(const std::string& dir, const std::string& who);
  /// Releases the lock.
  ~DirLock();
  DirLock(const DirLock&) = delete;             ///< Not copyable.
  DirLock& operator=(const DirLock&) = delete;  ///< Not copyable.

 private:
  int fd_ = -1;
};

}  // namespace zero::io
