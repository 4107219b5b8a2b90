// DirLock (see dir_lock.h): flock on DIR/.lock, with the holder's pid written inside so
// that the process that is refused can say who holds it.
#include "zero/io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "zero/core/error.h"

namespace zero::io {

DirLock::DirLock(const std::string& dir, const std::string& who) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ZERO_CHECK(!ec && std::filesystem::is_directory(dir), "cannot create the folder '", dir,
             "': ", ec ? ec.message() : "a file of that name is in the way");
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ZERO_CHECK(fd_ >= 0, "cannot open the lock file '", path, "': ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[128] = {0};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    ::close(fd_);
    fd_ = -1;
    std::string text = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    ZERO_CHECK(err != EWOULDBLOCK, "'", dir, "' is in use by another run (",
               text.empty() ? "unknown process" : text,
               "); wait for it to finish, or choose another folder");
    ZERO_CHECK(false, "cannot lock '", path, "': ", std::strerror(err));
  }
  const std::string me = who + ", pid " + std::to_string(::getpid()) + "\n";
  // Best effort: the pid is only for the message another process prints. Written in
  // place, not through write_file_atomically: a rename would put a new, unlocked file
  // under the name, and the next run would lock that one beside us.
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace zero::io
