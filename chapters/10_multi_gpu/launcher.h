// One process per GPU: the launcher of chapter 10's multi-GPU sections, which chapter 11's
// `train_gpt --nproc N` uses too.
//
// The parent runs no training. It starts N copies of its own executable with its own
// arguments plus `--rank r --world N --nccl-id-file PATH`, waits, and stops the others as
// soon as one fails (a rank left alone would wait forever in its next all-reduce). Rank r
// runs on GPU r and joins the group with zero::train::join_group (zero/train/distributed.h).
// The three rank flags are CLI11 options like the program's others (add_rank_flags), kept
// out of --help. Chapter 10's README tells the whole story.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "zero/core/device.h"
#include "zero/core/error.h"
#include "zero/train/distributed.h"

namespace ch10 {

// The help heading of the flags that the launcher gives each process it starts. (Not
// an empty group, which would hide them: CLI11 then leaves their name out of errors.)
inline const char* const kRankGroup = "Set by the launcher in each process it starts (--nproc)";

// Adds --rank, --world and --nccl-id-file, read into `rank`. Once parsing is done (app's
// final callback) a rank outside [0, world), or one without the id file, is refused.
inline void add_rank_flags(CLI::App& app, zero::train::DistributedOptions& rank) {
  CLI::Option* flags[] = {
      app.add_option("--rank", rank.rank, "this process's rank, in [0, --world)"),
      app.add_option("--world", rank.world, "processes in the group"),
      app.add_option("--nccl-id-file", rank.id_file, "where rank 0 leaves the NCCL id")};
  for (CLI::Option* flag : flags) flag->group(kRankGroup);
  app.final_callback([&rank, flags] {
    const bool given = flags[0]->count() + flags[1]->count() + flags[2]->count() > 0;
    if (given && !(rank.rank >= 0 && rank.rank < rank.world && !rank.id_file.empty())) {
      throw CLI::ValidationError(
          "--rank", zero::detail::str_cat("expected 0 <= rank < --world and an --nccl-id-file, "
                                          "got rank ", rank.rank, " of world ", rank.world,
                                          " and file '", rank.id_file, "'"));
    }
  });
}

namespace detail {

// In the child between fork and exec: only async-signal-safe calls until execv.
[[noreturn]] inline void exec_rank(const std::string& executable,
                                   const std::vector<std::string>& args,
                                   const std::string& log_path) {
  std::signal(SIGINT, SIG_DFL);  // the launcher ignores Ctrl-C; its ranks must not
  if (!log_path.empty()) {
    // The rank's live output, written as it runs: a stream, not a saved file, so it
    // cannot wait for the end and a rename the way zero::io::write_file_atomically does.
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(executable.c_str(), argv.data());
  std::perror("launch_ranks: execv");
  ::_exit(127);
}

inline std::string describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace detail

// Starts `nproc` ranks of this program (/proc/self/exe), rank r with `args` followed by
// `--rank r --world nproc --nccl-id-file log_dir/nccl_id`. Rank 0 shares this terminal;
// the others write to log_dir/rank1.log, rank2.log and so on. Returns 0 when every rank
// exits with 0; otherwise prints which failed, stops the rest and returns 1. When rank 0
// exits first (finished, or stopped by Ctrl-C after saving), the others are stopped too.
// Ctrl-C reaches the ranks; the launcher itself ignores it and keeps waiting.
// Throws zero::Error if fewer than `nproc` GPUs are visible or a process cannot start.
inline int launch_ranks(const std::vector<std::string>& args, int64_t nproc_flag,
                        const std::string& log_dir) {
  namespace fs = std::filesystem;
  ZERO_CHECK(nproc_flag >= 1, "--nproc: expected at least 1 process, got ", nproc_flag);
  const int gpus = zero::cuda_device_count();
  ZERO_CHECK(gpus >= nproc_flag, "--nproc ", nproc_flag, ": expected at least ", nproc_flag,
             " visible GPUs (one per process), got ", gpus);
  const int nproc = static_cast<int>(nproc_flag);  // now known to be small
  const std::string executable = fs::read_symlink("/proc/self/exe").string();
  fs::create_directories(log_dir);
  const std::string id_file = (fs::path(log_dir) / "nccl_id").string();
  fs::remove(id_file);   // a stale id from an earlier run would send rank 1 to a dead rank 0
  std::fflush(nullptr);  // or the children inherit (and print again) buffered output

  using Handler = void (*)(int);
  const Handler previous = std::signal(SIGINT, SIG_IGN);  // Ctrl-C is for the ranks
  std::vector<pid_t> pids(nproc, -1);
  std::vector<std::string> logs(nproc);
  for (int r = 0; r < nproc; ++r) {
    if (r > 0) logs[r] = (fs::path(log_dir) / ("rank" + std::to_string(r) + ".log")).string();
    std::vector<std::string> argv = args;
    for (const std::string& flag : {std::string("--rank"), std::to_string(r),
                                    std::string("--world"), std::to_string(nproc),
                                    std::string("--nccl-id-file"), id_file}) {
      argv.push_back(flag);
    }
    const pid_t pid = ::fork();
    if (pid == 0) detail::exec_rank(executable, argv, logs[r]);
    if (pid < 0) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGTERM);
      }
      std::signal(SIGINT, previous);
      ZERO_CHECK(false, "launch_ranks: could not start rank ", r, ": ", std::strerror(errno));
    }
    pids[r] = pid;
  }
  std::printf("launched %d ranks (rank 0 prints here; ranks 1..%d write to %s/rank<r>.log)\n",
              nproc, nproc - 1, log_dir.c_str());
  std::fflush(stdout);

  // Wait for all. On a failure, stop the others at once: a rank whose peer is gone would
  // wait in its next all-reduce forever. When rank 0 is done, give the others a few
  // seconds to finish on their own first. Stopped ranks do not count as failures.
  using Clock = std::chrono::steady_clock;
  int result = 0, running = nproc;
  bool signalled = false;  // SIGTERM sent: later exits are ours
  Clock::time_point stop_at = Clock::time_point::max(), kill_at;
  auto signal_all = [&](int sig) {
    for (pid_t p : pids) {
      if (p > 0) ::kill(p, sig);
    }
  };
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR) break;
    const Clock::time_point now = Clock::now();
    if (pid <= 0) {
      if (!signalled && now >= stop_at) {
        signal_all(SIGTERM);
        signalled = true;
        kill_at = now + std::chrono::seconds(10);
      } else if (signalled && now >= kill_at) {
        signal_all(SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int r = 0;
    while (r < nproc && pids[r] != pid) ++r;
    if (r == nproc) continue;
    pids[r] = -1;
    --running;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && !signalled) {
      std::fprintf(stderr, "launch_ranks: rank %d failed (%s)%s%s; stopping the others\n", r,
                   detail::describe(status).c_str(), r > 0 ? ", see " : "", logs[r].c_str());
      result = 1;
      stop_at = now;
    } else if (ok && r == 0) {
      stop_at = std::min(stop_at, now + std::chrono::seconds(5));
    }
  }
  std::signal(SIGINT, previous);
  return result;
}

// `launch_ranks` with the arguments this program was given, argv[1..argc).
inline int launch_ranks(int argc, char** argv, int64_t nproc, const std::string& log_dir) {
  return launch_ranks(std::vector<std::string>(argv + 1, argv + argc), nproc, log_dir);
}

}  // namespace ch10
