/// @file
/// Data-parallel training on the GPUs of one host: one process per GPU, started by a
/// launcher in the program itself (`train_gpt --nproc N`).
///
/// The parent process runs no training. It starts N copies of its own executable with
/// the same flags plus `--device cuda:r --rank r --world N --nccl-id-file PATH`, waits,
/// and stops the others as soon as one fails (a rank left alone would wait forever in
/// its next all-reduce). Each child joins the NCCL group (`join_group`), shards its
/// batches and all-reduces its gradients (`Trainer::EnableDataParallel`). Rank 0 alone
/// prints, logs, evaluates, samples and saves; the other ranks only train
/// (`run_worker`), each writing its output to OUT_DIR/rank1.log, rank2.log and so on.
/// Chapter 10's README explains why N ranks with batch B follow the loss curve of one
/// GPU with batch N*B.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "zero/distributed/communicator.h"
#include "zero/train/trainer.h"

namespace zero::train {

/// A rank's place in its group, from the flags `--rank`, `--world` and `--nccl-id-file`
/// that the launcher adds (`take_rank_flags`).
struct DistributedOptions {
  int rank = -1;        ///< This child's rank, set by the launcher; -1 outside a group.
  int world = 1;        ///< Number of ranks in the group.
  std::string id_file;  ///< Where rank 0 writes the NCCL unique id for the others.

  /// True in a process the launcher started (a rank of a group).
  bool is_rank() const { return rank >= 0; }
};

/// Reads and removes `--rank R`, `--world N` and `--nccl-id-file PATH` (or `--flag=value`)
/// from `argc`/`argv`, so that a program's own parser never sees these internal flags.
/// Without them the result is not a rank (`rank` -1, `world` 1).
/// @throws zero::Error on a flag without a value, a value that is not a number, or a
/// rank outside [0, world).
DistributedOptions take_rank_flags(int& argc, char** argv);

/// Starts `nproc` ranks of this program, each `executable` with `args` (argv[1..] of
/// the parent) minus any `--nproc` and `--device` flags, plus `--device cuda:r --rank r
/// --world nproc --nccl-id-file log_dir/nccl_id`. Rank 0 shares this terminal; the
/// others write to `log_dir`/rank1.log, rank2.log and so on. Returns 0 when every rank
/// exits with 0; otherwise prints which failed, stops the rest and returns 1. When rank 0 exits
/// first (finished, or stopped by Ctrl-C after saving), the others are stopped too.
/// Ctrl-C reaches the ranks; the launcher itself ignores it and keeps waiting.
/// @throws zero::Error if fewer than `nproc` GPUs are visible or a process cannot start.
int launch_ranks(const std::string& executable, const std::vector<std::string>& args, int nproc,
                 const std::string& log_dir);

/// `launch_ranks` from `main`'s arguments: the executable is this process's own
/// (/proc/self/exe), the arguments argv[1..].
int launch_ranks(int argc, char** argv, int nproc, const std::string& log_dir);

/// Joins the group described by `options` on GPU `options.rank`: rank 0 makes the
/// unique id and writes it to `options.id_file` (removing a stale one first), the
/// others wait for it up to `timeout_seconds`. Blocks until all ranks have joined.
/// @throws zero::Error if `options` is not a rank, or on a timeout or NCCL failure.
std::shared_ptr<dist::Communicator> join_group(const DistributedOptions& options,
                                               double timeout_seconds = 300);

/// `join_group(options)`, then `trainer.EnableDataParallel` with the communicator.
/// Returns this process's rank.
int join_group(Trainer& trainer, const DistributedOptions& options);

/// The loop of a rank other than 0: `trainer.Step()` until `max_steps`, nothing else.
/// Rank 0 evaluates and saves in between; this rank waits for it in the next step's
/// all-reduce. Ignores Ctrl-C (the launcher stops it once rank 0 has saved). Returns 0.
int run_worker(Trainer& trainer);

}  // namespace zero::train
