// The launcher, group start-up and worker loop of multi-GPU training (distributed.h),
// and Trainer::EnableDataParallel, which lives here with the rest of the
// data-parallel wiring rather than in trainer.cpp.
#include "zero/train/distributed.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "zero/core/error.h"
#include "zero/distributed/data_parallel.h"

namespace fs = std::filesystem;

namespace zero::train {
namespace {

// argv for rank `rank`: the parent's arguments without --nproc / --device, plus the
// rank's own flags.
std::vector<std::string> rank_args(const std::vector<std::string>& args, int rank, int world,
                                   const std::string& id_file) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--nproc" || a == "--device") {
      ++i;  // and its value
    } else if (a.rfind("--nproc=", 0) != 0 && a.rfind("--device=", 0) != 0) {
      out.push_back(a);
    }
  }
  for (const std::string& extra : {std::string("--device"), "cuda:" + std::to_string(rank),
                                   std::string("--rank"), std::to_string(rank),
                                   std::string("--world"), std::to_string(world),
                                   std::string("--nccl-id-file"), id_file}) {
    out.push_back(extra);
  }
  return out;
}

// In the child between fork and exec: only async-signal-safe calls until execv.
[[noreturn]] void exec_rank(const std::string& executable, const std::vector<std::string>& args,
                            const std::string& log_path) {
  std::signal(SIGINT, SIG_DFL);  // the launcher ignores Ctrl-C; its ranks must not
  if (!log_path.empty()) {
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

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

DistributedOptions take_rank_flags(int& argc, char** argv) {
  DistributedOptions options;
  bool given = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], value;
    const std::string name = a.substr(0, a.find('='));
    if (name != "--rank" && name != "--world" && name != "--nccl-id-file") {
      argv[kept++] = argv[i];
      continue;
    }
    if (name.size() < a.size()) {
      value = a.substr(name.size() + 1);
    } else {
      ZERO_CHECK(i + 1 < argc, name, ": expected a value after it, got none");
      value = argv[++i];
    }
    given = true;
    if (name == "--nccl-id-file") {
      options.id_file = value;
      continue;
    }
    char* end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    ZERO_CHECK(!value.empty() && *end == '\0', name, ": expected an integer, got '", value, "'");
    (name == "--rank" ? options.rank : options.world) = static_cast<int>(n);
  }
  argc = kept;
  argv[argc] = nullptr;
  if (given) {
    ZERO_CHECK(options.world >= 1 && options.rank >= 0 && options.rank < options.world,
               "--rank/--world: expected 0 <= rank < world, got rank ", options.rank, " of world ",
               options.world);
  }
  return options;
}

int launch_ranks(const std::string& executable, const std::vector<std::string>& args, int nproc,
                 const std::string& log_dir) {
  ZERO_CHECK(nproc >= 1, "--nproc: expected at least 1 process, got ", nproc);
  const int gpus = cuda_device_count();
  ZERO_CHECK(gpus >= nproc, "--nproc ", nproc, ": expected at least ", nproc,
             " visible GPUs (one per process), got ", gpus);
  fs::create_directories(log_dir);
  const std::string id_file = (fs::path(log_dir) / "nccl_id").string();
  fs::remove(id_file);  // a stale id from an earlier run would send rank 1 to a dead rank 0
  std::fflush(nullptr);  // or the children inherit (and print again) buffered output

  using Handler = void (*)(int);
  const Handler previous = std::signal(SIGINT, SIG_IGN);  // Ctrl-C is for the ranks
  std::vector<pid_t> pids(nproc, -1);
  std::vector<std::string> logs(nproc);
  for (int r = 0; r < nproc; ++r) {
    if (r > 0) logs[r] = (fs::path(log_dir) / ("rank" + std::to_string(r) + ".log")).string();
    const std::vector<std::string> argv = rank_args(args, r, nproc, id_file);
    const pid_t pid = ::fork();
    if (pid == 0) exec_rank(executable, argv, logs[r]);
    if (pid < 0) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGTERM);
      }
      std::signal(SIGINT, previous);
      ZERO_CHECK(false, "launch_ranks: could not start rank ", r, ": ", std::strerror(errno));
    }
    pids[r] = pid;
  }
  std::printf("launched %d ranks (rank 0 prints here; ranks 1..%d write to %s/rank<r>.log)\n", nproc,
              nproc - 1, log_dir.c_str());
  std::fflush(stdout);

  // Wait for all. On a failure, stop the others at once: a rank whose peer is gone would
  // wait in its next all-reduce forever. When rank 0 is done, give the others a few
  // seconds to finish on their own first. Stopped ranks do not count as failures.
  using Clock = std::chrono::steady_clock;
  int result = 0, running = nproc;
  bool signalled = false;                         // SIGTERM sent: later exits are ours
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
                   describe(status).c_str(), r > 0 ? ", see " : "", logs[r].c_str());
      result = 1;
      stop_at = now;
    } else if (ok && r == 0) {
      stop_at = std::min(stop_at, now + std::chrono::seconds(5));
    }
  }
  std::signal(SIGINT, previous);
  return result;
}

int launch_ranks(int argc, char** argv, int nproc, const std::string& log_dir) {
  return launch_ranks(fs::read_symlink("/proc/self/exe").string(),
                      std::vector<std::string>(argv + 1, argv + argc), nproc, log_dir);
}

std::shared_ptr<dist::Communicator> join_group(const DistributedOptions& options,
                                               double timeout_seconds) {
  ZERO_CHECK(options.is_rank() && options.rank < options.world && !options.id_file.empty(),
             "join_group: expected --rank in [0, --world) and an --nccl-id-file, got rank ",
             options.rank, " of world ", options.world, " and file '", options.id_file, "'");
  dist::UniqueId id;
  if (options.rank == 0) {
    id = dist::Communicator::CreateUniqueId();
    const fs::path folder = fs::path(options.id_file).parent_path();
    if (!folder.empty()) fs::create_directories(folder);
    dist::write_unique_id_file(options.id_file, id);
  } else {
    id = dist::read_unique_id_file(options.id_file, timeout_seconds);
  }
  return std::make_shared<dist::Communicator>(options.rank, options.world, id, options.rank);
}

int join_group(Trainer& trainer, const DistributedOptions& options) {
  trainer.EnableDataParallel(join_group(options));
  return options.rank;
}

int run_worker(Trainer& trainer) {
  std::signal(SIGINT, SIG_IGN);
  while (trainer.step() < trainer.config().max_steps) trainer.Step();
  return 0;
}

void Trainer::EnableDataParallel(std::shared_ptr<dist::Communicator> comm,
                                 size_t bucket_cap_bytes) {
  ZERO_CHECK(comm != nullptr && device_ == Device::Cuda(comm->device()),
             "Trainer::EnableDataParallel: expected a communicator on the trainer's device ",
             device_, comm ? detail::str_cat(", got one on cuda:", comm->device()) : ", got none");
  train_sampler_->SetShard(comm->rank(), comm->world());
  data_parallel_ = std::make_shared<dist::DataParallel>(std::move(comm), model_->NamedParameters(),
                                                        bucket_cap_bytes);
  data_parallel_->BroadcastParameters();  // identical starting weights, whatever was loaded
}

}  // namespace zero::train
